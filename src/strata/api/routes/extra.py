"""Routes registered after the core ones: soft deletes, event lists, stats, summaries of a
time range, v2beta search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI

from strata.api.routes import changes, deletes, events, stats, v2beta


def include_extra_routes(app: FastAPI, prefix: str, dependencies: Sequence[Any]) -> None:
    """Add the routes; after the core ones, so ``/events/lineage`` wins over
    ``/events/{namespace}``."""
    for module in (deletes, events, stats, changes):
        app.include_router(module.router, prefix=prefix, dependencies=dependencies)
    app.include_router(v2beta.router, dependencies=dependencies)
