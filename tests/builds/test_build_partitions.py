"""Partitioned transforms end to end, through the CLI and the API, on SQLite and
PostgreSQL: a partitioned ingest, a first build (one run per partition, one job), late
data for one partition (only the partitions it maps to rebuilt), a failed partition (the
others commit, it keeps its data), a backfill range, per-partition status and history,
the run list filtered by partition and the lineage graph with one node per job."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from build_support import Project, project_of, users
from build_support import clicks as clicks_of
from fastapi.testclient import TestClient

from ol_events import run_event
from strata.api.app import create_app
from strata.builds.service import BuildService
from strata.builds.staleness.causes import Cause, CauseKind
from strata.lake.service import Lake
from strata.settings import Settings

pytestmark = pytest.mark.spark

PIPELINE = Path(__file__).with_name("partition_pipeline.py")
HOURLY, DAILY = "metrics/customer_hourly", "metrics/customer_daily"


@pytest.fixture
def part(settings: Settings, tmp_path: Path) -> Any:
    with project_of(settings, tmp_path, PIPELINE) as p:
        yield p


def clicks(*rows: tuple[str, str, str]) -> pa.Table:
    return pa.table(
        {
            "region": [r[0] for r in rows],
            "hour": [f"2026-11-23T{r[1]}" for r in rows],
            "customer": [r[2] for r in rows],
        }
    )


def build(p: Project, *args: str, code: int = 0) -> dict[str, dict[str, Any]]:
    report = p.json("build", DAILY, *args, "--pipeline", str(p.folder), code=code)
    return {t["transform"].split(".")[-1]: t for t in report["transforms"]}


def ran(step: dict[str, Any]) -> dict[str, str]:
    """``key text -> outcome`` of a step's partition runs."""
    return {
        "/".join(f"{k}={v}" for k, v in p["key"].items()): p["outcome"]
        for p in step.get("partitions", [])
    }


def status(p: Project, name: str) -> dict[str, Any]:
    [found] = p.json("status", name, "--pipeline", str(p.folder))["datasets"]
    return found


def stale(found: dict[str, Any]) -> dict[str, list[str]]:
    return {
        "/".join(f"{k}={v}" for k, v in x["key"].items()): [c["kind"] for c in x["causes"]]
        for x in found["partitions"]
        if x["stale"]
    }


def test_partitions_build_alone_fail_alone_and_backfill(part: Project, tmp_path: Path) -> None:
    p = part
    source = tmp_path / "clicks.parquet"
    pq.write_table(
        clicks(("JP", "14", "a"), ("JP", "15", "b"), ("UK", "14", "a"), ("UK", "15", "c")), source
    )
    code, out, err = p.cli("ingest", str(source), "raw/clicks", "--partition-by", "region,hour")
    assert code == 0, err
    assert "4 added" in out
    # JP's day ends at midnight JST: 14:00 UTC is the 23rd there, 15:00 UTC the 24th.
    before = status(p, DAILY)
    assert before["stale"] and before["partition_counts"]["never_built"] >= 1

    first = build(p)
    assert set(ran(first["customer_hourly"]).values()) == {"built"}
    assert len(ran(first["customer_hourly"])) == 4
    assert ran(first["customer_daily"]) == {
        "region=JP/local_day=2026-11-23": "built",
        "region=JP/local_day=2026-11-24": "built",
        "region=UK/local_day=2026-11-23": "built",
    }
    daily_runs = {x["run"] for x in first["customer_daily"]["partitions"]}
    assert len(daily_runs) == 3  # one run per partition
    assert status(p, DAILY)["partition_counts"] == {"fresh": 3, "out_of_date": 0, "never_built": 0}
    uk_files = p.lake.files(DAILY, partitions={"region": "UK"})

    # Late JP clicks for 15:00 UTC: only JP's hour and the JP day holding it are out of date.
    p.append("raw/clicks", clicks(("JP", "15", "d")))
    hourly = status(p, HOURLY)
    assert stale(hourly) == {"region=JP/hour=2026-11-23T15": ["input_partition_newer"]}
    [cause] = hourly["partitions"][1]["causes"]
    assert cause["input"] == "raw/clicks"
    assert cause["partition"] == {"region": "JP", "hour": "2026-11-23T15"}
    assert stale(status(p, DAILY)) == {"region=JP/local_day=2026-11-24": ["upstream_stale"]}
    code, out, _ = p.cli("status", HOURLY, "--pipeline", str(p.folder))
    assert "out-of-date partitions of metrics/customer_hourly" in out
    words = Cause(
        HOURLY,
        CauseKind(cause["kind"]),
        cause["input"],
        {k: cause[k] for k in ("partition", "built_from", "current")},
    ).describe()
    assert words == (
        "input partition raw/clicks[region=JP, hour=2026-11-23T15] newer: "
        "built from 1, changed in 2"
    )
    late = build(p)
    assert ran(late["customer_hourly"]) == {"region=JP/hour=2026-11-23T15": "built"}
    assert ran(late["customer_daily"]) == {"region=JP/local_day=2026-11-24": "built"}
    assert p.lake.files(DAILY, partitions={"region": "UK"}) == uk_files  # not rewritten
    jp = p.lake.read_arrow(DAILY, partitions={"region": "JP", "local_day": "2026-11-24"})
    assert sorted(jp.column("customer").to_pylist()) == ["b", "d"]
    # The JP day's own provenance: the one hourly partition feeding it, and the raw one.
    tree = p.json("trace", DAILY, "--partition", "region=JP,local_day=2026-11-24")
    assert (tree["version"], tree["partition"]) == (2, {"region": "JP", "local_day": "2026-11-24"})
    assert tree["run"] in {x["run"] for x in late["customer_daily"]["partitions"]}
    [hour] = tree["inputs"]
    assert (hour["dataset"], hour["version"]) == (HOURLY, 2)
    assert hour["partition"] == {"region": "JP", "hour": "2026-11-23T15"}
    [raw] = hour["inputs"]
    assert (raw["dataset"], raw["version"], raw["run"]) == ("raw/clicks", 2, None)
    assert raw["partition"] == {"region": "JP", "hour": "2026-11-23T15"}

    # A UK click from 'boom' fails UK's hour; JP's hour commits, UK's keeps its data.
    uk_before = p.lake.read_arrow(HOURLY, partitions={"region": "UK"}).num_rows
    p.append("raw/clicks", clicks(("UK", "14", "boom"), ("JP", "14", "e")))
    failed = build(p, code=1)
    assert ran(failed["customer_hourly"]) == {
        "region=JP/hour=2026-11-23T14": "built",
        "region=UK/hour=2026-11-23T14": "failed",
    }
    [bad] = [x for x in failed["customer_hourly"]["partitions"] if x["outcome"] == "failed"]
    assert "a click from customer 'boom'" in bad["reason"]
    assert ran(failed["customer_daily"]) == {"region=JP/local_day=2026-11-23": "built"}
    assert p.lake.read_arrow(HOURLY, partitions={"region": "UK"}).num_rows == uk_before
    assert list(stale(status(p, HOURLY))) == ["region=UK/hour=2026-11-23T14"]

    # A backfill runs the partitions named, out of date or not.
    back = build(p, "--partitions", "region=JP,local_day=2026-11-23..2026-11-24", code=1)
    assert ran(back["customer_daily"]) == {
        "region=JP/local_day=2026-11-23": "built",
        "region=JP/local_day=2026-11-24": "built",
    }

    history = p.json("history", DAILY, "--partition", "region=UK")["versions"]
    assert [v["version"] for v in history] == [1]  # only the first build touched UK
    [uk_run] = history[0]["partition_runs"]
    assert uk_run["key"] == {"region": "UK", "local_day": "2026-11-23"}
    assert uk_run["run"] in daily_runs
    code, _, err = p.cli("history", DAILY, "--partition", "region=ZZ")
    assert code == 0 and f"no version of {DAILY} touched region=ZZ" in " ".join(err.split())

    settings = dataclasses.replace(p.settings, pipelines=(str(p.folder),))
    with TestClient(create_app(settings, p.lake.engine)) as api:
        job = "shop.customer_daily"
        runs = api.get(f"/api/v1/namespaces/strata/jobs/{job}/runs").json()["runs"]
        assert len(runs) == 3 + 1 + 1 + 2
        jp = api.get(f"/api/v1/namespaces/strata/jobs/{job}/runs?partition=region=JP").json()
        assert len(jp["runs"]) == 2 + 1 + 1 + 2 and all(
            r["facets"]["strata_partition"]["key"]["region"] == "JP" for r in jp["runs"]
        )
        # Filters are bounded: columns checked against the job, a cap on the pairs.
        runs_of = f"/api/v1/namespaces/strata/jobs/{job}/runs"
        r = api.get(runs_of, params={"partition": "colour=red"})
        assert r.status_code == 400, r.text
        assert "'colour'" in r.json()["message"] and "'local_day'" in r.json()["message"]
        many = ",".join(f"region=R{i}" for i in range(999))
        for path in (runs_of, f"/api/v1/strata/history/{DAILY.replace('/', '%2F')}"):
            r = api.get(path, params={"partition": many})
            assert r.status_code == 400, (path, r.text)
            assert "999 col=value pairs" in r.json()["message"]
        either = api.get(runs_of, params={"partition": "region=JP,region=UK"}).json()["runs"]
        assert len(either) == len(runs)  # a column named twice takes either value
        assert api.post("/api/v1/lineage", json=run_event(job="plain")).status_code == 201
        r = api.get("/api/v1/namespaces/ns/jobs/plain/runs", params={"partition": "region=JP"})
        assert r.json() == {"runs": [], "totalCount": 0}  # no partition runs: none match
        tree = api.get(
            f"/api/v1/strata/trace/{DAILY.replace('/', '%2F')}",
            params={"partition": "region=UK,local_day=2026-11-23", "version": 1},
        ).json()
        assert [i["partition"]["hour"] for i in tree["inputs"]] == [
            "2026-11-23T14",
            "2026-11-23T15",
        ]
        view = api.get(f"/api/v1/namespaces/strata/jobs/{job}").json()
        latest = {tuple(x["partition"].values()): x["state"] for x in view["latestRunsByPartition"]}
        assert latest == {
            ("JP", "2026-11-23"): "COMPLETED",
            ("JP", "2026-11-24"): "COMPLETED",
            ("UK", "2026-11-23"): "COMPLETED",
        }
        hourly = api.get("/api/v1/namespaces/strata/jobs/shop.customer_hourly").json()
        assert {
            tuple(x["partition"].values()): x["state"] for x in hourly["latestRunsByPartition"]
        }[("UK", "2026-11-23T14")] == "FAILED"  # the last UK 14:00 run: one request away
        versions = api.get(
            f"/api/v1/namespaces/strata/datasets/{DAILY.replace('/', '%2F')}/versions"
        ).json()["versions"]
        by_commit = {v["commitId"]: v["partitions"] for v in versions}
        assert by_commit[2]["replaced"] == [{"region": "JP", "local_day": "2026-11-24"}]
        assert by_commit[1]["added"][-1] == {"region": "UK", "local_day": "2026-11-23"}
        graph = api.get(f"/api/v1/lineage?nodeId=dataset:strata:{DAILY}&depth=5").json()
        jobs = [n["id"] for n in graph["graph"] if n["type"] == "JOB"]
        assert sorted(jobs) == ["job:strata:shop.customer_daily", "job:strata:shop.customer_hourly"]


def test_partition_mistakes_are_refused_by_name(part: Project) -> None:
    p = part
    with p.lake.transaction("raw/clicks", "SNAPSHOT", partition_by=["region", "hour"]) as txn:
        txn.write(clicks(("JP", "14", "a"), ("UK", "14", "b"), ("US", "14", "c")))
    limited = dataclasses.replace(p.settings, partition_limit=2)
    too_many = BuildService(limited, [str(p.folder)], lake=Lake(limited, p.lake.engine))
    report = too_many.build([HOURLY])
    assert report.failed and report.steps[0].outcome.value == "failed"
    assert "would run 3 partitions, more than the limit of 2" in (report.steps[0].reason or "")
    assert HOURLY not in {d.name for d in p.lake.datasets() if d.latest_commit_id}
    code, _, err = p.cli("build", DAILY, "--partitions", "country=JP", "--pipeline", str(p.folder))
    assert code == 1
    assert "--partitions names ['country'], but 'metrics/customer_daily' is partitioned by" in err
    p.edit(
        'return {"region": key["region"], "local_day": local.date().isoformat()}',
        'return {"local_day": local.date().isoformat()}',
    )
    report = build(p, code=1)
    assert report["customer_hourly"]["outcome"] == "built"
    reason = report["customer_daily"]["reason"]
    assert "partition_map of 'metrics/customer_hourly' returned ['local_day']" in reason
    assert "exactly the output's partition columns ['region', 'local_day']" in reason
    assert p.lake.versions(DAILY) == [] if DAILY in {d.name for d in p.lake.datasets()} else True


BY_COUNTRY = """

@transform_df(
    Output("metrics/users_by_country", partition_by=["country"]),
    users=Input("clean/users"),
    clicks=Input("clean/clicks"),
)
def users_by_country(users, clicks):
    return users.join(clicks, "user").groupBy("country").agg(F.count("*").alias("clicks"))
"""


def country_totals(p: Project) -> dict[str, int]:
    rows = p.lake.read_arrow("metrics/users_by_country").to_pylist()
    return {r["country"]: r["clicks"] for r in rows}


def test_a_transform_repartitions_its_output_and_feeds_partition_runs(project: Project) -> None:
    """``clean/users`` gains ``partition_by`` (its input is not partitioned: one run
    writes it, laid out by country); a new transform then runs once per country, reading
    ``clean/clicks`` (not partitioned, without the column) whole."""
    p = project
    p.append("raw/clicks", clicks_of(("ada", 40), ("bob", 120), ("cy", 7)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US"), ("cy", "JP")))
    assert p.json("build", "clean/users", "--pipeline", str(p.folder))["state"] == "COMPLETED"
    p.edit('Output("clean/users")', 'Output("clean/users", partition_by=["country"])')
    p.pipeline.write_text(p.pipeline.read_text() + BY_COUNTRY)
    report = p.json("build", "metrics/users_by_country", "--pipeline", str(p.folder))
    steps = {t["transform"].split(".")[-1]: t for t in report["transforms"]}
    assert "partitions" not in steps["clean_users"]  # one run, the whole output
    assert sorted(p.lake.partitions("clean/users")) == ["country=JP", "country=UK", "country=US"]
    assert p.lake.versions("clean/users")[-1].partitions is not None
    runs = steps["users_by_country"]["partitions"]
    assert sorted(r["key"]["country"] for r in runs) == ["JP", "UK", "US"]
    assert len({r["run"] for r in runs}) == 3
    totals = {
        r["country"]: r["clicks"] for r in p.lake.read_arrow("metrics/users_by_country").to_pylist()
    }
    assert totals == {"UK": 1, "US": 1, "JP": 1}

    p.append("raw/users", users(("dee", "UK")))
    p.append("raw/clicks", clicks_of(("dee", 5)))
    # clean/users is rewritten whole, so every country's partition changed; clean/clicks
    # moved too: each partition names both.
    again = p.json("build", "metrics/users_by_country", "--pipeline", str(p.folder))
    steps = {t["transform"].split(".")[-1]: t for t in again["transforms"]}
    assert len(steps["users_by_country"]["partitions"]) == 3
    kinds = {c["kind"] for c in steps["users_by_country"]["causes"]["metrics/users_by_country"]}
    assert kinds == {"input_partition_newer", "input_newer"}
    totals = {
        r["country"]: r["clicks"] for r in p.lake.read_arrow("metrics/users_by_country").to_pylist()
    }
    assert totals == {"UK": 2, "US": 1, "JP": 1}


# A whole reader of both partitioned outputs: it must never see one new and one stale.
REPORT = """
from pyspark.sql import functions as F

from strata import Input, Output, transform_df


@transform_df(
    Output("reports/summary"),
    hourly=Input("metrics/customer_hourly"),
    daily=Input("metrics/customer_daily"),
)
def summary(hourly, daily):
    h = hourly.agg(F.sum("clicks").alias("hourly"))
    d = daily.agg(F.sum("clicks").alias("daily"))
    return h.crossJoin(d)
"""


def _outcomes(p: Project, *args: str, code: int = 0) -> dict[str, tuple[str, str | None]]:
    report = p.json("build", "--all", *args, "--pipeline", str(p.folder), code=code)
    return {t["transform"]: (t["outcome"], t.get("reason")) for t in report["transforms"]}


def test_a_failed_upstream_never_reads_as_fresh(part: Project, tmp_path: Path) -> None:
    """None, some and all of an upstream's partitions failing: whatever fails, every
    transform that reads it, whole or by partition, is skipped, and nothing downstream
    is built from a mix of new and stale inputs."""
    p = part
    (p.folder / "report.py").write_text(REPORT)
    source = tmp_path / "clicks.parquet"
    pq.write_table(clicks(("JP", "14", "a"), ("UK", "14", "a")), source)
    assert p.cli("ingest", str(source), "raw/clicks", "--partition-by", "region,hour")[0] == 0

    def versions(name: str) -> int:
        return len(p.json("versions", name))

    # None failing: everything builds.
    none = _outcomes(p)
    assert {k: v[0] for k, v in none.items()} == {
        "shop.customer_hourly": "built",
        "shop.customer_daily": "built",
        "report.summary": "built",
    }
    summaries = versions("reports/summary")

    # Some failing: UK's hour fails, JP's commits; the UK day waits, and so does the
    # summary, which reads both outputs whole.
    p.append("raw/clicks", clicks(("UK", "14", "boom"), ("JP", "14", "b")))
    some = _outcomes(p, code=1)
    assert some["shop.customer_hourly"][0] == "built"  # JP's partition committed
    assert some["shop.customer_daily"][0] in ("built", "skipped")
    assert some["report.summary"] == ("skipped", "upstream shop.customer_hourly failed")
    assert versions("reports/summary") == summaries

    # All failing: JP's new hour fails too, so the hourly output commits nothing. The
    # daily transform has nothing new to read, but it is not fresh: it waits.
    p.append("raw/clicks", clicks(("JP", "15", "boom")))
    daily_before = versions(DAILY)
    every = _outcomes(p, code=1)
    assert every["shop.customer_hourly"][0] == "failed"
    assert every["shop.customer_daily"] == ("skipped", "upstream shop.customer_hourly failed")
    assert every["report.summary"][0] == "skipped"
    assert (versions(DAILY), versions("reports/summary")) == (daily_before, summaries)
    # Status agrees: nothing downstream of the failed partitions reads as fresh.
    found = p.json("status", "--pipeline", str(p.folder))["datasets"]
    state = {d["name"]: d["state"] for d in found}
    assert state[HOURLY] == state[DAILY] == state["reports/summary"] == "out_of_date"


def test_a_partitions_changed_program_names_both_program_versions(part: Project) -> None:
    p = part
    with p.lake.transaction("raw/clicks", type="SNAPSHOT", partition_by=["region", "hour"]) as t:
        t.write(clicks(("JP", "14", "a"), ("UK", "14", "a")))
    build(p)
    p.edit('agg(F.count("*").alias("clicks"))', 'agg(F.count(F.lit(1)).alias("clicks"))')
    # Rebuild only JP's hour with the new program: UK's keeps the first.
    p.json("build", HOURLY, "--partitions", "region=JP", "--pipeline", str(p.folder))
    found = status(p, HOURLY)
    [uk] = [x for x in found["partitions"] if x["key"]["region"] == "UK"]
    [cause] = uk["causes"]
    assert cause["kind"] == "program_changed"
    assert (cause["old"]["ordinal"], cause["new"]["ordinal"]) == (1, 2)
    assert cause["text"].startswith("program changed: v1 (") and " → v2 (" in cause["text"]


def test_a_new_column_is_built_into_every_partition_or_none(part: Project) -> None:
    """A program that adds a column: a build of some partitions would leave the others'
    files without it, so it fails naming the schemas and commits nothing; a build of
    them all commits the new schema."""
    p = part
    with p.lake.transaction("raw/clicks", type="SNAPSHOT", partition_by=["region", "hour"]) as t:
        t.write(clicks(("JP", "14", "a"), ("UK", "14", "a")))
    build(p)
    before = p.lake.version(HOURLY).commit_id
    p.edit(
        'agg(F.count("*").alias("clicks"))',
        'agg(F.count("*").alias("clicks"), F.lit(1).alias("one"))',
    )
    report = p.json(
        "build", HOURLY, "--partitions", "region=JP", "--pipeline", str(p.folder), code=1
    )
    [step] = [t for t in report["transforms"] if t["transform"].endswith("customer_hourly")]
    [jp] = step["partitions"]
    assert (jp["key"], jp["outcome"]) == ({"region": "JP", "hour": "2026-11-23T14"}, "failed")
    assert "keeps the others, whose schema differs" in jp["reason"]
    assert p.lake.version(HOURLY).commit_id == before
    p.json("build", HOURLY, "--pipeline", str(p.folder))
    assert p.lake.read_arrow(HOURLY).column("one").to_pylist() == [1, 1]


def test_partitioned_versions_reproduce_and_cut_off_by_partition(
    part: Project, tmp_path: Path
) -> None:
    """A version that rebuilt some partitions has a fingerprint, reproduces identical
    whole and by partition, and a backfill that rewrote a partition's rows unchanged
    leaves what it feeds fresh."""
    p = part
    source = tmp_path / "clicks.parquet"
    pq.write_table(clicks(("JP", "14", "a"), ("JP", "15", "b"), ("UK", "14", "a")), source)
    assert p.cli("ingest", str(source), "raw/clicks", "--partition-by", "region,hour")[0] == 0
    build(p)
    p.append("raw/clicks", clicks(("JP", "15", "d")))
    late = build(p)
    assert ran(late["customer_daily"]) == {"region=JP/local_day=2026-11-24": "built"}
    v2 = p.lake.version(DAILY)
    assert v2.commit_id == 2 and v2.data_fingerprint is not None

    whole = p.json("reproduce", f"{DAILY}@2")
    assert whole["identical"] and whole["recorded"] == v2.data_fingerprint
    assert whole["partitions"] == 3  # every partition, each by the run that wrote it
    one = p.json("reproduce", f"{DAILY}@2", "--partition", "region=UK,local_day=2026-11-23")
    assert one["identical"] and one["compared"] == "partition"
    assert one["partition"] == {"region": "UK", "local_day": "2026-11-23"}
    recorded = p.lake.partition_fingerprints(DAILY, 2)["region=UK/local_day=2026-11-23"]
    assert recorded is not None and one["recorded"] == recorded
    code, _, err = p.cli("reproduce", f"{DAILY}@2", "--partition", "region=FR,local_day=2026-11-23")
    assert code == 1 and "holds no partition region=FR/local_day=2026-11-23" in err

    settings = dataclasses.replace(p.settings, pipelines=(str(p.folder),))
    with TestClient(create_app(settings, p.lake.engine)) as api:
        r = api.post(
            f"/api/v1/strata/reproduce/{DAILY.replace('/', '%2F')}",
            params={"version": 2, "partition": "region=JP,local_day=2026-11-24"},
        )
        assert r.status_code == 200, r.text
        assert r.json()["identical"] and r.json()["partition"]["region"] == "JP"

    # A backfill of UK's hours rewrites their rows as they were: the UK day they feed is
    # not out of date, and a build of the daily output runs nothing.
    hourly_before = p.lake.version(HOURLY).commit_id
    back = p.json("build", HOURLY, "--partitions", "region=UK", "--pipeline", str(p.folder))
    [step] = back["transforms"]
    assert ran(step) == {"region=UK/hour=2026-11-23T14": "built"}
    assert p.lake.version(HOURLY).commit_id == hourly_before + 1
    assert status(p, DAILY)["partition_counts"]["out_of_date"] == 0
    again = build(p)
    assert again["customer_daily"]["outcome"] == "fresh"
    assert p.lake.version(DAILY).commit_id == 2
    # A changed UK hour still reaches the UK day.
    p.append("raw/clicks", clicks(("UK", "14", "z")))
    assert ran(build(p)["customer_daily"]) == {"region=UK/local_day=2026-11-23": "built"}


INCREMENTAL_PARTITIONED = """
from strata import Input, Output, incremental, transform_df


@incremental()
@transform_df(Output("metrics/by_region", partition_by=["region"]), clicks=Input("raw/clicks"))
def by_region(clicks):
    return clicks
"""


def test_a_broken_partitioned_declaration_is_reported_on_its_transform(part: Project) -> None:
    """A partition_map that raises, or @incremental on a partitioned output: status
    reports it on that transform and answers every other; a build fails that transform
    alone, with the same words."""
    p = part
    with p.lake.transaction("raw/clicks", "SNAPSHOT", partition_by=["region", "hour"]) as txn:
        txn.write(clicks(("JP", "14", "a"), ("UK", "14", "b")))
    (p.folder / "inc.py").write_text(INCREMENTAL_PARTITIONED)
    p.edit("hour = datetime.strptime(", 'raise KeyError("no zone")\n    hour = datetime.strptime(')
    found = {d["name"]: d for d in p.json("status", "--pipeline", str(p.folder))["datasets"]}
    assert found[HOURLY]["state"] == "out_of_date"
    assert [c["kind"] for c in found[HOURLY]["causes"]] != ["broken"]  # answered as usual
    [daily] = found[DAILY]["causes"]
    assert daily["kind"] == "broken"
    assert "partition_map of 'metrics/customer_hourly' raised KeyError" in daily["text"]
    [inc] = found["metrics/by_region"]["causes"]
    assert inc["kind"] == "broken" and "@incremental on" in inc["text"]
    assert "drop @incremental" in inc["text"]
    code, out, _ = p.cli("status", "--pipeline", str(p.folder))
    assert code == 0, out  # the table answers too
    report = p.json("build", "--all", "--pipeline", str(p.folder), code=1)
    steps = {s["transform"]: s for s in report["transforms"]}
    assert steps["shop.customer_hourly"]["outcome"] == "built"
    assert steps["shop.customer_daily"]["outcome"] == "failed"
    assert steps["inc.by_region"]["outcome"] == "failed"
    assert "drop @incremental" in steps["inc.by_region"]["reason"]


def test_a_frame_missing_its_partition_column_names_where(part: Project) -> None:
    p = part
    with p.lake.transaction("raw/clicks", "SNAPSHOT", partition_by=["region", "hour"]) as txn:
        txn.write(clicks(("JP", "14", "a"), ("UK", "14", "b"), ("US", "14", "c")))
    p.edit('groupBy("region", "hour", "customer")', 'groupBy("hour", "customer")')
    report = p.json("build", HOURLY, "--pipeline", str(p.folder), code=1)
    [step] = report["transforms"]
    reason = step["reason"]
    assert reason.startswith("3 of 3 partitions failed; region=JP/hour=2026-11-23T14: ")
    assert "has no column 'region', which partitions it" in reason
    # Where: the transform's file and line, and what "more" counts.
    assert f"(in transform shop.customer_hourly, {p.folder / 'shop.py'}:" in reason
    assert reason.endswith("(and 2 more failed partitions)")
