"""Retention with builds, through the CLI as a user runs it: a version a current derived
version was built from stays; a purged version keeps its history, in `history` and
`trace`, and says so when read or reproduced; the worker runs retention daily."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from build_support import Project, clicks, snapshot, users, with_config

pytestmark = pytest.mark.spark

POLICY = """
[[retention]]
name = "raw"
datasets = ["raw/*"]
keep_versions = 1
grace = "7d"
"""


@pytest.fixture
def configured(project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    return with_config(project, tmp_path, monkeypatch, POLICY)


def actions(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f"{v['dataset']}@{v['version']}", v["action"]) for v in report["versions"]]


def test_inputs_in_use_stay_and_purged_versions_keep_their_history(configured: Project) -> None:
    p = configured
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 120)))
    snapshot(p, "raw/users", users(("ada", "UK"), ("bob", "US")))
    p.json("build", "--all", "--pipeline", str(p.folder))
    snapshot(p, "raw/users", users(("ada", "UK"), ("bob", "FR")))
    snapshot(p, "raw/users", users(("ada", "DE"), ("bob", "FR")))

    # Version 1 is what clean/users was built from: only version 2 may go.
    dry = p.json("retention", "--dry-run", "--grace", "0s")
    assert dry["dry_run"] is True and actions(dry) == [("raw/users@2", "purged")]
    assert dry["bytes"] > 0
    marked = p.json("retention")
    assert actions(marked) == [("raw/users@2", "marked")]  # a 7-day grace: marked only
    history = p.json("history", "raw/users")["versions"]
    assert history[1]["marked"]["policy"] == "raw" and history[1]["purged"] is None
    swept = p.json("retention", "--grace", "0s")
    assert actions(swept) == [("raw/users@2", "purged")] and swept["files"] == 1

    code, out, err = p.cli("read", "raw/users", "--version", "2")
    assert code == 1
    assert "raw/users@2 was purged on" in err and "by retention policy raw" in err
    assert "its history remains (strata trace raw/users@2)" in err
    history = p.json("history", "raw/users")["versions"]
    assert [v["version"] for v in history] == [1, 2, 3]
    assert history[1]["purged"]["policy"] == "raw" and history[1]["rows"] == 2
    assert history[0]["purged"] is None and history[0]["data_fingerprint"]
    code, table, _ = p.cli("history", "raw/users")
    assert code == 0 and "purged" in table and "by raw" in table

    # Rebuilt from version 3, clean/users no longer needs version 1.
    p.json("build", "--all", "--pipeline", str(p.folder))
    again = p.json("retention", "--grace", "0s")
    assert actions(again) == [("raw/users@1", "purged")]
    trace = p.json("trace", "clean/users@1")
    [read] = trace["inputs"]
    assert (read["dataset"], read["version"]) == ("raw/users", 1)
    assert read["purged"]["policy"] == "raw"
    code, out, err = p.cli("trace", "clean/users@1")
    assert code == 0 and "purged" in out
    code, out, err = p.cli("reproduce", "clean/users@1")
    assert code == 1
    assert "clean/users@1 cannot be reproduced: retention purged its input(s) raw/users@1" in err
    # The current view and the versions read by current versions still read whole.
    assert p.lake.read_arrow("raw/users").num_rows == 2
    assert p.lake.read_arrow("clean/users", version=1).num_rows == 2


def test_a_pass_over_one_dataset_from_the_cli(configured: Project) -> None:
    p = configured
    for country in ("UK", "US"):
        snapshot(p, "raw/users", users(("ada", country)))
    for n in (40, 50):
        snapshot(p, "raw/clicks", clicks(("ada", n)))
    scoped = p.json("retention", "--dataset", "raw/clicks")
    assert scoped["datasets"] == ["raw/clicks"]
    assert actions(scoped) == [("raw/clicks@1", "marked")]
    code, out, _ = p.cli("retention", "--dry-run", "--dataset", "raw/u*")
    assert code == 0 and "raw/users@1" in out and "raw/clicks" not in out
    code, _, err = p.cli("retention", "--dataset", "raw/nothing")
    assert code == 1 and "no lake dataset matches 'raw/nothing'; `strata datasets`" in err
    code, _, err = p.cli("retention", "--lineage", "--dataset", "raw/users")
    assert code == 1 and "--dataset are for lake data" in err
    # Not the store's pass: the worker's daily one still runs.
    assert p.scalar("SELECT count(*) FROM retention_passes") == 0


def test_pins_and_unmarks_from_the_cli(configured: Project) -> None:
    p = configured
    for country in ("UK", "US", "FR"):
        snapshot(p, "raw/users", users(("ada", country)))
    assert actions(p.json("retention")) == [("raw/users@1", "marked"), ("raw/users@2", "marked")]
    pinned = p.json("pin", "raw/users@1", "--note", "audit 2026")
    assert pinned["unmarked"] is True
    undone = p.json("retention", "--unmark", "raw/users@2")
    assert actions(undone) == [("raw/users@2", "unmarked")]
    code, _, err = p.cli("retention", "--unmark", "raw/users@2")
    assert code == 1 and "raw/users@2 is not marked for purging" in err
    code, _, err = p.cli("pin", "raw/users")
    assert code == 1 and "'raw/users' names no version; write DATASET@N" in err
    code, _, err = p.cli("retention", "--grace", "soon")
    assert code == 1 and "--grace is 'soon', which is not a duration" in err
    swept = p.json("retention", "--grace", "0s")
    assert actions(swept) == [("raw/users@2", "purged")]  # marked again, purged at once
    code, out, _ = p.cli("retention", "--dry-run")
    assert code == 0 and "would mark 0 version(s); would purge 0" in out
    p.json("unpin", "raw/users@1")
    code, out, _ = p.cli("retention", "--grace", "0s")
    assert code == 0 and "raw/users@1" in out and "purged 1 (1 file(s)" in out
    code, _, err = p.cli("unpin", "raw/users@1")
    assert code == 1 and "raw/users@1 is not pinned" in err


def test_the_worker_runs_retention_once_a_day(configured: Project, tmp_path: Path) -> None:
    p = configured
    for country in ("UK", "US"):
        snapshot(p, "raw/users", users(("ada", country)))
    config = tmp_path / "strata.toml"
    config.write_text(POLICY.replace('grace = "7d"', 'grace = "0s"'))
    first = p.json("worker", "--once", "--pipeline", str(p.folder))
    assert [(r["purged"], r["files"]) for r in first["retention"]] == [(1, 1)]
    snapshot(p, "raw/users", users(("ada", "FR")))
    second = p.json("worker", "--once", "--pipeline", str(p.folder))
    assert second["retention"] == []  # the last pass ended less than a day ago
    passes = p.json("retention", "--dry-run")
    assert actions(passes) == [("raw/users@2", "purged")]
    assert p.json("history", "raw/users")["versions"][0]["purged"]["policy"] == "raw"
