"""The commit of a transaction's datasets: one SQL transaction that takes each dataset's
next gap-free commit id, checks the part against what landed since it started, records
the file delta and the interval index, writes the version row and raises the build
trigger (transactional outbox). :class:`~strata.lake.transaction.Transaction` writes the
parts; this module only turns written parts into versions.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import CommitConflict, InvalidArgument, SchemaMismatch, TransactionClosed
from strata.ids import new_id
from strata.lake import partition_hashes, partition_index, partitions, schemas
from strata.lake.registry import Version, latest_and_newest, latest_version
from strata.lake.rowhash import EMPTY, RowHash, fingerprint, sum_hashes
from strata.lake.storage import FileEntry
from strata.store.owners import branches, triggers
from strata.store.owners.branches import MAIN
from strata.store.owners.datasets import files as files_of
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import transactions as txns
from strata.store.owners.datasets import versions as stored_versions
from strata.store.schema import transaction_files

_HASH_MOD = 1 << 256


@dataclass
class Part:
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
    seen_by_key: dict[str, dict[str, int]] | None = None  # the same per partition (batches)
    branch_id: str = MAIN  # the branch it commits on
    branch_name: str = MAIN


def _file_digest(path: str, size: int, rows: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{path}\x1f{size}\x1f{rows}".encode()).digest(), "big")


def _closing_statements() -> tuple[Any, ...]:
    """The closing writes of a commit, built once with bind parameters."""
    p = sa.bindparam
    close = txns.close()
    insert_version = stored_versions.insert(_VERSION_COLUMNS)
    move_current = dataset_rows.move_current()
    trigger = triggers.enqueue()
    # The delta log is copied from the interval index rows this commit just wrote.
    f = files_of.relation("f").c
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
        .select_from(txns.close(returning=True).cte("closed"))
        .add_cte(
            stored_versions.insert(_VERSION_COLUMNS, returning=True).cte("new_version"),
            dataset_rows.move_current(returning=True).cte("moved"),
            triggers.enqueue(returning=True).cte("triggered"),
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
    "branch_id",
)
_CLOSE, _INSERT_VERSION, _MOVE_CURRENT, _TRIGGER, _LOG_DELTA, _CLOSE_ALL = _closing_statements()
_TRIGGER_ON_BRANCH = triggers.enqueue(on_branch=True)


def _record_commit(conn: Connection, part: Part, version: dict[str, Any]) -> bool:
    """Write the version row, move the current pointer, close the transaction, raise the
    build trigger (for the workers of the commit's branch) and log the file delta. False
    (and nothing kept: the caller raises) when the transaction was no longer OPEN.

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
    if conn.dialect.name == "postgresql" and part.branch_id == MAIN:
        return bool(conn.execute(_CLOSE_ALL, params).scalar_one() == 1)
    if conn.execute(_CLOSE, params).rowcount != 1:
        return False
    conn.execute(_INSERT_VERSION, params)
    if part.branch_id == MAIN:
        conn.execute(_MOVE_CURRENT, params)
        conn.execute(_TRIGGER, params)
    else:
        # A branch's commit moves the branch's head (the caller) and triggers only the
        # workers that watch that branch.
        conn.execute(_TRIGGER_ON_BRANCH, params | {"branch_id": part.branch_id})
    conn.execute(_LOG_DELTA, params)
    return True


def _version_row(v: Version, fields: list[dict[str, Any]], branch_id: str) -> dict[str, Any]:
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
        "branch_id": branch_id,
    }


def replaces_all(part: Part) -> bool:
    """A SNAPSHOT of the whole dataset (not of some partitions)."""
    return part.type == "SNAPSHOT" and part.replace is None


def lock(conn: Connection, parts: Sequence[Part]) -> None:
    """Hold each dataset of ``parts`` against other commits until the SQL transaction ends."""
    # SQLite already holds the database write lock (BEGIN IMMEDIATE); PostgreSQL
    # serialises commits per dataset on the dataset rows, in a fixed order.
    dataset_rows.lock(conn, [p.dataset_uuid for p in parts])


def commit_part(conn: Connection, part: Part, run_uuid: str | None) -> Version:
    """``part`` committed as its dataset's next version; raises when it can never be."""
    previous, newest = latest_and_newest(conn, part.dataset, part.dataset_uuid, part.branch_id)
    _check_base(part, previous)
    # Commit ids count every branch's commits: gap-free and total per dataset.
    commit_id = newest + 1
    now = datetime.now(UTC)
    if previous is not None and now <= previous.committed_at:
        # Keep commit times increasing so as-of reads agree with commit order.
        now = previous.committed_at + timedelta(microseconds=1)

    _check_partitioning(conn, part)
    head = _start_branch_rows(conn, part, previous)
    removed = _removals(conn, part, commit_id)
    touched = _partitions_touched(conn, part, removed)
    rows, size, count, digest = _totals(part, previous, removed)
    fields, arrow = _schema_after(part, previous, kept=count - len(part.adds))
    if touched is None:
        rows_hash = _rows_after(part, previous, removed)
    else:
        rows_hash = partition_hashes.record(
            conn, _partition_commit(part, previous, commit_id, touched, fields)
        )
    if part.adds:
        files_of.add(
            conn,
            [
                {
                    "dataset_uuid": part.dataset_uuid,
                    "path": e.path,
                    "bytes": e.bytes,
                    "rows": e.rows,
                    "added_commit_id": commit_id,
                    "partition_key": e.partition,
                    "branch_id": part.branch_id,
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
        run_uuid=run_uuid,
        facets={schemas.ARROW_SCHEMA_FACET: arrow} if arrow else {},
        partitions=touched.summary(part.runs) if touched is not None else None,
        branch=part.branch_name,
    )
    if not _record_commit(conn, part, _version_row(version, fields, part.branch_id)):
        state = txns.state_of(conn, part.txn_uuid)
        raise TransactionClosed(
            f"transaction {part.txn_uuid} on {part.dataset!r} was {str(state).lower()} "
            "(by `strata gc` after the grace period, or by another process); start a new "
            "transaction",
            transaction=part.txn_uuid,
            state=state,
        )
    if part.branch_id != MAIN:
        _move_branch_head(conn, part, version, previous, head)
    # Everything a read of the new row would return is known here: no query needed.
    return version


def _start_branch_rows(
    conn: Connection, part: Part, previous: Version | None
) -> branches.Head | None:
    """A branch's head of the dataset; on its first write there is none, and the branch's
    interval rows start as a copy of the rows of the version it starts from (rows, not
    files: a whole SNAPSHOT needs none)."""
    if part.branch_id == MAIN:
        return None
    head = branches.heads(conn, part.dataset_uuid, [part.branch_id]).get(part.branch_id)
    if head is None and previous is not None and not replaces_all(part):
        source = (stored_versions.branch_of(conn, previous.uuid), previous.commit_id)
        files_of.adopt(conn, part.dataset_uuid, source, part.branch_id, closed_by=0)
    return head


def _move_branch_head(
    conn: Connection,
    part: Part,
    version: Version,
    previous: Version | None,
    head: branches.Head | None,
) -> None:
    """The branch's head becomes ``version``. Its fork point is the parent's current
    version when the branch first wrote the dataset; a whole SNAPSHOT, which keeps
    nothing of what it started from, forks again from the parent's current version."""
    if head is None:
        fork = previous.uuid if previous is not None else None
    elif replaces_all(part):
        parent = branches.chain(conn, part.branch_id)[1]
        now = latest_version(conn, part.dataset, part.dataset_uuid, parent)
        fork = now.uuid if now is not None else None
    else:
        fork = head.fork_version_uuid
    moved = branches.Head(part.branch_id, part.dataset_uuid, version.uuid, fork)
    branches.set_head(conn, moved, version.committed_at)


def _check_partitioning(conn: Connection, part: Part) -> None:
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
        dataset_rows.set_partition_by(conn, part.dataset_uuid, part.partition_by)


def _partition_commit(
    part: Part,
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
        replaces_all=replaces_all(part),
        total=part.rows if part.rows is not None else sum_hashes(e.row_hash for e in part.adds),
    )


def _partitions_touched(
    conn: Connection, part: Part, removed: list[Any]
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


def _check_base(part: Part, previous: Version | None) -> None:
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
    part: Part, previous: Version | None, kept: int
) -> tuple[list[dict[str, Any]], str | None]:
    """The new version's columns and Arrow schema, checked against its parent's. A
    version that keeps ``kept`` containers of its parent keeps its schema: an APPEND, an
    UPDATE, and a SNAPSHOT of some partitions that leaves others (else its files would
    not read as one dataset)."""
    fields = part.schema_fields
    if fields is None:  # nothing written: the schema stays what it was
        fields = previous.schema_fields if previous else []
        arrow = previous.facets.get(schemas.ARROW_SCHEMA_FACET) if previous else None
        return fields, arrow
    arrow = part.arrow_schema
    keeps = part.type in ("APPEND", "UPDATE") or (part.replace is not None and kept > 0)
    if previous is not None and keeps:
        _require_kept_schema(part, previous.schema_fields, fields)
        fields, arrow = schemas.keep_nullable(previous.schema_fields, fields, arrow)
    return fields, arrow


def _require_kept_schema(
    part: Part, before: list[dict[str, Any]], fields: list[dict[str, Any]]
) -> None:
    """Refuse frames whose columns or types differ from those of the files kept."""
    if part.replace is None:
        schemas.require_compatible(part.dataset, before, fields, part.type)
        return
    if schemas.compatible(before, fields):
        return
    raise SchemaMismatch(
        f"this SNAPSHOT of some partitions of {part.dataset!r} keeps the others, whose "
        "schema differs from the frames written.\n"
        f"  dataset schema: {schemas.render(before)}\n"
        f"  written schema: {schemas.render(fields)}\n"
        "Write frames with the dataset's columns and types, or replace every partition "
        "to change its schema (a SNAPSHOT without partitions=, or a build of them all).",
        dataset=part.dataset,
        current=before,
        written=fields,
    )


def _totals(part: Part, previous: Version | None, removed: list[Any]) -> tuple[int, int, int, int]:
    """Rows, bytes, files and the content hash's sum, from the parent's and the delta."""
    rows = sum(e.rows for e in part.adds)
    size = sum(e.bytes for e in part.adds)
    count = len(part.adds)
    # Additive set hash: a version's hash follows from its parent's and the delta alone.
    digest = sum(_file_digest(e.path, e.bytes, e.rows) for e in part.adds)
    if previous is not None and not replaces_all(part):
        rows += previous.row_count - sum(r.rows for r in removed)
        size += previous.byte_count - sum(r.bytes for r in removed)
        count += previous.file_count - len(removed)
        digest += int(previous.content_hash, 16) - sum(
            _file_digest(r.path, r.bytes, r.rows) for r in removed
        )
    return rows, size, count, digest


def _rows_after(part: Part, previous: Version | None, removed: list[Any]) -> RowHash | None:
    """The row hash of the version this commit makes: a SNAPSHOT's own writes'; an
    APPEND's (or an UPDATE's that removes nothing) its parent's plus its writes'.

    None when unknown: files were removed (their rows' hashes are not kept per file),
    the parent's is unknown, or engines were mixed. The version's data fingerprint is
    then None too, and a comparison with it must count as "different"."""
    if replaces_all(part) or part.rows is None:
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


def _removals(conn: Connection, part: Part, commit_id: int) -> list[Any]:
    """Mark removed files in the interval index; returns their rows."""
    chosen: dict[str, Any] = {}  # none: a whole SNAPSHOT removes every live file
    if part.type == "SNAPSHOT":
        if part.replace is not None:
            inside = partitions.Filters(part.partition_by or [], part.replace)
            held = partition_index.live_counts(conn, part.dataset_uuid)
            chosen["keys"] = sorted(k for k in held if inside.holds(k))
    elif part.removes:
        chosen["paths"] = part.removes
    else:
        if part.type == "DELETE":
            raise InvalidArgument(
                f"DELETE on {part.dataset!r} removes no files; call remove(path, ...) with "
                "paths from Lake.files()",
                dataset=part.dataset,
            )
        return []
    rows = files_of.live(conn, part.dataset_uuid, branch=part.branch_id, **chosen)
    missing = sorted(set(part.removes) - {r.path for r in rows})
    if missing:
        raise InvalidArgument(
            f"cannot remove {missing[:5]} from {part.dataset!r}: not in its latest version; "
            "list current files with Lake.files()",
            dataset=part.dataset,
            paths=missing,
        )
    if rows:
        files_of.mark_removed(conn, part.dataset_uuid, commit_id, branch=part.branch_id, **chosen)
    return rows
