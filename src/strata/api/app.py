"""The FastAPI application: Marquez v1 routes, Strata routes, errors and auth."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from sqlalchemy.engine import Engine

from strata.api import contract, errors, paths, redirects
from strata.api.build_tasks import BuildTasks
from strata.api.crosssite import CrossSiteMiddleware
from strata.api.deps import read_your_writes
from strata.api.direct import StrataApp
from strata.api.guard import GuardMiddleware
from strata.api.inputs import check_request
from strata.api.routes import (
    branches,
    builds,
    datasets,
    health,
    jobs,
    lineage,
    namespaces,
    retention,
    runs,
    search,
    server,
    strata,
    tags,
)
from strata.api.routes.extra import include_extra_routes
from strata.builds.service import BuildService
from strata.errors import StoreError
from strata.lake.service import Lake
from strata.lineage.record import marquez_writes
from strata.lineage.record.writer import GroupWriter
from strata.settings import Settings
from strata.store.engine import engine_for
from strata.web import pages as web

API_PREFIX = "/api/v1"

log = logging.getLogger(__name__)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    writer: GroupWriter = app.state.lineage_writer
    try:
        await asyncio.to_thread(marquez_writes.ensure_defaults, app.state.engine)
    except StoreError as exc:  # the store is out of reach: health says so, requests 503
        log.warning("could not make the default namespace and source: %s", exc)
    # Requests are taken once the fold runs (a first group folded, not a whole backlog
    # an earlier server left): started by the first event instead, the fold process
    # would import and connect while the first senders wait for it.
    if not await asyncio.to_thread(writer.start, _FOLD_READY_S):
        log.warning("the lineage fold is not ready after %.0f s; serving anyway", _FOLD_READY_S)
    yield
    # Answers what is queued before the server exits; what the fold has not folded by
    # then stays queued in the store, for the next server.
    await asyncio.to_thread(writer.close, _CLOSE_S)
    await asyncio.to_thread(app.state.build_tasks.close)


_FOLD_READY_S = 60.0
_CLOSE_S = 5.0


def create_app(settings: Settings, engine: Engine | None = None) -> FastAPI:
    """An app over ``engine`` (default: the store named by ``settings``)."""
    app = StrataApp(
        title="Strata",
        version="1",
        summary="Marquez-compatible lineage API with Strata provenance routes",
        openapi_url="/openapi.json",
        lifespan=_lifespan,
    )
    app.state.settings = settings
    app.state.engine = engine if engine is not None else engine_for(settings)
    app.state.lineage_writer = GroupWriter(app.state.engine, fold_in=settings.lineage_fold)
    # One build service per app: its pipelines are imported once, not per request.
    app.state.builds = BuildService(settings, lake=Lake(settings, app.state.engine))
    app.state.build_tasks = BuildTasks(app.state.builds)
    # Each module's router straight under the app: every level of router nesting is
    # matched again on every request.
    checks = [Depends(read_your_writes), Depends(check_request)]
    routers = (
        *(namespaces, datasets, jobs, runs, tags, search, lineage),
        *(strata, builds, retention, branches),
    )
    for module in routers:
        app.include_router(module.router, prefix=API_PREFIX, dependencies=checks)
    include_extra_routes(app, API_PREFIX, checks)
    # No token, no wait for the fold.
    app.include_router(health.router, prefix=API_PREFIX)
    app.include_router(server.router, prefix=API_PREFIX)
    web.mount(app)
    contract.declare(app)
    errors.install(app)
    app.add_exception_handler(redirects.JobMoved, redirects.handle)
    app.add_middleware(GuardMiddleware)
    app.add_middleware(CrossSiteMiddleware)  # outside the guard: preflights carry no token
    app.add_middleware(paths.RawSegmentsMiddleware)
    return app
