"""The web UI in a real browser: Debian's Chromium driven by Selenium, over a real server
holding the demo's store, on each backend.

The demo runs once per backend (``--hours 2``); then raw/experiments gets a second
version, so the datasets reading it are out of date with a cause to show. Tokens are
set: every page must ask for one. Screenshots go to ``artifacts/ui/<backend>/``.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver
from typer.testing import CliRunner
from ui_site import ARTIFACTS, READ, WIDE, WRITE, Site, set_viewport, start_chromium

from live_server import serving
from strata.api import create_app
from strata.cli.main import app as cli
from strata.lake.service import Lake
from strata.settings import Settings
from strata.store import migrate
from strata.store.engine import create_engine


@pytest.fixture(scope="session")
def browser() -> Iterator[WebDriver]:
    profile = Path(tempfile.mkdtemp(prefix="strata-chromium-"))
    driver = start_chromium(profile)
    set_viewport(driver, WIDE)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _store_url(backend: str, folder: Path, request: pytest.FixtureRequest) -> str:
    if backend == "sqlite":
        return f"sqlite:///{folder / 'meta.db'}"
    url = str(request.getfixturevalue("pg_databases").new())
    eng = create_engine(url)
    migrate.upgrade(eng)
    eng.dispose()
    return url


def _run_demo(settings: Settings) -> None:
    where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
    args = [*where, "--home", str(settings.home), "demo", "--hours", "2"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False, terminal_width=160)
    assert result.exit_code == 0, result.stdout + result.stderr


def _new_experiments(lake: Lake) -> None:
    """raw/experiments@2 without its last experiment: what reads it is out of date; and a
    late click in one UK hour: that partition of regions/hourly is out of date."""
    rows = lake.read_arrow("raw/experiments")
    with lake.transaction("raw/experiments", type="SNAPSHOT") as txn:
        txn.write(rows.slice(0, rows.num_rows - 1))
    late = lake.read_arrow("raw/clicks", partitions={"region": "UK"}).slice(0, 1)
    with lake.transaction("raw/clicks", type="APPEND") as txn:
        txn.write(late)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def site(
    request: pytest.FixtureRequest,
    browser: WebDriver,
    spark: object,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Site]:
    backend = str(request.param)
    folder = tmp_path_factory.mktemp(f"ui-{backend}")
    settings = Settings(
        home=folder / ".strata",
        database_url=_store_url(backend, folder, request),
        lake_uri=(folder / "lake").as_uri(),
        lineage_fold="thread",
    )
    _run_demo(settings)
    settings = dataclasses.replace(
        settings,
        pipelines=(str(settings.home / "demo" / "pipelines"),),
        read_tokens=(READ,),
        write_tokens=(WRITE,),
    )
    application = create_app(settings)
    _new_experiments(application.state.builds.lake)
    shots = ARTIFACTS / backend
    shots.mkdir(parents=True, exist_ok=True)
    with serving(application) as url:
        yield Site(url, settings, application.state.builds, browser, shots)
    application.state.engine.dispose()


@pytest.fixture(autouse=True)
def no_script_errors(site: Site) -> Iterator[None]:
    """Every page a test opened ran without a script error or a failed request."""
    site.errors()  # what an earlier test left
    yield
    assert site.errors() == []
