"""`strata ingest --partition-by` / `--partitions`, `strata read --where` and what
`strata versions` says each version did to which partition."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from strata.cli.main import app
from strata.settings import Settings

runner = CliRunner()


def invoke(settings: Settings, *args: str) -> tuple[int, str, str]:
    where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
    result = runner.invoke(app, [*where, *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_partitioned_ingest_replace_and_read(settings: Settings, tmp_path: Path) -> None:
    first = tmp_path / "first.csv"
    first.write_text("region,day,n\nJP,2026-11-01,1\nUK,2026-11-01,2\nJP,2026-11-02,3\n")
    late = tmp_path / "late.csv"
    late.write_text("region,day,n\nJP,2026-11-01,7\nJP,2026-11-02,8\n")

    code, out, err = invoke(
        settings,
        "ingest",
        str(first),
        "m/daily",
        "--type",
        "SNAPSHOT",
        "--partition-by",
        "region,day",
    )
    assert code == 0, err
    assert "3 added" in out
    code, out, err = invoke(
        settings,
        "ingest",
        str(late),
        "m/daily",
        "--type",
        "SNAPSHOT",
        "--partitions",
        "region=JP",
        "--json",
    )
    assert code == 0, err
    version = json.loads(out)
    assert version["commit_id"] == 2 and version["row_count"] == 3
    assert version["partitions"]["replaced"] == [
        {"region": "JP", "day": "2026-11-01"},
        {"region": "JP", "day": "2026-11-02"},
    ]

    code, out, _ = invoke(settings, "read", "m/daily", "--where", "region=JP", "--json")
    assert code == 0
    assert sorted(json.loads(line)["n"] for line in out.splitlines()) == [7, 8]
    code, out, _ = invoke(settings, "read", "m/daily", "--where", "region=UK", "--version", "1")
    assert code == 0 and "region=UK" in out

    code, out, _ = invoke(settings, "versions", "m/daily", "--json")
    listed = json.loads(out)
    assert [v["partitions"]["added"] != [] for v in listed] == [True, False]
    code, out, _ = invoke(settings, "versions", "m/daily")
    assert "2 replaced" in out and "3 added" in out


def test_a_snapshot_of_some_partitions_reads_its_source_as_the_dataset(
    settings: Settings, tmp_path: Path
) -> None:
    """An empty CSV (a header alone) that removes one partition: read with the dataset's
    types, not inferred as text, so every version still reads with integers."""
    first = tmp_path / "first.csv"
    first.write_text("region,n\nJP,1\nUK,2\nFR,3\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("region,n\n")
    base = ["ingest", "--type", "SNAPSHOT"]
    code, _, err = invoke(settings, *base, str(first), "m/sales", "--partition-by", "region")
    assert code == 0, err
    code, out, err = invoke(settings, *base, str(empty), "m/sales", "--partitions", "region=FR")
    assert code == 0, err
    listed = json.loads(invoke(settings, "versions", "m/sales", "--json")[1])
    assert listed[-1]["partitions"]["removed"] == [{"region": "FR"}]
    assert [{f["name"]: f["type"] for f in v["schema_fields"]}["n"] for v in listed] == [
        "int64",
        "int64",
    ]
    code, out, _ = invoke(settings, "read", "m/sales", "--json")
    assert sorted(json.loads(line)["n"] for line in out.splitlines()) == [1, 2]


def test_partition_mistakes_name_the_bad_value(settings: Settings, tmp_path: Path) -> None:
    src = tmp_path / "a.csv"
    src.write_text("region,day,n\nJP,2026-11-01,1\n,2026-11-01,2\n")
    code, _, err = invoke(settings, "ingest", str(src), "m/d", "--partition-by", "region")
    assert code != 0
    assert "null or empty partition value in column 'region'" in err
    # One line (and, when this process started Spark, where its log is); no traceback.
    assert err.startswith("error: ") and "Traceback" not in err
    src.write_text("region,day,n\nJP,2026-11-01,1\n")
    code, _, err = invoke(settings, "ingest", str(src), "m/d", "--partition-by", "country")
    assert code != 0 and "has no column 'country'" in err
    assert invoke(settings, "ingest", str(src), "m/d", "--partition-by", "region")[0] == 0
    code, _, err = invoke(settings, "read", "m/d", "--where", "region")
    assert code != 0 and "cannot read partition 'region'" in err
    code, _, err = invoke(settings, "read", "m/d", "--where", "day=2026-11-01")
    assert code != 0 and "partitioned by ['region'], not by ['day']" in err
    code, _, err = invoke(settings, "ingest", str(src), "m/d", "--partitions", "region=JP")
    assert code != 0 and "only a SNAPSHOT replaces partitions" in err
    code, out, _ = invoke(settings, "versions", "m/d", "--json")
    assert len(json.loads(out)) == 1  # nothing but the one good ingest committed
