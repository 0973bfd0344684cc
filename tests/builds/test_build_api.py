"""The build service through the REST API: Strata routes and the Marquez routes' view of
builds."""

from __future__ import annotations

import dataclasses
from urllib.parse import quote

import pytest
from build_support import Project, clicks, users
from fastapi.testclient import TestClient

from strata.api import create_app

pytestmark = pytest.mark.spark


def seg(name: str) -> str:
    return quote(name, safe="")


def test_status_history_trace_and_programs_over_http(project: Project) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 300)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    p.json("build", "report/countries", "--pipeline", str(p.folder))
    settings = dataclasses.replace(p.settings, pipelines=(str(p.folder),))
    with TestClient(create_app(settings, p.lake.engine), raise_server_exceptions=True) as api:
        status = api.get("/api/v1/strata/status")
        assert status.status_code == 200
        by_name = {d["name"]: d for d in status.json()["datasets"]}
        assert by_name["report/countries"]["stale"] is False
        assert by_name["report/users"]["causes"][0]["kind"] == "never_built"

        one = api.get(f"/api/v1/strata/status/{seg('clean/clicks')}").json()
        assert (one["kind"], one["stale"]) == ("derived", True)

        hist = api.get(f"/api/v1/strata/history/{seg('report/countries')}").json()
        assert hist["versions"][0]["inputs"] == {"clean/users": 1}
        assert hist["versions"][0]["program"]["transform"] == "shop.countries"

        tree = api.get(f"/api/v1/strata/trace/{seg('report/countries')}?version=1").json()
        assert tree["inputs"][0]["dataset"] == "clean/users"
        assert tree["inputs"][0]["inputs"][0] == {
            "dataset": "raw/users",
            "version": 1,
            "run": None,
            "state": None,
            "program": None,
            "mode": None,
            "inputs": [],
        }

        program = api.get(f"/api/v1/strata/programs/{seg('report/countries')}").json()
        assert "def countries(users)" in program["entry"]["source"]
        assert "shop.py" in program["files"]

        # Builds are ordinary lineage: the Marquez routes see the runs and the graph.
        runs = api.get("/api/v1/namespaces/strata/jobs/shop.countries/runs").json()["runs"]
        assert [r["state"] for r in runs] == ["COMPLETED"]
        job = api.get("/api/v1/namespaces/strata/jobs/shop.countries").json()
        assert job["parentJobName"] == "shop"
        graph = api.get(
            "/api/v1/lineage", params={"nodeId": "dataset:strata:report/countries"}
        ).json()
        assert "job:strata:shop.countries" in {n["id"] for n in graph["graph"]}

        again = api.post(f"/api/v1/strata/reproduce/{seg('report/countries')}?version=1")
        assert again.status_code == 200
        assert again.json()["identical"] is True
        assert again.json()["recorded"] == hist["versions"][0]["data_fingerprint"]

        missing = api.get(f"/api/v1/strata/history/{seg('nope/x')}")
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"
        bad = api.get(f"/api/v1/strata/trace/{seg('raw/users')}?version=0")
        assert bad.status_code in (400, 422) and "code" in bad.json()
        raw = api.get(f"/api/v1/strata/programs/{seg('raw/users')}")
        assert raw.status_code == 404 and "written by hand" in raw.json()["message"]
        raw = api.post(f"/api/v1/strata/reproduce/{seg('raw/users')}")
        assert raw.status_code == 404 and "written by hand" in raw.json()["message"]


def test_the_server_imports_pipelines_once_and_again_only_after_an_edit(project: Project) -> None:
    """One build service per app: polling status imports nothing; an edited pipeline file
    is imported again on the next request and shows as changed."""
    import sys

    p = project
    p.append("raw/users", users(("ada", "UK")))
    p.json("build", "report/countries", "--pipeline", str(p.folder))
    settings = dataclasses.replace(p.settings, pipelines=(str(p.folder),))
    one = f"/api/v1/strata/status/{seg('report/countries')}"
    with TestClient(create_app(settings, p.lake.engine)) as api:
        assert api.get(one).json()["stale"] is False
        imported = sys.modules["shop"]
        for _ in range(5):
            assert api.get("/api/v1/strata/status").status_code == 200
            assert api.get(one).json()["state"] == "fresh"
        assert sys.modules["shop"] is imported  # polled six times, imported once

        p.edit('alias("users")', 'alias("people")')
        edited = api.get(one).json()
        assert sys.modules["shop"] is not imported
        assert edited["state"] == "out_of_date"
        assert [c["kind"] for c in edited["causes"]] == ["program_changed"]
        # Only its own upstream is read, and its answer is the whole status's answer.
        every = {d["name"]: d for d in api.get("/api/v1/strata/status").json()["datasets"]}
        assert every["report/countries"] == edited
        # A raw dataset, and a declared input never written, answer as in the whole list.
        for name, state in (("raw/users", "fresh"), ("raw/clicks", "missing")):
            alone = api.get(f"/api/v1/strata/status/{seg(name)}").json()
            assert alone == every[name] and alone["state"] == state
