"""What a run said over its life: its state history and the inputFacets it sent about
the versions it read.

The only module that reads or writes ``run_states`` and ``run_input_facets``; the runs
themselves, their inputs and outputs join this owner next. The fold rewrites a run's
rows whole whenever its events change what they say, so every write here replaces a
run's rows rather than patching them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import bulk
from strata.store.schema import run_input_facets, run_states

_RS, _RIF = run_states, run_input_facets


@dataclass(frozen=True, slots=True)
class Transition:
    """A run entering ``state`` at ``at``, as the event ``event_uuid`` said."""

    uuid: str
    run_uuid: str
    state: str
    at: datetime
    event_uuid: str | None


@dataclass(frozen=True, slots=True)
class InputFacets:
    """The inputFacets a run sent about one input, filed under the version it read."""

    run_uuid: str
    dataset_version_uuid: str
    facets: dict[str, Any]
    sent_at: datetime


# --- writes -----------------------------------------------------------------------------


def replace_states(
    conn: Connection, runs: Sequence[str], transitions: Sequence[Transition]
) -> None:
    """Drop the state histories of ``runs``, then add ``transitions`` (of those runs or
    of runs with none yet)."""
    rows = [
        {
            "uuid": t.uuid,
            "run_uuid": t.run_uuid,
            "state": t.state,
            "transitioned_at": t.at,
            "event_uuid": t.event_uuid,
        }
        for t in transitions
    ]
    _replace(conn, _RS, runs, rows)


def replace_input_facets(
    conn: Connection, runs: Sequence[str], facets: Sequence[InputFacets]
) -> None:
    """Drop the inputFacets ``runs`` sent, then file ``facets`` (of those runs or of runs
    with none yet)."""
    rows = [
        {
            "run_uuid": f.run_uuid,
            "dataset_version_uuid": f.dataset_version_uuid,
            "facets": f.facets,
            "sent_at": f.sent_at,
        }
        for f in facets
    ]
    _replace(conn, _RIF, runs, rows)


def _replace(
    conn: Connection, table: sa.Table, runs: Sequence[str], rows: Sequence[dict[str, Any]]
) -> None:
    """Drop ``runs``' rows of ``table``, then insert ``rows`` (one statement each)."""
    bulk.delete_in(conn, table, "run_uuid", runs)
    if rows:
        bulk.execute_many(conn, bulk.cached(("insert", table.name), table.insert), rows)


def delete_said(conn: Connection, runs: Sequence[str]) -> None:
    """Drop what ``runs`` said (their state histories and inputFacets), before the runs go."""
    for table in (_RIF, _RS):
        conn.execute(table.delete().where(table.c.run_uuid.in_(runs)))


# --- reads ------------------------------------------------------------------------------


def state_history(conn: Connection, run_uuid: str) -> list[tuple[str, datetime]]:
    """(state, when) of a run's transitions, oldest first (``ix_run_states_run_time``)."""
    rows = conn.execute(
        sa.select(_RS.c.state, _RS.c.transitioned_at)
        .where(_RS.c.run_uuid == run_uuid)
        .order_by(_RS.c.transitioned_at, _RS.c.uuid)
    )
    return [(str(row.state), row.transitioned_at) for row in rows]


def readers_input_facets(
    conn: Connection, versions: Iterable[str], readers: int
) -> dict[str, dict[str, Any]]:
    """Version uuid -> the inputFacets its newest ``readers`` runs sent about it, a later
    reader's facet over an earlier one's of the same name (``ix_run_input_facets_version``)."""
    out: dict[str, dict[str, Any]] = {}
    for batch in bulk.chunks(sorted(set(versions))):
        rank = (
            sa.func.row_number()
            .over(partition_by=_RIF.c.dataset_version_uuid, order_by=_RIF.c.sent_at.desc())
            .label("rank")
        )
        newest = (
            sa.select(_RIF.c.dataset_version_uuid, _RIF.c.facets, _RIF.c.sent_at, rank)
            .where(_RIF.c.dataset_version_uuid.in_(batch))
            .subquery()
        )
        rows = conn.execute(
            sa.select(newest.c.dataset_version_uuid, newest.c.facets)
            .where(newest.c.rank <= readers)
            .order_by(newest.c.sent_at)
        ).all()
        for row in rows:
            if isinstance(row.facets, dict):
                out.setdefault(row.dataset_version_uuid, {}).update(row.facets)
    return out
