"""``strata serve``: the web pages, OpenLineage ingest and the Marquez REST API."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from strata.errors import SchemaVersionError
from strata.settings import Settings
from strata.store import migrate
from strata.store.engine import engine_for
from strata.store.sole_server import sole_server


def serve(settings: Settings, host: str | None = None, port: int | None = None) -> None:
    """Serve the API with uvicorn until interrupted.

    The embedded SQLite store is migrated on first use; a PostgreSQL store must already be
    at this code's schema revision (``strata init`` migrates it), since a server silently
    changing a shared database's schema would surprise every other user of it. A SQLite
    store takes one server (:mod:`strata.store.sole_server`); several serve one PostgreSQL
    store side by side.
    """
    engine = engine_for(settings)
    try:
        with sole_server(engine):
            _serve(settings, engine, host, port)
    finally:
        engine.dispose()


def _serve(settings: Settings, engine: Engine, host: str | None, port: int | None) -> None:
    import uvicorn

    from strata.api import create_app
    from strata.lineage.record.fold_process import freeze_startup_objects

    if settings.is_embedded:
        migrate.upgrade(engine)
    else:
        try:
            migrate.check(engine)
        except SchemaVersionError as exc:
            raise SchemaVersionError(f"refusing to serve: {exc.message}", **exc.details) from exc
    app = create_app(settings, engine)
    if engine.dialect.name == "sqlite":
        # This process holds the store's one-server lock: no other server runs the builds
        # a killed server left unfinished.
        app.state.build_tasks.end_orphans()
    freeze_startup_objects()
    uvicorn.run(
        app,
        host=host or settings.api_host,
        port=port or settings.api_port,
        log_level="info",
        proxy_headers=True,
        # SIGTERM stops a server within seconds even with requests still open:
        # anything acknowledged is stored already.
        timeout_graceful_shutdown=5,
    )
