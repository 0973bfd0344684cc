"""Column lineage of builds: every output a build writes carries the lineage derived
from its Spark plan, stored with the version and answered by Marquez's routes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pytest
from build_support import SHOP, Project, clicks, project_of, users

from strata.settings import Settings

pytestmark = pytest.mark.spark  # builds run Spark in the test's process


@pytest.fixture
def built(settings: Settings, tmp_path: Path) -> Iterator[tuple[Project, Any]]:
    """The shop pipeline built once, and a client of the API over its store."""
    from fastapi.testclient import TestClient

    from strata.api import create_app

    with project_of(settings, tmp_path, SHOP) as p:
        p.append("raw/clicks", clicks(("ada", 50), ("ada", 500), ("bob", -1), ("bob", 120)))
        p.append("raw/users", users(("ada", "UK"), ("bob", "US"), ("bob", "US")))
        p.json("build", "--pipeline", str(p.folder), "--all")
        app = create_app(dataclasses.replace(p.settings, pipelines=(str(p.folder),)), p.lake.engine)
        with TestClient(app) as api:
            yield p, api


def _inputs(api: Any, ns: str, dataset: str) -> dict[str, dict[tuple[str, str], set[str]]]:
    """Each field's input fields and their transformations, from the Marquez dataset."""
    body = api.get(f"/api/v1/namespaces/{ns}/datasets/{quote(dataset, safe='')}").json()
    fields = body["facets"]["columnLineage"]["fields"]
    return {
        out: {
            (i["name"], i["field"]): {f"{t['type']}/{t['subtype']}" for t in i["transformations"]}
            for i in spec["inputFields"]
        }
        for out, spec in fields.items()
    }


def test_every_built_output_carries_its_column_lineage(built: tuple[Project, Any]) -> None:
    p, api = built
    ns = p.lake.namespace
    # A filter: each column is itself, filtered by ms.
    clean = _inputs(api, ns, "clean/clicks")
    assert clean["user"] == {
        ("raw/clicks", "user"): {"DIRECT/IDENTITY"},
        ("raw/clicks", "ms"): {"INDIRECT/FILTER"},
    }
    # Both outputs of one @transform.
    for out in ("clicks/slow", "clicks/fast"):
        assert _inputs(api, ns, out)["ms"][("clean/clicks", "ms")] == {
            "DIRECT/IDENTITY",
            "INDIRECT/FILTER",
        }
    # A join and an aggregation: count(*) reads no column, but is grouped and joined.
    per_user = _inputs(api, ns, "metrics/slow_per_user")
    assert per_user["country"][("clean/users", "country")] == {
        "DIRECT/IDENTITY",
        "INDIRECT/GROUP_BY",
    }
    assert per_user["clicks"] == {
        ("clicks/slow", "user"): {"INDIRECT/JOIN", "INDIRECT/GROUP_BY"},
        ("clean/users", "user"): {"INDIRECT/JOIN"},  # the join's key is the left one
        ("clean/users", "country"): {"INDIRECT/GROUP_BY"},
    }
    # A full outer join on names: the key is a coalesce of both sides.
    report = _inputs(api, ns, "report/users")
    assert {k for k, v in report["user"].items() if "DIRECT/TRANSFORMATION" in v} == {
        ("metrics/slow_per_user", "user"),
        ("metrics/fast_per_user", "user"),
    }
    assert "DIRECT/TRANSFORMATION" in report["slow"][("metrics/slow_per_user", "clicks")]


def test_column_lineage_walks_builds_down_to_raw_fields(built: tuple[Project, Any]) -> None:
    p, api = built
    ns = p.lake.namespace
    node = f"datasetField:{ns}:report/users:slow"
    graph = api.get("/api/v1/column-lineage", params={"nodeId": node, "depth": 20}).json()
    ids = {n["id"] for n in graph["graph"]}
    for upstream in (
        "metrics/slow_per_user:clicks",
        "clicks/slow:user",
        "clean/clicks:ms",
        "raw/clicks:ms",
        "raw/users:country",
    ):
        assert f"datasetField:{ns}:{upstream}" in ids, sorted(ids)
    # Nothing from the other branch's count reaches the slow one.
    assert f"datasetField:{ns}:metrics/fast_per_user:clicks" not in ids

    down = api.get(
        "/api/v1/column-lineage",
        params={"nodeId": f"datasetField:{ns}:raw/users:country", "withDownstream": True},
    ).json()
    reached = {n["id"] for n in down["graph"]}
    assert f"datasetField:{ns}:report/countries:country" in reached
    assert f"datasetField:{ns}:report/users:country" in reached


def test_a_rebuilt_version_keeps_its_own_lineage(built: tuple[Project, Any]) -> None:
    """The lineage is stored with the version: a program change that drops a column
    changes the new version's lineage and leaves the old one's as it was."""
    p, api = built
    ns = p.lake.namespace
    p.edit(
        'return users.groupBy("country").agg(F.count("*").alias("users"))',
        'return users.groupBy("country").agg(F.countDistinct("user").alias("users"))',
    )
    p.json("build", "--pipeline", str(p.folder), "report/countries")
    now = _inputs(api, ns, "report/countries")["users"]
    assert now[("clean/users", "user")] == {"DIRECT/AGGREGATION"}
    node = f"datasetField:{ns}:report/countries:users"
    old = api.get("/api/v1/column-lineage", params={"nodeId": f"{node}#1"}).json()["graph"]
    first = next(n for n in old if n["id"].startswith(node))
    assert [f["field"] for f in first["data"]["inputFields"]] == ["country"]


def test_a_partitioned_output_has_the_lineage_of_a_whole_build(
    settings: Settings, tmp_path: Path
) -> None:
    """Each partition runs the same plan: the version's lineage is that plan's, derived
    once, whichever partitions built."""
    from fastapi.testclient import TestClient

    from strata.api import create_app

    checks = Path(__file__).with_name("checks_pipeline.py")
    with project_of(settings, tmp_path, checks) as p:
        table = pa.table({"day": ["d1", "d2", "d3"], "amount": [1.0, 2.0, 3.0]})
        with p.lake.transaction("raw/daily", "SNAPSHOT", partition_by=["day"]) as txn:
            txn.write(table)
        report = p.json("build", "--pipeline", str(p.folder), "daily/orders")
        parts = report["transforms"][0]["partitions"]
        assert [x["outcome"] for x in parts] == ["built"] * 3
        with TestClient(create_app(p.settings, p.lake.engine)) as api:
            fields = _inputs(api, p.lake.namespace, "daily/orders")
    assert fields["amount"][("raw/daily", "amount")] == {"DIRECT/IDENTITY"}
    assert fields["day"][("raw/daily", "day")] == {"DIRECT/IDENTITY"}


def test_a_plan_that_cannot_be_followed_leaves_no_lineage_and_one_warning(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """Lineage describes a run and is never a reason for it to fail."""
    from strata.builds.execution import execute
    from strata.lake.service import Lake

    lake = Lake(settings)
    try:
        with caplog.at_level("WARNING", logger="strata.builds.execution.execute"):
            assert execute.derive_lineage(lake, {}, "out/x", "not a Spark frame") is None
    finally:
        lake.engine.dispose()
    [record] = caplog.records
    assert record.getMessage().startswith("no column lineage for out/x: its plan could not")
    assert "\n" not in record.getMessage() and record.exc_info is None


def _names(fields: list[dict[str, Any]]) -> list[str]:
    return [f"{f['dataset']}@{f['version']}.{f['column']}" for f in fields]


def test_trace_follows_one_column_down_to_the_raw_fields_at_exact_versions(
    built: tuple[Project, Any],
) -> None:
    p, api = built
    # A new raw version after the build: the trace still names the version each run read.
    assert p.append("raw/users", users(("cy", "CY"))) == 2
    tree = p.json("trace", "report/users@1", "--column", "country")
    assert _names([tree]) == ["report/users@1.country"]
    assert tree["type"] == "string"
    # A coalesce of both sides of a full outer join: both are where the values came from.
    assert {(c["dataset"], c["transformation"]) for c in tree["inputs"]} == {
        ("metrics/slow_per_user", "DIRECT/TRANSFORMATION, INDIRECT/JOIN"),
        ("metrics/fast_per_user", "DIRECT/TRANSFORMATION, INDIRECT/JOIN"),
    }
    first, second = tree["inputs"]
    assert _names(first["inputs"]) == ["clean/users@1.country"]
    assert _names(first["inputs"][0]["inputs"]) == ["raw/users@1.country"]
    assert second["inputs"][0]["repeated"] is True  # met again: its inputs are above
    assert _names(tree["raw"]) == ["raw/users@1.country"]

    # With --indirect: also what filtered, joined and grouped it, down to raw fields.
    wide = p.json("trace", "report/users", "--column", "country", "--indirect")
    assert set(_names(wide["raw"])) == {
        "raw/users@1.country",
        "raw/users@1.user",
        "raw/clicks@1.user",
        "raw/clicks@1.ms",
    }
    status, out, _ = p.cli("trace", "report/users", "--column", "country")
    assert status == 0 and "raw fields: raw/users@1.country" in out, out
    body = api.get(
        f"/api/v1/strata/trace/{quote('report/users', safe='')}/country", params={"version": 1}
    )
    assert body.status_code == 200 and body.json() == tree


def test_trace_of_a_column_refuses_what_it_cannot_follow(built: tuple[Project, Any]) -> None:
    p, api = built
    status, _, err = p.cli("trace", "report/users", "--column", "nope")
    assert status != 0
    line = " ".join(err.split())  # one error, however the terminal wraps it
    assert line.startswith("error: report/users@1 has no column 'nope'"), line
    assert "; its columns are user, country, slow, fast" in line, line
    status, _, err = p.cli("trace", "report/users", "--column", "user", "--partition", "a=b")
    assert status != 0 and "drop the partition" in err, err
    status, _, err = p.cli("impact", "report/users")
    assert status != 0 and "DATASET.COLUMN" in err, err
    ds = quote("report/users", safe="")
    missing = api.get(f"/api/v1/strata/trace/{ds}/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["message"]
    assert api.get(f"/api/v1/strata/impact/{ds}/nope").status_code == 404


def test_impact_lists_every_field_derived_from_a_column(built: tuple[Project, Any]) -> None:
    p, api = built
    found = p.json("impact", "raw/users.country")
    assert _names([found]) == ["raw/users@1.country"]
    kinds = {f"{d['dataset']}.{d['column']}": (d["kind"], d["hops"]) for d in found["dependents"]}
    # Its values flow on through these (nearest first) ...
    assert kinds["clean/users.country"] == ("DIRECT", 1)
    assert kinds["report/countries.country"] == ("DIRECT", 2)
    assert kinds["metrics/slow_per_user.country"] == ("DIRECT", 2)
    assert kinds["report/users.country"] == ("DIRECT", 3)
    # ... and it groups these, whose values it does not make.
    assert kinds["report/countries.users"] == ("INDIRECT", 2)
    assert kinds["metrics/fast_per_user.clicks"] == ("INDIRECT", 2)
    assert kinds["report/users.slow"][0] == "INDIRECT"
    # Nothing about clicks' own columns depends on a user's country.
    assert not any(k.startswith(("clicks/", "clean/clicks")) for k in kinds)
    hops = [d["hops"] for d in found["dependents"]]
    assert hops == sorted(hops)
    via = api.get(f"/api/v1/strata/impact/{quote('raw/users', safe='')}/country")
    assert via.status_code == 200 and via.json() == found
    status, out, _ = p.cli("impact", "raw/users.country")
    assert status == 0 and f"{len(kinds)} fields derived from raw/users@1.country" in out
    direct = p.json("impact", "raw/users.country", "--direct")
    assert {f"{d['dataset']}.{d['column']}" for d in direct["dependents"]} == {
        k for k, (kind, _) in kinds.items() if kind == "DIRECT"
    }
    assert direct["total"] == len(kinds) and direct["direct"] == len(direct["dependents"])
    ref = f"/api/v1/strata/impact/{quote('raw/users', safe='')}/country?direct=true"
    assert api.get(ref).json() == direct


def _program_cause(status: dict[str, Any], dataset: str) -> dict[str, Any]:
    [st] = [d for d in status["datasets"] if d["name"] == dataset]
    [cause] = [c for c in st["causes"] if c["kind"] == "program_changed"]
    return cause


def test_status_columns_says_which_columns_a_program_change_touches(
    built: tuple[Project, Any],
) -> None:
    """Planned on its inputs without running, the new program's lineage against the
    built version's: a column now also fed by another input is changed, a new one is
    added, the rest unchanged; a change that moves no column says so."""
    p, api = built
    folder = str(p.folder)
    p.edit(
        'return both.fillna(0, ["slow", "fast"])',
        'filled = both.fillna(0, ["slow", "fast"])\n'
        '    return filled.withColumn("fast", F.col("slow") + F.col("fast"))'
        '.withColumn("total", F.lit(1))',
    )
    p.edit(
        'slow.write_dataframe(df.filter(F.col("ms") >= SLOW_MS))',
        'slow.write_dataframe(df.filter(F.col("ms") > SLOW_MS))',
    )
    plain = p.json("status", "--pipeline", folder)
    assert "columns" not in _program_cause(plain, "report/users")  # not planned yet
    versions = {d["name"]: d["version"] for d in plain["datasets"]}

    answer = p.json("status", "--pipeline", folder, "--columns")
    report = _program_cause(answer, "report/users")
    assert report["columns"] == {
        "changed": ["fast"],
        "added": ["total"],
        "removed": [],
        "unchanged": ["user", "country", "slow"],
    }
    assert report["text"].endswith("; columns changed: fast; added: total")
    for out in ("clicks/slow", "clicks/fast"):  # a stricter filter on the same column
        cause = _program_cause(answer, out)
        assert cause["columns"]["changed"] == cause["columns"]["added"] == []
        assert cause["text"].endswith("; no column's lineage changed")
    jobs = {d["name"]: d["transform"] for d in answer["datasets"]}
    assert sorted(answer["planned"]) == sorted({jobs["report/users"], jobs["clicks/slow"]})
    assert answer["unplanned"] == []
    # Planning ran nothing and wrote nothing.
    assert {d["name"]: d["version"] for d in answer["datasets"]} == versions

    # Kept in the store: the API's status (and so the pages) says the same.
    st = api.get("/api/v1/strata/status/report%2Fusers").json()
    assert st["causes"][0]["columns"] == report["columns"]
    again = p.json("status", "--pipeline", folder)  # no planning: what was kept
    assert _program_cause(again, "report/users")["text"] == report["text"]

    p.json("build", "--pipeline", folder, "report/users")
    after = p.json("status", "--pipeline", folder, "report/users")
    assert after["datasets"][0]["causes"] == []


def test_the_api_plans_one_dataset_s_transform(built: tuple[Project, Any]) -> None:
    p, api = built
    p.edit(
        'return users.groupBy("country").agg(F.count("*").alias("users"))',
        'return users.groupBy("country").agg(F.countDistinct("user").alias("users"))',
    )
    answer = api.post("/api/v1/strata/plans", params={"dataset": "report/countries"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    [st] = body["datasets"]
    assert body["planned"] == [st["transform"]]
    assert _program_cause(body, "report/countries")["columns"] == {
        "changed": ["users"],
        "added": [],
        "removed": [],
        "unchanged": ["country"],
    }
    missing = api.post("/api/v1/strata/plans", params={"dataset": "no/such"})
    assert missing.status_code == 404 and "no/such" in missing.json()["message"]
