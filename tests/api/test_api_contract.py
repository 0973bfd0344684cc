"""The OpenAPI contract: declared statuses and the error body, 405 with Allow, and the
bounds of every paged list, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from api_seed import Seeder, chain
from fastapi.testclient import TestClient

ERROR_REF = "#/components/schemas/ErrorBody"
HUGE = "422648300473389023232"
PAGED = [
    "/api/v1/namespaces",
    "/api/v1/sources",
    "/api/v1/tags",
    "/api/v1/events",
    "/api/v1/events/ns",
    "/api/v1/events/lineage",
    "/api/v1/namespaces/ns/datasets",
    "/api/v1/namespaces/ns/datasets/raw/versions",
    "/api/v1/namespaces/ns/jobs",
    "/api/v1/namespaces/ns/jobs/job1/versions",
    "/api/v1/namespaces/ns/jobs/job1/runs",  # answered ahead of routing when it can be
]


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m.upper(), p, op) for p, item in doc["paths"].items() for m, op in item.items()]


def test_every_operation_declares_its_errors_with_the_error_body(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    error = doc["components"]["schemas"]["ErrorBody"]
    assert set(error["required"]) == {"code", "message", "details"}
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    ops = _operations(doc)
    assert len(ops) > 50
    for method, path, op in ops:
        responses = op["responses"]
        takes_input = bool(op.get("parameters")) or "requestBody" in op
        where = f"{method} {path}"
        if takes_input:
            assert "400" in responses, where
        for status in ("401", "403", "503") + (("400",) if takes_input else ()):
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": ERROR_REF}, where
        if "requestBody" in op:
            assert "422" in responses, where  # a body of the wrong shape
        else:
            assert "422" not in responses, where  # FastAPI's default, never answered
        if any(p["in"] == "path" for p in op.get("parameters", [])):
            assert "404" in responses, where
    ingest = dict((f"{m} {p}", op) for m, p, op in ops)
    for key in ("POST /api/v1/lineage", "POST /api/v1/lineage/batch"):
        assert {"400", "413", "415", "422"} <= set(ingest[key]["responses"]), key


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("POST", "/api/v1/namespaces/ns", "DELETE, GET, PUT"),
        ("PATCH", "/api/v1/namespaces/ns/jobs/j", "DELETE, GET, PUT"),
        ("PUT", "/api/v1/namespaces/ns/jobs/j/runs", "GET, POST"),  # the direct path's too
        ("GET", "/api/v1/namespaces/ns/datasets/d/tags/t", "DELETE, POST"),
        ("POST", "/api/v1/jobs/runs/0190b2c6-8f4e-7a8e-9d5b-3c2a1b0f9e8d/facets", "GET"),
        ("DELETE", "/api/v1/lineage", "GET, POST"),  # POST is answered ahead of routing
        ("GET", "/api/v1/lineage/batch", "POST"),
        ("PUT", "/api/v1/namespaces/a%2Fb/datasets", "GET"),
    ],
)
def test_405_names_every_allowed_method(
    client: TestClient, method: str, path: str, allow: str
) -> None:
    r = client.request(method, path)
    assert r.status_code == 405, r.text
    assert r.headers["allow"] == allow
    body = r.json()
    assert body["code"] == "method_not_allowed" and method in body["message"]


@pytest.mark.parametrize("path", PAGED)
@pytest.mark.parametrize("param", ["offset", "limit"])
def test_a_huge_page_is_a_400_naming_the_range(client: TestClient, path: str, param: str) -> None:
    r = client.get(path, params={param: HUGE})
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["details"]["field"] == param
    assert f"{param} must be an integer from 0 to" in body["message"]
    assert HUGE in body["message"]


def test_the_largest_offset_reads_an_empty_page(client: TestClient, seed: Seeder) -> None:
    chain(seed)
    for path in PAGED:
        r = client.get(path, params={"offset": 2**31 - 1, "limit": 10_000})
        assert r.status_code == 200, (path, r.text)
        [items] = [v for k, v in r.json().items() if k != "totalCount"]
        assert items == [], path


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/namespaces/" + "n" * 1025,
        "/api/v1/namespaces/ns/datasets/" + "é" * 513,  # 513 characters, 1,026 bytes
        "/api/v1/namespaces/ns/jobs/" + "j" * 1025 + "/runs",
    ],
)
def test_a_name_past_1024_bytes_is_a_400_naming_the_limit(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 400, r.text
    assert "at most 1,024 bytes" in r.json()["message"]


@pytest.mark.parametrize(
    ("method", "path", "params"),
    [
        ("GET", "/api/v1/namespaces/a%00b", {}),
        ("GET", "/api/v1/namespaces/ns/jobs/a%00b/runs", {}),
        ("PUT", "/api/v1/tags/a%00b", {}),
        ("GET", "/api/v1/search", {"q": "a\x00b"}),
        ("GET", "/api/v2beta/search/jobs", {"q": "a\x00b"}),
    ],
)
def test_a_nul_in_a_name_is_a_400(
    client: TestClient, method: str, path: str, params: dict[str, str]
) -> None:
    r = client.request(method, path, params=params)
    assert r.status_code == 400, r.text
    assert "NUL" in r.json()["message"]


def test_a_nul_in_a_stored_body_string_is_a_422(client: TestClient) -> None:
    r = client.put("/api/v1/namespaces/ns", json={"ownerName": "me\x00"})
    assert r.status_code == 422 and "NUL" in r.json()["message"]
    r = client.put("/api/v1/namespaces/ns", json={"ownerName": "me", "extra": "a\x00b"})
    assert r.status_code == 200, r.text  # unknown fields are ignored, as Marquez does


@pytest.mark.parametrize(
    ("path", "param", "value"),
    [
        ("/api/v1/events/lineage", "before", "yesterday"),
        ("/api/v1/events/lineage", "after", "0.5"),  # not read as a Unix time
        ("/api/v1/events/lineage", "after", "2024-01-01"),
        ("/api/v1/lineage", "asOf", "2024-13-01T00:00:00Z"),
        ("/api/v1/lineage", "asOf", "0999-12-31T00:00:00Z"),
        ("/api/v1/lineage", "asOf", "9999-12-31T23:00:00-05:00"),
    ],
)
def test_a_malformed_time_is_a_400_naming_the_format(
    client: TestClient, path: str, param: str, value: str
) -> None:
    params = {param: value, "nodeId": "dataset:ns:raw"}
    r = client.get(path, params=params)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["details"]["field"] == param
    assert param in body["message"] and "2024-01-31T12:00:00Z" in body["message"]


def test_a_run_marked_before_year_1000_is_refused(client: TestClient) -> None:
    run = "0190b2c6-8f4e-7a8e-9d5b-3c2a1b0f9e8d"
    r = client.post(f"/api/v1/jobs/runs/{run}/start", params={"at": "0119-09-18T16:52:30Z"})
    assert r.status_code == 400 and r.json()["details"]["field"] == "at"
