"""Which run facet names a run's parent, read the same way by the record and query paths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def parent_facet(run_facets: Mapping[str, Any]) -> Any:
    """The run's parent facet: ``parent``, or ``parentRun``, which older Airflow
    integrations sent; when both are sent ``parentRun`` wins, as in Marquez (whose
    Jackson mapping reads the alias last). None when neither is."""
    found = run_facets.get("parentRun")
    return found if found is not None else run_facets.get("parent")
