"""Build tests: a project with the shop pipeline in a folder of its own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from build_support import SHOP, Project

from strata.lake.service import Lake
from strata.settings import Settings


@pytest.fixture
def project(settings: Settings, tmp_path: Path) -> Iterator[Project]:
    folder = tmp_path / "pipelines"
    folder.mkdir()
    shutil.copy(SHOP, folder / "shop.py")
    lake = Lake(settings)
    yield Project(settings, folder, lake)
    lake.engine.dispose()
