"""The web UI in a real browser: Debian's Chromium driven by Selenium, over a real server
holding the demo's store, on each backend.

The demo's store is a copy of the one ``strata demo --hours 2`` the run makes per backend
(``demo_stores.py``, shared with the demo's own test); then raw/experiments gets a second
version, so the datasets reading it are out of date with a cause to show. Tokens are
set: every page must ask for one. Screenshots go to ``artifacts/ui/<backend>/``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.remote.webdriver import WebDriver
from ui_site import ARTIFACTS, READ, WIDE, WRITE, Site, set_viewport, start_chromium

from demo_stores import DemoStores
from live_server import serving
from strata.api import create_app
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
    return str(request.getfixturevalue("pg_databases").migrated())


def _settings(request: pytest.FixtureRequest, folder: Path, **extra: object) -> Settings:
    """A store of the fixture's backend in ``folder``, its fold in the server's process."""
    url = _store_url(str(request.param), folder, request)
    lake = (folder / "lake").as_uri()
    return Settings(
        home=folder / ".strata", database_url=url, lake_uri=lake, lineage_fold="thread", **extra
    )


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
    demo_stores: DemoStores,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Site]:
    demo = demo_stores.copy(str(request.param), tmp_path_factory.mktemp(f"ui-{request.param}"))
    settings = Settings(
        home=demo.home,
        database_url=demo.database_url,
        lake_uri=demo.lake_uri,
        lineage_fold="thread",
        pipelines=(str(demo.home / "demo" / "pipelines"),),
        read_tokens=(READ,),
        write_tokens=(WRITE,),
        lineage_retention_days=3650,
    )
    application = create_app(settings)
    _new_experiments(application.state.builds.lake)
    shots = ARTIFACTS / str(request.param)
    shots.mkdir(parents=True, exist_ok=True)
    with serving(application) as url:
        yield Site(url, settings, application.state.builds, browser, shots)
    application.state.engine.dispose()


# Marquez's and OpenLineage's own events: every one the store takes (the corpus's one
# negative case, a run id that is not a UUID, is left out).
EVENTS = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "events"
REFUSED = {"simple_run_event.json"}


def _conformance_events() -> list[dict[str, object]]:
    files = sorted(p for p in EVENTS.rglob("*.json") if p.name != "config.json")
    if not files:
        pytest.fail(f"the conformance corpus is missing: expected events under {EVENTS}")
    # Newest file last, then sent in reverse: the pages must not depend on arrival order.
    return [json.loads(p.read_text("utf-8")) for p in files if p.name not in REFUSED][::-1]


def _send(url: str, events: list[dict[str, object]]) -> None:
    headers = {"Authorization": f"Bearer {WRITE}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        for event in events:
            answer = client.post("/api/v1/lineage", json=event)
            assert answer.status_code in (200, 201), answer.text
        # Visible once folded: the last event's run can be read.
        last = next(e for e in events if isinstance(e.get("run"), dict))
        run_id = last["run"]["runId"]  # type: ignore[index]
        for _ in range(200):
            if client.get(f"/api/v1/strata/runs/{run_id}").status_code == 200:
                return
            time.sleep(0.05)
    pytest.fail("the conformance events were not folded within 10 s")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def bare_site(
    request: pytest.FixtureRequest, browser: WebDriver, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    """A server with no pipelines whose store holds only other producers' events."""
    backend = str(request.param)
    folder = tmp_path_factory.mktemp(f"ui-bare-{backend}")
    settings = _settings(request, folder, read_tokens=(READ,), write_tokens=(WRITE,))
    engine = create_engine(settings.database_url)
    migrate.upgrade(engine)  # as `strata serve` does for an embedded store
    engine.dispose()
    application = create_app(settings)
    shots = ARTIFACTS / f"bare-{backend}"
    shots.mkdir(parents=True, exist_ok=True)
    with serving(application) as url:
        _send(url, _conformance_events())
        yield Site(url, settings, application.state.builds, browser, shots)
    application.state.engine.dispose()


@pytest.fixture(autouse=True)
def no_script_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every page a test opened ran without a script error or a failed request."""
    used = [f for f in ("site", "bare_site") if f in request.fixturenames]
    served: Site | None = request.getfixturevalue(used[0]) if used else None
    if served is not None:
        served.errors()  # what an earlier test left
    yield
    if served is not None:
        assert served.errors() == []
