"""The archive tier through the CLI as a user runs it: old versions' files move, reads,
history and reproduce work from the archive, a restore brings a version back, and the
worker runs the archive daily."""

from __future__ import annotations

from pathlib import Path

import pytest
from build_support import Project, clicks, snapshot, users, with_config

pytestmark = pytest.mark.spark


def policy(tmp_path: Path) -> str:
    uri = (tmp_path / "cold").as_uri()
    return f'[[archive]]\nname = "cold"\ndatasets = ["raw/*"]\nolder_than = "0s"\nuri = "{uri}"\n'


@pytest.fixture
def configured(project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    return with_config(project, tmp_path, monkeypatch, policy(tmp_path))


def test_archived_versions_read_trace_and_reproduce(configured: Project, tmp_path: Path) -> None:
    p = configured
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 120)))
    snapshot(p, "raw/users", users(("ada", "UK"), ("bob", "US")))
    p.json("build", "--all", "--pipeline", str(p.folder))
    snapshot(p, "raw/users", users(("ada", "UK"), ("bob", "FR")))

    dry = p.json("archive", "--dry-run")
    assert [(d["dataset"], d["versions"], d["files"]) for d in dry["datasets"]] == [
        ("raw/users", [1, 1], 1)
    ]
    moved = p.json("archive")
    assert moved["files"] == 1 and moved["bytes"] > 0
    assert list((tmp_path / "cold").rglob("*.parquet"))
    code, table, _ = p.cli("history", "raw/users")
    assert code == 0 and "archived" in table
    assert p.json("history", "raw/users")["versions"][0]["archived"] == {"files": 1, "of": 1}

    code, out, err = p.cli("read", "raw/users", "--version", "1", "--json")
    assert code == 0, err
    assert "US" in out  # the archived version reads as before
    code, out, err = p.cli("reproduce", "clean/users@1")  # its input is read from the archive
    assert code == 0, err

    restored = p.json("restore", "raw/users@1")
    assert restored["files"] == 1 and restored["pinned"]
    assert p.json("history", "raw/users")["versions"][0]["archived"] is None
    assert p.json("archive")["files"] == 0  # restored and pinned: it stays
    code, out, _ = p.cli("restore", "raw/users@1")
    assert code == 0 and "nothing to restore" in out


def test_bad_input_is_one_clear_line(configured: Project, tmp_path: Path) -> None:
    p = configured
    snapshot(p, "raw/users", users(("ada", "UK")))
    code, _, err = p.cli("restore", "raw/users@7")
    assert code == 1 and "raw/users" in err and "7" in err
    code, _, err = p.cli("restore", "raw/users")
    assert code == 1 and "'raw/users' names no version; write DATASET@N" in err
    code, _, err = p.cli("retention", "--lineage", "--grace", "0s")
    assert code == 1 and "--lineage takes --dry-run and --json only" in err
    (tmp_path / "strata.toml").write_text(policy(tmp_path).replace('"0s"', '"soon"'))
    code, _, err = p.cli("archive")
    assert code == 1 and "older_than is 'soon'" in err
    (tmp_path / "strata.toml").write_text(policy(tmp_path).replace("file://", "nosuch://"))
    snapshot(p, "raw/users", users(("ada", "US")))
    code, _, err = p.cli("archive")
    assert code == 1 and "cannot open archive URI 'nosuch://" in err
    assert "fix the uri of its [[archive]] policy" in err


def test_the_worker_runs_the_archive_once_a_day(configured: Project) -> None:
    p = configured
    for country in ("UK", "US"):
        snapshot(p, "raw/users", users(("ada", country)))
    first = p.json("worker", "--once", "--pipeline", str(p.folder))
    assert [a["files"] for a in first["archive"]] == [1]
    snapshot(p, "raw/users", users(("ada", "FR")))
    second = p.json("worker", "--once", "--pipeline", str(p.folder))
    assert second["archive"] == []  # the last pass ended less than a day ago
    assert p.json("archive", "--dry-run")["files"] == 1
