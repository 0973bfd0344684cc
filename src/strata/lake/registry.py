"""Read-side queries over lake datasets: which versions exist and which files make each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from strata.errors import InvalidArgument, NotFound, PurgedVersion
from strata.lake.partition_index import summary_dicts
from strata.lake.storage import FileEntry
from strata.store.bulk import chunks
from strata.store.owners import branches as stored_branches
from strata.store.owners.branches import MAIN
from strata.store.owners.datasets import files as files_of
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import transactions as txns
from strata.store.owners.datasets import versions as stored_versions

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()


@dataclass(frozen=True)
class DatasetInfo:
    uuid: str
    namespace: str
    name: str
    latest_commit_id: int | None
    row_count: int | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Version:
    """One committed version of a lake dataset.

    ``data_fingerprint`` depends on the version's rows and columns only (not on its files,
    partitioning or row order; see :mod:`strata.lake.rowhash`). It is None when unknown
    (the commit removed files, or mixed engines' writes): a comparison with an unknown
    fingerprint must count as "different". ``row_hash`` is the encoded row-hash sum the
    fingerprint is made from, which the next APPEND carries forward.
    """

    dataset: str
    dataset_uuid: str
    uuid: str
    commit_id: int
    committed_at: datetime
    type: str
    row_count: int
    byte_count: int
    file_count: int
    content_hash: str
    schema_fields: list[dict[str, Any]]
    transaction_uuid: str | None
    run_uuid: str | None
    facets: dict[str, Any]
    data_fingerprint: str | None = None
    row_hash: str | None = None
    # A partitioned dataset's: the key texts this version added, appended to, replaced
    # and removed (see :mod:`strata.lake.partition_index`).
    partitions: dict[str, Any] | None = None
    # Retention purged it (when, and by which policy): its catalog entry stays, its data
    # cannot be read.
    purged_at: datetime | None = None
    purged_by: str | None = None
    # The branch it belongs to (a merge moves it to the branch it was merged into).
    branch: str = MAIN

    def to_dict(self) -> dict[str, Any]:
        skip = ("facets", "row_hash", "partitions")
        out = {k: v for k, v in self.__dict__.items() if k not in skip}
        out["committed_at"] = self.committed_at.isoformat()
        out["purged_at"] = self.purged_at.isoformat() if self.purged_at else None
        if self.partitions is not None:
            out["partitions"] = summary_dicts(self.partitions)
        return out


def find_dataset(conn: Connection, namespace: str, name: str) -> RowMapping | None:
    return (
        conn.execute(
            sa.select(_DATASETS).where(_DATASETS.c.namespace == namespace, _DATASETS.c.name == name)
        )
        .mappings()
        .first()
    )


def require_lake_dataset(conn: Connection, namespace: str, name: str) -> RowMapping:
    row = find_dataset(conn, namespace, name)
    if row is None or not row["is_lake"] or row["deleted_at"] is not None:
        raise NotFound(
            f"dataset {name!r} does not exist in namespace {namespace!r}; list datasets with "
            "`strata datasets` or create it with a transaction",
            dataset=name,
            namespace=namespace,
        )
    return row


def latest_commit_id(conn: Connection, dataset_uuid: str) -> int:
    """The newest commit id of a dataset, 0 when it has none."""
    value = conn.execute(
        sa.select(sa.func.max(_VERSIONS.c.commit_id)).where(
            _VERSIONS.c.dataset_uuid == dataset_uuid
        )
    ).scalar()
    return int(value or 0)


def latest_version(
    conn: Connection, name: str, dataset_uuid: str, branch_id: str = MAIN
) -> Version | None:
    """The current version of a known dataset on a branch, or None: the branch's own
    head, else its parent's, up to ``main``'s newest commit (one indexed query)."""
    return latest_and_newest(conn, name, dataset_uuid, branch_id)[0]


def latest_and_newest(
    conn: Connection, name: str, dataset_uuid: str, branch_id: str = MAIN
) -> tuple[Version | None, int]:
    """:func:`latest_version`, and the dataset's newest commit id on any branch (0: none):
    on main, one statement."""
    if branch_id != MAIN:
        parents = stored_branches.chain(conn, branch_id)
        heads = stored_branches.heads(conn, dataset_uuid, parents)
        held = next((heads[b] for b in parents if b in heads), None)
        if held is not None:
            found = version_by_uuid(conn, name, held.version_uuid)
            return found, latest_commit_id(conn, dataset_uuid)
    row = conn.execute(_LATEST, {"dataset_uuid": dataset_uuid}).mappings().first()
    if row is None:
        return None, latest_commit_id(conn, dataset_uuid)
    return _to_version(name, row), int(row["newest_commit_id"])


def version_by_uuid(conn: Connection, name: str, uuid: str) -> Version | None:
    row = conn.execute(_BY_UUID, {"uuid": uuid}).mappings().first()
    return _to_version(name, row) if row is not None else None


_BRANCHES = stored_branches.relation()


def _version_query(on_main: bool = False) -> sa.Select[Any]:
    """Versions with their transaction's type and their branch's name (``on_main``: of
    main's versions only, whose branch needs no lookup)."""
    t = txns.relation()
    joined = _VERSIONS.outerjoin(t, t.c.uuid == _VERSIONS.c.transaction_uuid)
    if on_main:
        branch: Any = sa.literal(MAIN)
    else:
        branch = sa.func.coalesce(_BRANCHES.c.name, _VERSIONS.c.branch_id)
        joined = joined.outerjoin(_BRANCHES, _BRANCHES.c.id == _VERSIONS.c.branch_id)
    return sa.select(
        _VERSIONS,
        sa.func.coalesce(t.c.type, sa.literal("EXTERNAL")).label("txn_type"),
        branch.label("branch_name"),
    ).select_from(joined)


def _newest_commit() -> Any:
    """The dataset's newest commit id on any branch (what the next commit follows)."""
    dv = stored_versions.relation("newest")
    return (
        sa.select(sa.func.max(dv.c.commit_id))
        .where(dv.c.dataset_uuid == sa.bindparam("dataset_uuid"))
        .scalar_subquery()
    )


# Built once: every transaction start and commit runs it; the commit reads the newest
# commit id of any branch in the same statement.
_LATEST = (
    _version_query(on_main=True)
    .add_columns(_newest_commit().label("newest_commit_id"))
    .where(
        _VERSIONS.c.dataset_uuid == sa.bindparam("dataset_uuid"),
        _VERSIONS.c.commit_id.is_not(None),
        _VERSIONS.c.branch_id == MAIN,
    )
    .order_by(_VERSIONS.c.commit_id.desc())
    .limit(1)
)
_BY_UUID = _version_query().where(_VERSIONS.c.uuid == sa.bindparam("uuid"))


def _to_version(name: str, row: RowMapping) -> Version:
    return Version(
        dataset=name,
        dataset_uuid=row["dataset_uuid"],
        uuid=row["uuid"],
        commit_id=int(row["commit_id"]),
        committed_at=row["created_at"],
        type=row["txn_type"],
        row_count=int(row["row_count"] or 0),
        byte_count=int(row["byte_count"] or 0),
        file_count=int(row["file_count"] or 0),
        content_hash=row["content_hash"] or "",
        schema_fields=list(row["schema_fields"] or []),
        transaction_uuid=row["transaction_uuid"],
        run_uuid=row["run_uuid"],
        facets=dict(row["facets"] or {}),
        data_fingerprint=row["data_fingerprint"],
        row_hash=row["row_hash"],
        partitions=row["partitions"],
        purged_at=row["purged_at"],
        purged_by=row["purged_by"],
        branch=row["branch_name"],
    )


def refuse_purged(v: Version) -> Version:
    """``v``, if its data can still be read; a purged version is one clear error naming
    when, by which policy, and where its history remains."""
    if v.purged_at is None:
        return v
    ref = f"{v.dataset}@{v.commit_id}"
    raise PurgedVersion(
        f"{ref} was purged on {v.purged_at.isoformat(timespec='seconds')} by retention "
        f"policy {v.purged_by}; its history remains (strata trace {ref}); read a version "
        f"that is kept (strata history {v.dataset})",
        dataset=v.dataset,
        commit_id=v.commit_id,
        purged_at=v.purged_at.isoformat(),
        policy=v.purged_by,
    )


MAX_COMMIT_ID = 2**63 - 1


def in_utc(as_of: datetime) -> datetime:
    """``as_of`` in UTC; a naive time, or one whose UTC falls outside years 1 to 9999,
    is refused naming the value."""
    if as_of.tzinfo is None:
        raise InvalidArgument(
            f"as_of {as_of.isoformat()!r} has no time zone; pass an aware datetime "
            "(e.g. 2026-01-31T12:00:00+00:00)",
            as_of=as_of.isoformat(),
        )
    try:
        return as_of.astimezone(UTC)
    except OverflowError as exc:
        raise InvalidArgument(
            f"as_of {as_of.isoformat()!r} is outside years 1 to 9999 in UTC; pass a time "
            "in that range",
            as_of=as_of.isoformat(),
        ) from exc


def resolve_version(
    conn: Connection,
    namespace: str,
    name: str,
    *,
    version: int | None = None,
    as_of: datetime | None = None,
    branch_id: str = MAIN,
) -> Version:
    """The latest version, version ``N``, or the version current at ``as_of``; the
    latest and ``as_of`` are ``branch_id``'s (a version N is the same on every branch)."""
    ds = require_lake_dataset(conn, namespace, name)
    if version is not None and as_of is not None:
        raise InvalidArgument("pass either version or as_of, not both")
    if version is None and as_of is None:
        found = latest_version(conn, name, ds["uuid"], branch_id)
        if found is not None:
            return found
    # A commit id beyond a 64-bit integer cannot be stored, so no such version exists
    # (and the drivers refuse to bind it).
    elif version is None or 0 <= version <= MAX_COMMIT_ID:
        row = _version_at(conn, ds["uuid"], version, as_of, branch_id)
        if row is not None:
            return _to_version(name, row)
    latest = latest_commit_id(conn, ds["uuid"])
    if latest == 0:
        raise NotFound(
            f"dataset {name!r} has no committed version yet; commit a transaction first",
            dataset=name,
        )
    if version is not None:
        raise NotFound(
            f"dataset {name!r} has no version {version}: its versions are 1 to {latest}; "
            f"see `strata versions {name}`",
            dataset=name,
            version=version,
            latest=latest,
        )
    branch = _branch_name(conn, branch_id)
    if as_of is None:
        raise NotFound(
            f"dataset {name!r} has no version on branch {branch!r}: it was written only on "
            f"other branches; see `strata versions {name}` for where each version lives",
            dataset=name,
            branch=branch,
        )
    first = resolve_version(conn, namespace, name, version=1)
    if branch_id != MAIN:
        raise NotFound(
            f"dataset {name!r} had no version on branch {branch!r} at {as_of.isoformat()}; "
            f"its first version was committed at {first.committed_at.isoformat()}",
            dataset=name,
            branch=branch,
            as_of=as_of.isoformat(),
        )
    raise NotFound(
        f"dataset {name!r} had no version at {as_of.isoformat()}; its first version was "
        f"committed at {first.committed_at.isoformat()}",
        dataset=name,
        as_of=as_of.isoformat(),
    )


def _branch_name(conn: Connection, branch_id: str) -> str:
    found = stored_branches.by_ids(conn, [branch_id]).get(branch_id)
    return found.name if found is not None else branch_id


def _version_at(
    conn: Connection, dataset_uuid: str, version: int | None, as_of: datetime | None, branch: str
) -> RowMapping | None:
    """Version ``version``, else the version ``branch`` held at ``as_of``: its own newest
    then (a version merged into it counts from its merge), else its parent's."""
    dv = _VERSIONS.c
    q = _version_query().where(dv.dataset_uuid == dataset_uuid, dv.commit_id.is_not(None))
    # Each shape is written so that even a generic (prepared) plan is an index point
    # lookup: an ORDER BY ... LIMIT on an exact commit id made PostgreSQL walk the index.
    if version is not None:
        return conn.execute(q.where(dv.commit_id == version)).mappings().first()
    assert as_of is not None
    at = in_utc(as_of)
    # Commit times increase with commit ids, so the time index finds the version.
    q = q.where(dv.created_at <= at, sa.or_(dv.merged_at.is_(None), dv.merged_at <= at))
    q = q.order_by(dv.created_at.desc()).limit(1)
    parents = stored_branches.chain(conn, branch) if branch != MAIN else [MAIN]
    for b in parents:
        row = conn.execute(q.where(dv.branch_id == b)).mappings().first()
        if row is not None:
            return row
    return None


_FILES = files_of.relation()


def version_files(conn: Connection, dataset_uuid: str, commit_id: int) -> list[FileEntry]:
    """The containers of one version: one indexed range query, no replay of history."""
    return _live_files(
        conn,
        dataset_uuid,
        commit_id,
        _FILES.c.added_commit_id <= commit_id,
        f"version {commit_id} can no longer be read",
    )


def partition_files(
    conn: Connection, dataset_uuid: str, commit_id: int, keys: Sequence[str]
) -> list[FileEntry]:
    """The containers of the partitions ``keys`` in one version: only theirs are read,
    whatever the number of other partitions."""
    f = _FILES.c
    out: list[FileEntry] = []
    for part in chunks(sorted(keys), 500):
        out += _live_files(
            conn,
            dataset_uuid,
            commit_id,
            sa.and_(f.added_commit_id <= commit_id, f.partition_key.in_(part)),
            f"partitions of version {commit_id} can no longer be read",
        )
    return out


def added_files(conn: Connection, dataset_uuid: str, after: int, upto: int) -> list[FileEntry]:
    """The containers versions ``after + 1`` to ``upto`` added and ``upto`` still holds:
    the rows appended in between, when every one of those versions is an APPEND. One
    range query on the added-commit index, whatever the number of earlier versions."""
    added = _FILES.c.added_commit_id
    return _live_files(
        conn,
        dataset_uuid,
        upto,
        sa.and_(added > after, added <= upto),
        f"the rows versions {after + 1} to {upto} added can no longer be read",
    )


def _live_files(
    conn: Connection, dataset_uuid: str, at: int, added: sa.ColumnElement[bool], what: str
) -> list[FileEntry]:
    """The containers ``added`` selects that version ``at`` holds; PurgedVersion (saying
    ``what``) if retention purged any of them."""
    f = _FILES.c
    # The rows of the branch the version belongs to: each branch keeps its own.
    branch = stored_versions.branch_at(dataset_uuid, at)
    rows = conn.execute(
        sa.select(f.path, f.bytes, f.rows, f.purged_at, f.partition_key, f.archive_uri)
        .where(
            f.dataset_uuid == dataset_uuid,
            f.branch_id == branch,
            added,
            sa.or_(f.removed_commit_id.is_(None), f.removed_commit_id > at),
        )
        .order_by(f.added_commit_id, f.path)
    ).all()
    purged = [r.path for r in rows if r.purged_at is not None]
    if purged:
        raise PurgedVersion(
            f"{what}: {len(purged)} of the containers were purged by retention; read a "
            "newer version",
            commit_id=at,
        )
    # Unpacked, not read by name: a row's attributes cost a version of 10,000 files
    # tens of milliseconds.
    listed = cast("list[tuple[str, int, int, Any, str | None, str | None]]", rows)
    return [
        FileEntry(path, int(size), int(count), key, archive=archive)
        for path, size, count, _, key, archive in listed
    ]


@dataclass(frozen=True)
class Moved:
    """What happened to a dataset between two of its versions."""

    commits: int
    rows: int  # rows added, when every version between was an APPEND
    # The first version that was not an APPEND, and its type ("PURGED": retention purged it).
    rewrite: tuple[int, str] | None


def moves(conn: Connection, spans: list[tuple[str, int, int]]) -> dict[tuple[str, int, int], Moved]:
    """For each ``(dataset uuid, after, upto)``: the versions after ``after`` up to
    ``upto``, summed; one statement for every span (most are one or two versions)."""
    out: dict[tuple[str, int, int], Moved] = {}
    wanted = [x for x in dict.fromkeys(spans) if x[1] < x[2]]
    txn = txns.relation()
    dv, t = _VERSIONS.c, txn.c
    for start in range(0, len(wanted), 200):
        batch = wanted[start : start + 200]
        where = sa.or_(
            *[
                sa.and_(dv.dataset_uuid == d, dv.commit_id >= a, dv.commit_id <= b)
                for d, a, b in batch
            ]
        )
        rows = conn.execute(
            sa.select(
                dv.dataset_uuid, dv.commit_id, dv.row_count, t.type, dv.purged_at, dv.merged_at
            )
            .select_from(_VERSIONS.outerjoin(txn, t.uuid == dv.transaction_uuid))
            .where(where)
            .order_by(dv.dataset_uuid, dv.commit_id)
        ).all()
        by_dataset: dict[str, list[Any]] = {}
        for r in rows:
            by_dataset.setdefault(r.dataset_uuid, []).append(r)
        for d, a, b in batch:
            span = [r for r in by_dataset.get(d, ()) if a <= r.commit_id <= b]
            out[(d, a, b)] = _moved(span, a)
    return out


def _moved(span: list[Any], after: int) -> Moved:
    base = next((r for r in span if r.commit_id == after), None)
    later = [r for r in span if r.commit_id > after]
    rewrite = next(
        ((int(r.commit_id), r.type or "EXTERNAL") for r in later if r.type != "APPEND"), None
    )
    if base is None and after > 0:
        rewrite = rewrite or (after, "MISSING")
    # A merged version stands for every commit of its branch since the fork: its own
    # type says nothing of theirs, so such a range is read whole.
    merged = next((int(r.commit_id) for r in later if r.merged_at is not None), None)
    if merged is not None:
        rewrite = rewrite or (merged, "MERGED")
    # Rows retention purged cannot be read as added rows: such a range is read whole.
    purged = next((int(r.commit_id) for r in later if r.purged_at is not None), None)
    if purged is not None:
        rewrite = rewrite or (purged, "PURGED")
    rows = (int(later[-1].row_count) - (int(base.row_count) if base else 0)) if later else 0
    return Moved(len(later), rows if rewrite is None else 0, rewrite)


def list_datasets(conn: Connection, namespace: str, branch_id: str = MAIN) -> list[DatasetInfo]:
    """Lake datasets with a committed version on ``branch_id`` (its own or its parents');
    ``updated_at`` is the current version's commit time. A dataset named by a build that
    failed before its first commit is lineage's (a Marquez client sees it) but holds no
    data, so it is not listed; reading a dataset, which lineage records, does not make it
    "updated"."""
    on_main = _list_main(conn, namespace)
    if branch_id == MAIN:
        return on_main
    held = stored_branches.overlay(conn, branch_id)
    dv = _VERSIONS.c
    rows = conn.execute(
        sa.select(_DATASETS.c.uuid, _DATASETS.c.name, _DATASETS.c.created_at)
        .add_columns(dv.commit_id, dv.row_count, dv.created_at.label("updated_at"))
        .select_from(_DATASETS.join(_VERSIONS, dv.dataset_uuid == _DATASETS.c.uuid))
        .where(
            _DATASETS.c.namespace == namespace,
            _DATASETS.c.deleted_at.is_(None),
            dv.uuid.in_(sorted(held.values()) or [""]),
        )
    ).all()
    own = {
        r.uuid: DatasetInfo(
            r.uuid, namespace, r.name, int(r.commit_id), r.row_count, r.created_at, r.updated_at
        )
        for r in rows
    }
    merged = {d.uuid: d for d in on_main} | own
    return sorted(merged.values(), key=lambda d: d.name)


def _list_main(conn: Connection, namespace: str) -> list[DatasetInfo]:
    dv = _VERSIONS.c
    latest = (
        sa.select(dv.dataset_uuid, sa.func.max(dv.commit_id).label("latest"))
        .where(dv.branch_id == MAIN)
        .group_by(dv.dataset_uuid)
        .subquery()
    )
    current = stored_versions.relation("cur")
    q = (
        sa.select(
            _DATASETS.c.uuid,
            _DATASETS.c.namespace,
            _DATASETS.c.name,
            _DATASETS.c.created_at,
            current.c.created_at.label("updated_at"),
            latest.c.latest,
            current.c.row_count,
        )
        .select_from(
            _DATASETS.join(latest, latest.c.dataset_uuid == _DATASETS.c.uuid).join(
                current, current.c.uuid == _DATASETS.c.current_version_uuid
            )
        )
        .where(
            _DATASETS.c.namespace == namespace,
            _DATASETS.c.is_lake.is_(True),
            _DATASETS.c.deleted_at.is_(None),
        )
        .order_by(_DATASETS.c.name)
    )
    return [
        DatasetInfo(
            uuid=r.uuid,
            namespace=r.namespace,
            name=r.name,
            latest_commit_id=int(r.latest) if r.latest is not None else None,
            row_count=int(r.row_count) if r.row_count is not None else None,
            created_at=r.created_at,
            updated_at=r.updated_at,
        )
        for r in conn.execute(q)
    ]


def list_versions(conn: Connection, namespace: str, name: str) -> list[Version]:
    ds = require_lake_dataset(conn, namespace, name)
    rows = conn.execute(
        _version_query()
        .where(
            _VERSIONS.c.dataset_uuid == ds["uuid"],
            _VERSIONS.c.commit_id.is_not(None),
        )
        .order_by(_VERSIONS.c.commit_id)
    ).mappings()
    return [_to_version(name, r) for r in rows]
