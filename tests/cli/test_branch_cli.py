"""Branches from the command line, on SQLite and PostgreSQL: create, write and read with
--branch (or STRATA_BRANCH), merge with its conflicts, list and delete, with --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from strata.cli.main import app
from strata.settings import Settings

runner = CliRunner()


def invoke(settings: Settings, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(
        app,
        ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri, *args],
        catch_exceptions=False,
        env=env,
    )
    return result.exit_code, result.stdout + result.stderr


def ok(settings: Settings, *args: str, env: dict[str, str] | None = None) -> str:
    code, out = invoke(settings, *args, env=env)
    assert code == 0, out
    return out


def error_lines(out: str) -> list[str]:
    """The lines of an error, without the pointer to Spark's log that follows one when
    this process has started Spark (an earlier test in the run may have)."""
    return [line for line in out.strip().splitlines() if not line.startswith("Spark's log: ")]


def ids(settings: Settings, *args: str, env: dict[str, str] | None = None) -> list[int]:
    out = ok(settings, "read", "raw/people", "--json", *args, env=env)
    return sorted(json.loads(line)["id"] for line in out.splitlines())


@pytest.fixture
def csvs(tmp_path: Path) -> tuple[str, str, str]:
    paths = []
    for name, text in (("a", "id\n1\n2\n"), ("b", "id\n3\n"), ("c", "id\n4\n")):
        path = tmp_path / f"{name}.csv"
        path.write_text(text)
        paths.append(str(path))
    return paths[0], paths[1], paths[2]


def test_branch_write_read_merge_and_delete(settings: Settings, csvs: tuple[str, ...]) -> None:
    first, second, third = csvs
    ok(settings, "ingest", first, "raw/people", "--type", "SNAPSHOT")
    made = json.loads(ok(settings, "branch", "create", "dev", "--json"))
    assert (made["name"], made["parent"], made["datasets"]) == ("dev", "main", 0)
    out = ok(settings, "ingest", second, "raw/people", "--branch", "dev")
    assert "version 2 (APPEND) on dev" in out
    assert ids(settings) == [1, 2]
    assert ids(settings, "--branch", "dev") == [1, 2, 3]
    assert ids(settings, env={"STRATA_BRANCH": "dev"}) == [1, 2, 3]

    versions = json.loads(ok(settings, "versions", "raw/people", "--json"))
    assert [(v["commit_id"], v["branch"]) for v in versions] == [(1, "main"), (2, "dev")]
    on_dev = json.loads(ok(settings, "datasets", "--branch", "dev", "--json"))
    assert [(d["name"], d["latest_version"], d["rows"]) for d in on_dev] == [("raw/people", 2, 3)]
    listed = json.loads(ok(settings, "branch", "list", "--json"))
    assert [(b["name"], b["parent"], b["datasets"]) for b in listed] == [
        ("main", None, None),
        ("dev", "main", 1),
    ]

    dry = json.loads(ok(settings, "merge", "dev", "--dry-run", "--json"))
    assert dry["dry_run"] is True and dry["merged"] == 1
    assert ids(settings) == [1, 2]
    table = ok(settings, "merge", "dev")
    assert "dev into main: merged 1 dataset(s)" in table and "fast-forward" in table
    assert ids(settings) == [1, 2, 3]

    # main moves on; the branch's next change to the same dataset conflicts.
    ok(settings, "ingest", third, "raw/people")
    ok(settings, "ingest", third, "raw/people", "--branch", "dev")
    code, out = invoke(settings, "merge", "dev", "--json")
    assert code == 1
    assert (
        "error: nothing merged from 'dev' into 'main': raw/people: main moved to version 3" in out
    )
    assert len(error_lines(out)) == 1
    ok(settings, "ingest", first, "raw/people", "--branch", "dev", "--type", "SNAPSHOT")
    merged = json.loads(ok(settings, "merge", "dev", "--json"))
    assert [d["outcome"] for d in merged["datasets"]] == ["fast-forward"]
    assert ids(settings) == [1, 2]

    gone = json.loads(ok(settings, "branch", "delete", "dev", "--json"))
    assert gone["name"] == "dev"
    assert [b["name"] for b in json.loads(ok(settings, "branch", "list", "--json"))] == ["main"]


def test_history_on_a_branch_lists_its_line(settings: Settings, csvs: tuple[str, ...]) -> None:
    first, second, third = csvs
    ok(settings, "ingest", first, "raw/people", "--type", "SNAPSHOT")
    for name, parent in (("dev", "main"), ("dev2", "main"), ("dev/sub", "dev")):
        ok(settings, "branch", "create", name, "--from", parent)
    for path, branch in ((second, "dev"), (third, "dev2"), (third, "dev/sub"), (second, "main")):
        ok(settings, "ingest", path, "raw/people", "--branch", branch)

    def line(*args: str) -> list[tuple[int, str]]:
        found = json.loads(ok(settings, "history", "raw/people", "--json", *args))
        return [(v["version"], v["branch"]) for v in found["versions"]]

    everything = [(1, "main"), (2, "dev"), (3, "dev2"), (4, "dev/sub"), (5, "main")]
    assert line() == everything
    assert line("--branch", "dev") == [(1, "main"), (2, "dev"), (5, "main")]
    assert line("--branch", "dev2") == [(1, "main"), (3, "dev2"), (5, "main")]
    assert line("--branch", "dev/sub") == [(1, "main"), (2, "dev"), (4, "dev/sub"), (5, "main")]
    table = ok(settings, "history", "raw/people", "--branch", "dev")
    assert "history of raw/people on dev" in table and "branch" in table
    code, out = invoke(settings, "history", "raw/people", "--branch", "nope")
    assert code == 1 and "branch 'nope' does not exist" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # main is never deleted: no hint to delete it first.
        (("branch", "create", "main"), "branch 'main' already exists; pick another name\n"),
        (("branch", "create", "bad name"), "invalid branch name 'bad name'"),
        (("branch", "create", "x", "--from", "nope"), "branch 'nope' does not exist"),
        (("branch", "delete", "main"), "'main' cannot be deleted"),
        (("branch", "delete", "nope"), "branch 'nope' does not exist"),
        (("merge", "main"), "main has no parent to merge into"),
        (("merge", "nope"), "branch 'nope' does not exist"),
        (("read", "raw/people", "--branch", "nope"), "create it with `strata branch create nope`"),
    ],
)
def test_bad_branch_input_is_one_clear_line(
    settings: Settings, csvs: tuple[str, ...], args: tuple[str, ...], message: str
) -> None:
    ok(settings, "ingest", csvs[0], "raw/people")
    code, out = invoke(settings, *args)
    assert code == 1
    assert out.startswith("error: ") and message in out
    assert len(error_lines(out)) == 1


def test_branch_commands_have_help() -> None:
    for args in (("branch", "--help"), ("branch", "create", "--help"), ("merge", "--help")):
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0 and "Usage" in result.stdout
