"""Branches: names with a parent to fall back to, made and dropped without copying.

A branch holds its own current version of each dataset it wrote (a head, with the
parent's version it forked from); a read of any other dataset falls back to the parent,
recursively, up to ``main``. Creating a branch writes one row whatever the number of
datasets; deleting one drops its heads and keeps its versions in history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.engine import Connection, Engine

from strata.errors import BranchExists, BranchRefused, InvalidName, NotFound
from strata.ids import new_id
from strata.store.engine import read_tx, write_tx
from strata.store.owners import branches as stored
from strata.store.owners import triggers
from strata.store.owners.branches import MAIN, Branch

# Letters, digits and . _ - /, starting with a letter or digit (the API declares it).
# Each "/"-separated part starts with a letter or digit: no empty, "." or ".." part, which
# a client would fold away in a URL (DELETE …/branches/a/../b deletes branch b).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$"
NAME_MAX = 100
_NAME = re.compile(NAME_PATTERN)

__all__ = ["MAIN", "Branch", "BranchInfo", "create", "delete", "listed", "require", "validate"]


def validate(name: object) -> str:
    """``name`` if it is a valid branch name, else :class:`InvalidName` naming it."""
    text = name if isinstance(name, str) else repr(name)
    if not isinstance(name, str) or len(name) > NAME_MAX or not _NAME.fullmatch(name):
        raise InvalidName(
            f"invalid branch name {text[:120]!r}: use 1 to {NAME_MAX} letters, digits, '.', "
            "'_', '-' or '/', each part between '/' starting with a letter or digit (e.g. "
            "dev or feature/orders)",
            branch=text[:120],
        )
    return name


def require(conn: Connection, name: str) -> Branch:
    """The live branch ``name``; NotFound names the branches there are."""
    if name == MAIN:  # always there: no query on the path every main read takes
        return stored.ROOT
    try:
        found = stored.named(conn, validate(name))
    except InvalidName as exc:  # a name that cannot exist names no branch
        raise NotFound(
            f"branch {name[:120]!r} does not exist: {exc.message}", branch=name[:120]
        ) from exc
    if found is None:
        known = ", ".join(b.name for b in stored.live(conn))
        raise NotFound(
            f"branch {name!r} does not exist (branches: {known}); create it with "
            f"`strata branch create {name}`",
            branch=name,
        )
    return found


@dataclass(frozen=True)
class BranchInfo:
    """A branch as listed: its parent's name and how many datasets it wrote."""

    name: str
    parent: str | None
    created_at: datetime
    datasets: int | None  # None for main, whose datasets are the lake's own

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "parent": self.parent,
            "created_at": self.created_at.isoformat(),
            "datasets": self.datasets,
        }


def create(engine: Engine, name: str, parent: str = MAIN) -> BranchInfo:
    """Make branch ``name`` from ``parent``: one row, nothing copied."""
    validate(name)
    with write_tx(engine) as conn:
        base = require(conn, parent)
        if stored.named(conn, name) is not None:
            # main is never deleted (the root every branch falls back to): no hint to.
            hint = (
                "" if name == MAIN else f", or delete it first with `strata branch delete {name}`"
            )
            raise BranchExists(
                f"branch {name!r} already exists; pick another name{hint}", branch=name
            )
        made = Branch(new_id(), name, base.id, datetime.now(UTC))
        stored.create(conn, made)
    return BranchInfo(name, base.name, made.created_at, 0)


def listed(engine: Engine) -> list[BranchInfo]:
    """Every live branch, ``main`` first."""
    with read_tx(engine) as conn:
        live = stored.live(conn)
        names = {b.id: b.name for b in live}
        return [
            BranchInfo(
                b.name,
                names.get(b.parent_id) if b.parent_id else None,
                b.created_at,
                None if b.id == MAIN else len(stored.heads_of(conn, b.id)),
            )
            for b in live
        ]


def delete(engine: Engine, name: str) -> BranchInfo:
    """Drop branch ``name``'s pointers; its versions stay in history until retention."""
    if name == MAIN:
        raise BranchRefused(
            "branch 'main' cannot be deleted: it is the root every branch falls back to",
            branch=name,
        )
    with write_tx(engine) as conn:
        found = require(conn, name)
        stored.lock(conn, found.id)
        kids = stored.children(conn, found.id)
        if kids:
            raise BranchRefused(
                f"branch {name!r} has branches made from it ({', '.join(kids)}); delete "
                "those first",
                branch=name,
                children=kids,
            )
        wrote = len(stored.heads_of(conn, found.id))
        parent = stored.by_ids(conn, [found.parent_id] if found.parent_id else [])
        now = datetime.now(UTC)
        stored.delete(conn, found.id, now)
        triggers.drop_branch(conn, found.id, now, f"branch {name!r} was deleted")
    parent_name = parent[found.parent_id].name if found.parent_id in parent else None
    return BranchInfo(name, parent_name, found.created_at, wrote)
