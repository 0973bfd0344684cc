"""Run inputs bound to dataset versions: each input binds the version named by its
``version`` facet, or else the candidate current at the run's first event time; when
there is none, a synthetic version stands in (``initial`` for an unnamed one, a
placeholder for a named one not seen yet), dated by the earliest run bound to it and
removed when none is. A run is bound again whenever what it binds may have moved
(:class:`Rebind`), so the bindings depend only on the set of events; the inputFacets a
run sent about an input are filed under the version bound (``run_input_facets``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata import ids
from strata.lineage.record import facets as fx
from strata.lineage.record import versions
from strata.lineage.record.fold import RunFold
from strata.store.bulk import (
    cached,
    chunks,
    one_of,
)
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.runs import inputs as bound
from strata.store.owners.runs import said as run_said

_VERSIONS = stored_versions.relation()


def _synthetic_uuid(dataset_uuid: str, label: str | None) -> str:
    if label:
        return ids.named_version_uuid(dataset_uuid, label)
    return ids.initial_version_uuid(dataset_uuid)


@dataclass(frozen=True)
class Rebind:
    """A run whose inputs are to be bound again.

    ``fresh``: it has never been bound (it had no events), which saves reading its
    bindings back. ``retimed``: its bind time moved. ``said``: its stored fold sent
    inputFacets, so ``run_input_facets`` may hold rows of it to rewrite.
    """

    run: RunFold
    fresh: bool = False
    retimed: bool = True
    said: bool = False


def sent_input_facets(run: RunFold | None) -> bool:
    """Whether the run's events sent inputFacets about any of its inputs."""
    return run is not None and any(io.io_facets for io in run.inputs.values())


Bindings = dict[str, dict[str, tuple[str, bool]]]  # run -> version -> (dataset, synthetic)


def bind_runs(
    conn: Connection,
    items: Sequence[Rebind],
    datasets: Mapping[tuple[str, str], str],
    lake: AbstractSet[str],
) -> set[str]:
    """Rewrite the runs' ``run_inputs``; returns the datasets :func:`settle` must visit.

    Only synthetic versions depend on bindings (their dates and existence), so a
    dataset needs settling when a synthetic version of it was bound or unbound, or
    when a run's bind time moved while bound to one.
    """
    had = _bound_now(conn, items)
    wanted, named = _wanted_bindings(conn, items, datasets, lake)
    _write_synthetic_versions(conn, items, had, wanted, named)
    settle = _rewrite_bindings(conn, items, had, wanted)
    _rewrite_input_facets(conn, items, wanted, datasets)
    return settle


def _rewrite_input_facets(
    conn: Connection,
    items: Sequence[Rebind],
    wanted: Bindings,
    datasets: Mapping[tuple[str, str], str],
) -> None:
    """``run_input_facets`` holds, for each bound input the run sent inputFacets about, the
    facets under the version it is bound to (before :func:`settle` may drop a version)."""
    rows: list[run_said.InputFacets] = []
    for item in items:
        run = item.run
        version_of = {dataset: v for v, (dataset, _) in wanted[run.run_id].items()}
        for key, io in sorted(run.inputs.items()):
            version = version_of.get(datasets[key])
            if io.io_facets and version is not None:
                rows.append(run_said.InputFacets(run.run_id, version, io.io_facets, run.updated_at))
    run_said.replace_input_facets(conn, sorted(i.run.run_id for i in items if i.said), rows)


def _bound_now(conn: Connection, items: Sequence[Rebind]) -> Bindings:
    """The versions each run's inputs are bound to as stored (none for a fresh run)."""
    had: Bindings = {i.run.run_id: {} for i in items}
    stale = sorted(i.run.run_id for i in items if not i.fresh)
    stmt = cached(("bound", conn.dialect.name), lambda: _bound_select(conn.dialect.name))
    for chunk in chunks(stale):
        for version, dataset, synth, run in conn.execute(stmt, {"r": chunk}).all():
            had[str(run)][str(version)] = (str(dataset), bool(synth))
    return had


def _bound_select(dialect: str) -> Any:
    dv = _VERSIONS
    q = sa.select(dv.c.uuid, dv.c.dataset_uuid, stored_versions.is_synthetic(dv)).select_from(dv)
    q, read = bound.join_read(q, version=dv.c.uuid)
    return q.add_columns(read.run).where(one_of(dialect, read.run, "r"))


def _wanted_bindings(
    conn: Connection,
    items: Sequence[Rebind],
    datasets: Mapping[tuple[str, str], str],
    lake: AbstractSet[str],
) -> tuple[Bindings, dict[str, str | None]]:
    """The versions each run's inputs name or see, and the label of each synthetic one:
    by label first, else the candidate current at the run's bind time, else a stand-in."""
    wanted: Bindings = {i.run.run_id: {} for i in items}
    by_time: list[tuple[str, bool, RunFold]] = []
    named: dict[str, str | None] = {}  # synthetic version -> its label
    # Nothing is written while the bindings are worked out: a label names one version
    # for the whole group (a build's partition runs all name the same input versions).
    labelled: dict[tuple[str, str], tuple[str, bool] | None] = {}
    for item in items:
        run = item.run
        for key, io in sorted(run.inputs.items()):
            dataset = datasets[key]
            label = fx.dataset_version_label({**io.facets, **io.io_facets})
            if label:
                if (dataset, label) not in labelled:
                    labelled[dataset, label] = versions.by_label(
                        conn, dataset, label, dataset in lake
                    )
                found_label = labelled[dataset, label]
                if found_label is not None:
                    wanted[run.run_id][found_label[0]] = (dataset, found_label[1])
                    continue
            else:
                by_time.append((dataset, dataset in lake, run))
                continue
            if dataset not in lake:
                placeholder = _synthetic_uuid(dataset, label)
                wanted[run.run_id][placeholder] = (dataset, True)
                named[placeholder] = label
    for (dataset, is_lake, run), found_uuid in zip(
        by_time,
        bound.candidates_at(
            conn, [(d, lake, run.run_id, run.bind_time) for d, lake, run in by_time]
        ),
        strict=True,
    ):
        if found_uuid is not None:
            wanted[run.run_id][found_uuid] = (dataset, False)
        elif not is_lake:
            wanted[run.run_id][_synthetic_uuid(dataset, None)] = (dataset, True)
    return wanted, named


def _write_synthetic_versions(
    conn: Connection,
    items: Sequence[Rebind],
    had: Bindings,
    wanted: Bindings,
    named: dict[str, str | None],
) -> None:
    """Every stand-in version newly bound exists, dated by its earliest binding run."""
    synthetic: dict[str, dict[str, Any]] = {}
    for item in items:
        for version, (dataset, synth) in wanted[item.run.run_id].items():
            if synth and version not in had[item.run.run_id]:
                known = synthetic.get(version)
                if known is None or item.run.bind_time < known["created_at"]:
                    synthetic[version] = {
                        "uuid": version,
                        "dataset_uuid": dataset,
                        "created_at": item.run.bind_time,
                        "external_version": named.get(version),
                    }
    rows = [synthetic[v] for v in sorted(synthetic)]
    stored_versions.add_missing(conn, rows)


def _rewrite_bindings(
    conn: Connection, items: Sequence[Rebind], had: Bindings, wanted: Bindings
) -> set[str]:
    """Stored bindings equal the wanted ones; returns the datasets to settle."""
    gone: list[bound.Binding] = []
    new: list[bound.Binding] = []
    settle: set[str] = set()
    for item in items:
        run_id = item.run.run_id
        before, after = had[run_id], wanted[run_id]
        for v in sorted(set(before) - set(after)):
            gone.append(bound.Binding(run_id, v))
            if before[v][1]:
                settle.add(before[v][0])
        for v in sorted(set(after) - set(before)):
            new.append(bound.Binding(run_id, v))
            if after[v][1]:
                settle.add(after[v][0])
        if item.retimed:
            settle |= {d for d, synth in after.values() if synth}
    bound.rebind(conn, gone, new)
    return settle
