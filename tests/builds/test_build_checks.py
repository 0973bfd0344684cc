"""Data checks in builds: a FAIL check stops the commit and what reads the output, a
WARN check commits and is remembered, results are history (CLI, API, lineage)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from build_support import Project, project_of

from strata.settings import Settings

pytestmark = pytest.mark.spark  # builds run Spark in the test's process

CHECKS = Path(__file__).with_name("checks_pipeline.py")


@pytest.fixture
def project(settings: Settings, tmp_path: Path) -> Iterator[Project]:
    with project_of(settings, tmp_path, CHECKS) as p:
        yield p


def _orders(*rows: tuple[int | None, float]) -> pa.Table:
    return pa.table(
        {"order_id": pa.array([r[0] for r in rows], pa.int64()), "amount": [r[1] for r in rows]}
    )


def _snapshot(p: Project, dataset: str, table: pa.Table) -> int:
    with p.lake.transaction(dataset, type="SNAPSHOT") as txn:
        txn.write(table)
    return txn.versions[dataset].commit_id


def _build(p: Project, *args: str, code: int = 0) -> dict[str, Any]:
    result: dict[str, Any] = p.json("build", "--pipeline", str(p.folder), *args, code=code)
    return result


def _steps(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["transform"].split(".")[-1]: s for s in report["transforms"]}


def _versions(p: Project, dataset: str) -> int:
    return int(
        p.scalar(
            "select count(*) from dataset_versions v join datasets d on d.uuid = v.dataset_uuid "
            "where d.name = :n and v.commit_id is not null",
            n=dataset,
        )
    )


def test_a_failed_check_commits_nothing_and_skips_readers(project: Project) -> None:
    p = project
    _snapshot(p, "raw/orders", _orders((1, 5.0), (2, 7.5)))
    steps = _steps(_build(p, "report/total"))
    assert steps["clean_orders"]["outcome"] == "built"
    good = p.json("checks", "clean/orders")
    outcomes = {(r["check"], r["side"]): r["outcome"] for r in good["results"]}
    assert outcomes == {
        ("orders have ids", "input"): "passed",
        ("order id is a key", "output"): "passed",
        ("no negative amounts", "output"): "passed",
        ("not empty", "output"): "passed",
    }
    assert {r["version"] for r in good["results"]} == {1}

    # A duplicated key: nothing commits, the total is skipped, the error says why.
    _snapshot(p, "raw/orders", _orders((1, 5.0), (2, 7.5), (2, 8.0), (None, 1.0)))
    before = _versions(p, "clean/orders")
    report = _build(p, "report/total", code=1)
    steps = _steps(report)
    assert steps["clean_orders"]["outcome"] == "failed"
    reason = steps["clean_orders"]["reason"]
    assert "check 'order id is a key' (primary key (order_id)) on clean/orders failed" in reason
    assert "3 failing" in reason and "nothing was committed" in reason
    assert steps["total"]["outcome"] == "skipped"
    assert _versions(p, "clean/orders") == before

    status = {d["name"]: d for d in p.json("status", "--pipeline", str(p.folder))["datasets"]}
    kinds = [c["kind"] for c in status["clean/orders"]["causes"]]
    assert "check_failed" in kinds
    cause = next(c for c in status["clean/orders"]["causes"] if c["kind"] == "check_failed")
    assert cause["check"] == "order id is a key" and cause["failing"] == 3
    assert "last build stopped by check 'order id is a key'" in cause["text"]

    latest = p.json("checks", "clean/orders")
    failed = [r for r in latest["results"] if r["outcome"] == "failed"]
    assert [(r["check"], r["version"]) for r in failed] == [("order id is a key", None)]
    assert failed[0]["observed"]["duplicate_keys"] == 1
    assert failed[0]["observed"]["null_keys"] == 1
    assert {"order_id": 2, "rows": 2} in failed[0]["samples"]

    # The fix builds, and the cause goes.
    _snapshot(p, "raw/orders", _orders((1, 5.0), (2, 7.5), (3, 8.0)))
    steps = _steps(_build(p, "report/total"))
    assert steps["clean_orders"]["outcome"] == "built" and steps["total"]["outcome"] == "built"
    status = {d["name"]: d for d in p.json("status", "--pipeline", str(p.folder))["datasets"]}
    assert status["clean/orders"]["state"] == "fresh"


def test_a_warning_commits_and_history_marks_it(project: Project) -> None:
    p = project
    _snapshot(p, "raw/orders", _orders((1, 5.0), (2, -2.0)))
    steps = _steps(_build(p, "clean/orders"))
    assert steps["clean_orders"]["outcome"] == "built"
    history = p.json("history", "clean/orders")["versions"]
    assert history[-1]["warnings"] == ["no negative amounts"]
    code, out, _ = p.cli("history", "clean/orders")
    assert code == 0 and "⚠ no" in out  # the warnings column
    result = p.json("checks", "clean/orders", "--version", str(history[-1]["version"]))
    warned = [r for r in result["results"] if r["outcome"] == "warned"]
    assert len(warned) == 1 and warned[0]["failing"] == 1
    assert warned[0]["samples"] == [{"order_id": 2, "amount": -2.0}]
    code, out, _ = p.cli("checks", "clean/orders")
    assert code == 0 and "⚠" in out and "✓" in out


def test_a_failed_precondition_fails_the_outputs(project: Project) -> None:
    p = project
    _snapshot(p, "raw/orders", pa.table({"id": [1, 2], "amount": [1.0, 2.0]}))
    report = _build(p, "clean/orders", code=1)
    reason = _steps(report)["clean_orders"]["reason"]
    assert "check 'orders have ids' (schema contains {order_id: bigint}) on raw/orders" in reason
    assert _versions(p, "clean/orders") == 0
    status = {d["name"]: d for d in p.json("status", "--pipeline", str(p.folder))["datasets"]}
    cause = next(c for c in status["clean/orders"]["causes"] if c["kind"] == "check_failed")
    assert cause["side"] == "input" and cause["judged"] == "raw/orders"
    assert status["raw/orders"]["state"] == "fresh"  # the input is not to blame
    listed = p.json("checks", "clean/orders", "--pipeline", str(p.folder))["results"]
    assert [(r["check"], r["dataset"], r["outcome"], r["version"]) for r in listed] == [
        ("orders have ids", "raw/orders", "failed", 1)
    ]
    assert listed[0]["observed"] == {"missing": ["order_id"]}


def test_an_incremental_key_is_checked_against_the_rows_already_there(project: Project) -> None:
    p = project
    p.append("raw/events", pa.table({"event_id": [1, 2], "v": ["a", "b"]}))
    assert _steps(_build(p, "log/events"))["events"]["outcome"] == "built"
    p.append("raw/events", pa.table({"event_id": [3, 2], "v": ["c", "again"]}))
    report = _build(p, "log/events", code=1)
    reason = _steps(report)["events"]["reason"]
    assert "check 'event id is a key'" in reason and "1 failing" in reason
    assert _versions(p, "log/events") == 1
    failed = [r for r in p.json("checks", "log/events")["results"] if r["outcome"] == "failed"]
    assert failed[0]["observed"]["keys_already_present"] == 1
    assert failed[0]["observed"]["duplicate_keys"] == 0


def test_bad_declarations_are_reported_on_their_transform(project: Project) -> None:
    p = project
    p.edit('"not empty"', '"order id is a key"')
    _snapshot(p, "raw/orders", _orders((1, 5.0)))
    status = {d["name"]: d for d in p.json("status", "--pipeline", str(p.folder))["datasets"]}
    broken = status["clean/orders"]["causes"][0]
    assert broken["kind"] == "broken"
    assert "check name 'order id is a key'" in broken["error"]
    assert f"{p.pipeline}:" in broken["error"]
    assert status["log/events"]["causes"][0]["kind"] == "never_built"  # the rest answered

    p.edit(
        '"order id is a key"),\n            Check(E.col("amount")',
        '"ok"),\n            Check(E.col("amount")',
    )
    p.edit('E.row_count().gt(0), "order id is a key"', 'E.not_null("amt"), "amount set"')
    report = _build(p, "clean/orders", code=1)
    reason = _steps(report)["clean_orders"]["reason"]
    assert "check 'amount set'" in reason and "names column 'amt'" in reason
    assert f"{p.pipeline}:" in reason
    status = {d["name"]: d for d in p.json("status", "--pipeline", str(p.folder))["datasets"]}
    cause = next(c for c in status["clean/orders"]["causes"] if c["kind"] == "check_failed")
    assert "cannot apply" in cause["text"] and "'amt'" in cause["text"]


def test_a_partition_that_fails_a_check_fails_alone(project: Project) -> None:
    p = project
    table = pa.table({"day": ["d1", "d1", "d2"], "amount": [1.0, 2.0, -3.0]})
    with p.lake.transaction("raw/daily", "SNAPSHOT", partition_by=["day"]) as txn:
        txn.write(table)
    report = _build(p, "daily/orders", code=1)
    step = _steps(report)["daily"]
    parts = {tuple(x["key"].values()): x for x in step["partitions"]}
    assert parts[("d1",)]["outcome"] == "built"
    assert parts[("d2",)]["outcome"] == "failed"
    assert "check 'amounts are positive'" in parts[("d2",)]["reason"]
    assert set(p.lake.partitions("daily/orders")) == {"day=d1"}
    results = p.json("checks", "daily/orders")["results"]
    by_key = {(r["partition"], r["outcome"]) for r in results}
    assert ("day=d1", "passed") in by_key and ("day=d2", "failed") in by_key
    status = {d["name"]: d for d in p.json("status", "--pipeline", str(p.folder))["datasets"]}
    cause = next(c for c in status["daily/orders"]["causes"] if c["kind"] == "check_failed")
    assert cause["partition"] == "day=d2"


def test_results_over_http_and_as_openlineage_assertions(project: Project) -> None:
    import dataclasses
    from urllib.parse import quote

    from fastapi.testclient import TestClient

    from strata.api import create_app

    p = project
    _snapshot(p, "raw/orders", _orders((1, 5.0), (2, -2.0)))
    run = _steps(_build(p, "clean/orders"))["clean_orders"]["run"]
    settings = dataclasses.replace(p.settings, pipelines=(str(p.folder),))
    seg = quote("clean/orders", safe="")
    with TestClient(create_app(settings, p.lake.engine)) as api:
        body = api.get(f"/api/v1/strata/checks/{seg}").json()
        assert body["version"] == 1
        assert {r["check"]: r["outcome"] for r in body["results"]}["no negative amounts"] == (
            "warned"
        )
        assert body == p.json("checks", "clean/orders")
        mine = api.get(f"/api/v1/strata/runs/{run}/checks").json()["results"]
        assert len(mine) == 4 and {r["run"] for r in mine} == {run}

        missing = api.get(f"/api/v1/strata/checks/{quote('no/such', safe='')}")
        assert missing.status_code == 404 and "no/such" in missing.json()["message"]
        # A version the dataset never had is not found, not a version without results.
        beyond = api.get(f"/api/v1/strata/checks/{seg}", params={"version": 9})
        assert beyond.status_code == 404 and "no version 9" in beyond.json()["message"]

        dataset = api.get(f"/api/v1/namespaces/strata/datasets/{seg}").json()
        facet = dataset["facets"]["dataQualityAssertions"]
        by_name = {a["name"]: a for a in facet["assertions"]}
        assert by_name["no negative amounts"]["success"] is False
        assert by_name["no negative amounts"]["severity"] == "warn"
        assert by_name["no negative amounts"]["column"] == "amount"
        assert by_name["order id is a key"]["success"] is True


def test_a_rising_key_is_streamed_and_a_repeat_in_it_still_fails(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An integer key written in order is proved unique one bounded batch at a time,
    never read whole; a repeat in such a key (no NULL to give it away) is still counted
    exactly, and a row rule's failure still gets its own count."""
    from strata.lake.transaction import Transaction

    p = project
    whole_reads: list[Sequence[str]] = []
    read_whole = Transaction.pending_columns

    def recorded(self: Transaction, dataset: str, columns: Sequence[str], **kw: Any) -> Any:
        whole_reads.append(columns)
        return read_whole(self, dataset, columns, **kw)

    monkeypatch.setattr(Transaction, "pending_columns", recorded)
    _snapshot(p, "raw/orders", _orders(*[(i, 1.0) for i in range(1, 2000)]))
    _build(p, "clean/orders")
    assert whole_reads == []
    found = {r["check"]: r for r in p.json("checks", "clean/orders")["results"]}
    assert found["order id is a key"]["observed"]["rows"] == 1999
    assert found["order id is a key"]["outcome"] == "passed"

    _snapshot(p, "raw/orders", _orders((1, 1.0), (2, -1.0), (2, 1.0), (3, -2.0)))
    _build(p, "clean/orders", code=1)
    assert whole_reads == [["order_id"]]
    failed = {r["check"]: r for r in p.json("checks", "clean/orders")["results"]}
    key = failed["order id is a key"]
    assert key["failing"] == 2 and key["observed"]["duplicate_keys"] == 1, key
    assert failed["no negative amounts"]["failing"] == 2


def test_judging_a_written_output_runs_no_spark_job_of_its_own(project: Project) -> None:
    """An output's row rules are observed by its write and its key counted from the key
    column read back on this process: the checked build runs exactly the Spark jobs of
    the same build without checks, and still finds a duplicate and a NULL key."""
    from strata.lake.spark import get_spark

    p = project
    tracker = get_spark(p.settings).sparkContext.statusTracker()

    def jobs_building(dataset: str, code: int = 0) -> int:
        before = set(tracker.getJobIdsForGroup())
        _build(p, dataset, "--force", code=code)
        return len(set(tracker.getJobIdsForGroup()) - before)

    _snapshot(p, "raw/orders", _orders(*[(i, float(i)) for i in range(1, 500)]))
    plain, checked = jobs_building("copy/orders"), jobs_building("clean/orders")
    assert plain > 0 and checked == plain, (plain, checked)
    found = {r["check"]: r for r in p.json("checks", "clean/orders")["results"]}
    assert found["order id is a key"]["observed"] == {
        "rows": 499,
        "duplicate_keys": 0,
        "null_keys": 0,
    }
    assert found["not empty"]["observed"] == {"rows": 499}

    _snapshot(p, "raw/orders", _orders(*[(i // 2, 1.0) for i in range(1, 7)], (None, -1.0)))
    _build(p, "clean/orders", code=1)
    failed = {r["check"]: r for r in p.json("checks", "clean/orders")["results"]}
    key = failed["order id is a key"]
    assert key["outcome"] == "failed" and key["failing"] == 5, key  # keys 1, 2 twice; a NULL
    assert key["observed"] == {"rows": 7, "duplicate_keys": 2, "null_keys": 1}
    assert failed["no negative amounts"]["failing"] == 1
