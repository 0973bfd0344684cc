"""Marquez's own integration scenarios, replayed over HTTP against a real `strata serve`
on each backend (one server per backend for the run; each test works in namespaces of
its own)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import marquez_client
import pytest
import sqlalchemy as sa
from marquez_api import MARQUEZ_WEB_ORIGIN, Marquez

from serve_process import Served
from strata.store import migrate
from strata.store.engine import create_engine

BACKENDS = ["sqlite", "postgresql"]


def _store_url(backend: str, home: Path, request: pytest.FixtureRequest) -> str:
    if backend == "sqlite":
        return f"sqlite:///{home / 'meta.db'}"
    url = str(request.getfixturevalue("pg_databases").new())
    engine = create_engine(url, poolclass=sa.pool.NullPool)
    migrate.upgrade(engine)
    engine.dispose()
    return url


@pytest.fixture(scope="session", params=BACKENDS)
def marquez(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Marquez]:
    home = tmp_path_factory.mktemp(f"compat-{request.param}")
    env = {
        "STRATA_DATABASE_URL": _store_url(request.param, home, request),
        "STRATA_HOME": str(home / ".strata"),
        "STRATA_LAKE_URI": (home / "lake").as_uri(),
        # Marquez's web UI, served by its own proxy, sends its page's origin on writes.
        "STRATA_ALLOWED_ORIGINS": MARQUEZ_WEB_ORIGIN,
    }
    with Served(home, env) as served:
        root = served.url.removesuffix("/api/v1")
        yield Marquez(root, marquez_client.MarquezClient(root))


@pytest.fixture
def ns() -> str:
    """A namespace of the test's own on the shared server."""
    return f"ns_{uuid.uuid4().hex[:10]}"
