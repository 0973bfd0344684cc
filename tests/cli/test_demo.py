"""`strata demo`: the experiments pipeline told end to end, run again, and started over."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from demo_stores import DemoStores, demo_settings
from strata.builds.service import BuildService
from strata.cli.main import app
from strata.lake import branches
from strata.lake.service import Lake
from strata.settings import Settings

pytestmark = pytest.mark.spark
runner = CliRunner()
CHAPTERS = (
    "hours of clicks from US, UK and JP",
    "the daily build",
    "nothing is out of date",
    "a new program version",
    "late clicks for the first hour",
    "a broken transform",
    "a bad batch: a data check stops it",
    "an upstream rewrite",
    "history and trace",
    "partitions: one job, a run per region and hour",
    "retention: old versions' data goes, their history stays",
    "archive: old versions' files move to cheaper storage, reads stay the same",
    "a branch: try a change on real data, compare with main, merge",
    "explore what it built",
)


def run_demo(*args: str) -> str:
    result = runner.invoke(app, [*args], catch_exceptions=False, terminal_width=160)
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.stdout


def test_demo_tells_the_story_and_goes_on_where_it_stopped(
    backend: str, demo_stores: DemoStores, tmp_path: Path
) -> None:
    demo = demo_stores.copy(backend, tmp_path)  # `strata demo --hours 2`, run once a run
    settings = demo_settings(demo.home, demo.database_url, demo.lake_uri)
    where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
    out = demo.out
    for chapter in CHAPTERS:
        assert chapter in out, chapter
    assert "rebuilt exactly the 5 datasets `strata status` named" in out
    # Planned before the build: the edit changed how clicks are counted, nothing else.
    assert "the change touches metrics/customer_hourly's columns clicks;" in " ".join(out.split())
    assert "current versions untouched" in out
    assert "last build stopped by check 'every click names its customer'" in " ".join(out.split())
    assert "open http://127.0.0.1:5000/" in out  # the pages, served by `strata serve`

    lake = Lake(settings)
    # Two hours, the late replay, one more hour and a bad batch: five raw APPENDs; the bad
    # one withdrawn; then late JP clicks.
    assert [v.type for v in lake.versions("raw/clicks")] == ["APPEND"] * 5 + [
        "DELETE",
        "APPEND",
    ]
    service = BuildService(settings, [str(settings.home / "demo" / "pipelines")], lake=lake)
    assert [s.name for s in service.status().values() if s.stale] == []
    history = service.history("metrics/experiment_cumulative")["versions"]
    # daily build, program change, late clicks, the fix, the JP clicks: the failed build
    # and the batch the check stopped moved nothing, and withdrawing that batch (the
    # rewrite) left the rows the daily build reads as they were. Then the branch's build,
    # merged: main's now, with the same inputs and its own program.
    assert len(history) == 6
    assert history[-1]["inputs"] == history[-2]["inputs"]
    assert history[-1]["inputs"] == {"metrics/customer_daily": 6, "raw/experiments": 1}
    _branch_chapter(out, service, lake, history)
    hourly = service.history("metrics/customer_hourly")["versions"]
    assert [v["program"]["ordinal"] for v in hourly] == [1, 1, 2, 2, 2, 2, 2]
    # Incremental after the first hour, whole after the program change and the DELETE.
    assert [v["mode"] for v in hourly] == [
        "full", "incremental", "full", "incremental", "incremental", "full", "incremental"
    ]  # fmt: skip
    _partition_chapter(out, service, lake)
    assert hourly[1]["read"]["clean/clicks"]["from"] == 1
    tree = service.trace("metrics/experiment_cumulative", 1)
    assert _leaves(tree) == {("raw/clicks", 2), ("raw/experiments", 1)}
    _retention_chapter(out, service, lake)
    _archive_chapter(out, service, lake)

    again = run_demo(*where, "--home", str(settings.home), "demo", "--hours", "1")
    assert "going on from 2026-11-24T00:00:00+00:00" in again
    assert len(lake.versions("raw/clicks")) == 13
    # The pipelines were copied afresh: the first hourly build ran program v1 again.
    assert [
        v["program"]["ordinal"] for v in service.history("metrics/customer_hourly")["versions"]
    ][7:] == [1, 2, 2, 2, 2, 2]
    lake.engine.dispose()


def test_fresh_starts_over_on_the_embedded_default(tmp_path: Path, spark: object) -> None:
    import pyarrow as pa

    home = tmp_path / "state"
    run_demo("--home", str(home), "init")
    before = Lake(Settings(home=home))  # a store the demo refuses to go on with
    for name in ("raw/clicks", "scratch/notes"):
        with before.transaction(name, type="APPEND") as txn:
            txn.write(pa.table({"user": ["ada"]}))
    before.engine.dispose()
    out = run_demo("--home", str(home), "demo", "--fresh", "--hours", "1")
    assert "started over" in out and "going on from" not in out
    lake = Lake(Settings(home=home))
    # One hour, the late replay, one more hour, a bad batch, its withdrawal, late JP
    # clicks: what was there before is gone.
    assert [v.commit_id for v in lake.versions("raw/clicks")] == [1, 2, 3, 4, 5, 6]
    assert "scratch/notes" not in {d.name for d in lake.datasets()}
    lake.engine.dispose()


def test_fresh_refuses_to_delete_a_store_outside_its_folder(settings: Settings) -> None:
    args = ["--home", str(settings.home), "--database-url", settings.database_url]
    result = runner.invoke(app, [*args, "demo", "--fresh"], catch_exceptions=False)
    assert result.exit_code == 1
    assert "--fresh deletes only a store and lake inside" in result.stderr
    assert settings.database_url in result.stderr


def test_a_first_run_refuses_raw_datasets_it_did_not_write(settings: Settings) -> None:
    import pyarrow as pa

    lake = Lake(settings)
    with lake.transaction("raw/clicks", type="APPEND") as txn:
        txn.write(pa.table({"user": ["ada"]}))
    where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
    result = runner.invoke(app, [*where, "--home", str(settings.home), "demo"])
    assert result.exit_code == 1
    assert "raw/clicks already exist" in result.stderr and "--fresh" in result.stderr
    assert len(lake.versions("raw/clicks")) == 1
    lake.engine.dispose()


def _branch_chapter(
    out: str, service: BuildService, lake: Lake, history: list[dict[str, Any]]
) -> None:
    """Built on the branch with a new program, merged without copying, branch deleted."""
    words = " ".join(out.split())
    assert "`strata status --branch try/log-lift-1`: 1 out of date" in words
    assert "fast-forwarded metrics/experiment_cumulative@6; no data copied" in words
    assert "nothing on main is out of date" in words
    merged, before = history[-1], history[-2]
    assert merged["branch"] == "main" and merged["program"]["ordinal"] == 2
    assert before["program"]["ordinal"] == 1
    assert lake.version("metrics/experiment_cumulative").commit_id == 6
    assert [b.name for b in branches.listed(lake.engine)] == ["main"]
    with lake.engine.connect() as conn:
        facets = conn.execute(
            sa.text("SELECT facets FROM runs WHERE uuid = :u"), {"u": merged["run"]}
        ).scalar()
    assert "try/log-lift-1" in str(facets)  # the run names the branch it built on
    # Main now reads the lift as the branch computed it: a log ratio.
    for row in lake.read_arrow("metrics/experiment_cumulative").to_pylist():
        a, b = row["clicks_per_customer_a"], row["clicks_per_customer_b"]
        assert abs(row["lift_pct"] - math.log(b / a) * 100) < 0.05, row
        assert abs(row["lift_pct"] - (b / a - 1) * 100) > 0.01, row


def _partition_chapter(out: str, service: BuildService, lake: Lake) -> None:
    """The late JP clicks rebuilt one JP hour and one JP day; every region has runs."""
    assert "rebuilt region=JP/hour=2026-11-23T22 and region=JP/local_day=2026-11-24 only" in out
    daily = service.history("regions/daily", {"region": ["JP"]})["versions"]
    assert [v["version"] for v in daily] == [1, 2]  # UK and US: version 1 only
    assert service.history("regions/daily", {"region": ["UK"]})["versions"][0]["version"] == 1
    status = service.dataset_status("regions/hourly")
    assert status.partition_counts() == {"fresh": 12, "out_of_date": 0, "never_built": 0}
    assert {k.split("/")[0] for k in lake.partitions("raw/clicks")} == {
        "region=JP",
        "region=UK",
        "region=US",
    }


def _leaves(node: dict[str, object]) -> set[tuple[object, object]]:
    """The raw versions under a trace node (a version met again is traced once)."""
    inputs = node["inputs"]
    assert isinstance(inputs, list)
    if node.get("repeated"):
        return set()
    if not inputs:
        return {(node["dataset"], node["version"])}
    return set().union(*(_leaves(child) for child in inputs))


def _archive_chapter(out: str, service: BuildService, lake: Lake) -> None:
    """The raw files only older versions read lie in the archive, named so in history,
    and those versions read whole; the current view stays in the lake."""
    words = " ".join(out.split())
    assert 'as `[[archive]] datasets = ["raw/*"]' in words
    clicks = service.history("raw/clicks")["versions"]
    archived = [v for v in clicks if v["archived"]]
    assert archived and clicks[-1]["archived"] is None
    for v in archived:
        assert lake.read_arrow("raw/clicks", version=v["version"]).num_rows == v["rows"]
    current = lake.files("raw/clicks")
    assert current and all(f.archive is None for f in current)


def _retention_chapter(out: str, service: BuildService, lake: Lake) -> None:
    """All but the newest two versions of each daily metric purged, except the versions
    the current ones were built from; each purged version's history intact."""
    words = " ".join(out.split())
    assert 'as `[[retention]] datasets = ["metrics/*_daily"]' in words
    assert "was purged on" in words and "by retention policy metrics/*_daily" in words
    customer = service.history("metrics/customer_daily")["versions"]
    purged = [v["version"] for v in customer if v["purged"]]
    latest = customer[-1]["version"]
    assert purged and latest - 1 not in purged and latest not in purged
    # What the current experiment metrics read stays whole.
    for name in ("metrics/experiment_daily", "metrics/experiment_cumulative"):
        used = service.history(name)["versions"][-1]["inputs"]["metrics/customer_daily"]
        assert used not in purged
        assert lake.read_arrow("metrics/customer_daily", version=used).num_rows > 0
    assert all(v["run"] and v["program"] for v in customer if v["purged"])
