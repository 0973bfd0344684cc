"""Branches over HTTP, on SQLite and PostgreSQL: list, create, a branch's datasets, a
preview on a branch, merge with its conflict (409), delete; bad input is a 4xx with a
JSON body; writes need a write token."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from urllib.parse import quote

import pyarrow as pa
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from strata.api import create_app
from strata.lake.service import Lake
from strata.settings import Settings

DS = quote("raw/users", safe="")


def write(lake: Lake, kind: str, *names: str) -> None:
    with lake.transaction("raw/users", kind) as txn:
        txn.write(pa.table({"user": list(names)}))


@pytest.fixture
def lake(settings: Settings) -> Iterator[Lake]:
    lk = Lake(settings)
    write(lk, "SNAPSHOT", "ada")
    yield lk
    lk.engine.dispose()


@pytest.fixture
def api(settings: Settings, engine: sa.Engine, lake: Lake) -> Iterator[TestClient]:
    with TestClient(create_app(settings, engine)) as c:
        yield c


def on(lake: Lake, branch: str) -> Lake:
    return Lake(dataclasses.replace(lake.settings, branch=branch), lake.engine)


def users(api: TestClient, branch: str | None = None) -> list[str]:
    query = f"?branch={quote(branch, safe='')}" if branch else ""
    r = api.get(f"/api/v1/strata/preview/{DS}{query}")
    assert r.status_code == 200, r.text
    return sorted(row[0] for row in r.json()["rows"])


def test_branches_over_http(api: TestClient, lake: Lake) -> None:
    made = api.post("/api/v1/strata/branches", json={"name": "feature/x"})
    assert made.status_code == 201, made.text
    assert made.json()["parent"] == "main"
    write(on(lake, "feature/x"), "APPEND", "bob")
    assert users(api) == ["ada"] and users(api, "feature/x") == ["ada", "bob"]
    preview = api.get(f"/api/v1/strata/preview/{DS}?branch=feature%2Fx").json()
    assert (preview["version"], preview["branch"]) == (2, "feature/x")

    listed = api.get("/api/v1/strata/branches").json()["branches"]
    assert [(b["name"], b["parent"], b["datasets"]) for b in listed] == [
        ("main", None, None),
        ("feature/x", "main", 1),
    ]
    seen = api.get("/api/v1/strata/branches/feature%2Fx/datasets").json()
    assert [(d["name"], d["latestVersion"], d["rows"]) for d in seen["datasets"]] == [
        ("raw/users", 2, 2)
    ]

    dry = api.post("/api/v1/strata/branches/feature%2Fx/merge?dryRun=true").json()
    assert dry["dry_run"] is True and users(api) == ["ada"]
    merged = api.post("/api/v1/strata/branches/feature%2Fx/merge")
    assert merged.status_code == 200 and merged.json()["merged"] == 1
    assert users(api) == ["ada", "bob"]

    write(lake, "APPEND", "cy")
    write(on(lake, "feature/x"), "APPEND", "dee")
    conflict = api.post("/api/v1/strata/branches/feature%2Fx/merge")
    assert conflict.status_code == 409
    body = conflict.json()
    assert body["code"] == "merge_conflict" and "raw/users" in body["message"]
    assert body["details"]["conflicts"][0]["target_version"] == 3
    assert users(api) == ["ada", "bob", "cy"]
    line = api.get(f"/api/v1/strata/history/{DS}?branch=feature%2Fx").json()
    assert line["branch"] == "feature/x"
    assert [(v["version"], v["branch"]) for v in line["versions"]] == [
        (1, "main"),
        (2, "main"),  # merged: it now belongs to main
        (3, "main"),
        (4, "feature/x"),
    ]
    assert api.get(f"/api/v1/strata/history/{DS}?branch=nope").status_code == 404

    gone = api.delete("/api/v1/strata/branches/feature%2Fx")
    assert gone.status_code == 200 and gone.json()["datasets"] == 1
    assert [b["name"] for b in api.get("/api/v1/strata/branches").json()["branches"]] == ["main"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("post", "/branches", {"name": "main"}, 409, "branch_exists"),
        ("post", "/branches", {"name": "bad name"}, 422, None),
        ("post", "/branches", {"name": "x", "from": "nope"}, 404, "not_found"),
        ("post", "/branches", {"name": "x", "extra": 1}, 422, None),
        ("post", "/branches", {"name": ""}, 422, None),
        ("post", "/branches", {"name": "a/../b"}, 422, None),  # a URL would fold it to b
        ("post", "/branches", {"name": "x" * 101}, 422, None),
        ("delete", "/branches/main", None, 409, "branch_refused"),
        ("delete", "/branches/nope", None, 404, "not_found"),
        ("post", "/branches/nope/merge", None, 404, "not_found"),
        ("post", "/branches/main/merge", None, 409, "branch_refused"),
        ("post", "/branches/x/merge?into=x", None, 404, "not_found"),
        ("get", "/branches/nope/datasets", None, 404, "not_found"),
        ("get", f"/preview/{DS}?branch=nope", None, 404, "not_found"),
        ("get", f"/preview/{DS}?branch=bad%20name", None, 400, None),
        ("post", "/branches/main/merge?into=", None, 400, None),
        ("delete", "/branches/bad%20name", None, 404, "not_found"),
        ("get", "/branches/bad%20name/datasets", None, 404, "not_found"),
    ],
)
def test_bad_branch_requests_are_4xx_with_json(
    api: TestClient, method: str, path: str, body: object, status: int, code: str | None
) -> None:
    r = api.request(method.upper(), f"/api/v1/strata{path}", json=body)
    assert r.status_code == status, r.text
    answer = r.json()
    assert answer["message"]
    if code is not None:
        assert answer["code"] == code


def test_branch_writes_need_a_write_token(settings: Settings, engine: sa.Engine) -> None:
    locked = dataclasses.replace(settings, read_tokens=("r",), write_tokens=("w",))
    with TestClient(create_app(locked, engine)) as api:
        read = {"Authorization": "Bearer r"}
        write_ = {"Authorization": "Bearer w"}
        assert api.get("/api/v1/strata/branches", headers=read).status_code == 200
        refused = api.post("/api/v1/strata/branches", json={"name": "x"}, headers=read)
        assert refused.status_code == 403
        made = api.post("/api/v1/strata/branches", json={"name": "x"}, headers=write_)
        assert made.status_code == 201
        assert api.delete("/api/v1/strata/branches/x", headers=read).status_code == 403
