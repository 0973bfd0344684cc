from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from api_seed import Seeder
from fastapi.testclient import TestClient

from strata.api import create_app
from strata.settings import Settings


@pytest.fixture
def client(settings: Settings, engine: sa.Engine) -> Iterator[TestClient]:
    # Unhandled exceptions re-raise here, so a test fails loudly on any server fault.
    with TestClient(create_app(settings, engine), raise_server_exceptions=True) as c:
        yield c


@pytest.fixture
def seed(engine: sa.Engine) -> Seeder:
    return Seeder(engine)
