"""Fixtures for store tests: fresh, un-migrated databases on each backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from strata.lake.service import Lake
from strata.settings import Settings
from strata.store.engine import create_engine


@pytest.fixture
def fresh_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """An empty database with no schema at all on the backend under test."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'fresh' / 'meta.db'}"
    return str(request.getfixturevalue("pg_databases").new())


@pytest.fixture
def fresh_engine(fresh_url: str) -> Iterator[sa.Engine]:
    eng = create_engine(fresh_url)
    yield eng
    eng.dispose()


@pytest.fixture
def lake(settings: Settings) -> Iterator[Lake]:
    """The lake on the backend under test (its store migrated)."""
    lk = Lake(settings)
    yield lk
    lk.engine.dispose()
