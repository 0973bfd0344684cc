"""Tables as people read them: the title on a line of its own, long cells wrapped whole."""

from __future__ import annotations

import pyarrow as pa
from typer.testing import CliRunner

from strata.cli.main import app
from strata.lake.service import Lake
from strata.settings import Settings

runner = CliRunner()
WORDS = " ".join(f"word{i}" for i in range(30))  # far wider than an 80-column terminal
TOKEN = "s3a://bucket/" + "a-very-long-path-" * 6  # one word wider than its column


def invoke(settings: Settings, *args: str) -> str:
    where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
    result = runner.invoke(app, [*where, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_read_puts_its_title_above_the_table_and_wraps_cells(settings: Settings) -> None:
    with Lake(settings).transaction("raw/d", type="APPEND") as txn:
        txn.write(pa.table({"a": [1, 2], "note": [TOKEN, WORDS]}))
    out = invoke(settings, "read", "raw/d")
    lines = out.splitlines()
    assert lines[0] == "raw/d version 1 (2 rows, showing 2)"
    assert lines[1].startswith("┏")
    assert all(len(line) <= 80 for line in lines)
    assert "…" not in out
    for word in WORDS.split():
        assert word in out, word
    # The long word folds onto further lines: every character is still there.
    cells = "".join(line.split("│")[2].strip() for line in lines if line.startswith("│"))
    assert TOKEN in cells


def test_versions_keeps_headers_and_times_whole(settings: Settings) -> None:
    lake = Lake(settings)
    for n in (1, 2):
        with lake.transaction("raw/with/a/rather/long/dataset/name", type="APPEND") as txn:
            txn.write(pa.table({"n": list(range(n))}))
    out = invoke(settings, "versions", "raw/with/a/rather/long/dataset/name")
    lines = out.splitlines()
    assert lines[0] == "versions of raw/with/a/rather/long/dataset/name"
    header = next(line for line in lines if "version" in line and "┃" in line)
    for name in ("version", "type", "rows", "files"):
        assert f" {name} " in header, name
    committed = lake.version("raw/with/a/rather/long/dataset/name", version=1).committed_at
    assert committed.strftime("%Y-%m-%d") in out and "…" not in out
