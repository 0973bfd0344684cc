"""The ``strata`` command as a user runs it, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from console import user_environ
from strata.cli.main import app
from strata.lake.service import Lake
from strata.settings import Settings

runner = CliRunner()


def invoke(settings: Settings, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(
        app,
        ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri, *args],
        catch_exceptions=False,
    )
    return result.exit_code, result.stdout, result.stderr


def test_every_command_has_help() -> None:
    commands = ("init", "ingest", "datasets", "versions", "read", "gc", "demo", "serve", "changes")
    builds = ("status", "build", "worker", "history", "trace", "reproduce", "show-program")
    for command in commands + builds:
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0, command
        assert "Usage" in result.stdout


def test_versions_and_read_print_json(settings: Settings) -> None:
    lake = Lake(settings)
    for n in (2, 3):
        with lake.transaction("raw/nums", type="APPEND") as txn:
            txn.write(pa.table({"n": list(range(n))}))
    code, out, _ = invoke(settings, "versions", "raw/nums", "--json")
    assert code == 0
    assert [v["row_count"] for v in json.loads(out)] == [2, 5]

    code, out, _ = invoke(settings, "read", "raw/nums", "--version", "1", "--json")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == [{"n": 0}, {"n": 1}]

    # DATASET@N, as `strata trace` takes a version, reads the same rows.
    assert invoke(settings, "read", "raw/nums@1", "--json")[:2] == (0, out)
    code, _, err = invoke(settings, "read", "raw/nums@1", "--version", "2")
    assert code == 1 and "names version 1 and --version says 2" in err
    code, _, err = invoke(settings, "checks", "raw/nums@9")
    assert code == 1 and "no version 9" in err, err

    code, out, _ = invoke(settings, "read", "raw/nums", "--limit", "3", "--json")
    assert len(out.splitlines()) == 3

    first = lake.version("raw/nums", version=1).committed_at
    code, out, _ = invoke(settings, "read", "raw/nums", "--as-of", first.isoformat(), "--json")
    assert code == 0 and len(out.splitlines()) == 2

    code, out, _ = invoke(settings, "datasets", "--json")
    assert json.loads(out)[0]["name"] == "raw/nums"
    assert json.loads(out)[0]["latest_version"] == 2


def test_read_json_is_strict_json_for_every_kind_of_value(settings: Settings) -> None:
    """JSON has no NaN nor bytes: non-finite floats come as text, bytes as base64, as the
    API's preview gives them; text is never cut."""
    lake = Lake(settings)
    table = pa.table(
        {
            "f": [float("nan"), float("-inf"), 1.5],
            "b": [b"\x00\xff", b"ok", None],
            "d": pa.array([Decimal("1.25"), None, Decimal("-3.00")], pa.decimal128(10, 2)),
            "long": ["x" * 5000, "", None],
        }
    )
    with lake.transaction("raw/kinds", type="SNAPSHOT") as txn:
        txn.write(table)
    code, out, err = invoke(settings, "read", "raw/kinds", "--json")
    assert code == 0, err

    def refuse(constant: str) -> None:
        raise AssertionError(f"not strict JSON: {constant}")

    rows = [json.loads(line, parse_constant=refuse) for line in out.splitlines()]
    assert [r["f"] for r in rows] == ["nan", "-inf", 1.5]
    assert [r["b"] for r in rows] == ["AP8=", "b2s=", None]
    assert [r["d"] for r in rows] == ["1.25", None, "-3.00"]
    assert len(rows[0]["long"]) == 5000
    lake.engine.dispose()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("read", "nope/missing"), "'nope/missing' does not exist"),
        (("read", "bad/../name"), "contains '..'"),
        (("read", "raw/x", "--as-of", "yesterday"), "cannot read time 'yesterday'"),
        (("ingest", "/no/such/file.csv", "raw/x"), "no file or folder at '/no/such/file.csv'"),
        (("ingest", "data.xls", "raw/x"), "pass --format"),
        (("ingest", "data.csv", "raw/x", "--type", "DELETE"), "SNAPSHOT or APPEND"),
        (("gc", "--grace", "-1"), "0 or more"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_1(
    settings: Settings, args: tuple[str, ...], needle: str
) -> None:
    code, out, err = invoke(settings, *args)
    assert code == 1
    assert needle in err
    assert "Traceback" not in err + out


def test_unknown_version_names_the_range(settings: Settings) -> None:
    with Lake(settings).transaction("raw/one", type="APPEND") as txn:
        txn.write(pa.table({"n": [1]}))
    code, _, err = invoke(settings, "read", "raw/one", "--version", "7")
    assert code == 1
    assert "no version 7" in err and "1 to 1" in err


@pytest.mark.spark
def test_ingest_csv_through_spark(settings: Settings, spark: object, tmp_path: Path) -> None:
    src = tmp_path / "clicks.csv"
    src.write_text("user,clicks\nada,3\nbob,1\n", encoding="utf-8")
    code, out, err = invoke(settings, "ingest", str(src), "raw/clicks", "--json")
    assert code == 0, err
    version = json.loads(out)
    assert version["commit_id"] == 1 and version["row_count"] == 2
    code, out, err = invoke(settings, "ingest", str(src), "raw/clicks", "--type", "SNAPSHOT")
    assert code == 0, err
    assert "version 2 (SNAPSHOT), 2 rows" in out
    rows = Lake(settings).read_arrow("raw/clicks").to_pylist()
    assert sorted((r["user"], r["clicks"]) for r in rows) == [("ada", 3), ("bob", 1)]


@pytest.mark.spark
def test_ingest_reads_a_relative_path_from_the_working_folder(
    settings: Settings, spark: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shared JVM started in another folder: Spark alone would look for the file there.
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "clicks.json").write_text('{"user": "ada", "clicks": 3}\n')
    monkeypatch.chdir(tmp_path / "in")
    code, out, err = invoke(settings, "ingest", "clicks.json", "raw/clicks", "--json")
    assert code == 0, err
    assert json.loads(out)["row_count"] == 1


def test_console_script_on_the_embedded_default(tmp_path: Path) -> None:
    """The installed `strata` command migrates ./.strata on first use."""
    env = user_environ()
    exe = Path(sys.executable).with_name("strata")
    (tmp_path / "clicks.csv").write_text("user,clicks\nada,3\n")
    done = subprocess.run(
        [str(exe), "ingest", "clicks.csv", "demo/clicks"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".strata" / "meta.db").exists()
    assert (tmp_path / ".strata" / "lake").is_dir()
    again = subprocess.run(
        [str(exe), "versions", "demo/clicks", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert [(v["commit_id"], v["row_count"]) for v in json.loads(again.stdout)] == [(1, 1)]


def test_serve_ingests_reads_back_and_stops_cleanly(tmp_path: Path) -> None:
    """`strata serve` on the embedded default as a user runs it: an event posted is read
    back, and on SIGTERM the server, its fold process and their resources all go, with
    nothing reported leaked."""
    import signal
    import uuid

    import httpx

    from serve_process import Served, event

    run_id = str(uuid.uuid4())
    (tmp_path / "pipes").mkdir()
    (tmp_path / "pipes" / "nothing.py").write_text('"""No transforms yet."""\n')
    # No STRATA_* setting: the embedded default, with pipelines named on the command line.
    with Served(tmp_path, {}, args=("--pipeline", "pipes")) as server:
        done = event(run_id, "COMPLETE", namespace="cli")
        assert httpx.post(f"{server.url}/lineage", json=done, timeout=30).status_code == 201
        run = httpx.get(f"{server.url}/jobs/runs/{run_id}", timeout=30).json()
        assert run["state"] == "COMPLETED"
        assert httpx.get(f"{server.url}/strata/server", timeout=30).json()["builds"] is True
        status = httpx.get(f"{server.url}/strata/status", timeout=30)
        assert status.status_code == 200 and status.json()["datasets"] == [], status.text
        server.stop(signal.SIGTERM)
    err = server.log.read_text()
    # uvicorn shuts down gracefully, then ends with the signal it was stopped by.
    assert server.proc.returncode in (0, -signal.SIGTERM), err
    assert "Application shutdown complete" in err
    assert "leaked" not in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["read", "raw/nums", "--version", "99999999999999999999"],
            "no version 99999999999999999999",
        ),
        (["trace", "raw/nums@99999999999999999999"], "no version 99999999999999999999"),
        (["show-program", "raw/nums@99999999999999999999"], "no version 99999999999999999999"),
        (["read", "raw/nums", "--as-of", "9999-12-31T23:00:00-05:00"], "outside years 1 to 9999"),
        (["read", "raw/nums", "--as-of", "0001-01-01T00:30:00+01:00"], "outside years 1 to 9999"),
    ],
)
def test_out_of_range_versions_and_times_are_one_line(
    settings: Settings, args: list[str], says: str
) -> None:
    lake = Lake(settings)
    with lake.transaction("raw/nums", type="APPEND") as txn:
        txn.write(pa.table({"n": [1]}))
    code, out, err = invoke(settings, *args)
    assert code == 1, out
    assert says in " ".join(err.split()) and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2, err  # the error, at most a wrapped line
    lake.engine.dispose()
