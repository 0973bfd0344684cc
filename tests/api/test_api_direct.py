"""Requests the app answers ahead of FastAPI's routing: the same answers as the routes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from api_seed import Seeder, chain
from fastapi import FastAPI
from fastapi.testclient import TestClient

from strata.api import create_app, direct, job_runs, lineage_post
from strata.settings import Settings


@pytest.fixture
def routed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths FastAPI's own routing saw (the requests not answered directly)."""
    seen: list[str] = []
    original = FastAPI.__call__

    async def counting(self: FastAPI, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(scope["path"])
        await original(self, scope, receive, send)

    monkeypatch.setattr(FastAPI, "__call__", counting)
    yield seen


def test_run_list_is_answered_directly_and_as_the_route_answers(
    client: TestClient, seed: Seeder, routed: list[str]
) -> None:
    ids = chain(seed)
    for _ in range(3):
        seed.run(ids["job1"], ids["job1_v"], [ids["raw_v1"]])
    url = "/api/v1/namespaces/ns/jobs/job1/runs"
    fast = client.get(url, params={"limit": 2, "offset": 1})
    assert routed == []
    # An extra query parameter (ignored by the route) sends the request through routing.
    slow = client.get(url, params={"limit": 2, "offset": 1, "also": "x"})
    assert routed == ["/api/v1/namespaces/ns/jobs/job1/runs"]
    assert fast.status_code == slow.status_code == 200
    assert fast.headers["content-type"] == slow.headers["content-type"] == "application/json"
    assert fast.content == slow.content
    body = fast.json()
    assert body["totalCount"] == 4 and len(body["runs"]) == 2
    assert client.get(url).json()["totalCount"] == 4  # default paging


def test_names_with_slashes_and_unicode(
    client: TestClient, seed: Seeder, routed: list[str]
) -> None:
    job = seed.job("team/a", "load/ü")
    run = seed.run(job, None)
    url = "/api/v1/namespaces/team%2Fa/jobs/load%2F%C3%BC/runs"
    fast = client.get(url)
    assert routed == []
    assert fast.status_code == 200, fast.text
    assert [r["id"] for r in fast.json()["runs"]] == [run]
    assert fast.content == client.get(url + "?also=x").content


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=-1", "limit"),
        ("limit=10001", "limit"),
        ("limit=ten", "limit"),
        ("offset=-5", "offset"),
    ],
)
def test_bad_paging_gets_the_routes_error(
    client: TestClient, seed: Seeder, routed: list[str], query: str, field: str
) -> None:
    chain(seed)
    r = client.get(f"/api/v1/namespaces/ns/jobs/job1/runs?{query}")
    assert r.status_code == 400, r.text
    assert r.json()["details"]["field"] == field
    assert routed  # refused by FastAPI's validation, as before


def test_names_that_are_not_a_jobs_fqn_go_to_the_route(
    client: TestClient, seed: Seeder, routed: list[str]
) -> None:
    # Redirects of old and simple names are tested with the routes (test_api_reads);
    # here: the direct answer finds no job by that FQN and leaves the request to them.
    seed.alias("ns", "renamed", seed.job("ns", "current"))
    r = client.get("/api/v1/namespaces/ns/jobs/renamed/runs", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (
        301,
        "/api/v1/namespaces/ns/jobs/current/runs",
    )
    assert client.get("/api/v1/namespaces/ns/jobs/nope/runs").json()["code"] == "not_found"
    assert routed == [
        "/api/v1/namespaces/ns/jobs/renamed/runs",
        "/api/v1/namespaces/ns/jobs/nope/runs",
    ]


def test_tokens_are_checked_first(settings: Settings, engine: sa.Engine, seed: Seeder) -> None:
    chain(seed)
    secured = dataclasses.replace(settings, write_tokens=("w",), read_tokens=("r",))
    url = "/api/v1/namespaces/ns/jobs/job1/runs"
    with TestClient(create_app(secured, engine)) as client:
        r = client.get(url)
        assert r.status_code == 401 and set(r.json()) == {"code", "message", "details"}
        assert client.get(url, headers={"Authorization": "Bearer nope"}).status_code == 401
        for token in ("r", "w"):
            r = client.get(url, headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 200 and r.json()["totalCount"] == 1


def test_which_requests_are_answered_directly() -> None:
    assert direct.direct_handler("POST", "/api/v1/lineage") is lineage_post.post_lineage
    assert direct.direct_handler("GET", "/api/v1/namespaces/a/jobs/b/runs") is job_runs.get_job_runs
    for method, path in [
        ("GET", "/api/v1/lineage"),
        ("POST", "/api/v1/lineage/batch"),
        ("POST", "/api/v1/namespaces/a/jobs/b/runs"),
        ("GET", "/api/v1/namespaces/a/jobs/b"),
    ]:
        assert direct.direct_handler(method, path) is None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (b"", (100, 0)),
        (b"limit=20", (20, 0)),
        (b"offset=3&limit=0", (0, 3)),
        (b"limit=10000", (10000, 0)),
        (b"limit=10001", None),
        (b"limit=1&limit=2", None),
        (b"limit=", None),
        (b"limit", None),
        (b"limit=-1", None),
        (b"limit=%31", None),
        (b"sort=x", None),
    ],
)
def test_paging_read_directly(query: bytes, expected: tuple[int, int] | None) -> None:
    assert job_runs._paging(query) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"/api/v1/namespaces/ns/jobs/j/runs", ("ns", "j")),
        (b"/api/v1/namespaces/s3%3A%2F%2Fb/jobs/a%2Fb/runs?limit=1", ("s3://b", "a/b")),
        (b"/api/v1/namespaces/ns/jobs/a/b/runs", None),
        (b"/api/v1/namespaces//jobs/j/runs", None),
        (b"/api/v1/namespaces/ns/datasets/j/runs", None),
        (None, None),
    ],
)
def test_names_read_from_the_raw_path(raw: bytes | None, expected: tuple[str, str] | None) -> None:
    assert job_runs._names(raw) == expected
