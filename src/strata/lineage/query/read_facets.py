"""The inputFacets readers sent about a dataset version (``dataQualityAssertions``,
``dataQualityMetrics`` …), which Marquez shows among the version's own facets."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.engine import Connection

from strata.store.owners.runs import said as run_said

# The newest readers whose facets are merged per version: a version read by thousands of
# runs that all sent some shows what its latest readers said.
READERS_PER_VERSION = 20


def readers_input_facets(conn: Connection, versions: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Version uuid -> the inputFacets its newest readers sent about it, a later reader's
    facet over an earlier one's of the same name (``ix_run_input_facets_version``)."""
    return run_said.readers_input_facets(conn, versions, READERS_PER_VERSION)
