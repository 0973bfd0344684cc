"""Builds on a branch, through the CLI, on SQLite and PostgreSQL: change a transform in
the branch's checkout, build on the branch, compare with main, merge, and main is fresh
with the new program; a second branch conflicts and a rebuild on it resolves that. The
store is checked after each step."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from build_support import Project, clicks, users
from fastapi.testclient import TestClient

from strata.api import create_app

pytestmark = pytest.mark.spark

# What a change of SLOW_MS puts out of date: the split and everything below it.
CHANGED = {
    "clicks/slow",
    "clicks/fast",
    "metrics/slow_per_user",
    "metrics/fast_per_user",
    "report/users",
}


def checkout(p: Project, tmp_path: Path, name: str, old: str, new: str) -> Path:
    """A copy of the pipelines folder with one edit: a branch's checkout of the code."""
    folder = tmp_path / name
    shutil.copytree(p.folder, folder)
    code = folder / "shop.py"
    text = code.read_text()
    assert old in text
    code.write_text(text.replace(old, new, 1))
    return folder


def build(p: Project, folder: Path, *args: str, code: int = 0) -> dict[str, Any]:
    return p.json("build", "--all", *args, "--pipeline", str(folder), code=code)


def status(p: Project, folder: Path, *args: str) -> dict[str, dict[str, Any]]:
    out = p.json("status", *args, "--pipeline", str(folder))
    return {d["name"]: d for d in out["datasets"]}


def stale(found: dict[str, dict[str, Any]]) -> set[str]:
    return {name for name, d in found.items() if d["stale"]}


def built(report: dict[str, Any]) -> set[str]:
    return {t["transform"] for t in report["transforms"] if t["outcome"] == "built"}


def main_pointer_is_mains_newest(p: Project, dataset: str) -> bool:
    """The dataset row's current version (what the Marquez answers read) is main's."""
    return bool(
        p.scalar(
            "SELECT d.current_version_uuid = v.uuid FROM datasets d JOIN dataset_versions v "
            "ON v.dataset_uuid = d.uuid WHERE d.name = :n AND v.commit_id = :c",
            n=dataset,
            c=p.lake.version(dataset).commit_id,
        )
    )


def test_change_build_compare_and_merge_a_branch(project: Project, tmp_path: Path) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 40), ("ada", 300), ("bob", 120)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    build(p, p.folder)
    before = {d: p.lake.version(d).commit_id for d in ("clicks/slow", "clicks/fast")}
    p.json("branch", "create", "dev")
    dev = checkout(p, tmp_path, "dev", "SLOW_MS = 100", "SLOW_MS = 30")

    found = status(p, dev, "--branch", "dev")
    assert stale(found) == CHANGED
    assert [c["kind"] for c in found["clicks/slow"]["causes"]] == ["program_changed"]
    report = build(p, dev, "--branch", "dev")
    assert built(report) == {
        "shop.split",
        "shop.slow_per_user",
        "shop.fast_per_user",
        "shop.user_report",
    }
    assert stale(status(p, dev, "--branch", "dev")) == set()
    # Main is as it was: its versions, its status, and the pointer lineage answers with.
    assert {d: p.lake.version(d).commit_id for d in before} == before
    assert stale(status(p, p.folder)) == set()
    assert main_pointer_is_mains_newest(p, "clicks/slow")
    on_dev = p.json("versions", "clicks/slow")
    assert [(v["commit_id"], v["branch"]) for v in on_dev] == [(1, "main"), (2, "dev")]
    # The branch's runs say which branch they wrote.
    facets = p.rows(
        "SELECT r.facets FROM runs r JOIN dataset_versions v ON v.run_uuid = r.uuid "
        "JOIN datasets d ON d.uuid = v.dataset_uuid WHERE d.name = 'clicks/slow'"
    )
    names = sorted((_facets(f[0]).get("strata_branch") or {}).get("name", "main") for f in facets)
    assert names == ["dev", "main"]

    # Trace and reproduce take the branch's current version when none is named.
    on_dev_tree = p.json("trace", "clicks/slow", "--branch", "dev")
    assert (on_dev_tree["dataset"], on_dev_tree["version"]) == ("clicks/slow", 2)
    assert p.json("trace", "clicks/slow")["version"] == 1
    assert p.json("checks", "clicks/slow", "--branch", "dev")["version"] == 2
    assert p.json("checks", "clicks/slow")["version"] == 1
    again = p.json("reproduce", "clicks/slow", "--branch", "dev")
    assert (again["version"], again["identical"]) == (2, True)

    # The API answers the same, per branch, from a server whose pipelines are dev's.
    served = dataclasses.replace(p.settings, pipelines=(str(dev),))
    with TestClient(create_app(served, p.lake.engine)) as api:
        on_branch = api.get("/api/v1/strata/status?branch=dev").json()
        assert on_branch["branch"] == "dev"
        assert [d["name"] for d in on_branch["datasets"] if d["stale"]] == []
        on_main = api.get("/api/v1/strata/status").json()
        assert {d["name"] for d in on_main["datasets"] if d["stale"]} == set(found) & stale(found)
        one = api.get("/api/v1/strata/status/clicks%2Fslow?branch=dev").json()
        assert one["stale"] is False
        # Without a version, the routes start from the branch's current one.
        for route in ("trace", "checks", "history"):
            on_dev_route = api.get(f"/api/v1/strata/{route}/clicks%2Fslow?branch=dev").json()
            on_main_route = api.get(f"/api/v1/strata/{route}/clicks%2Fslow").json()
            if route == "history":
                assert [v["version"] for v in on_dev_route["versions"]] == [1, 2]
                continue
            assert (on_dev_route["version"], on_main_route["version"]) == (2, 1), route
        assert api.get("/api/v1/strata/status?branch=nope").status_code == 404

    merged = p.json("merge", "dev")
    forwarded = {s["dataset"] for s in merged["datasets"] if s["outcome"] == "fast-forward"}
    assert forwarded == CHANGED
    # With the code merged too, main is fresh with the new program.
    assert stale(status(p, dev)) == set()
    assert p.lake.version("clicks/slow").commit_id == 2
    assert built(build(p, dev)) == set()  # nothing to rebuild on main


def test_a_second_branch_conflicts_and_a_rebuild_resolves_it(
    project: Project, tmp_path: Path
) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 40)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    build(p, p.folder)
    p.json("branch", "create", "dev2")
    dev2 = checkout(
        p,
        tmp_path,
        "dev2",
        'agg(F.count("*").alias("users"))',
        'agg(F.count("user").alias("users"))',
    )
    assert built(build(p, dev2, "--branch", "dev2")) == {"shop.countries"}

    # Meanwhile main takes new users and rebuilds: report/countries moves on main.
    p.append("raw/users", users(("cy", "JP")))
    assert "shop.countries" in built(build(p, p.folder))
    code, _, err = p.cli("merge", "dev2")
    assert code == 1
    assert "report/countries: main moved to version 3 since dev2 forked at 1" in err
    assert p.lake.version("report/countries").branch == "main"

    # On dev2, report/countries is now out of date (it reads main's new clean/users);
    # the rebuild forks again from main, and the merge goes through.
    found = status(p, dev2, "--branch", "dev2")
    assert "report/countries" in stale(found)
    assert built(build(p, dev2, "--branch", "dev2")) == {"shop.countries"}
    merged = p.json("merge", "dev2")
    assert [s["outcome"] for s in merged["datasets"]] == ["fast-forward"]
    assert stale(status(p, dev2)) == set()


def _facets(value: Any) -> dict[str, Any]:
    import json

    return value if isinstance(value, dict) else json.loads(value or "{}")


def test_a_worker_on_a_branch_builds_its_commits_and_schedules_only(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import signal
    import time

    p = project
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 300)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    build(p, p.folder)
    p.json("branch", "create", "dev")
    dev_id = p.scalar("SELECT id FROM branches WHERE name = 'dev' AND deleted_at IS NULL")
    with p.lake.on_branch("dev").transaction("raw/clicks", type="APPEND") as txn:
        txn.write(clicks(("ada", 500)))
    pending = "SELECT branch_id, count(*) FROM build_triggers WHERE done_at IS NULL GROUP BY 1"
    assert dict(p.rows(pending)) == {"main": 2, dev_id: 1}  # main's: the raw appends
    before = {d: p.lake.version(d).commit_id for d in ("clicks/slow", "report/users")}

    # Main's worker takes main's triggers and leaves the branch's to the branch's workers.
    mains = p.spawn("worker", "--once", "--json")
    out, err = mains.communicate(timeout=600)
    assert mains.returncode == 0, err
    assert json.loads(out)["triggers"] == 2
    assert dict(p.rows(pending)) == {dev_id: 1}

    devs = p.spawn("worker", "--once", "--json", "--branch", "dev")
    out, err = devs.communicate(timeout=600)
    assert devs.returncode == 0, err
    assert json.loads(out)["triggers"] >= 1
    assert p.rows(pending) == []
    # What it built is dev's: main's versions and status are as they were.
    assert {d: p.lake.version(d).commit_id for d in before} == before
    assert stale(status(p, p.folder)) == set()
    assert stale(status(p, p.folder, "--branch", "dev")) == set()
    on_dev = p.lake.on_branch("dev")
    assert on_dev.version("report/users").branch == "dev"
    assert on_dev.version("clicks/slow").commit_id > before["clicks/slow"]

    # Schedules name their branch; a worker fires only its own branch's.
    monkeypatch.setenv("STRATA_CONFIG", str(tmp_path / "strata.toml"))
    (tmp_path / "strata.toml").write_text(
        "".join(
            f'[[schedule]]\nname = "often"\ncron = "* * * * * */2"\nbuild = ["report/countries"]'
            f'\nforce = true\nbranch = "{b}"\n'
            for b in ("main", "dev")
        )
    )
    worker = p.spawn(
        "worker", "--poll", "0.05", "--branch", "dev", STRATA_CONFIG=os.environ["STRATA_CONFIG"]
    )
    try:
        deadline = time.monotonic() + 300
        done = "SELECT count(*) FROM schedule_firings WHERE ended_at IS NOT NULL"
        while (p.scalar(done) or 0) < 1:
            assert worker.poll() is None, worker.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.5)
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
    # Only dev's firings; each ended (one the stop interrupted ends ABORTED).
    assert p.scalar("SELECT count(*) FROM schedule_firings WHERE ended_at IS NULL") == 0
    fired = {tuple(r) for r in p.rows("SELECT branch, schedule, outcome FROM schedule_firings")}
    assert ("dev", "often", "COMPLETED") in fired, err
    assert fired <= {("dev", "often", "COMPLETED"), ("dev", "often", "ABORTED")}, err
    assert p.lake.version("report/countries").commit_id == 1  # main's untouched
    assert on_dev.version("report/countries").branch == "dev"
    listed = p.json("schedules", "--pipeline", str(p.folder))["schedules"]
    last = {(s["branch"], s["name"]): s["last"] for s in listed}
    assert last[("main", "often")] is None
    latest = p.rows(
        "SELECT outcome FROM schedule_firings WHERE branch = 'dev' ORDER BY due_at DESC LIMIT 1"
    )
    assert last[("dev", "often")]["outcome"] == latest[0][0]

    # A branch that is gone: its worker says so; its pending triggers are closed.
    with on_dev.transaction("raw/users", type="APPEND") as txn:
        txn.write(users(("cy", "JP")))
    p.json("branch", "delete", "dev")
    closed = p.rows(
        "SELECT error FROM build_triggers WHERE branch_id = :b AND error IS NOT NULL", b=dev_id
    )
    assert closed and {r[0] for r in closed} == {"branch 'dev' was deleted"}
    assert p.rows(pending) == []
    code, _, err = p.cli("worker", "--once", "--branch", "dev")
    assert code == 1 and "branch 'dev' does not exist" in err
