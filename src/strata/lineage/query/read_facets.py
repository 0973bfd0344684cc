"""The inputFacets readers sent about a dataset version (``dataQualityAssertions``,
``dataQualityMetrics`` …), which Marquez shows among the version's own facets."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import schema as s
from strata.store.bulk import chunks

# The newest readers whose facets are merged per version: a version read by thousands of
# runs that all sent some shows what its latest readers said.
READERS_PER_VERSION = 20


def readers_input_facets(conn: Connection, versions: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Version uuid -> the inputFacets its newest readers sent about it, a later reader's
    facet over an earlier one's of the same name (``ix_run_input_facets_version``)."""
    rif = s.run_input_facets
    out: dict[str, dict[str, Any]] = {}
    for batch in chunks(sorted(set(versions))):
        rank = (
            sa.func.row_number()
            .over(partition_by=rif.c.dataset_version_uuid, order_by=rif.c.sent_at.desc())
            .label("rank")
        )
        newest = (
            sa.select(rif.c.dataset_version_uuid, rif.c.facets, rif.c.sent_at, rank)
            .where(rif.c.dataset_version_uuid.in_(batch))
            .subquery()
        )
        rows = conn.execute(
            sa.select(newest.c.dataset_version_uuid, newest.c.facets)
            .where(newest.c.rank <= READERS_PER_VERSION)
            .order_by(newest.c.sent_at)
        ).all()
        for row in rows:
            if isinstance(row.facets, dict):
                out.setdefault(row.dataset_version_uuid, {}).update(row.facets)
    return out
