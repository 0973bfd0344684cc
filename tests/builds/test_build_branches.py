"""Builds on a branch, through the CLI, on SQLite and PostgreSQL: change a transform in
the branch's checkout, build on the branch, compare with main, merge, and main is fresh
with the new program; a second branch conflicts and a rebuild on it resolves that. The
store is checked after each step."""

from __future__ import annotations

import dataclasses
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
