"""Writes from other sites: a page on another site cannot write, whatever route it
picks; bodies must be declared JSON; preflights and listed origins work; ``HEAD`` is
answered wherever ``GET`` is."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from live_server import serving
from ol_events import run_event as event
from strata.api import create_app
from strata.api.crosssite import WRITE_METHODS
from strata.errors import ConfigError
from strata.settings import Settings

EVIL = "http://evil.example"
FRIEND = "http://localhost:3000"


def _write_routes(app: FastAPI) -> list[tuple[str, str]]:
    """Every write route the app describes, its path parameters filled with a plain name."""
    out = []
    for path, operations in app.openapi()["paths"].items():
        filled = re.sub(r"\{[^}]+\}", "x", path)
        out.extend((m.upper(), filled) for m in sorted(operations) if m.upper() in WRITE_METHODS)
    return out


def _row_counts(engine: sa.Engine) -> dict[str, int]:
    meta = sa.MetaData()
    meta.reflect(engine)
    with engine.connect() as conn:
        return {
            name: conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for name, table in meta.tables.items()
        }


@pytest.fixture
def open_client(settings: Settings, engine: sa.Engine) -> Iterator[TestClient]:
    """No tokens (the default), one listed origin."""
    listed = Settings.load(
        home=settings.home,
        database_url=settings.database_url,
        lake_uri=settings.lake_uri,
        allowed_origins=(FRIEND,),
    )
    with TestClient(create_app(listed, engine), raise_server_exceptions=True) as c:
        yield c


def test_every_write_route_refuses_another_sites_origin(
    open_client: TestClient, engine: sa.Engine
) -> None:
    routes = _write_routes(open_client.app)  # type: ignore[arg-type]
    assert len(routes) >= 20, routes  # the Marquez and Strata writes are all there
    before = _row_counts(engine)
    for method, path in routes:
        for body in ({"content": b"x=1", "headers": {"Content-Type": "text/plain"}}, {}):
            headers = {"Origin": EVIL, **body.get("headers", {})}  # type: ignore[dict-item]
            r = open_client.request(method, path, content=body.get("content"), headers=headers)
            assert r.status_code == 403, (method, path, r.status_code, r.text)
            assert r.json()["code"] == "forbidden"
            assert EVIL in r.json()["message"] and "STRATA_ALLOWED_ORIGINS" in r.json()["message"]
    assert _row_counts(engine) == before  # nothing written by any of them


def test_every_write_route_refuses_a_body_not_declared_json(
    open_client: TestClient, engine: sa.Engine
) -> None:
    before = _row_counts(engine)
    for method, path in _write_routes(open_client.app):  # type: ignore[arg-type]
        for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
            headers = {"Content-Type": content_type} if content_type else {}
            r = open_client.request(method, path, content=b'{"a": 1}', headers=headers)
            assert r.status_code == 415, (method, path, content_type, r.text)
            assert r.json()["code"] == "unsupported_media_type"
            assert "Content-Type: application/json" in r.json()["message"]
    assert _row_counts(engine) == before


def test_the_issues_two_cross_site_writes_are_refused(
    open_client: TestClient, engine: sa.Engine
) -> None:
    # A text/plain event from another site: refused, nothing stored.
    ev = event(event_type="START")
    r = open_client.post(
        "/api/v1/lineage",
        content=httpx.Request("POST", "/", json=ev).content,
        headers={"Content-Type": "text/plain", "Origin": EVIL},
    )
    assert r.status_code == 403
    # The same event from a script (no Origin) is taken; a bodyless completion from
    # another site is not, and the run stays RUNNING.
    assert open_client.post("/api/v1/lineage", json=ev).status_code == 201
    run_id = ev["run"]["runId"]
    r = open_client.post(f"/api/v1/jobs/runs/{run_id}/complete", headers={"Origin": EVIL})
    assert r.status_code == 403
    assert open_client.get(f"/api/v1/jobs/runs/{run_id}").json()["state"] == "RUNNING"


def test_own_and_listed_origins_write_and_read_answers(open_client: TestClient) -> None:
    own = "http://testserver"  # the origin the test client's requests reach the server as
    r = open_client.put(
        "/api/v1/namespaces/mine", json={"ownerName": "me"}, headers={"Origin": own}
    )
    assert r.status_code == 200, r.text
    r = open_client.put(
        "/api/v1/namespaces/theirs", json={"ownerName": "them"}, headers={"Origin": FRIEND}
    )
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == FRIEND
    r = open_client.get("/api/v1/namespaces/theirs", headers={"Origin": FRIEND})
    assert r.json()["ownerName"] == "them"
    assert r.headers["access-control-allow-origin"] == FRIEND
    # A read from another site is answered (as Marquez does) but its page cannot read it.
    r = open_client.get("/api/v1/namespaces/theirs", headers={"Origin": EVIL})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    # A listed origin's event goes through the routed path, not around the checks.
    ev = event(event_type="START")
    r = open_client.post("/api/v1/lineage", json=ev, headers={"Origin": FRIEND})
    assert r.status_code == 201 and r.headers["access-control-allow-origin"] == FRIEND


def test_preflights(settings: Settings, engine: sa.Engine) -> None:
    tokened = Settings.load(
        home=settings.home,
        database_url=settings.database_url,
        lake_uri=settings.lake_uri,
        write_tokens=("w",),
        allowed_origins=(FRIEND,),
    )
    asks = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    with TestClient(create_app(tokened, engine)) as client:
        # Sent without the page's token, as browsers do: answered before the token check.
        r = client.options("/api/v1/lineage", headers={"Origin": FRIEND, **asks})
        assert r.status_code == 204
        assert r.headers["access-control-allow-origin"] == FRIEND
        assert "POST" in r.headers["access-control-allow-methods"]
        assert "Authorization" in r.headers["access-control-allow-headers"]
        assert "Content-Type" in r.headers["access-control-allow-headers"]
        r = client.options("/api/v1/lineage", headers={"Origin": EVIL, **asks})
        assert r.status_code == 403 and r.json()["code"] == "forbidden"
        assert "access-control-allow-origin" not in r.headers
        # The write after the preflight still needs its token.
        r = client.post("/api/v1/lineage", json=event(), headers={"Origin": FRIEND})
        assert r.status_code == 401


def test_a_bad_allowed_origin_is_a_config_error(settings: Settings) -> None:
    with pytest.raises(ConfigError, match=r"'localhost:3000/ui'.*scheme://host"):
        Settings.load(home=settings.home, allowed_origins="localhost:3000/ui")


def test_head_is_answered_wherever_get_is(open_client: TestClient) -> None:
    open_client.put("/api/v1/namespaces/heads", json={"ownerName": "me"})
    paths = ["/api/v1/namespaces", "/api/v1/namespaces/heads", "/api/v1/strata/runs", "/"]
    for path in paths:
        got, head = open_client.get(path), open_client.head(path)
        assert got.status_code == head.status_code == 200, (path, head.status_code)
        assert head.content == b""
        assert head.headers["content-length"] == got.headers["content-length"]
    assert open_client.head("/api/v1/namespaces/nowhere").status_code == 404
    # A route without GET still answers 405 to HEAD.
    assert open_client.head("/api/v1/lineage/batch").status_code == 405


def test_head_over_a_real_server(settings: Settings, engine: sa.Engine) -> None:
    """``curl -I`` and uptime checks: a real uvicorn server answers HEAD with no body."""
    with serving(create_app(settings, engine)) as url:
        for path in ("/api/v1/health", "/api/v1/namespaces", "/api/v1/jobs/runs"):
            r = httpx.head(url + path, timeout=30)
            assert r.status_code == httpx.get(url + path, timeout=30).status_code, path
            assert r.content == b""
