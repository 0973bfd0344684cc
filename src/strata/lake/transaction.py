"""Transactions: start → write* → commit or abort, on one or several lake datasets.

Writers put containers under ``<dataset uuid>/<transaction uuid>/`` in the
lake; nothing is visible until commit. Commit is one SQL transaction that
takes each dataset's next gap-free commit id, records the file delta and the
interval index, and raises the build trigger (transactional outbox). All the
datasets of one transaction commit together or not at all.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import (
    CommitConflict,
    InvalidArgument,
    LakeError,
    SchemaMismatch,
    TransactionClosed,
)
from strata.ids import new_id
from strata.lake import partition_hashes, partition_index, partitions, schemas
from strata.lake.frames import Partitioning, write_frame
from strata.lake.registry import Version, latest_version
from strata.lake.rowhash import EMPTY, RowHash, fingerprint, sum_hashes
from strata.lake.storage import FileEntry
from strata.store.engine import read_tx, write_tx
from strata.store.schema import (
    build_triggers,
    dataset_files,
    dataset_versions,
    datasets,
    transaction_files,
    transactions,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from sqlalchemy.engine import Engine

    from strata.lake.storage import Storage


class LakeParts(Protocol):
    """What a transaction needs of the lake that opened it (the lake imports this
    module; this one does not import the lake)."""

    @property
    def engine(self) -> Engine: ...

    @property
    def storage(self) -> Storage: ...

    def clean_transactions(self, folders: list[str], txn_uuids: list[str]) -> int: ...


TYPES = ("SNAPSHOT", "APPEND", "UPDATE", "DELETE")
_HASH_MOD = 1 << 256


def parse_type(value: object) -> str:
    text = str(value).upper() if isinstance(value, str) else ""
    if text not in TYPES:
        raise InvalidArgument(
            f"transaction type {value!r} is not one of {', '.join(TYPES)}",
            type=repr(value),
        )
    return text


def _file_digest(path: str, size: int, rows: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{path}\x1f{size}\x1f{rows}".encode()).digest(), "big")


def _closing_statements() -> tuple[Any, ...]:
    """The closing writes of a commit, built once with bind parameters."""
    p = sa.bindparam
    close = (
        transactions.update()
        .where(transactions.c.uuid == p("txn_uuid"), transactions.c.state == "OPEN")
        .values(state="COMMITTED", committed_at=p("now"), ended_at=p("now"), commit_id=p("cid"))
    )
    insert_version = dataset_versions.insert().values(
        {c: p(f"v_{c}", type_=dataset_versions.c[c].type) for c in _VERSION_COLUMNS}
    )
    move_current = (
        datasets.update()
        .where(datasets.c.uuid == p("ds_uuid"))
        .values(current_version_uuid=p("v_uuid"), updated_at=p("now"))
    )
    trigger = build_triggers.insert().values(
        dataset_uuid=p("ds_uuid"), commit_id=p("cid"), created_at=p("now")
    )
    # The delta log is copied from the interval index rows this commit just wrote.
    f = dataset_files.c
    log_delta = transaction_files.insert().from_select(
        ["txn_uuid", "path", "op", "bytes", "rows"],
        sa.select(
            p("txn_uuid", type_=sa.String(36)),
            f.path,
            sa.case((f.added_commit_id == p("cid"), "ADD"), else_="REMOVE"),
            f.bytes,
            f.rows,
        ).where(
            f.dataset_uuid == p("ds_uuid"),
            sa.or_(f.added_commit_id == p("cid"), f.removed_commit_id == p("cid")),
        ),
    )
    # PostgreSQL: one round trip instead of four; each costs about a millisecond here.
    combined = (
        sa.select(sa.func.count())
        .select_from(close.returning(transactions.c.uuid).cte("closed"))
        .add_cte(
            insert_version.returning(dataset_versions.c.uuid).cte("new_version"),
            move_current.returning(datasets.c.uuid).cte("moved"),
            trigger.returning(build_triggers.c.id).cte("triggered"),
            log_delta.returning(transaction_files.c.path).cte("logged"),
        )
    )
    return close, insert_version, move_current, trigger, log_delta, combined


_VERSION_COLUMNS = (
    "uuid",
    "dataset_uuid",
    "commit_id",
    "created_at",
    "transaction_uuid",
    "run_uuid",
    "schema_fields",
    "facets",
    "content_hash",
    "data_fingerprint",
    "row_hash",
    "row_count",
    "byte_count",
    "file_count",
    "lifecycle_state",
    "partitions",
)
_CLOSE, _INSERT_VERSION, _MOVE_CURRENT, _TRIGGER, _LOG_DELTA, _CLOSE_ALL = _closing_statements()


def _record_commit(conn: Connection, part: _Part, version: dict[str, Any]) -> bool:
    """Write the version row, move the current pointer, close the transaction, raise the
    build trigger and log the file delta. False (and nothing kept: the caller raises)
    when the transaction was no longer OPEN.

    Only an OPEN transaction commits: the state test and the change are one statement,
    so an abort by `strata gc` cannot slip in between.
    """
    params = {f"v_{k}": v for k, v in version.items()}
    params |= {
        "txn_uuid": part.txn_uuid,
        "ds_uuid": part.dataset_uuid,
        "now": version["created_at"],
        "cid": version["commit_id"],
    }
    if conn.dialect.name == "postgresql":
        return bool(conn.execute(_CLOSE_ALL, params).scalar_one() == 1)
    if conn.execute(_CLOSE, params).rowcount != 1:
        return False
    conn.execute(_INSERT_VERSION, params)
    conn.execute(_MOVE_CURRENT, params)
    conn.execute(_TRIGGER, params)
    conn.execute(_LOG_DELTA, params)
    return True


def _version_row(v: Version, fields: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``dataset_versions`` row of a new lake version."""
    return {
        "uuid": v.uuid,
        "dataset_uuid": v.dataset_uuid,
        "commit_id": v.commit_id,
        "created_at": v.committed_at,
        "transaction_uuid": v.transaction_uuid,
        "run_uuid": v.run_uuid,
        "schema_fields": fields,
        "facets": v.facets,
        "content_hash": v.content_hash,
        "data_fingerprint": v.data_fingerprint,
        "row_hash": v.row_hash,
        "row_count": v.row_count,
        "byte_count": v.byte_count,
        "file_count": v.file_count,
        "lifecycle_state": "COMMITTED",
        "partitions": v.partitions,
    }


def _require_within(part: _Part, entries: list[FileEntry], within: Mapping[str, str]) -> None:
    want = partitions.key_text(part.partition_by or [], within)
    stray = next((e.partition for e in entries if e.partition != want), None)
    if stray is not None:
        raise InvalidArgument(
            f"the run building partition {want} of {part.dataset!r} wrote rows of partition "
            f"{stray}; a partition's run writes only its own partition: filter the frame, or "
            "check the partition_map",
            dataset=part.dataset,
            partition=stray,
        )


def _replaces_all(part: _Part) -> bool:
    """A SNAPSHOT of the whole dataset (not of some partitions)."""
    return part.type == "SNAPSHOT" and part.replace is None


@dataclass
class _Part:
    """One dataset's share of a transaction."""

    dataset: str
    dataset_uuid: str
    txn_uuid: str
    base_commit_id: int
    base_schema: list[dict[str, Any]] | None
    folder: str
    adds: list[FileEntry] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    schema_fields: list[dict[str, Any]] | None = None
    arrow_schema: str | None = None
    rows: RowHash | None = EMPTY  # None: writes by two engines, not comparable
    type: str = "APPEND"
    # An APPEND that must start from its base too (an incremental build's output).
    exclusive: bool = False
    partition_by: list[str] | None = None  # the partitioning this transaction writes
    dataset_by: list[str] | None = None  # the dataset's, when the transaction started
    replace: list[partitions.Key] | None = None  # a SNAPSHOT of only these partitions
    partition_limit: int = partitions.DEFAULT_LIMIT
    runs: dict[str, str] | None = None  # partition key -> the run that wrote it
    watch: dict[str, Any] | None = None  # Spark aggregates observed by each write
    seen: dict[str, int] | None = None  # their sums since watch(); None: a write unseen


class Transaction:
    """An open transaction. Use as a context manager or call commit/abort."""

    def __init__(
        self,
        lake: LakeParts,
        type: str,
        parts: list[_Part],
        group_uuid: str,
        run_uuid: str | None = None,
    ) -> None:
        self._lake = lake
        self.type = type
        self.group_uuid = group_uuid
        self.run_uuid = run_uuid  # the run writing it: recorded on each version it commits
        self._parts = {p.dataset: p for p in parts}
        self.state = "OPEN"
        self.versions: dict[str, Version] = {}

    @property
    def datasets(self) -> list[str]:
        return list(self._parts)

    @property
    def uuid(self) -> str:
        """The transaction id (of the first dataset's part)."""
        return next(iter(self._parts.values())).txn_uuid

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.state != "OPEN":
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def _require_open(self) -> None:
        if self.state != "OPEN":
            raise TransactionClosed(
                f"transaction {self.uuid} is already {self.state.lower()}; start a new "
                "transaction to change the data",
                transaction=self.uuid,
                state=self.state,
            )

    def _part(self, dataset: str | None) -> _Part:
        self._require_open()
        if dataset is None:
            if len(self._parts) > 1:
                raise InvalidArgument(
                    f"this transaction spans {sorted(self._parts)}; pass dataset= to say which",
                )
            return next(iter(self._parts.values()))
        if dataset not in self._parts:
            raise InvalidArgument(
                f"dataset {dataset!r} is not part of this transaction (it spans "
                f"{sorted(self._parts)})",
                dataset=dataset,
            )
        return self._parts[dataset]

    def rows_written(self, dataset: str, since: int = 0) -> int:
        """The rows written to ``dataset`` in this transaction so far (since its
        ``since``-th container: see :meth:`mark`)."""
        return sum(e.rows for e in self._part(dataset).adds[since:])

    def base_of(self, dataset: str) -> int:
        """The version ``dataset``'s part started from (0: none)."""
        return self._part(dataset).base_commit_id

    def set_type(self, dataset: str, type: str, *, exclusive: bool = False) -> None:
        """Commit ``dataset``'s part as ``type`` (before anything is written to it);
        ``exclusive`` makes an APPEND fail, as a SNAPSHOT does, if a commit landed since
        its base."""
        part = self._part(dataset)
        kind = parse_type(type)
        if part.adds or part.removes:
            raise InvalidArgument(
                f"{dataset!r} was already written as {part.type} in this transaction; set "
                "its mode before writing",
                dataset=dataset,
            )
        if kind != part.type:
            with write_tx(self._lake.engine) as conn:
                conn.execute(
                    transactions.update()
                    .where(transactions.c.uuid == part.txn_uuid)
                    .values(type=kind)
                )
        part.type, part.exclusive = kind, exclusive

    def write(
        self, frame: Any, dataset: str | None = None, within: Mapping[str, str] | None = None
    ) -> list[FileEntry]:
        """Write a Spark DataFrame, pyarrow Table or pandas DataFrame as new containers
        (``within``: all of them in that one partition, else refused)."""
        part = self._part(dataset)
        if part.type == "DELETE":
            raise InvalidArgument(
                "a DELETE transaction only removes files; call remove(...) or use an UPDATE "
                "transaction to add data",
                type=part.type,
            )
        by = None
        if part.partition_by:
            by = Partitioning(
                part.dataset,
                tuple(part.partition_by),
                part.partition_limit,
                single=within is not None,
            )
        try:
            written = write_frame(self._lake.storage, part.folder, frame, by, part.watch)
        except LakeError as exc:
            self._refuse_if_closed_elsewhere(part, exc)
            raise
        entries, schema, rows = written.entries, written.schema, written.rows
        fields = schemas.fields_of(schema)
        try:
            self._require_within_replaced(part, entries)
            if within is not None:
                _require_within(part, entries, within)
            if part.schema_fields is not None and not schemas.compatible(
                part.schema_fields, fields
            ):
                raise SchemaMismatch(
                    f"frames written in one transaction to {part.dataset!r} must share a "
                    f"schema.\n"
                    f"  earlier write: {schemas.render(part.schema_fields)}\n"
                    f"  this write:    {schemas.render(fields)}",
                    dataset=part.dataset,
                )
            if part.type in ("APPEND", "UPDATE"):
                schemas.require_compatible(part.dataset, part.base_schema, fields, part.type)
        except (SchemaMismatch, InvalidArgument):
            # The transaction may still commit: refused containers must not stay in its folder.
            self._lake.storage.discard(part.folder, [e.path for e in entries])
            raise
        part.adds.extend(entries)
        part.schema_fields = fields
        part.arrow_schema = schemas.encode(schema)
        part.rows = part.rows.combine(rows) if part.rows is not None else None
        _add_seen(part, written.seen)
        return entries

    def watch(self, dataset: str, measures: Mapping[str, Any]) -> None:
        """From now on, observe ``measures`` (name -> Spark aggregate column whose value
        adds up across writes, such as a count) in the pass of every Spark write to
        ``dataset``; :meth:`watched` gives their sums."""
        part = self._part(dataset)
        part.watch, part.seen = dict(measures), dict.fromkeys(measures, 0)

    def watched(self, dataset: str) -> dict[str, int] | None:
        """The sums of the watched measures over the writes since :meth:`watch`; None when
        one of those writes could not observe them (not a Spark frame, or the columns do
        not apply to it) or some were rolled back."""
        part = self._part(dataset)
        return dict(part.seen) if part.watch and part.seen is not None else None

    def note_runs(self, runs: Mapping[str, str]) -> None:
        """Record which run wrote each partition (key text -> run id) with the version:
        a partition's history then names its own runs."""
        for part in self._parts.values():
            part.runs = dict(runs)

    def mark(self) -> dict[str, int]:
        """Where each dataset's writes stand, for :meth:`rollback`."""
        self._require_open()
        return {p.dataset: len(p.adds) for p in self._parts.values()}

    def rollback(self, mark: Mapping[str, int]) -> None:
        """Forget (and delete) what was written since ``mark``; the rows' hash becomes
        unknown, since a sum of hashes cannot tell which rows to take back."""
        for part in self._parts.values():
            dropped = part.adds[mark[part.dataset] :]
            if dropped:
                del part.adds[mark[part.dataset] :]
                self._lake.storage.discard(part.folder, [e.path for e in dropped])
                part.rows = part.seen = None

    def narrow(self, keys: list[partitions.Key]) -> None:
        """Replace only ``keys`` of every dataset's partition SNAPSHOT (the others keep
        their data); written containers must already lie within them."""
        for part in self._parts.values():
            if part.replace is None:
                raise InvalidArgument(
                    f"{part.dataset!r} is not written as a SNAPSHOT of some partitions",
                    dataset=part.dataset,
                )
            part.replace = list(keys)
            self._require_within_replaced(part, part.adds)

    @staticmethod
    def _require_within_replaced(part: _Part, entries: list[FileEntry]) -> None:
        """A SNAPSHOT of some partitions writes only into them (as Delta's replaceWhere)."""
        if part.replace is None:
            return
        inside = partitions.Filters(part.partition_by or [], part.replace)
        for e in entries:
            if not inside.holds(e.partition or ""):
                raise InvalidArgument(
                    f"this SNAPSHOT of {part.dataset!r} replaces partitions "
                    f"{[partitions.key_text(list(r), r) for r in part.replace]}, but the frame "
                    f"has rows in partition {e.partition}; filter the frame to those "
                    "partitions or widen partitions=",
                    dataset=part.dataset,
                    partition=e.partition,
                )

    def _refuse_if_closed_elsewhere(self, part: _Part, exc: LakeError) -> None:
        """A write that failed because gc aborted the transaction (and removed its
        folder) says so, rather than blaming the lake."""
        with read_tx(self._lake.engine) as conn:
            state = conn.execute(
                sa.select(transactions.c.state).where(transactions.c.uuid == part.txn_uuid)
            ).scalar()
        if state is not None and state != "OPEN":
            self.state = str(state)
            raise TransactionClosed(
                f"transaction {part.txn_uuid} on {part.dataset!r} was {str(state).lower()} "
                "while it wrote (by `strata gc` after the grace period, or by another "
                "process); start a new transaction",
                transaction=part.txn_uuid,
                state=state,
            ) from exc

    def remove(self, *paths: str, dataset: str | None = None) -> None:
        """Remove containers (paths as listed by ``Lake.files``): UPDATE and DELETE only."""
        part = self._part(dataset)
        if part.type not in ("UPDATE", "DELETE"):
            raise InvalidArgument(
                f"a {part.type} transaction cannot remove files; use UPDATE or DELETE",
                type=part.type,
            )
        part.removes.extend(p for p in paths if p not in part.removes)

    def abort(self) -> None:
        """Discard the transaction and its files. Aborting twice is an error."""
        self._require_open()
        with write_tx(self._lake.engine) as conn:
            conn.execute(
                transactions.update()
                .where(
                    transactions.c.group_uuid == self.group_uuid,
                    transactions.c.state == "OPEN",
                )
                .values(state="ABORTED", ended_at=datetime.now(UTC))
            )
        self.state = "ABORTED"
        self._lake.clean_transactions(
            [p.folder for p in self._parts.values()], [p.txn_uuid for p in self._parts.values()]
        )

    def commit(self) -> Version:
        """Commit every dataset of the transaction at once; returns the first one's version."""
        self._require_open()
        try:
            with write_tx(self._lake.engine) as conn:
                self._lock(conn)
                versions = {p.dataset: self._commit_part(conn, p) for p in self._parts.values()}
        except (CommitConflict, SchemaMismatch, InvalidArgument, TransactionClosed):
            # The base is stale or the data is wrong: this transaction can never commit.
            if self.state == "OPEN":
                self.abort()
            raise
        self.state = "COMMITTED"
        self.versions = versions
        return next(iter(versions.values()))

    def _lock(self, conn: Connection) -> None:
        # SQLite already holds the database write lock (BEGIN IMMEDIATE); PostgreSQL
        # serialises commits per dataset on the dataset rows, in a fixed order.
        if conn.dialect.name == "postgresql":
            ids = sorted(p.dataset_uuid for p in self._parts.values())
            conn.execute(
                sa.select(datasets.c.uuid)
                .where(datasets.c.uuid.in_(ids))
                .order_by(datasets.c.uuid)
                .with_for_update()
            ).all()

    def _commit_part(self, conn: Connection, part: _Part) -> Version:
        previous = latest_version(conn, part.dataset, part.dataset_uuid)
        self._check_base(part, previous)
        fields, arrow = self._schema_after(part, previous)
        commit_id = previous.commit_id + 1 if previous is not None else 1
        now = datetime.now(UTC)
        if previous is not None and now <= previous.committed_at:
            # Keep commit times increasing so as-of reads agree with commit order.
            now = previous.committed_at + timedelta(microseconds=1)

        self._check_partitioning(conn, part)
        removed = self._removals(conn, part, commit_id)
        touched = self._partitions_touched(conn, part, removed)
        rows, size, count, digest = self._totals(part, previous, removed)
        if touched is None:
            rows_hash = self._rows_after(part, previous, removed)
        else:
            rows_hash = partition_hashes.record(
                conn, self._partition_commit(part, previous, commit_id, touched, fields)
            )
        if part.adds:
            conn.execute(
                dataset_files.insert(),
                [
                    {
                        "dataset_uuid": part.dataset_uuid,
                        "path": e.path,
                        "bytes": e.bytes,
                        "rows": e.rows,
                        "added_commit_id": commit_id,
                        "partition_key": e.partition,
                    }
                    for e in part.adds
                ],
            )
        version = Version(
            dataset=part.dataset,
            dataset_uuid=part.dataset_uuid,
            uuid=new_id(),
            commit_id=commit_id,
            committed_at=now,
            type=part.type,
            row_count=rows,
            byte_count=size,
            file_count=count,
            content_hash=f"{digest % _HASH_MOD:064x}",
            data_fingerprint=fingerprint(fields, rows_hash) if rows_hash else None,
            row_hash=rows_hash.encode() if rows_hash else None,
            schema_fields=list(fields),
            transaction_uuid=part.txn_uuid,
            run_uuid=self.run_uuid,
            facets={schemas.ARROW_SCHEMA_FACET: arrow} if arrow else {},
            partitions=touched.summary(part.runs) if touched is not None else None,
        )
        if not _record_commit(conn, part, _version_row(version, fields)):
            state = conn.execute(
                sa.select(transactions.c.state).where(transactions.c.uuid == part.txn_uuid)
            ).scalar()
            self.state = str(state)
            raise TransactionClosed(
                f"transaction {part.txn_uuid} on {part.dataset!r} was {str(state).lower()} "
                "(by `strata gc` after the grace period, or by another process); start a new "
                "transaction",
                transaction=part.txn_uuid,
                state=state,
            )
        # Everything a read of the new row would return is known here: no query needed.
        return version

    @staticmethod
    def _check_partitioning(conn: Connection, part: _Part) -> None:
        """The dataset's partitioning must be what this transaction started from; a
        change of it (a whole SNAPSHOT's) is recorded with the commit."""
        now = partition_index.partition_by(conn, part.dataset_uuid)
        if now != part.dataset_by:
            raise CommitConflict(
                f"{part.dataset!r} was partitioned by {now} while this transaction, started "
                f"when it was partitioned by {part.dataset_by}, wrote; start a new transaction",
                dataset=part.dataset,
            )
        if part.partition_by != now:
            conn.execute(
                datasets.update()
                .where(datasets.c.uuid == part.dataset_uuid)
                .values(partition_by=part.partition_by)
            )

    @staticmethod
    def _partition_commit(
        part: _Part,
        previous: Version | None,
        commit_id: int,
        touched: partition_index.Touched,
        fields: list[dict[str, Any]],
    ) -> partition_hashes.Commit:
        """What the partition hashes need of this commit of a partitioned dataset."""
        parent = EMPTY if previous is None else partition_hashes.decode(previous.row_hash)
        return partition_hashes.Commit(
            dataset_uuid=part.dataset_uuid,
            commit_id=commit_id,
            touched=touched,
            adds=part.adds,
            fields_before=previous.schema_fields if previous is not None else fields,
            fields_after=fields,
            parent=parent,
            replaces_all=_replaces_all(part),
            total=part.rows if part.rows is not None else sum_hashes(e.row_hash for e in part.adds),
        )

    @staticmethod
    def _partitions_touched(
        conn: Connection, part: _Part, removed: list[Any]
    ) -> partition_index.Touched | None:
        """What the commit does to each partition (before its containers are added)."""
        if not part.partition_by:
            return None
        added = Counter(e.partition for e in part.adds if e.partition is not None)
        gone = Counter(r.partition_key for r in removed if r.partition_key is not None)
        keys = sorted(set(added) | set(gone))
        left = partition_index.live_counts(conn, part.dataset_uuid, keys)
        before = {k: left.get(k, 0) + gone.get(k, 0) for k in keys}
        return partition_index.Touched(before, added, gone)

    def _check_base(self, part: _Part, previous: Version | None) -> None:
        """SNAPSHOT, UPDATE and DELETE fail when a commit landed after their base."""
        latest = previous.commit_id if previous is not None else 0
        if (part.type != "APPEND" or part.exclusive) and latest != part.base_commit_id:
            assert previous is not None
            raise CommitConflict(
                f"{part.type} on {part.dataset!r} started from version {part.base_commit_id}, "
                f"but version {latest} was committed since (transaction "
                f"{previous.transaction_uuid} at {previous.committed_at.isoformat()}); "
                "start a new transaction from the latest version and try again",
                dataset=part.dataset,
                base_commit_id=part.base_commit_id,
                winning_commit_id=latest,
                winning_transaction=previous.transaction_uuid,
            )

    def _schema_after(
        self, part: _Part, previous: Version | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The new version's columns and Arrow schema, checked against its parent's."""
        fields = part.schema_fields
        if fields is not None and part.type in ("APPEND", "UPDATE") and previous is not None:
            schemas.require_compatible(part.dataset, previous.schema_fields, fields, part.type)
        if fields is None:  # nothing written: the schema stays what it was
            fields = previous.schema_fields if previous else []
            arrow = previous.facets.get(schemas.ARROW_SCHEMA_FACET) if previous else None
            return fields, arrow
        arrow = part.arrow_schema
        if previous is not None and part.type in ("APPEND", "UPDATE"):
            fields, arrow = schemas.keep_nullable(previous.schema_fields, fields, arrow)
        return fields, arrow

    def _totals(
        self, part: _Part, previous: Version | None, removed: list[Any]
    ) -> tuple[int, int, int, int]:
        """Rows, bytes, files and the content hash's sum, from the parent's and the delta."""
        rows = sum(e.rows for e in part.adds)
        size = sum(e.bytes for e in part.adds)
        count = len(part.adds)
        # Additive set hash: a version's hash follows from its parent's and the delta alone.
        digest = sum(_file_digest(e.path, e.bytes, e.rows) for e in part.adds)
        if previous is not None and not _replaces_all(part):
            rows += previous.row_count - sum(r.rows for r in removed)
            size += previous.byte_count - sum(r.bytes for r in removed)
            count += previous.file_count - len(removed)
            digest += int(previous.content_hash, 16) - sum(
                _file_digest(r.path, r.bytes, r.rows) for r in removed
            )
        return rows, size, count, digest

    def _rows_after(
        self, part: _Part, previous: Version | None, removed: list[Any]
    ) -> RowHash | None:
        """The row hash of the version this commit makes: a SNAPSHOT's own writes'; an
        APPEND's (or an UPDATE's that removes nothing) its parent's plus its writes'.

        None when unknown: files were removed (their rows' hashes are not kept per file),
        the parent's is unknown, or engines were mixed. The version's data fingerprint is
        then None too, and a comparison with it must count as "different"."""
        if _replaces_all(part) or part.rows is None:
            return part.rows
        if removed or previous is None:
            return None if removed else part.rows
        if previous.row_hash is None:
            return None
        try:
            parent = RowHash.decode(previous.row_hash)
        except ValueError:  # not a row hash this version of Strata wrote: unknown
            return None
        return parent.combine(part.rows)

    def pending_fingerprint(self, dataset: str | None = None) -> str | None:
        """The data fingerprint a SNAPSHOT commit of what was written would record."""
        part = self._part(dataset)
        if part.rows is None:
            return None
        return fingerprint(part.schema_fields or [], part.rows)

    def pending_partition_fingerprints(self, dataset: str | None = None) -> dict[str, str | None]:
        """The data fingerprint of each partition written so far (None where unknown)."""
        part = self._part(dataset)
        fields = part.schema_fields or []
        return {
            key: fingerprint(fields, rows) if rows is not None else None
            for key, rows in partition_hashes.written(part.adds).items()
        }

    def pending_frame(self, spark: Any, dataset: str | None = None, since: int = 0) -> Any:
        """What was written so far (since the ``since``-th container: see :meth:`mark`),
        as a Spark DataFrame: uncommitted, for comparisons and checks."""
        part = self._part(dataset)
        storage = self._lake.storage
        adds = part.adds[since:]
        if not adds:
            from pyspark.sql.pandas.types import from_arrow_schema
            from pyspark.sql.types import StructType

            known = schemas.decode(part.arrow_schema) if part.arrow_schema else None
            return spark.createDataFrame([], from_arrow_schema(known) if known else StructType())
        known = schemas.decode(part.arrow_schema) if part.arrow_schema else None
        return schemas.read_parquet(spark, [storage.spark_uri(e.path) for e in adds], known)

    def pending_types(self, dataset: str) -> dict[str, str] | None:
        """The Spark types of what was written to ``dataset``, as :meth:`pending_frame`
        reads it (None when not known without reading it)."""
        known = self._part(dataset).arrow_schema
        return schemas.spark_types(schemas.decode(known)) if known else None

    def pending_columns(
        self, dataset: str, columns: Sequence[str], since: int = 0, max_bytes: int = 0
    ) -> pa.Table | None:
        """``columns`` of what was written (since the ``since``-th container), read on
        this process with pyarrow; None when their size in the containers' footers is
        over ``max_bytes`` (0: no limit)."""
        import pyarrow.dataset as pads

        storage = self._lake.storage
        paths = [storage.local(e.path) for e in self._part(dataset).adds[since:]]
        if not paths:
            return None
        found = pads.dataset(paths, format="parquet", filesystem=storage.fs)
        if max_bytes and _column_bytes(found, columns) > max_bytes:
            return None
        return found.to_table(columns=list(columns))

    def type_of(self, dataset: str) -> str:
        """How ``dataset``'s part commits: SNAPSHOT, APPEND, UPDATE or DELETE."""
        return self._part(dataset).type

    def _removals(self, conn: Connection, part: _Part, commit_id: int) -> list[Any]:
        """Mark removed files in the interval index; returns their rows."""
        f = dataset_files.c
        live = sa.and_(f.dataset_uuid == part.dataset_uuid, f.removed_commit_id.is_(None))
        if part.type == "SNAPSHOT" and part.replace is not None:
            inside = partitions.Filters(part.partition_by or [], part.replace)
            held = partition_index.live_counts(conn, part.dataset_uuid)
            keys = sorted(k for k in held if inside.holds(k))
            where = sa.and_(live, f.partition_key.in_(keys or [""]))
        elif part.type == "SNAPSHOT":
            where = live
        elif part.removes:
            where = sa.and_(live, f.path.in_(part.removes))
        else:
            if part.type == "DELETE":
                raise InvalidArgument(
                    f"DELETE on {part.dataset!r} removes no files; call remove(path, ...) with "
                    "paths from Lake.files()",
                    dataset=part.dataset,
                )
            return []
        rows = conn.execute(sa.select(f.path, f.bytes, f.rows, f.partition_key).where(where)).all()
        missing = sorted(set(part.removes) - {r.path for r in rows})
        if missing:
            raise InvalidArgument(
                f"cannot remove {missing[:5]} from {part.dataset!r}: not in its latest version; "
                "list current files with Lake.files()",
                dataset=part.dataset,
                paths=missing,
            )
        if rows:
            conn.execute(dataset_files.update().where(where).values(removed_commit_id=commit_id))
        return list(rows)


def _add_seen(part: _Part, seen: Mapping[str, int] | None) -> None:
    """Add one write's observed sums to ``part``'s (unseen once, unseen until watched anew)."""
    if part.seen is None or not part.watch:
        return
    if seen is None:
        part.seen = None
        return
    part.seen = {n: part.seen[n] + seen.get(n, 0) for n in part.seen}


def _column_bytes(found: Any, columns: Sequence[str]) -> int:
    """The uncompressed size of ``columns`` in a pyarrow dataset's Parquet footers."""
    total = 0
    for fragment in found.get_fragments():
        meta = fragment.metadata
        names = [meta.schema.column(i).name for i in range(meta.num_columns)]
        wanted = [i for i, n in enumerate(names) if n in columns]
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            total += sum(group.column(i).total_uncompressed_size for i in wanted)
    return total
