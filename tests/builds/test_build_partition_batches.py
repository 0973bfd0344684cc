"""A partition-local transform's due partitions run as one Spark job, and each stays its
own run with its own rows, catalog row and fingerprint; when that job fails, the
partitions run one job each so the good ones commit. On SQLite and PostgreSQL, through
the CLI as a user runs it, compared with the same code run one job per partition."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from build_support import Project, project_of, snapshot

from strata.settings import Settings

pytestmark = pytest.mark.spark

PIPELINE = Path(__file__).with_name("batch_pipeline.py")
TOGETHER, APART = "metrics/together", "metrics/apart"
DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")


@pytest.fixture
def batch(settings: Settings, tmp_path: Path) -> Any:
    with project_of(settings, tmp_path, PIPELINE) as p:
        yield p


def events(*rows: tuple[str, str, float, str | None]) -> pa.Table:
    at = datetime(2026, 11, 1, 12, 30, 15, 123456, tzinfo=UTC)
    return pa.table(
        {
            "region": [r[0] for r in rows],
            "day": [r[1] for r in rows],
            "amount": [r[2] for r in rows],
            "note": [r[3] for r in rows],
            "at": [at] * len(rows),
        }
    )


def build(p: Project, dataset: str, code: int = 0) -> dict[str, Any]:
    report = p.json("build", dataset, "--pipeline", str(p.folder), code=code)
    [step] = [t for t in report["transforms"] if dataset in t["outputs"]]
    return step


def runs(step: dict[str, Any]) -> dict[str, tuple[str, str | None, int]]:
    """``key text -> (outcome, run, rows)`` of a step's partition runs."""
    return {
        "/".join(f"{k}={v}" for k, v in x["key"].items()): (x["outcome"], x["run"], x["rows"])
        for x in step["partitions"]
    }


def spark_jobs(spark: Any) -> int:
    """How many Spark jobs the session has run: its newest job's id + 1 (Spark keeps only
    the last thousand jobs, so counting those it keeps stops growing)."""
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(), default=-1) + 1


def rows_of(p: Project, dataset: str) -> list[dict[str, Any]]:
    return sorted(p.lake.read_arrow(dataset).to_pylist(), key=lambda r: (r["region"], r["day"]))


def events_of(p: Project, run_ids: set[str]) -> Counter[tuple[str, str]]:
    found = p.rows("select run_uuid, event_type from lineage_events")
    return Counter((str(r[0]), str(r[1])) for r in found if str(r[0]) in run_ids)


def test_due_partitions_run_in_one_job_each_its_own_run(batch: Project, spark: Any) -> None:
    p = batch
    with p.lake.transaction("raw/events", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(
            events(
                *[
                    (r, d, 1.5 * i, None if i % 2 else f"n{i}")
                    for r in ("JP", "UK")
                    for d in DAYS
                    for i in range(3)
                ]
            )
        )
    # Read whole, but filtered to each run's keys: it has the key's columns.
    snapshot(
        p,
        "raw/targets",
        pa.table({"region": ["JP", "UK", "US"], "day": list(DAYS), "target": [10, 20, 30]}),
    )

    before = spark_jobs(spark)
    together = build(p, TOGETHER)
    jobs_together = spark_jobs(spark) - before
    before = spark_jobs(spark)
    apart = build(p, APART)
    jobs_apart = spark_jobs(spark) - before

    assert together["outcome"] == apart["outcome"] == "built"
    ran = runs(together)
    assert len(ran) == 6 and {o for o, _, _ in ran.values()} == {"built"}
    assert len({run for _, run, _ in ran.values()}) == 6  # one run per partition
    assert {k: n for k, (_, _, n) in ran.items()} == {k: n for k, (_, _, n) in runs(apart).items()}
    assert jobs_together * 2 < jobs_apart, (jobs_together, jobs_apart)
    # The same rows, and each partition's fingerprint the one a run of it alone records.
    assert rows_of(p, TOGETHER) == rows_of(p, APART)
    prints = p.lake.partition_fingerprints(TOGETHER)
    assert len(prints) == 6 and None not in prints.values()
    assert prints == p.lake.partition_fingerprints(APART)
    # Each run has its own START and COMPLETE, as if it ran alone.
    seen = events_of(p, {run for _, run, _ in ran.values() if run})
    assert set(seen.values()) == {1} and len(seen) == 12
    history = p.json("history", TOGETHER, "--partition", "region=JP")["versions"]
    jp_runs = {run for k, (_, run, _) in ran.items() if k.startswith("region=JP")}
    assert {r["run"] for r in history[0]["partition_runs"]} == jp_runs
    assert p.json("status", TOGETHER, "--pipeline", str(p.folder))["datasets"][0][
        "partition_counts"
    ] == {"fresh": 6, "out_of_date": 0, "never_built": 0}

    # Late rows in two partitions, one of them noted 'boom': the job of both fails, then
    # each runs alone: JP's second day commits, UK's first fails and keeps its data.
    p.append("raw/events", events(("JP", DAYS[1], 9.0, "late"), ("UK", DAYS[0], 1.0, "boom")))
    uk_before = p.lake.read_arrow(TOGETHER, partitions={"region": "UK", "day": DAYS[0]})
    failed = build(p, TOGETHER, code=1)
    ran = runs(failed)
    assert {k: o for k, (o, _, _) in ran.items()} == {
        f"region=JP/day={DAYS[1]}": "built",
        f"region=UK/day={DAYS[0]}": "failed",
    }
    [bad] = [x for x in failed["partitions"] if x["outcome"] == "failed"]
    assert "an event noted 'boom'" in bad["reason"]
    seen = events_of(p, {run for _, run, _ in ran.values() if run})
    jp, uk = ran[f"region=JP/day={DAYS[1]}"][1], ran[f"region=UK/day={DAYS[0]}"][1]
    assert seen == Counter(
        {(jp, "START"): 1, (jp, "COMPLETE"): 1, (uk, "START"): 1, (uk, "FAIL"): 1}
    )
    jp_day = p.lake.read_arrow(TOGETHER, partitions={"region": "JP", "day": DAYS[1]}).to_pylist()
    assert [(r["events"], r["note"]) for r in jp_day] == [(4, "n2")]
    assert p.lake.read_arrow(TOGETHER, partitions={"region": "UK", "day": DAYS[0]}) == uk_before
    stale = p.json("status", TOGETHER, "--pipeline", str(p.folder))["datasets"][0]
    assert stale["partition_counts"] == {"fresh": 5, "out_of_date": 1, "never_built": 0}


def test_a_batch_writing_another_partition_falls_back_and_names_it(batch: Project) -> None:
    p = batch
    with p.lake.transaction("raw/events", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(events(("JP", DAYS[0], 1.0, "a"), ("JP", DAYS[1], 2.0, "b")))
    snapshot(p, "raw/targets", pa.table({"region": ["JP"], "day": [DAYS[0]], "target": [1]}))
    p.edit(
        "    return daily(events, targets)\n\n\n@transform_df(",
        "    return daily(events, targets).withColumn('day', F.lit('2026-12-31'))\n\n\n"
        "@transform_df(",
    )
    failed = build(p, TOGETHER, code=1)
    assert {o for o, _, _ in runs(failed).values()} == {"failed"}
    # Each partition then ran alone, and says what it wrote where.
    assert len(failed["partitions"]) == 2
    for x in failed["partitions"]:
        assert "has rows in partition region=JP/day=2026-12-31" in x["reason"], x["reason"]
    assert TOGETHER not in {d.name for d in p.lake.datasets() if d.latest_commit_id}


CHECKED, CHECKED_APART = "checked/together", "checked/apart"


def built_in_fewer_jobs(p: Project, spark: Any, together: str, apart: str) -> None:
    """Both build; the partitions sharing a job take fewer than half the Spark jobs."""
    jobs = []
    for dataset in (together, apart):
        before = spark_jobs(spark)
        assert build(p, dataset)["outcome"] == "built"
        jobs.append(spark_jobs(spark) - before)
    assert jobs[0] * 2 < jobs[1], (together, jobs)


def judged(p: Project, dataset: str) -> set[tuple[Any, ...]]:
    """What each partition's checks found: ``(partition, check, outcome, observed)``;
    each run's result of a check listed once."""
    results = p.json("checks", dataset)["results"]
    assert len(results) == len({(r["run"], r["check"]) for r in results}), results
    return {
        (r["partition"], r["check"], r["outcome"], json.dumps(r["observed"], sort_keys=True))
        for r in results
    }


def test_output_checks_in_one_job_judge_each_partition_alone(batch: Project, spark: Any) -> None:
    p = batch
    days = [f"2026-11-{d:02d}" for d in range(1, 11)]
    rows = [(r, d, float(i + 1), f"n{i}") for r in ("JP", "UK") for d in days for i in range(3)]
    with p.lake.transaction("raw/events", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(events(*rows))
    built_in_fewer_jobs(p, spark, CHECKED, CHECKED_APART)
    first = judged(p, CHECKED)
    assert len(first) == 20 * 4 and {outcome for _, _, outcome, _ in first} == {"passed"}
    assert first == judged(p, CHECKED_APART)

    # Late rows: a small amount (warns), a huge one (fails), a note twice in a partition
    # (fails; the same note in other partitions is no repeat).
    huge, twice, small = (
        f"region={r}/day={d}" for r, d in (("JP", DAYS[2]), ("UK", DAYS[1]), ("JP", DAYS[0]))
    )
    p.append(
        "raw/events",
        events(
            ("JP", DAYS[0], 0.5, "n9"), ("JP", DAYS[2], 500.0, "n7"), ("UK", DAYS[1], 2.0, "n0")
        ),
    )
    together, apart = build(p, CHECKED, code=1), build(p, CHECKED_APART, code=1)
    ran = runs(together)
    assert {k: o for k, (o, _, _) in ran.items()} == {
        huge: "failed",
        twice: "failed",
        small: "built",
    }
    assert {k: o for k, (o, _, _) in runs(apart).items()} == {k: o for k, (o, _, _) in ran.items()}
    reasons = {k: x.get("reason", "") for k, x in zip(ran, together["partitions"], strict=True)}
    assert "no huge amounts" in reasons[huge] and "notes are a key" in reasons[twice]
    # Each partition's checks found what a run of that partition alone finds.
    found = judged(p, CHECKED)
    assert found == judged(p, CHECKED_APART)
    outcomes = {(part, check, outcome) for part, check, outcome, _ in found}
    assert {(small, "small amounts", "warned"), (huge, "no huge amounts", "failed")} <= outcomes
    assert (twice, "notes are a key", "failed") in outcomes
    # The failed partitions keep their data; the rest commit, fingerprints and all.
    assert rows_of(p, CHECKED) == rows_of(p, CHECKED_APART)
    assert [r["amount"] for r in rows_of(p, CHECKED) if r["amount"] > 3] == []
    assert 0.5 in [r["amount"] for r in rows_of(p, CHECKED)]
    assert p.lake.partition_fingerprints(CHECKED) == p.lake.partition_fingerprints(CHECKED_APART)
    # Status names the check that stopped each failed partition, not only the last one.
    for dataset in (CHECKED, CHECKED_APART):
        found_status = p.json("status", dataset, "--pipeline", str(p.folder))["datasets"][0]
        stopped = {
            c["partition"]: c["check"]
            for c in found_status["causes"]
            if c["kind"] == "check_failed"
        }
        assert stopped == {huge: "no huge amounts", twice: "notes are a key"}, dataset
    # A failed partition's run ends in FAIL, its assertions on the output it did not write.
    bad = ran[huge][1]
    assert events_of(p, {bad}) == Counter({(bad, "START"): 1, (bad, "FAIL"): 1})
    [fail] = p.rows(
        "select payload from lineage_events where run_uuid = :r and event_type = 'FAIL'", r=bad
    )
    payload = json.loads(fail[0]) if isinstance(fail[0], str) else fail[0]
    [out] = payload["outputs"]
    facet = out["facets"]["dataQualityAssertions"]["assertions"]
    assert {a["name"]: a["success"] for a in facet}["no huge amounts"] is False


GATED, GATED_APART = "gated/together", "gated/apart"
DAILY, DAILY_APART = "daily/together", "daily/apart"


def stops(p: Project, dataset: str) -> dict[str, str]:
    """Each failed partition's stopping check, as ``status`` names it."""
    found = p.json("status", dataset, "--pipeline", str(p.folder))["datasets"][0]
    return {c["partition"]: c["check"] for c in found["causes"] if c["kind"] == "check_failed"}


def test_input_checks_of_a_batch_judge_each_partition_alone(batch: Project, spark: Any) -> None:
    """Input checks no longer split a batch into a job per partition: each partition's
    input rows are judged as its own run judges them (its events, its key's targets,
    the rates every run reads whole; a day's run every region of that day), and a
    partition an input check stops fails alone without its transform being run."""
    p = batch
    days = [f"2026-11-{d:02d}" for d in range(1, 6)]
    rows = [(r, d, float(i + 1), f"n{i}") for r in ("JP", "UK") for d in days for i in range(3)]
    with p.lake.transaction("raw/events", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(events(*rows))
    pairs = [(r, d) for r in ("JP", "UK") for d in days]
    targets = {"region": [r for r, _ in pairs], "day": [d for _, d in pairs]}
    snapshot(p, "raw/targets", pa.table({**targets, "target": list(range(len(pairs)))}))
    snapshot(p, "raw/rates", pa.table({"rate": [1.5, 1.25]}))
    for together, apart, partitions in ((GATED, GATED_APART, 10), (DAILY, DAILY_APART, 5)):
        built_in_fewer_jobs(p, spark, together, apart)
        first = judged(p, together)
        assert first == judged(p, apart)
        assert {outcome for _, _, outcome, _ in first} == {"passed"}
        assert len({part for part, _, _, _ in first}) == partitions
    assert len(judged(p, GATED)) == 10 * 7

    # Late rows: a huge amount (FAIL), a note twice in one partition (FAIL), a small
    # amount (WARN), a negative target (FAIL: the targets moved, every partition reruns),
    # a rate over 2 (WARN for all), and an event noted 'boom' that fails the batch's job.
    huge, twice, small, negative, boom = (
        f"region={r}/day={d}"
        for r, d in zip(
            ("JP", "UK", "JP", "UK", "JP"),
            (days[2], days[1], days[0], days[4], days[3]),
            strict=True,
        )
    )
    late = [("JP", days[0], 0.5, "n9"), ("JP", days[2], 500.0, "n7"), ("UK", days[1], 2.0, "n0")]
    p.append("raw/events", events(*late, ("JP", days[3], 2.0, "boom")))
    wrong = [-1 if (r, d) == ("UK", days[4]) else 1 for r, d in pairs]
    snapshot(p, "raw/targets", pa.table({**targets, "target": wrong}))
    snapshot(p, "raw/rates", pa.table({"rate": [1.5, 2.5]}))
    step, apart_step = build(p, GATED, code=1), build(p, GATED_APART, code=1)
    ran = runs(step)
    failed = {k for k, (o, _, _) in ran.items() if o == "failed"}
    assert failed == {huge, twice, negative, boom} and len(ran) == 10
    assert {k: o for k, (o, _, _) in runs(apart_step).items()} == {
        k: o for k, (o, _, _) in ran.items()
    }
    reasons = {k: x.get("reason", "") for k, x in zip(ran, step["partitions"], strict=True)}
    assert "no huge amounts" in reasons[huge] and "notes are a key" in reasons[twice]
    assert "targets not negative" in reasons[negative]
    assert "an event noted 'boom'" in reasons[boom]
    found = judged(p, GATED)
    assert found == judged(p, GATED_APART)
    outcomes = {(part, check, outcome) for part, check, outcome, _ in found}
    assert {(small, "small amounts", "warned"), (twice, "notes are a key", "failed")} <= outcomes
    assert {(negative, "targets not negative", "failed"), (boom, "rates plausible", "warned")} <= (
        outcomes
    )
    assert rows_of(p, GATED) == rows_of(p, GATED_APART)
    assert p.lake.partition_fingerprints(GATED) == p.lake.partition_fingerprints(GATED_APART)
    assert stops(p, GATED) == stops(p, GATED_APART)
    assert stops(p, GATED) == {
        huge: "no huge amounts",
        twice: "notes are a key",
        negative: "targets not negative",
    }
    # A partition its input checks stopped was not run again when the batch's job
    # failed: one START and one FAIL, its assertion on the input that broke it.
    bad = ran[huge][1]
    assert events_of(p, {bad}) == Counter({(bad, "START"): 1, (bad, "FAIL"): 1})
    [fail] = p.rows(
        "select payload from lineage_events where run_uuid = :r and event_type = 'FAIL'", r=bad
    )
    payload = json.loads(fail[0]) if isinstance(fail[0], str) else fail[0]
    [source] = [d for d in payload["inputs"] if d["name"] == "raw/events"]
    facet = source["facets"]["dataQualityAssertions"]["assertions"]
    assert {a["name"]: a["success"] for a in facet}["no huge amounts"] is False

    # A day's run judges every region of its day: the note repeated in one region is no
    # repeat of the other region's, the huge amount stops its day.
    step, apart_step = build(p, DAILY, code=1), build(p, DAILY_APART, code=1)
    assert runs(step).keys() == {f"day={d}" for d in days[:4]}
    assert {k: o for k, (o, _, _) in runs(step).items()} == {
        k: o for k, (o, _, _) in runs(apart_step).items()
    }
    assert judged(p, DAILY) == judged(p, DAILY_APART)
    assert stops(p, DAILY) == {
        f"day={days[1]}": "notes are a key per region",
        f"day={days[2]}": "no huge amounts",
    }
