"""Marquez's ``/api/v2beta/search/{jobs,datasets}``: documents with highlighted matches."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

import ol_events

P = "https://example.com/producer"
SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
RUN = "0190d5d4-aaaa-7bbb-8ccc-ddddeeeeffff"


def facet(**fields: Any) -> dict[str, Any]:
    return {"_producer": P, "_schemaURL": P, **fields}


def post(client: TestClient, body: dict[str, Any]) -> None:
    r = client.post("/api/v1/lineage", json=body)
    assert r.status_code == 201, r.text


def run_event(job: str, run_id: str | None = None, **extra: Any) -> dict[str, Any]:
    return ol_events.run_event(run_id=run_id, job=job, namespace="warehouse", producer=P, **extra)


@pytest.fixture
def loaded(client: TestClient) -> None:
    columns = facet(
        fields={
            "total": {
                "inputFields": [{"namespace": "warehouse", "name": "orders", "field": "price"}],
                "transformationDescription": "sum of price",
                "transformationType": "AGGREGATE",
            }
        }
    )
    body = run_event(
        "daily_revenue",
        RUN,
        inputs=[
            {
                "namespace": "warehouse",
                "name": "orders",
                "facets": {"schema": facet(fields=[{"name": "price", "type": "DECIMAL"}])},
            }
        ],
        outputs=[
            {
                "namespace": "warehouse",
                "name": "revenue",
                "facets": {
                    "schema": facet(fields=[{"name": "total", "type": "DECIMAL"}]),
                    "columnLineage": columns,
                },
            }
        ],
    )
    body["job"]["facets"] = {"sql": facet(query="SELECT SUM(price) AS total FROM orders_100%")}
    body["run"]["facets"] = {"processing_engine": facet(version="3.5", name="spark")}
    post(client, body)
    post(client, run_event("cleanup"))


def search(client: TestClient, kind: str, q: str) -> dict[str, Any]:
    r = client.get(f"/api/v2beta/search/{kind}", params={"q": q})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"hits", "highlights"}
    assert len(body["hits"]) == len(body["highlights"])
    return body


@pytest.mark.usefixtures("loaded")
def test_jobs_by_name_sql_run_and_engine(client: TestClient) -> None:
    body = search(client, "jobs", "REVENUE")
    assert [h["name"] for h in body["hits"]] == ["daily_revenue"]
    hit = body["hits"][0]
    assert set(hit) == {"run_id", "eventType", "name", "type", "namespace", "facets", "runFacets"}
    assert hit["run_id"] == RUN
    assert hit["eventType"] == "COMPLETE"
    assert hit["type"] == "BATCH"
    assert hit["facets"]["sql"]["query"].startswith("SELECT SUM")
    assert hit["runFacets"]["processing_engine"]["name"] == "spark"
    assert body["highlights"][0] == {"name": ["daily_<em>revenue</em>"]}
    sql = search(client, "jobs", "sum(price)")["highlights"]
    assert sql == [{"facets.sql.query": ["SELECT <em>SUM(price)</em> AS total FROM orders_100%"]}]
    by_run = search(client, "jobs", RUN[:13])["highlights"]
    assert by_run == [{"run_id": [f"<em>{RUN[:13]}</em>{RUN[13:]}"]}]
    assert search(client, "jobs", "spark")["hits"][0]["name"] == "daily_revenue"
    both = search(client, "jobs", "warehouse")
    assert sorted(h["name"] for h in both["hits"]) == ["cleanup", "daily_revenue"]
    assert all(hl["namespace"] == ["<em>warehouse</em>"] for hl in both["highlights"])


@pytest.mark.usefixtures("loaded")
def test_datasets_by_name_schema_and_column_lineage(client: TestClient) -> None:
    body = search(client, "datasets", "price")
    assert sorted(h["name"] for h in body["hits"]) == ["orders", "revenue"]
    by_name = dict(zip((h["name"] for h in body["hits"]), body["highlights"], strict=True))
    assert by_name["orders"] == {"facets.schema.fields.name": ["<em>price</em>"]}
    assert by_name["revenue"] == {
        "facets.columnLineage.fields.total.inputFields.field": ["<em>price</em>"],
        "facets.columnLineage.fields.total.transformationDescription": ["sum of <em>price</em>"],
    }
    hit = next(h for h in body["hits"] if h["name"] == "revenue")
    assert set(hit) == {
        "run_id",
        "eventType",
        "name",
        "inputFacets",
        "outputFacets",
        "namespace",
        "facets",
    }
    assert hit["run_id"] == RUN
    assert hit["eventType"] == "COMPLETE"
    assert hit["facets"]["schema"]["fields"] == [{"name": "total", "type": "DECIMAL"}]
    assert search(client, "datasets", "decimal")["highlights"][0] == {
        "facets.schema.fields.type": ["<em>DECIMAL</em>"]
    }


@pytest.mark.usefixtures("loaded")
def test_no_match_and_literal_wildcards(client: TestClient) -> None:
    assert search(client, "jobs", "nothing like this") == {"hits": [], "highlights": []}
    # % and _ are text here, not LIKE wildcards; JSON keys and producers do not match.
    assert search(client, "jobs", "orders_100%")["hits"][0]["name"] == "daily_revenue"
    assert search(client, "jobs", "s%m")["hits"] == []
    assert search(client, "datasets", "_schemaURL")["hits"] == []
    assert search(client, "datasets", "example.com")["hits"] == []


def test_ten_hits_newest_first(client: TestClient) -> None:
    for i in range(12):
        post(client, run_event(f"job_{i:02d}", eventTime=f"2024-05-01T10:{i:02d}:00Z"))
    hits = search(client, "jobs", "job_")["hits"]
    assert [h["name"] for h in hits] == [f"job_{i:02d}" for i in range(11, 1, -1)]


@pytest.mark.usefixtures("loaded")
def test_hidden_ones_are_not_found(client: TestClient) -> None:
    assert client.delete("/api/v1/namespaces/warehouse/jobs/daily_revenue").status_code == 200
    assert client.delete("/api/v1/namespaces/warehouse/datasets/orders").status_code == 200
    assert search(client, "jobs", "revenue")["hits"] == []
    assert [h["name"] for h in search(client, "datasets", "price")["hits"]] == ["revenue"]


@pytest.mark.parametrize("kind", ["jobs", "datasets"])
@pytest.mark.parametrize("params", [{}, {"q": ""}, {"q": "   "}, {"q": "x" * 1025}])
def test_bad_queries_are_400(client: TestClient, kind: str, params: dict[str, str]) -> None:
    r = client.get(f"/api/v2beta/search/{kind}", params=params)
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"code", "message", "details"}
    assert r.json()["details"]["field"] == "q"
