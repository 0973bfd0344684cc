"""The build service end to end, through the CLI, on SQLite and PostgreSQL.

One pipeline (two roots, a diamond, a multi-output transform, a function registered
twice) goes through a first build, a no-op rebuild, program changes, an input append, a
rebuild with identical rows, a failure and its fix, and trace and reproduce of a past
version; the store is checked after each step.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from build_support import Project, clicks, users

pytestmark = pytest.mark.spark

DERIVED = [
    "clean/clicks",
    "clean/users",
    "clicks/fast",
    "clicks/slow",
    "metrics/fast_per_user",
    "metrics/slow_per_user",
    "report/countries",
    "report/users",
]


def _seed(p: Project) -> None:
    p.append("raw/clicks", clicks(("ada", 40), ("ada", 300), ("bob", 120), ("cy", -1)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US"), ("bob", "US"), ("cy", "JP")))


def build(p: Project, *args: str, code: int = 0) -> dict[str, Any]:
    return p.json("build", *args, "--pipeline", str(p.folder), code=code)


def status(p: Project) -> dict[str, dict[str, Any]]:
    out = p.json("status", "--pipeline", str(p.folder))
    return {d["name"]: d for d in out["datasets"]}


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {t["transform"]: t["outcome"] for t in report["transforms"]}


def kinds(entry: dict[str, Any]) -> list[str]:
    return sorted(c["kind"] for c in entry["causes"])


def built(report: dict[str, Any]) -> set[str]:
    return {k for k, v in outcomes(report).items() if v == "built"}


def test_first_build_records_the_catalog_and_a_rebuild_runs_nothing(project: Project) -> None:
    p = project
    _seed(p)
    before = status(p)
    assert {n for n, d in before.items() if d["kind"] == "derived"} == set(DERIVED)
    assert all(kinds(before[n])[0] == "never_built" for n in DERIVED)
    assert before["raw/clicks"] == {**before["raw/clicks"], "kind": "raw", "version": 1}

    report = build(p, "--all")
    assert report["state"] == "COMPLETED"
    assert len(built(report)) == 7
    # Post-order: every transform after the ones it reads from.
    order = [t["transform"] for t in report["transforms"]]
    assert order.index("shop.split") > order.index("shop.clean_clicks")
    assert order.index("shop.user_report") > order.index("shop.fast_per_user")
    after = status(p)
    assert not any(after[n]["stale"] for n in DERIVED)

    # The catalog: the report's version was built by a COMPLETED run of the transform's
    # first program version, from the exact raw versions, under the build's parent run.
    hist = p.json("history", "report/users")["versions"]
    assert [v["version"] for v in hist] == [1]
    v1 = hist[0]
    assert v1["state"] == "COMPLETED"
    assert v1["program"]["transform"] == "shop.user_report"
    assert v1["program"]["ordinal"] == 1
    assert v1["inputs"] == {"metrics/fast_per_user": 1, "metrics/slow_per_user": 1}
    parent = p.scalar("SELECT parent_run_uuid FROM runs WHERE uuid = :r", r=v1["run"])
    assert parent == report["run"]
    assert (
        p.scalar(
            "SELECT name FROM jobs j JOIN runs r ON r.job_uuid = j.uuid WHERE r.uuid = :r", r=parent
        )
        == "shop"
    )
    # The lake commit is the lineage output version: one version row, bound to the run.
    assert (
        p.scalar(
            "SELECT count(*) FROM dataset_versions dv JOIN datasets d ON d.uuid = dv.dataset_uuid "
            "WHERE d.name = 'report/users'"
        )
        == 1
    )
    # Both outputs of the multi-output transform came from one transaction group.
    groups = p.scalar(
        "SELECT count(DISTINCT t.group_uuid) FROM transactions t JOIN datasets d "
        "ON d.uuid = t.dataset_uuid WHERE d.name IN ('clicks/slow', 'clicks/fast')"
    )
    assert groups == 1

    runs_before = p.scalar("SELECT count(*) FROM runs")
    again = build(p, "--all")
    assert set(outcomes(again).values()) == {"fresh"}
    assert p.scalar("SELECT count(*) FROM runs") == runs_before

    # Status and a no-op build start no JVM: with no Spark to be found they still answer.
    for args in (["status", "--json"], ["build", "--all", "--json"]):
        proc = p.spawn(*args, SPARK_HOME="/nonexistent", JAVA_HOME="/nonexistent")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "java" not in err.lower()
        assert json.loads(out)


def test_program_change_input_append_and_early_cutoff(project: Project) -> None:
    p = project
    _seed(p)
    build(p, "--all")

    # A program change: exactly its datasets and those downstream are out of date.
    p.edit("SLOW_MS = 100", "SLOW_MS = 30")
    st = status(p)
    assert kinds(st["clicks/slow"]) == ["program_changed"]
    change = st["clicks/slow"]["causes"][0]
    assert change["old"]["ordinal"] == 1 and change["new"]["ordinal"] is None
    assert change["old"]["fingerprint"] != change["new"]["fingerprint"]
    assert kinds(st["metrics/slow_per_user"]) == ["upstream_stale"]
    assert st["metrics/slow_per_user"]["causes"][0]["via"] == "clicks/slow"
    assert kinds(st["report/users"]) == ["upstream_stale", "upstream_stale"]
    assert not st["clean/clicks"]["stale"] and not st["report/countries"]["stale"]

    dry = build(p, "--all", "--dry-run")
    assert {k for k, v in outcomes(dry).items() if v == "would_build"} == {"shop.split"}
    assert {k for k, v in outcomes(dry).items() if v == "may_build"} == {
        "shop.slow_per_user",
        "shop.fast_per_user",
        "shop.user_report",
    }
    report = build(p, "--all")
    assert built(report) == {
        "shop.split",
        "shop.slow_per_user",
        "shop.fast_per_user",
        "shop.user_report",
    }
    hist = p.json("history", "clicks/slow")["versions"]
    assert [v["program"]["ordinal"] for v in hist] == [1, 2]

    # An input append flows down; the rows of clean/users do not change.
    p.append("raw/clicks", clicks(("bob", 10)))
    st = status(p)
    newer = st["clean/clicks"]["causes"][0]
    assert newer == {
        **newer,
        "kind": "input_newer",
        "input": "raw/clicks",
        "built_from": 1,
        "current": 2,
    }
    assert not st["clean/users"]["stale"]
    report = build(p, "report/users")
    assert "shop.clean_clicks" in built(report) and "shop.clean_users" not in built(report)

    # A rebuild with identical rows: clean/users gets a new version, nothing below rebuilds.
    p.edit(
        'return users.dropDuplicates(["user"])',
        'return users.dropDuplicates(["user"]).filter("true")',
    )
    report = build(p, "--all")
    assert built(report) == {"shop.clean_users"}
    assert outcomes(report)["shop.countries"] == "fresh"
    st = status(p)
    note = st["report/countries"]["notes"][0]
    assert note == {
        "kind": "input_identical",
        "input": "clean/users",
        "built_from": 1,
        "current": 2,
        "text": "input clean/users moved 1 → 2 with identical rows",
    }
    assert not st["report/countries"]["stale"]


def test_failure_skips_downstream_and_recovers(project: Project) -> None:
    p = project
    _seed(p)
    build(p, "--all")
    p.append("raw/clicks", clicks(("ada", 500)))
    p.edit(
        'joined = clicks.join(users, "user")',
        "joined = clicks.join(users, \"user\")\n        assert False, 'boom'",
    )
    report = build(p, "--all", code=1)
    assert report["state"] == "FAILED"
    out = outcomes(report)
    assert out["shop.slow_per_user"] == "failed" and out["shop.fast_per_user"] == "failed"
    assert out["shop.user_report"] == "skipped"
    skipped = next(t for t in report["transforms"] if t["transform"] == "shop.user_report")
    assert "failed" in skipped["reason"]
    assert out["shop.split"] == "built"
    # No current version moved; the failed run carries the error and stack trace.
    assert [v["version"] for v in p.json("history", "metrics/slow_per_user")["versions"]] == [1]
    facets = p.rows(
        "SELECT r.state, r.facets FROM runs r JOIN jobs j ON j.uuid = r.job_uuid "
        "WHERE j.name = 'shop.slow_per_user' ORDER BY r.created_at"
    )
    assert [f.state for f in facets] == ["COMPLETED", "FAILED"]
    error = facets[-1].facets
    error = error if isinstance(error, dict) else json.loads(error)
    assert "boom" in error["errorMessage"]["message"]
    assert "Traceback" in error["errorMessage"]["stackTrace"]
    assert p.scalar("SELECT state FROM runs WHERE uuid = :r", r=report["run"]) == "FAILED"

    p.edit("\n        assert False, 'boom'", "")
    report = build(p, "--all")
    # The fix restores the first program version, and clicks/fast kept its rows: only
    # what the appended slow click changes is built.
    assert built(report) == {"shop.slow_per_user", "shop.user_report"}
    assert outcomes(report)["shop.fast_per_user"] == "fresh"


def test_trace_and_reproduce_a_past_version(project: Project) -> None:
    p = project
    _seed(p)
    build(p, "--all")
    p.append("raw/users", users(("dee", "UK")))
    p.edit("SLOW_MS = 100", "SLOW_MS = 200")
    build(p, "--all")
    assert [v["version"] for v in p.json("history", "report/users")["versions"]] == [1, 2]

    tree = p.json("trace", "report/users@1")
    assert (tree["dataset"], tree["version"]) == ("report/users", 1)
    leaves: dict[str, int] = {}

    def walk(node: dict[str, Any]) -> None:
        if node.get("repeated"):
            assert node["program"] is not None or node["dataset"].startswith("raw/")
        elif not node["inputs"]:
            leaves[node["dataset"]] = node["version"]
            assert node["program"] is None
        else:
            assert node["program"]["ordinal"] == 1
        for child in node["inputs"]:
            walk(child)

    walk(tree)
    assert leaves == {"raw/clicks": 1, "raw/users": 1}

    # The text marks the versions the JSON marks repeated, as many times.
    def repeats(node: dict[str, Any]) -> int:
        return int(bool(node.get("repeated"))) + sum(repeats(c) for c in node["inputs"])

    code, out, _ = p.cli("trace", "report/users@1")
    assert code == 0 and repeats(tree) > 0
    assert out.count("repeated") == repeats(tree)

    result = p.json("reproduce", "clicks/slow@1")
    assert result["identical"] is True
    assert result["recorded"] == result["reproduced"]
    # The current program (SLOW_MS = 200) would give other rows: reproduce ran the stored one.
    current = p.json("reproduce", "clicks/slow@2")
    assert current["identical"] is True
    program = p.json("show-program", "clicks/slow@1")
    assert "SLOW_MS = 100" in program["files"]["shop.py"]
