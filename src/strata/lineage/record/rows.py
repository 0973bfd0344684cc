"""Create-on-demand rows (namespaces, datasets) and latest-wins facet merges.

Creation and update times are the earliest and latest event times that
touched a row, and merged facets remember the ``[time, hash]`` stamp of the
event they came from, so every write here commutes with every other.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from strata import ids
from strata.lineage.record import facets as fx
from strata.store.owners import namespaces
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets.rows import DatasetRow


def touch_namespace(conn: Connection, name: str, at: datetime) -> None:
    """Create the namespace ``name`` seen at ``at``, or widen its times to cover it."""
    namespaces.touch(conn, {name: (at, at)})


def touch_dataset_rows(
    conn: Connection, spans: dict[tuple[str, str], tuple[datetime, datetime]]
) -> dict[tuple[str, str], DatasetRow]:
    """Create or widen datasets (not their namespaces), each to cover its ``(earliest,
    latest)`` times, and read them back: one statement for all of them."""
    if not spans:
        return {}
    params = [
        {
            "uuid": ids.dataset_uuid(ns, name),
            "namespace": ns,
            "name": name,
            "physical_name": name,
            "facets": {},
            "fold_state": {"facets": {}},
            "created_at": lo,
            "updated_at": hi,
        }
        for (ns, name), (lo, hi) in sorted(spans.items())
    ]
    return dataset_rows.touch(conn, params)


def touch_datasets(
    conn: Connection, names: set[tuple[str, str]], at: datetime
) -> dict[tuple[str, str], str]:
    """Each dataset's uuid, creating the namespace and dataset rows when new: one
    statement for each table, however many datasets."""
    if not names:
        return {}
    namespaces.touch(conn, {ns: (at, at) for ns, _ in names})
    found = touch_dataset_rows(conn, {key: (at, at) for key in names})
    return {key: row.uuid for key, row in found.items()}


def merge_stamped(
    current: dict[str, Any], stamps: dict[str, Any], new: dict[str, tuple[list[str], Any]]
) -> bool:
    """Merge ``new`` facets (name: (stamp, value)) into ``current``, each where its stamp
    is later than the one in ``stamps``; True if any was.

    A stamp names one event, so equal stamps carry equal values.
    """
    changed = False
    for key, (stamp, value) in new.items():
        old = stamps.get(key)
        if old is None or list(old) < stamp:
            current[key] = value
            stamps[key] = stamp
            changed = True
    return changed


def merge_dataset_facets(
    row: DatasetRow, new: dict[str, tuple[list[str], Any]]
) -> tuple[bool, bool]:
    """Fold ``new`` facets (name: (stamp, value)) into ``row`` in memory, each where its
    stamp is later: (row changed, facet values changed)."""
    current = dict(row.facets)
    stamps = dict(row.fold_state.get("facets") or {})
    if not merge_stamped(current, stamps, new):
        return False, False
    values_changed = current != row.facets
    if values_changed:
        row.facets = current
    row.fold_state = {**row.fold_state, "facets": stamps}
    return True, values_changed


def write_dataset_facets(
    conn: Connection, rows: Sequence[DatasetRow], values_changed: AbstractSet[str]
) -> None:
    """Store the merged stamps of ``rows``, and the facets of those in ``values_changed``
    (a later event that repeats the stored values moves only the stamps, and facets
    such as a schema are large)."""
    dataset_rows.write_facets(conn, rows, values_changed)


def refresh_datasets(conn: Connection, facets: dict[str, dict[str, Any]]) -> None:
    """Columns derived from each dataset's merged ``facets``: description, source."""
    if not facets:
        return
    updates: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for dataset_uuid in sorted(facets):
        merged = facets[dataset_uuid]
        values: dict[str, Any] = {}
        desc = fx.description(merged)
        if desc is not None:
            values["description"] = desc
        source = fx.data_source(merged)
        if source is not None:
            values["source_name"] = source[0]
        if values:
            updates.setdefault(tuple(values), []).append({"uuid": dataset_uuid, **values})
    for params in updates.values():
        dataset_rows.update(conn, params)
