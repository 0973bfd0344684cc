"""The inputFacets readers sent about a dataset version (``dataQualityAssertions``,
``dataQualityMetrics`` …), which Marquez shows among the version's own facets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import schema as s
from strata.store.bulk import chunks

# The newest readers whose facets are merged per version: a version read by thousands of
# runs shows what its latest readers said, and a read never scans them all.
READERS_PER_VERSION = 20


def readers_input_facets(
    conn: Connection, versions: Mapping[str, tuple[str, str]]
) -> dict[str, dict[str, Any]]:
    """Version uuid -> the inputFacets its newest readers sent about it, a later reader's
    facet over an earlier one's of the same name. ``versions`` maps each version uuid to
    its dataset's (namespace, name), the key the runs' facets are filed under."""
    ri, r = s.run_inputs, s.runs
    out: dict[str, dict[str, Any]] = {}
    for batch in chunks(list(versions)):
        rank = (
            sa.func.row_number()
            .over(partition_by=ri.c.dataset_version_uuid, order_by=r.c.updated_at.desc())
            .label("rank")
        )
        readers = (
            sa.select(ri.c.dataset_version_uuid, r.c.io_facets, r.c.updated_at, rank)
            .join(r, r.c.uuid == ri.c.run_uuid)
            .where(ri.c.dataset_version_uuid.in_(batch), r.c.io_facets.is_not(None))
            .subquery()
        )
        rows = conn.execute(
            sa.select(readers.c.dataset_version_uuid, readers.c.io_facets)
            .where(readers.c.rank <= READERS_PER_VERSION)
            .order_by(readers.c.updated_at)
        ).all()
        for row in rows:
            sent = _facets_about(row.io_facets, versions[row.dataset_version_uuid])
            if sent:
                out.setdefault(row.dataset_version_uuid, {}).update(sent)
    return out


def _facets_about(io_facets: Any, dataset: tuple[str, str]) -> dict[str, Any]:
    """The inputFacets one run's ``io_facets`` hold for ``dataset``."""
    if not isinstance(io_facets, dict):
        return {}
    for namespace, name, facets in io_facets.get("inputs") or ():
        if (namespace, name) == dataset and isinstance(facets, dict):
            return facets
    return {}
