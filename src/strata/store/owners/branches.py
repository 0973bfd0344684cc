"""The owner of ``branches`` and ``branch_heads``: each branch (a name with a parent to
fall back to) and, per dataset a branch wrote, its current version and fork point.

The lake creates, lists and deletes branches (:func:`create`, :func:`live`,
:func:`delete`), reads a branch's chain of parents (:func:`chain`), moves a branch's
current version when it commits or takes a merge (:func:`set_head`) and reads the heads
a read or a merge resolves (:func:`heads`, :func:`heads_of`). ``main`` is the root: its
current versions are the datasets' own (``datasets.current_version_uuid``), so it keeps
no heads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.selectable import NamedFromClause

from strata.store.bulk import insert_ignore, upsert
from strata.store.schema import branch_heads, branches

MAIN = "main"

_B = branches.c
_H = branch_heads.c


def relation(name: str = "branches") -> NamedFromClause:
    """The branches under ``name``, read-only, to select from or join."""
    return branches.alias(name)


@dataclass(frozen=True)
class Branch:
    id: str
    name: str
    parent_id: str | None
    created_at: datetime
    deleted_at: datetime | None = None


@dataclass(frozen=True)
class Head:
    """A branch's own current version of a dataset and the version it forked from (None:
    the parent had no version then)."""

    branch_id: str
    dataset_uuid: str
    version_uuid: str
    fork_version_uuid: str | None


def _branch(row: Any) -> Branch:
    return Branch(str(row.id), row.name, row.parent_id, row.created_at, row.deleted_at)


_COLUMNS = (_B.id, _B.name, _B.parent_id, _B.created_at, _B.deleted_at)


# The root every store has (migration 0027 writes its row; a store whose rows were
# cleared gets it back when a branch is next made from it).
ROOT = Branch(MAIN, MAIN, None, datetime(1970, 1, 1, tzinfo=UTC))


def create(conn: Connection, branch: Branch) -> None:
    if branch.parent_id == MAIN:
        row = {"id": MAIN, "name": MAIN, "parent_id": None, "created_at": ROOT.created_at}
        insert_ignore(conn, branches, row, ["id"])
    conn.execute(
        branches.insert().values(
            id=branch.id,
            name=branch.name,
            parent_id=branch.parent_id,
            created_at=branch.created_at,
        )
    )


def live(conn: Connection) -> list[Branch]:
    """Every branch not deleted, oldest first (``main`` first)."""
    q = sa.select(*_COLUMNS).where(_B.deleted_at.is_(None)).order_by(_B.created_at, _B.id)
    found = [_branch(r) for r in conn.execute(q)]
    return found if any(b.id == MAIN for b in found) else [ROOT, *found]


def named(conn: Connection, name: str) -> Branch | None:
    """The live branch called ``name``."""
    q = sa.select(*_COLUMNS).where(_B.name == name, _B.deleted_at.is_(None))
    row = conn.execute(q).first()
    if row is None:
        return ROOT if name == MAIN else None
    return _branch(row)


def by_ids(conn: Connection, ids: Sequence[str]) -> dict[str, Branch]:
    """The branches ``ids`` name, deleted ones too (their versions still name them)."""
    if not ids:
        return {}
    q = sa.select(*_COLUMNS).where(_B.id.in_(sorted(set(ids))))
    return {r[0]: _branch(r) for r in conn.execute(q)}


def chain(conn: Connection, branch_id: str) -> list[str]:
    """``branch_id`` and its parents up to ``main``, nearest first."""
    parents: dict[str, str | None] = {
        r.id: r.parent_id for r in conn.execute(sa.select(_B.id, _B.parent_id))
    }
    out = [branch_id]
    while (parent := parents.get(out[-1])) is not None and parent not in out:
        out.append(parent)
    return out


def live_ids() -> Any:
    """A subquery of the ids of every live branch."""
    return sa.select(_B.id).where(_B.deleted_at.is_(None)).scalar_subquery()


def children(conn: Connection, branch_id: str) -> list[str]:
    """The names of the live branches made from ``branch_id``."""
    q = sa.select(_B.name).where(_B.parent_id == branch_id, _B.deleted_at.is_(None))
    return sorted(conn.execute(q).scalars())


def delete(conn: Connection, branch_id: str, at: datetime) -> None:
    """Mark the branch deleted and drop its heads; its versions stay where they are."""
    conn.execute(branch_heads.delete().where(_H.branch_id == branch_id))
    conn.execute(branches.update().where(_B.id == branch_id).values(deleted_at=at))


def lock(conn: Connection, branch_id: str) -> None:
    """Hold the branch against a concurrent delete until the SQL transaction ends."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.select(_B.id).where(_B.id == branch_id).with_for_update()).all()


# --- heads ------------------------------------------------------------------------------


def _head(row: Any) -> Head:
    return Head(row.branch_id, row.dataset_uuid, row.version_uuid, row.fork_version_uuid)


_HEAD_COLUMNS = (_H.branch_id, _H.dataset_uuid, _H.version_uuid, _H.fork_version_uuid)


def heads(conn: Connection, dataset_uuid: str, branch_ids: Sequence[str]) -> dict[str, Head]:
    """The heads of one dataset on ``branch_ids``, by branch."""
    q = sa.select(*_HEAD_COLUMNS).where(
        _H.dataset_uuid == dataset_uuid, _H.branch_id.in_(list(branch_ids))
    )
    return {r[0]: _head(r) for r in conn.execute(q)}


def heads_of(conn: Connection, branch_id: str) -> list[Head]:
    """Every head of one branch: the datasets it wrote."""
    q = sa.select(*_HEAD_COLUMNS).where(_H.branch_id == branch_id).order_by(_H.dataset_uuid)
    return [_head(r) for r in conn.execute(q)]


def overlay(conn: Connection, branch_id: str) -> dict[str, str]:
    """``dataset uuid -> version uuid`` of every dataset ``branch_id`` or a parent of it
    (up to, not including, main) holds a head of, the nearest branch's winning: what the
    branch reads instead of main's current versions."""
    out: dict[str, str] = {}
    for b in reversed(chain(conn, branch_id)[:-1]):
        out |= {h.dataset_uuid: h.version_uuid for h in heads_of(conn, b)}
    return out


def set_head(conn: Connection, head: Head, at: datetime) -> None:
    """Make ``head`` the branch's current version of its dataset (and fork point)."""
    columns = ["branch_id", "dataset_uuid", "version_uuid", "fork_version_uuid", "updated_at"]
    conn.execute(
        upsert(conn, branch_heads, columns, ["branch_id", "dataset_uuid"]),
        {
            "branch_id": head.branch_id,
            "dataset_uuid": head.dataset_uuid,
            "version_uuid": head.version_uuid,
            "fork_version_uuid": head.fork_version_uuid,
            "updated_at": at,
        },
    )
