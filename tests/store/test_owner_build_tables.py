"""The contract of the owners of the tables the build shares with lower layers, on
every backend: the commit outbox (``build_triggers``: raised by the lake's commit,
claimed, renewed, retried and finished by workers), the partition catalog
(``partition_builds``: written by the builder, joined by retention) and check results
(``check_results``: written and read by the build, deleted with the runs lineage
retention prunes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import sqlalchemy as sa

from strata.lake.service import Lake
from strata.store.owners import check_results, partition_builds, triggers

AT = datetime(2026, 1, 1, tzinfo=UTC)
RUN = "01890000-0000-7000-8000-000000000001"
LATER = "01890000-0000-7000-8000-000000000002"
OTHER = "01890000-0000-7000-8000-000000000003"


def _commit(lake: Lake, dataset: str, run: str | None = None) -> tuple[str, int]:
    """Append one row to ``dataset``; its uuid and the new commit id."""
    txn = lake.start(dataset, run_uuid=run)
    txn.write(pa.table({"x": [1]}))
    v = txn.commit()
    return v.dataset_uuid, v.commit_id


def _pending(lake: Lake) -> list[int]:
    """The commit ids of the triggers not done, in order."""
    bt = sa.table("build_triggers", sa.column("commit_id"), sa.column("done_at"))
    with lake.engine.connect() as conn:
        q = sa.select(bt.c.commit_id).where(bt.c.done_at.is_(None)).order_by(bt.c.commit_id)
        return [int(r[0]) for r in conn.execute(q)]


def test_each_commit_raises_one_trigger_and_a_claim_takes_its_datasets_together(
    lake: Lake,
) -> None:
    _commit(lake, "raw/a")
    _commit(lake, "raw/a")
    _commit(lake, "raw/b")
    assert _pending(lake) == [1, 1, 2]

    first = triggers.claim(lake.engine, lake.namespace, "w1", lease=60)
    assert first is not None
    assert (first.dataset, first.commit_id, len(first.ids)) == ("raw/a", 2, 2)
    assert (first.retaken, first.attempts) == (False, 0)
    # Claimed ones are not claimed again while the lease holds, by anyone.
    second = triggers.claim(lake.engine, lake.namespace, "w2", lease=60)
    assert second is not None and second.dataset == "raw/b"
    assert triggers.claim(lake.engine, lake.namespace, "w3", lease=60) is None
    # Only the holder finishes its claim.
    triggers.finish(lake.engine, first, "w2", None)
    assert len(_pending(lake)) == 3
    triggers.finish(lake.engine, first, "w1", None)
    assert _pending(lake) == [1]
    # A retry puts it back after a backoff: not claimable before it unless waiting.
    assert triggers.retry_later(lake.engine, second, "w2", "flaky") == triggers.backoff(1)
    assert triggers.claim(lake.engine, lake.namespace, "w3", lease=60) is None
    again = triggers.claim(lake.engine, lake.namespace, "w3", lease=60, waiting=True)
    assert again is not None and (again.ids, again.attempts) == (second.ids, 1)
    # A namespace sees only its own triggers.
    assert triggers.claim(lake.engine, "elsewhere", "w4", lease=60, waiting=True) is None


def test_an_expired_claim_is_retaken_and_a_handled_commit_is_done_unclaimed(
    lake: Lake,
) -> None:
    _commit(lake, "raw/a")
    _commit(lake, "raw/b")
    lapsed = triggers.claim(lake.engine, lake.namespace, "w1", lease=0)
    assert lapsed is not None and lapsed.dataset == "raw/a"
    retaken = triggers.claim(lake.engine, lake.namespace, "w2", lease=0)
    assert retaken is not None and retaken.ids == lapsed.ids and retaken.retaken
    # The build that wrote raw/b's commit already built its readers: done, by name.
    handled = [("raw/b", 1), ("raw/b", 7), ("raw/none", 1)]
    assert triggers.mark_handled(lake.engine, lake.namespace, handled, "build") == 1
    # A claimed trigger is not marked: its worker finishes it.
    assert triggers.mark_handled(lake.engine, lake.namespace, [("raw/a", 1)], "build") == 0
    assert _pending(lake) == [1]


def test_partition_builds_are_kept_per_partition_and_joined_by_the_run(lake: Lake) -> None:
    dataset, _ = _commit(lake, "out/daily")
    built = [
        partition_builds.PartitionBuild("day=1", 1, RUN, "p1", {"raw/a": 3}),
        partition_builds.PartitionBuild("day=2", 1, RUN, "p1", {}),
    ]
    rebuilt = built[1]._replace(commit_id=2, run=LATER, program="p2")
    with lake.engine.begin() as conn:
        partition_builds.record(conn, dataset, built, AT)
        partition_builds.record(conn, dataset, [rebuilt], AT)  # a partition's last build wins
        partition_builds.record(conn, dataset, [], AT)
    with lake.engine.connect() as conn:
        assert partition_builds.records(conn, dataset) == {"day=1": built[0], "day=2": rebuilt}
        runs = sa.select(sa.literal(RUN).label("run")).union_all(
            sa.select(sa.literal(OTHER).label("run"))
        )
        q = sa.select(runs.subquery().c.run)
        joined = partition_builds.join_built_by(q, q.selected_columns.run)
        assert conn.execute(joined).scalars().all() == [RUN]
    with lake.engine.begin() as conn:
        partition_builds.forget(conn, dataset)
    with lake.engine.connect() as conn:
        assert partition_builds.records(conn, dataset) == {}


def _result(run: str, job: str, dataset: str, commit: int | None, **kw: Any) -> dict[str, Any]:
    return {
        "run_uuid": run,
        "job": job,
        "dataset_uuid": dataset,
        "commit_id": commit,
        "side": kw.get("side", "output"),
        "partition_key": None,
        "name": kw.get("name", "rows"),
        "expectation": "rows > 0",
        "on_error": kw.get("on_error", "FAIL"),
        "outcome": kw.get("outcome", "passed"),
        "observed": {"rows": 1},
        "failing": None,
        "samples": [],
        "recorded_at": kw.get("at", AT),
    }


def test_check_results_are_read_by_version_run_and_transform_and_go_with_their_runs(
    lake: Lake,
) -> None:
    out, v1 = _commit(lake, "out/t", run=RUN)
    raw, r1 = _commit(lake, "raw/a")
    later = AT + timedelta(hours=1)
    rows = [
        _result(RUN, "t", out, v1),  # the output check of the run that built version 1
        _result(RUN, "t", raw, r1, side="input", name="fresh"),  # its precondition
        _result(RUN, "t", out, v1, name="nulls", on_error="WARN", outcome="warned"),
        _result(LATER, "t", out, None, outcome="failed", at=later),  # it committed nothing
        _result(OTHER, "u", raw, r1, side="input", outcome="failed", at=later),
    ]
    with lake.engine.begin() as conn:
        check_results.insert(conn, rows)
        check_results.insert(conn, [])
    with lake.engine.connect() as conn:
        version = check_results.of_version(conn, out, v1)
        assert [(f.dataset, f.name, f.side) for f in version] == [
            ("out/t", "rows", "output"),
            ("raw/a", "fresh", "input"),
            ("out/t", "nulls", "output"),
        ]
        assert version[0].observed == {"rows": 1} and version[0].recorded_at == AT
        # The reader's failed precondition judged raw/a's version 1 too.
        assert {f.run for f in check_results.of_version(conn, raw, r1)} == {RUN, OTHER}
        since = check_results.failed_runs_since(conn, out, "t", AT)
        assert [(f.run, f.commit_id) for f in since] == [(LATER, None)]
        assert check_results.failed_runs_since(conn, out, "t", later) == []
        assert [f.name for f in check_results.of_run(conn, RUN)] == ["rows", "fresh", "nulls"]
        failures = check_results.last_failures(conn, ["t", "u", "v"])
        assert {j: [f.run for f in fs] for j, fs in failures.items()} == {
            "t": [LATER],
            "u": [OTHER],
        }
        assert check_results.warned_versions(conn, out) == {v1: ["nulls"]}
    with lake.engine.begin() as conn:
        check_results.delete_of_runs(conn, [RUN, LATER])
    with lake.engine.connect() as conn:
        assert check_results.of_version(conn, out, v1) == []
        assert [f.run for f in check_results.of_version(conn, raw, r1)] == [OTHER]
