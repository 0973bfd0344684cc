"""A batch's check results are kept in one store transaction, each run's with the
versions it judged, and read back run by run. On both backends."""

from __future__ import annotations

import pyarrow as pa
import sqlalchemy as sa

from strata.builds.checks.check import CheckResult
from strata.builds.state import BuildState
from strata.lake.service import Lake

DS = "checked/daily"


def _result(key: str, passed: bool) -> CheckResult:
    return CheckResult(
        "one row a day",
        DS,
        "output",
        "primary_key(day)",
        "primary_key",
        "day",
        "FAIL",
        passed,
        {"rows": 2, "duplicate_keys": 0 if passed else 1},
        0 if passed else 2,
        partition=key,
    )


def test_a_batch_s_check_results_are_kept_in_one_transaction(lake: Lake) -> None:
    with lake.transaction(DS, "SNAPSHOT", partition_by=["day"]) as txn:
        txn.write(pa.table({"day": ["d1", "d1"], "n": [1, 2]}))
    state = BuildState(lake.engine, lake.namespace)
    commits: list[object] = []

    def committed(conn: object) -> None:
        commits.append(conn)

    sa.event.listen(lake.engine, "commit", committed)
    try:
        state.record_checks(
            "pipelines.daily",
            [
                ("run-built", [_result("day=d1", True)], {DS: 1}),
                ("run-failed", [_result("day=d2", False)], {}),
                ("run-unchecked", [], {DS: 1}),
            ],
        )
        state.record_checks("pipelines.daily", [])
    finally:
        sa.event.remove(lake.engine, "commit", committed)
    assert len(commits) == 1
    [built] = state.run_checks("run-built")
    assert (built.version, built.result.partition, built.result.outcome) == (1, "day=d1", "passed")
    assert built.job == "pipelines.daily" and built.result.observed["rows"] == 2
    [failed] = state.run_checks("run-failed")
    assert (failed.version, failed.result.partition) == (None, "day=d2")
    assert failed.result.outcome == "failed" and failed.result.failing == 2
    assert state.run_checks("run-unchecked") == []
    _, found = state.check_results(DS, version=1)
    assert [(r.run, r.result.partition) for r in found] == [("run-built", "day=d1")]
