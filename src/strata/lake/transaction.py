"""Transactions: start → write* → commit or abort, on one or several lake datasets.

Writers put containers under ``<dataset uuid>/<transaction uuid>/`` in the
lake; nothing is visible until commit (:mod:`strata.lake.commit`: one SQL
transaction for all the datasets of one transaction, which commit together or
not at all).
"""

from __future__ import annotations

from collections.abc import Collection, Generator, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from strata.errors import (
    CommitConflict,
    InvalidArgument,
    LakeError,
    SchemaMismatch,
    TransactionClosed,
)
from strata.lake import column_reads, commit, partition_hashes, partitions, schemas
from strata.lake.commit import Part
from strata.lake.frames import Partitioning, write_frame
from strata.lake.registry import Version
from strata.lake.rowhash import fingerprint, sum_hashes
from strata.lake.storage import FileEntry
from strata.store.engine import read_tx, write_tx
from strata.store.owners.datasets import transactions as txns

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


def parse_type(value: object) -> str:
    text = str(value).upper() if isinstance(value, str) else ""
    if text not in TYPES:
        raise InvalidArgument(
            f"transaction type {value!r} is not one of {', '.join(TYPES)}",
            type=repr(value),
        )
    return text


def _require_within(part: Part, entries: list[FileEntry], keys: Collection[str]) -> None:
    """The containers lie in the partitions (key texts) the writing runs build."""
    stray = next((e.partition for e in entries if e.partition not in keys), None)
    if stray is None:
        return
    if len(keys) == 1:
        who = f"the run building partition {next(iter(keys))}"
    else:
        who = f"the runs building {len(keys):,} partitions together"
    raise InvalidArgument(
        f"{who} of {part.dataset!r} wrote rows of partition {stray}; a partition's run "
        "writes only its own partition: filter the frame, or check the partition_map",
        dataset=part.dataset,
        partition=stray,
    )


class Transaction:
    """An open transaction. Use as a context manager or call commit/abort."""

    def __init__(
        self,
        lake: LakeParts,
        type: str,
        parts: list[Part],
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

    def _part(self, dataset: str | None) -> Part:
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

    def rows_by_partition(self, dataset: str, since: int = 0) -> dict[str, int]:
        """The rows written to each partition of ``dataset`` (key text) since :meth:`mark`."""
        out: dict[str, int] = {}
        for e in self._part(dataset).adds[since:]:
            if e.partition is not None:
                out[e.partition] = out.get(e.partition, 0) + e.rows
        return out

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
                txns.set_type(conn, part.txn_uuid, kind)
        part.type, part.exclusive = kind, exclusive

    def write(
        self,
        frame: Any,
        dataset: str | None = None,
        within: Mapping[str, str] | None = None,
        among: Collection[str] | None = None,
    ) -> list[FileEntry]:
        """Write a Spark DataFrame, pyarrow Table or pandas DataFrame as new containers
        (``within``: all of them in that one partition, else refused; ``among``: in
        those partitions (key texts), each one's row hash known, else refused)."""
        part = self._part(dataset)
        if part.type == "DELETE":
            raise InvalidArgument(
                "a DELETE transaction only removes files; call remove(...) or use an UPDATE "
                "transaction to add data",
                type=part.type,
            )
        by, by_columns = None, part.partition_by or []
        if part.partition_by:
            by = Partitioning(
                part.dataset,
                tuple(part.partition_by),
                part.partition_limit,
                single=within is not None,
                among=frozenset(among) if among is not None else None,
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
                _require_within(part, entries, {partitions.key_text(by_columns, within)})
            elif among is not None:
                _require_within(part, entries, frozenset(among))
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
        _add_seen(part, written.seen, written.seen_by_key)
        return entries

    def watch(self, dataset: str, measures: Mapping[str, Any]) -> None:
        """From now on, observe ``measures`` (name -> Spark aggregate column whose value
        adds up across writes, such as a count) in the pass of every Spark write to
        ``dataset``; :meth:`watched` gives their sums."""
        part = self._part(dataset)
        part.watch, part.seen = dict(measures), dict.fromkeys(measures, 0)
        part.seen_by_key = {}

    def watched(self, dataset: str, partition: str | None = None) -> dict[str, int] | None:
        """The sums of the watched measures over the writes since :meth:`watch` (of one
        ``partition``, key text, when a batch's write saw them per partition); None when
        one of those writes could not observe them (not a Spark frame, or the columns do
        not apply to it) or some were rolled back."""
        part = self._part(dataset)
        if not part.watch:
            return None
        if partition is None:
            return dict(part.seen) if part.seen is not None else None
        if part.seen_by_key is None:
            return None
        return dict(part.seen_by_key.get(partition, dict.fromkeys(part.watch, 0)))

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
                part.rows = part.seen = part.seen_by_key = None

    def drop_partitions(self, keys: Collection[str]) -> None:
        """Forget (and delete) what was written to the partitions ``keys`` (texts); the
        rows' hash stays known where every container kept its partition's."""
        for part in self._parts.values():
            dropped = [e for e in part.adds if e.partition in keys]
            if not dropped:
                continue
            part.adds = [e for e in part.adds if e.partition not in keys]
            _delete_files(self._lake.storage, part.folder, [e.path for e in dropped])
            if part.rows is not None:
                part.rows = sum_hashes(e.row_hash for e in part.adds)
            _drop_seen(part, keys)

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
    def _require_within_replaced(part: Part, entries: list[FileEntry]) -> None:
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

    def _refuse_if_closed_elsewhere(self, part: Part, exc: LakeError) -> None:
        """A write that failed because gc aborted the transaction (and removed its
        folder) says so, rather than blaming the lake."""
        with read_tx(self._lake.engine) as conn:
            state = txns.state_of(conn, part.txn_uuid)
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
            txns.abort_group(conn, self.group_uuid, datetime.now(UTC))
        self.state = "ABORTED"
        self._lake.clean_transactions(
            [p.folder for p in self._parts.values()], [p.txn_uuid for p in self._parts.values()]
        )

    def commit(self) -> Version:
        """Commit every dataset of the transaction at once; returns the first one's version."""
        self._require_open()
        try:
            with write_tx(self._lake.engine) as conn:
                parts = list(self._parts.values())
                commit.lock(conn, parts)
                versions = {p.dataset: commit.commit_part(conn, p, self.run_uuid) for p in parts}
        except TransactionClosed as exc:  # by gc or another process: nothing to abort
            self.state = str(exc.details.get("state"))
            raise
        except (CommitConflict, SchemaMismatch, InvalidArgument):
            # The base is stale or the data is wrong: this transaction can never commit.
            if self.state == "OPEN":
                self.abort()
            raise
        self.state = "COMMITTED"
        self.versions = versions
        return next(iter(versions.values()))

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

    def pending_frame(
        self, spark: Any, dataset: str | None = None, since: int = 0, partition: str | None = None
    ) -> Any:
        """What was written so far (since the ``since``-th container: see :meth:`mark`;
        to one ``partition``, key text, if given), as a Spark DataFrame: uncommitted, for
        comparisons and checks."""
        part = self._part(dataset)
        storage = self._lake.storage
        adds = _within(part.adds[since:], partition)
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
        return schemas.encoded_spark_types(known) if known else None

    def pending_columns(
        self,
        dataset: str,
        columns: Sequence[str],
        since: int = 0,
        max_bytes: int = 0,
        partition: str | None = None,
    ) -> pa.Table | None:
        """``columns`` of what was written (since the ``since``-th container; to one
        ``partition``, if given), read on this process with pyarrow; None when their size
        in the containers' footers is over ``max_bytes`` (0: no limit)."""
        adds = _within(self._part(dataset).adds[since:], partition)
        return column_reads.read_columns(self._lake.storage, adds, columns, max_bytes)

    def pending_columns_by_partition(
        self,
        dataset: str,
        columns: Sequence[str],
        keys: Sequence[str],
        since: int = 0,
        max_bytes: int = 0,
    ) -> Iterator[tuple[str, pa.Table | None]]:
        """:meth:`pending_columns` of each partition of ``keys``, in that order, read a
        group of partitions at a time (at most ``max_bytes`` of columns each)."""
        adds = self._part(dataset).adds[since:]
        return column_reads.read_by_partition(self._lake.storage, adds, columns, keys, max_bytes)

    def pending_column_arrays(
        self,
        dataset: str,
        column: str,
        since: int = 0,
        rows: int = 1 << 18,
        partition: str | None = None,
    ) -> Generator[pa.Array[Any], None, None]:
        """One ``column`` of what was written (since the ``since``-th container; to one
        ``partition``, if given), as arrays of at most ``rows`` values in the containers'
        order: read with pyarrow one bounded batch at a time, so that memory stays one
        batch's."""
        import pyarrow.parquet as pq

        storage = self._lake.storage
        for e in _within(self._part(dataset).adds[since:], partition):
            with storage.fs.open_input_file(storage.local(e.path)) as f:
                for batch in pq.ParquetFile(f).iter_batches(batch_size=rows, columns=[column]):
                    yield batch.column(0)

    def type_of(self, dataset: str) -> str:
        """How ``dataset``'s part commits: SNAPSHOT, APPEND, UPDATE or DELETE."""
        return self._part(dataset).type


def _add_seen(
    part: Part, seen: Mapping[str, int] | None, by_key: Mapping[str, Mapping[str, int]] | None
) -> None:
    """Add one write's observed sums to ``part``'s (unseen once, unseen until watched
    anew), and its sums per partition to those of each."""
    if not part.watch:
        return
    if part.seen_by_key is not None:
        if by_key is None:
            part.seen_by_key = None
        else:
            for key, sums in by_key.items():
                held = part.seen_by_key.setdefault(key, dict.fromkeys(part.watch, 0))
                part.seen_by_key[key] = {n: held[n] + sums.get(n, 0) for n in held}
    if part.seen is None:
        return
    if seen is None:
        part.seen = None
        return
    part.seen = {n: part.seen[n] + seen.get(n, 0) for n in part.seen}


def _drop_seen(part: Part, keys: Collection[str]) -> None:
    """Take the dropped partitions' sums out of ``part``'s (unknown unless seen per key)."""
    if part.seen is None or not part.watch:
        return
    if part.seen_by_key is None:
        part.seen = None
        return
    for key in keys:
        gone = part.seen_by_key.pop(key, None) or {}
        part.seen = {n: v - gone.get(n, 0) for n, v in part.seen.items()}


def _delete_files(storage: Storage, within: str, paths: Sequence[str]) -> None:
    """Delete fresh containers, and each folder below ``within`` they leave with no
    container (a batch's partition folder; not the writer folder others share)."""
    for path in paths:
        storage.delete_file(path)
    for folder in sorted({p.rsplit("/", 1)[0] for p in paths}):
        if folder.startswith(within + "/") and not storage.parquet_files(folder):
            storage.delete_dir(folder)


def _within(adds: Sequence[FileEntry], partition: str | None) -> Sequence[FileEntry]:
    return adds if partition is None else [e for e in adds if e.partition == partition]
