"""The owner of ``build_triggers``, the commit outbox: enqueues, claims, renewals,
retries and completions.

Each lake commit writes a trigger row in the commit's own SQL transaction
(:func:`enqueue`, the statement :mod:`strata.lake.commit` runs). A
worker claims the oldest pending trigger of its namespace (with the other pending
triggers of the same dataset, which one build answers). A claim is a lease: renewed while
the worker works, and taken again by another worker once it expires. A trigger is done
only once the builds it caused are recorded; a build that failed for a reason that can
pass puts it back with a time before which it is not tried again. On PostgreSQL claims
skip rows another worker has locked (``FOR UPDATE SKIP LOCKED``); on SQLite the write
lock serialises them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.store import schema as s
from strata.store.engine import write_tx
from strata.store.owners.datasets import rows as dataset_rows

_DATASETS = dataset_rows.relation()

MAX_BACKOFF_SECONDS = 300.0
_PAIRS_PER_STATEMENT = 500


@dataclass(frozen=True)
class Claim:
    """Pending triggers of one dataset, claimed together."""

    ids: tuple[int, ...]
    dataset: str
    commit_id: int
    retaken: bool  # one of them was claimed before by a worker whose claim ran out
    attempts: int  # the most any of them was tried before


def enqueue(*, returning: bool = False, on_branch: bool = False) -> Any:
    """The insert of one trigger, for the commit to run inside its own transaction: the
    dataset's (``ds_uuid``) new commit (``cid``) at ``now``, all bind parameters, on
    main or, ``on_branch``, on the branch ``branch_id``; ``returning`` the new row's id,
    to run as a CTE of the commit's one statement."""
    bt = s.build_triggers
    stmt = bt.insert().values(
        dataset_uuid=sa.bindparam("ds_uuid"),
        commit_id=sa.bindparam("cid"),
        created_at=sa.bindparam("now"),
    )
    if on_branch:
        stmt = stmt.values(branch_id=sa.bindparam("branch_id"))
    return stmt.returning(bt.c.id) if returning else stmt


def backoff(attempts: int) -> float:
    """Seconds before a trigger tried ``attempts`` times is tried again."""
    return float(min(2 ** max(attempts - 1, 0), MAX_BACKOFF_SECONDS))


def _pending(now: datetime, expired: datetime, waiting: bool) -> Any:
    bt = s.build_triggers
    ready = [
        bt.c.done_at.is_(None),
        sa.or_(bt.c.claimed_at.is_(None), bt.c.claimed_at < expired),
    ]
    if not waiting:
        ready.append(sa.or_(bt.c.retry_at.is_(None), bt.c.retry_at <= now))
    return sa.and_(*ready)


def _locked(conn: Connection, query: sa.Select[Any]) -> sa.Select[Any]:
    if conn.dialect.name == "postgresql":
        return query.with_for_update(skip_locked=True, of=s.build_triggers)
    return query


def claim(
    engine: Engine,
    namespace: str,
    holder: str,
    lease: float,
    *,
    skip: Collection[int] = (),
    waiting: bool = False,
    branch_id: str = "main",
) -> Claim | None:
    """Claim the oldest pending trigger of ``namespace`` raised on ``branch_id`` and its
    dataset's other pending ones; ``waiting`` also takes triggers still waiting out a
    retry's backoff."""
    bt, d = s.build_triggers, _DATASETS
    now = datetime.now(UTC)
    pending = sa.and_(
        _pending(now, now - timedelta(seconds=lease), waiting), bt.c.branch_id == branch_id
    )
    if skip:
        pending = sa.and_(pending, bt.c.id.not_in(list(skip)))
    with write_tx(engine) as conn:
        head = conn.execute(
            _locked(
                conn,
                sa.select(bt.c.id, bt.c.dataset_uuid)
                .join(d, d.c.uuid == bt.c.dataset_uuid)
                .where(d.c.namespace == namespace, pending),
            )
            .order_by(bt.c.id)
            .limit(1)
        ).first()
        if head is None:
            return None
        rows = conn.execute(
            _locked(
                conn,
                sa.select(bt.c.id, bt.c.commit_id, bt.c.claimed_at, bt.c.attempts, d.c.name)
                .join(d, d.c.uuid == bt.c.dataset_uuid)
                .where(bt.c.dataset_uuid == head.dataset_uuid, pending),
            ).order_by(bt.c.id)
        ).all()
        ids = tuple(int(r.id) for r in rows)
        conn.execute(bt.update().where(bt.c.id.in_(ids)).values(claimed_at=now, claimed_by=holder))
    return Claim(
        ids,
        str(rows[0].name),
        max(int(r.commit_id) for r in rows),
        retaken=any(r.claimed_at is not None for r in rows),
        attempts=max(int(r.attempts) for r in rows),
    )


def renew(engine: Engine, claimed: Claim, holder: str) -> None:
    bt = s.build_triggers
    with write_tx(engine) as conn:
        conn.execute(
            bt.update()
            .where(bt.c.id.in_(claimed.ids), bt.c.claimed_by == holder)
            .values(claimed_at=datetime.now(UTC))
        )


def finish(engine: Engine, claimed: Claim, holder: str, error: str | None) -> None:
    """The claimed triggers are done: their builds are recorded (``error`` if one failed)."""
    bt = s.build_triggers
    with write_tx(engine) as conn:
        conn.execute(
            bt.update()
            .where(bt.c.id.in_(claimed.ids), bt.c.claimed_by == holder)
            .values(done_at=datetime.now(UTC), error=error)
        )


def retry_later(engine: Engine, claimed: Claim, holder: str, error: str) -> float:
    """Put the claimed triggers back, tried again after a backoff; its seconds."""
    bt = s.build_triggers
    wait = backoff(claimed.attempts + 1)
    now = datetime.now(UTC)
    with write_tx(engine) as conn:
        conn.execute(
            bt.update()
            .where(bt.c.id.in_(claimed.ids), bt.c.claimed_by == holder)
            .values(
                claimed_at=None,
                claimed_by=None,
                attempts=bt.c.attempts + 1,
                retry_at=now + timedelta(seconds=wait),
                error=error,
            )
        )
    return wait


def drop_branch(conn: Connection, branch_id: str, now: datetime, why: str) -> None:
    """The pending triggers of a branch that is gone are done, with ``why``: no worker
    builds a deleted branch."""
    bt = s.build_triggers
    conn.execute(
        bt.update()
        .where(bt.c.branch_id == branch_id, bt.c.done_at.is_(None))
        .values(done_at=now, error=why)
    )


def mark_handled(
    engine: Engine, namespace: str, commits: Iterable[tuple[str, int]], by: str
) -> int:
    """Triggers of ``commits`` (dataset, commit id) that no worker has claimed are done:
    the build that made them already built everything that reads them. How many."""
    bt, d = s.build_triggers, _DATASETS
    by_dataset: dict[str, set[int]] = {}
    for name, commit_id in commits:
        by_dataset.setdefault(name, set()).add(commit_id)
    if not by_dataset:
        return 0
    done = 0
    with write_tx(engine) as conn:
        uuids: dict[str, str] = dict(
            conn.execute(
                sa.select(d.c.name, d.c.uuid).where(
                    d.c.namespace == namespace, d.c.name.in_(sorted(by_dataset))
                )
            ).all()
        )
        pairs = sorted((uuid, c) for name, uuid in uuids.items() for c in by_dataset[name])
        # A few statements, not one per commit: a forced build of thousands of
        # transforms commits a version each. Chunks stay under SQLite's parameter limit.
        for start in range(0, len(pairs), _PAIRS_PER_STATEMENT):
            chunk = pairs[start : start + _PAIRS_PER_STATEMENT]
            done += conn.execute(
                bt.update()
                .where(
                    sa.tuple_(bt.c.dataset_uuid, bt.c.commit_id).in_(chunk),
                    bt.c.done_at.is_(None),
                    bt.c.claimed_at.is_(None),
                )
                .values(done_at=datetime.now(UTC), claimed_by=by)
            ).rowcount
    return done
