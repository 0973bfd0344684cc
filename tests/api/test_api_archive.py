"""The archive tier over HTTP: the policies and archives in the retention overview; a
pass (dry and real); archived versions still read and marked so in history; a restore;
bad requests answered 4xx; writes need a write token."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from strata.api import create_app
from strata.lake.service import Lake
from strata.settings import Settings

DS = quote("raw/users", safe="")


@pytest.fixture
def lake(settings: Settings) -> Iterator[Lake]:
    lk = Lake(settings)
    for country in ("UK", "US", "FR"):
        with lk.transaction("raw/users", "SNAPSHOT") as txn:
            txn.write(pa.table({"user": ["ada"], "country": [country]}))
    yield lk
    lk.engine.dispose()


def configured(settings: Settings, tmp_path: Path, **more: object) -> Settings:
    policy = {"name": "cold", "datasets": ["raw/*"], "older_than": "0s"}
    policy["uri"] = (tmp_path / "cold").as_uri()
    return dataclasses.replace(settings, archive=(policy,), **more)  # type: ignore[arg-type]


@pytest.fixture
def api(settings: Settings, engine: sa.Engine, lake: Lake, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(configured(settings, tmp_path), engine)) as c:
        yield c


def ok(response: object) -> dict:  # type: ignore[type-arg]
    assert response.status_code == 200, response.text  # type: ignore[attr-defined]
    return response.json()  # type: ignore[attr-defined, no-any-return]


def test_a_pass_moves_old_versions_and_they_still_read(api: TestClient, tmp_path: Path) -> None:
    overview = ok(api.get("/api/v1/strata/retention"))["archive"]
    assert [p["name"] for p in overview["policies"]] == ["cold"]
    assert overview["archives"] == []

    dry = ok(api.post("/api/v1/strata/archive?dry_run=true"))
    assert dry["dry_run"] and dry["files"] == 2
    assert ok(api.get("/api/v1/strata/retention"))["archive"]["archives"] == []
    done = ok(api.post("/api/v1/strata/archive"))
    assert done["datasets"][0]["versions"] == [1, 2] and done["files"] == 2
    overview = ok(api.get("/api/v1/strata/retention"))
    (cold,) = overview["archive"]["archives"]
    assert cold["uri"] == (tmp_path / "cold").as_uri() and cold["files"] == 2
    assert overview["passes"][0]["kind"] == "archive" and overview["passes"][0]["files"] == 2

    history = ok(api.get(f"/api/v1/strata/history/{DS}"))["versions"]
    assert [v["archived"] for v in history] == [{"files": 1, "of": 1}, {"files": 1, "of": 1}, None]
    preview = ok(api.get(f"/api/v1/strata/preview/{DS}?version=1"))
    assert preview["rows"] == [["ada", "UK"]]  # an archived version reads as before

    restored = ok(api.post(f"/api/v1/strata/archive/restore/{DS}/1"))
    assert restored["files"] == 1 and restored["pinned"]
    history = ok(api.get(f"/api/v1/strata/history/{DS}"))["versions"]
    assert [v["archived"] for v in history] == [None, {"files": 1, "of": 1}, None]
    overview = ok(api.get("/api/v1/strata/retention"))
    assert overview["pins"][0]["version"] == 1
    assert (overview["passes"][0]["kind"], overview["passes"][0]["trigger"]) == ("restore", "api")


def test_bad_requests_get_a_clear_4xx(api: TestClient) -> None:
    missing = api.post("/api/v1/strata/archive/restore/raw%2Fnope/1")
    assert missing.status_code == 404 and "raw/nope" in missing.json()["message"]
    assert api.post(f"/api/v1/strata/archive/restore/{DS}/9").status_code == 404
    assert api.post(f"/api/v1/strata/archive/restore/{DS}/0").status_code == 400
    assert api.post("/api/v1/strata/archive/restore/..%2F../1").status_code == 404
    assert api.post("/api/v1/strata/archive?dry_run=maybe").status_code == 400


def test_archive_writes_need_a_write_token(
    settings: Settings, engine: sa.Engine, lake: Lake, tmp_path: Path
) -> None:
    secured = configured(settings, tmp_path, read_tokens=("r",), write_tokens=("w",))
    with TestClient(create_app(secured, engine)) as c:
        read = {"Authorization": "Bearer r"}
        write = {"Authorization": "Bearer w"}
        assert c.post("/api/v1/strata/archive", headers=read).status_code == 403
        assert c.post(f"/api/v1/strata/archive/restore/{DS}/1", headers=read).status_code == 403
        assert c.post("/api/v1/strata/archive", headers=write).status_code == 200
        assert c.post(f"/api/v1/strata/archive/restore/{DS}/1", headers=write).status_code == 200


@pytest.mark.parametrize("route", ["archive", "retention", "plans", f"reproduce/{DS}"])
def test_an_action_s_settings_sent_as_a_body_or_misspelt_are_refused_and_nothing_runs(
    api: TestClient, route: str
) -> None:
    """Settings are query parameters; a body or a parameter the route does not take would
    be ignored, and a dry run asked for so would run for real."""
    passes = len(ok(api.get("/api/v1/strata/retention"))["passes"])
    refused = api.post(f"/api/v1/strata/{route}", json={"dry_run": True})
    assert refused.status_code == 400, refused.text
    assert refused.json()["code"] == "invalid_argument"
    assert (
        "reads no request body" in refused.json()["message"]
        and "?dry_run=true" in (refused.json()["message"])
    )
    misspelt = api.post(f"/api/v1/strata/{route}?dryrun=true")
    assert misspelt.status_code == 400, misspelt.text
    assert "takes no query parameter ['dryrun']" in misspelt.json()["message"]
    assert len(ok(api.get("/api/v1/strata/retention"))["passes"]) == passes
    assert ok(api.get("/api/v1/strata/retention"))["archive"]["archives"] == []


def test_strata_s_own_bodies_refuse_fields_they_do_not_know(api: TestClient) -> None:
    build = api.post("/api/v1/strata/builds", json={"dataset": "raw/users", "dry_run": True})
    assert build.status_code in (400, 422) and "dry_run" in build.text
    assert ok(api.get("/api/v1/strata/builds"))["builds"] == []
    pin = api.put(f"/api/v1/strata/pins/{DS}/1", json={"note": "keep", "why": "typo"})
    assert pin.status_code in (400, 422) and "why" in pin.text
    assert ok(api.get("/api/v1/strata/retention"))["pins"] == []
