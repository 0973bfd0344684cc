"""Incremental transforms end to end, through the CLI, on SQLite and PostgreSQL.

``clean_clicks`` appends the clicks appended since its last build; ``per_country``
(``semantic_version=1``, users read whole) merges the new clean clicks into its totals
and replaces them. The store is checked after each step: the ranges each version read,
the rows each run reports, and totals equal to a whole rebuild's.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from build_support import Project, project_of, users
from fastapi.testclient import TestClient

from strata.api.app import create_app
from strata.settings import Settings

pytestmark = pytest.mark.spark

PIPELINE = Path(__file__).with_name("incremental_pipeline.py")
SCHEMA = pa.schema([("user", pa.string()), ("ms", pa.int64())])
USERS = {"ada": "UK", "bob": "US", "cy": "JP"}


@pytest.fixture
def inc(settings: Settings, tmp_path: Path) -> Any:
    with project_of(settings, tmp_path, PIPELINE) as p:
        yield p


def clicks(*rows: tuple[str, int]) -> pa.Table:
    return pa.table({"user": [u for u, _ in rows], "ms": [m for _, m in rows]}, schema=SCHEMA)


def write(p: Project, kind: str, table: pa.Table) -> int:
    with p.lake.transaction("raw/clicks", type=kind) as txn:
        txn.write(table)
    return txn.versions["raw/clicks"].commit_id


def build(p: Project, *args: str, code: int = 0) -> dict[str, dict[str, Any]]:
    report = p.json("build", "metrics/per_country", *args, "--pipeline", str(p.folder), code=code)
    return {t["transform"].split(".")[-1]: t for t in report["transforms"]}


def status(p: Project) -> dict[str, dict[str, Any]]:
    out = p.json("status", "--pipeline", str(p.folder))
    return {d["name"]: d for d in out["datasets"]}


def totals(p: Project) -> dict[str, tuple[int, int]]:
    table = p.lake.read_arrow("metrics/per_country").to_pylist()
    return {r["country"]: (r["clicks"], r["ms"]) for r in table}


def expected(p: Project) -> dict[str, tuple[int, int]]:
    """Totals computed whole from the current raw clicks, as a full build would."""
    rows = [r for r in p.lake.read_arrow("raw/clicks").to_pylist() if r["ms"] >= 0]
    count = Counter(USERS[r["user"]] for r in rows)
    ms = Counter()
    for r in rows:
        ms[USERS[r["user"]]] += r["ms"]
    return {c: (count[c], ms[c]) for c in count}


def _seed(p: Project) -> None:
    p.append("raw/users", users(*USERS.items()))
    write(p, "APPEND", clicks(("ada", 40), ("bob", 120), ("cy", -1)))


def test_first_build_is_whole_then_appends_are_read_alone(inc: Project) -> None:
    p = inc
    _seed(p)
    first = build(p)
    assert first["clean_clicks"]["mode"] == "full"
    assert first["clean_clicks"]["read"] == {"raw/clicks": {"from": None, "to": 1, "rows": 3}}
    assert first["per_country"]["mode"] == "full"
    assert totals(p) == expected(p)

    write(p, "APPEND", clicks(("ada", 10), ("cy", 5)))
    now = status(p)
    [cause] = now["clean/clicks"]["causes"]
    assert cause == {
        "kind": "input_appended", "input": "raw/clicks", "built_from": 1, "current": 2,
        "rows": 2, "commits": 1, "text": "input raw/clicks: 2 rows appended in 1 commit (1 → 2)",
    }  # fmt: skip
    second = build(p)
    clean, per = second["clean_clicks"], second["per_country"]
    assert (clean["mode"], clean["rows"]) == ("incremental", 2)
    assert clean["read"] == {"raw/clicks": {"from": 1, "to": 2, "rows": 2}}
    assert per["mode"] == "incremental"
    assert per["read"]["clean/clicks"] == {"from": 1, "to": 2, "rows": 2}
    assert per["read"]["raw/users"] == {"from": None, "to": 1, "rows": 3}  # snapshot input
    assert totals(p) == expected(p)
    assert p.lake.version("clean/clicks").type == "APPEND"
    assert p.lake.version("clean/clicks").row_count == 4

    history = p.json("history", "clean/clicks")["versions"]
    assert [(v["version"], v["mode"]) for v in history] == [(1, "full"), (2, "incremental")]
    assert history[1]["read"] == {"raw/clicks": {"from": 1, "to": 2, "rows": 2}}


def test_an_append_of_no_rows_runs_nothing_and_a_snapshot_runs_whole(inc: Project) -> None:
    p = inc
    _seed(p)
    build(p)
    write(p, "APPEND", clicks())
    now = status(p)
    assert now["clean/clicks"]["causes"] == [] and now["clean/clicks"]["state"] == "fresh"
    assert [n["kind"] for n in now["clean/clicks"]["notes"]] == ["input_identical"]
    assert {t: s["outcome"] for t, s in build(p).items()} == {
        "clean_clicks": "fresh",
        "per_country": "fresh",
    }

    version = write(p, "SNAPSHOT", clicks(("bob", 7), ("bob", 8)))
    [cause] = status(p)["clean/clicks"]["causes"]
    assert (cause["kind"], cause["version"], cause["type"]) == (
        "input_rewritten",
        version,
        "SNAPSHOT",
    )
    after = build(p)
    assert after["clean_clicks"]["mode"] == "full"
    assert after["clean_clicks"]["read"]["raw/clicks"]["from"] is None
    assert after["per_country"]["mode"] == "full"  # clean/clicks was replaced
    assert totals(p) == expected(p) == {"US": (2, 15)}


def test_program_edits_with_and_without_semantic_version_and_full(inc: Project) -> None:
    p = inc
    _seed(p)
    build(p)
    # per_country keeps semantic_version=1: the edit applies to new rows only.
    p.edit('F.sum("ms").alias("ms"))\n    before', 'F.sum("ms").alias("ms"))  # edited\n    before')
    p.edit("added = new.groupBy", "added = new.where(F.lit(True)).groupBy")
    [cause] = status(p)["metrics/per_country"]["causes"]
    assert (cause["kind"], cause["semantic_version"]) == ("program_changed", 1)
    kept = build(p)
    assert kept["per_country"]["mode"] == "incremental"
    assert kept["per_country"]["read"]["clean/clicks"] == {"from": 1, "to": 1, "rows": 0}
    assert totals(p) == expected(p)

    # clean_clicks declares no semantic version: any program change runs it whole.
    p.edit('F.col("ms") >= 0', 'F.col("ms") > -1')
    write(p, "APPEND", clicks(("bob", 1)))
    edited = build(p)
    assert edited["clean_clicks"]["mode"] == "full"
    assert edited["per_country"]["mode"] == "full"
    assert totals(p) == expected(p)

    write(p, "APPEND", clicks(("ada", 2)))
    forced = p.json("build", "clean/clicks", "--full", "--pipeline", str(p.folder))["transforms"]
    assert [(t["outcome"], t["mode"]) for t in forced] == [("built", "full")]
    assert p.lake.version("clean/clicks").type == "SNAPSHOT"


def test_a_failed_incremental_build_commits_nothing_and_reads_the_range_again(
    inc: Project,
) -> None:
    p = inc
    _seed(p)
    build(p)
    write(p, "APPEND", clicks(("ada", 3)))
    p.edit("    out.set_mode", "    assert False, 'broken'\n    out.set_mode")
    failed = build(p, code=1)
    assert failed["per_country"]["outcome"] == "failed"
    assert "broken" in failed["per_country"]["reason"]
    assert p.lake.version("metrics/per_country").commit_id == 1
    assert p.lake.version("clean/clicks").commit_id == 2  # its own build committed

    p.edit("    assert False, 'broken'\n", "")
    again = build(p)
    assert again["clean_clicks"]["outcome"] == "fresh"
    assert again["per_country"]["mode"] == "incremental"
    assert again["per_country"]["read"]["clean/clicks"] == {"from": 1, "to": 2, "rows": 1}
    assert totals(p) == expected(p)


HEAD = "from strata import Input, Output, incremental, transform, transform_df\n\n"


def _fail(p: Project, *args: str) -> str:
    code, out, err = p.cli(*args, "--pipeline", str(p.folder))
    assert code == 1, (out, err)
    assert "Traceback" not in err
    return " ".join(err.split())


@pytest.mark.parametrize(
    ("declaration", "words"),
    [
        (
            "@incremental()\n@transform_df(Output('d/x', type='SNAPSHOT'), a=Input('raw/a'))",
            "['d/x'] declared type='SNAPSHOT' cannot be appended to",
        ),
        (
            "@incremental(snapshot_inputs=['b'])\n@transform_df(Output('d/x'), a=Input('raw/a'))",
            "snapshot_inputs names ['b'], not among its inputs ['a']",
        ),
        (
            "@incremental(snapshot_inputs='a')\n@transform_df(Output('d/x'), a=Input('raw/a'))",
            "snapshot_inputs='a' must be a list of input parameter names",
        ),
        (
            "@incremental(semantic_version='2')\n@transform_df(Output('d/x'), a=Input('raw/a'))",
            "semantic_version='2' must be an integer",
        ),
    ],
    ids=["snapshot-output", "unknown-snapshot-input", "snapshot-inputs-text", "semantic-text"],
)
def test_bad_declarations_name_the_transform_file_and_line(
    inc: Project, declaration: str, words: str
) -> None:
    inc.pipeline.write_text(HEAD + declaration + "\ndef one(a):\n    return a\n")
    msg = _fail(inc, "status")
    assert words in msg and "one" in msg and f"{inc.pipeline}:" in msg


def test_the_previous_output_of_a_first_build_needs_a_schema(inc: Project) -> None:
    p = inc
    _seed(p)
    p.edit(
        'before = out.dataframe("previous", schema=TOTALS)', 'before = out.dataframe("previous")'
    )
    failed = build(p, code=1)["per_country"]
    assert failed["outcome"] == "failed"
    assert "'metrics/per_country', which has no version and so no schema yet" in failed["reason"]
    assert "pass schema=" in failed["reason"]
    assert p.scalar("SELECT count(*) FROM dataset_versions WHERE commit_id IS NOT NULL "
                    "AND dataset_uuid IN (SELECT uuid FROM datasets WHERE name = "
                    "'metrics/per_country')") == 0  # fmt: skip


def test_trace_and_reproduce_an_incremental_version_after_the_output_moved_on(
    inc: Project,
) -> None:
    p = inc
    _seed(p)
    build(p)  # clean/clicks@1 and per_country@1, whole
    write(p, "APPEND", clicks(("ada", 10)))
    write(p, "APPEND", clicks(("bob", 20), ("cy", 30)))
    build(p)  # @2 each: raw/clicks (1, 3] read as added rows
    write(p, "APPEND", clicks(("cy", 40)))
    build(p)  # @3 each: the outputs moved on

    tree = p.json("trace", "metrics/per_country@2")
    assert (tree["version"], tree["mode"], tree["previous"]) == (
        2,
        "incremental",
        {"metrics/per_country": 1},
    )
    clean = next(i for i in tree["inputs"] if i["dataset"] == "clean/clicks")
    assert (clean["version"], clean["read"], clean["mode"]) == (
        2,
        {"from": 1, "to": 2},
        "incremental",
    )
    [raw] = clean["inputs"]
    assert (raw["dataset"], raw["version"], raw["read"]) == ("raw/clicks", 3, {"from": 1, "to": 3})
    assert [v["version"] for v in raw["also_read"]] == [2]  # the range's earlier version
    users_node = next(i for i in tree["inputs"] if i["dataset"] == "raw/users")
    assert "read" not in users_node  # a snapshot input: read whole

    appended = p.json("reproduce", "clean/clicks@2")
    assert (appended["mode"], appended["compared"], appended["identical"]) == (
        "incremental",
        "added",
        True,
    )
    assert appended["read"]["raw/clicks"]["from"] == 1
    replaced = p.json("reproduce", "metrics/per_country@2")
    assert (replaced["mode"], replaced["compared"], replaced["identical"]) == (
        "incremental",
        "version",
        True,
    )
    _, out, _ = p.cli("trace", "metrics/per_country@2")
    assert "raw/clicks(1, 3]" in out and "incremental" in out


def test_the_api_and_the_lineage_events_show_the_ranges(inc: Project) -> None:
    p = inc
    _seed(p)
    build(p)
    write(p, "APPEND", clicks(("ada", 1)))
    write(p, "APPEND", clicks(("bob", 2)))
    run = build(p)["clean_clicks"]["run"]
    settings = dataclasses.replace(p.settings, pipelines=(str(p.folder),))
    with TestClient(create_app(settings, p.lake.engine), raise_server_exceptions=True) as api:
        history = api.get("/api/v1/strata/history/clean%2Fclicks").json()["versions"]
        assert history[-1]["read"]["raw/clicks"] == {"from": 1, "to": 3, "rows": 2}
        marquez = api.get(f"/api/v1/jobs/runs/{run}").json()
        assert marquez["facets"]["strata_build"]["mode"] == "incremental"
        [read] = marquez["inputDatasetVersions"]
        assert read["datasetVersionId"]["version"]  # the version read: raw/clicks@3
        assert read["facets"]["strata_read"] == {
            "_producer": read["facets"]["strata_read"]["_producer"],
            "_schemaURL": read["facets"]["strata_read"]["_schemaURL"],
            "fromVersion": "2",
            "toVersion": "3",
            "afterVersion": "1",
        }
        write(p, "APPEND", clicks(("cy", 3)))
        status = api.get("/api/v1/strata/status/clean%2Fclicks").json()
        assert [c["kind"] for c in status["causes"]] == ["input_appended"]
        assert status["causes"][0]["rows"] == 1
