"""Branches in the lake, on SQLite and PostgreSQL: made without copying, read by fallback,
written apart from main, merged all or nothing; the invariants are checked in the store."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

from strata.errors import (
    BranchExists,
    BranchRefused,
    CommitConflict,
    InvalidArgument,
    InvalidName,
    MergeConflict,
    NotFound,
    PurgedVersion,
)
from strata.lake import branches
from strata.lake.merge import merge
from strata.lake.service import Lake
from strata.retention.policies import Policy
from strata.retention.service import Retention
from strata.settings import Settings


def rows(lake: Lake, name: str, **at: object) -> list[int]:
    return sorted(r["x"] for r in lake.read_arrow(name, **at).to_pylist())  # type: ignore[arg-type]


def write(lake: Lake, name: str, kind: str, *values: int) -> int:
    with lake.transaction(name, kind) as txn:
        txn.write(pa.table({"x": list(values)}))
    return txn.versions[name].commit_id


def count(lake: Lake, sql: str, **params: object) -> int:
    with lake.engine.connect() as conn:
        return int(conn.execute(sa.text(sql), params).scalar_one())


@pytest.fixture
def main(settings: Settings) -> Iterator[Lake]:
    lk = Lake(settings)
    yield lk
    lk.engine.dispose()


def on(lake: Lake, branch: str) -> Lake:
    return Lake(dataclasses.replace(lake.settings, branch=branch), lake.engine)


def live_paths(lake: Lake, name: str, branch_id: str) -> list[str]:
    """The live interval rows of one branch: never two for one path."""
    with lake.engine.connect() as conn:
        found = conn.execute(
            sa.text(
                "SELECT f.path FROM dataset_files f JOIN datasets d ON d.uuid = f.dataset_uuid "
                "WHERE d.name = :n AND f.branch_id = :b AND f.removed_commit_id IS NULL"
            ),
            {"n": name, "b": branch_id},
        ).scalars()
        return sorted(found)


def test_a_branch_is_one_row_and_reads_fall_back_to_its_parent(main: Lake) -> None:
    write(main, "raw/a", "SNAPSHOT", 1, 2)
    write(main, "raw/b", "SNAPSHOT", 7)
    files = count(main, "SELECT count(*) FROM dataset_files")
    made = branches.create(main.engine, "dev")
    assert (made.name, made.parent, made.datasets) == ("dev", "main", 0)
    # Nothing per dataset: no heads, no interval rows.
    assert count(main, "SELECT count(*) FROM branch_heads") == 0
    assert count(main, "SELECT count(*) FROM dataset_files") == files
    dev = on(main, "dev")
    assert rows(dev, "raw/a") == [1, 2] and dev.version("raw/a").branch == "main"
    branches.create(main.engine, "dev2", "dev")
    dev2 = on(main, "dev2")
    write(dev, "raw/a", "APPEND", 3)
    # A branch of a branch falls back through its parent, then main.
    assert rows(dev2, "raw/a") == [1, 2, 3] and rows(dev2, "raw/b") == [7]
    assert rows(main, "raw/a") == [1, 2]
    listed = {b.name: (b.parent, b.datasets) for b in branches.listed(main.engine)}
    assert listed == {"main": (None, None), "dev": ("main", 1), "dev2": ("dev", 0)}


def test_commits_on_a_branch_leave_main_and_keep_ids_total(main: Lake) -> None:
    assert write(main, "raw/a", "SNAPSHOT", 1, 2) == 1
    branches.create(main.engine, "dev")
    dev = on(main, "dev")
    assert write(dev, "raw/a", "APPEND", 3) == 2  # starts from main's version 1
    assert write(main, "raw/a", "APPEND", 4) == 3  # ids count every branch's commits
    assert write(dev, "raw/a", "APPEND", 5) == 4
    assert rows(main, "raw/a") == [1, 2, 4] and main.version("raw/a").commit_id == 3
    assert rows(dev, "raw/a") == [1, 2, 3, 5] and dev.version("raw/a").commit_id == 4
    assert [(v.commit_id, v.branch) for v in main.versions("raw/a")] == [
        (1, "main"),
        (2, "dev"),
        (3, "main"),
        (4, "dev"),
    ]
    # Every version reads its own rows, whichever branch asks.
    assert [rows(main, "raw/a", version=n) for n in (1, 2, 3, 4)] == [
        [1, 2],
        [1, 2, 3],
        [1, 2, 4],
        [1, 2, 3, 5],
    ]
    assert [d.latest_commit_id for d in main.datasets()] == [3]
    assert [d.latest_commit_id for d in dev.datasets()] == [4]
    # A SNAPSHOT on main still conflicts only with main's own commits.
    with main.transaction("raw/a", "SNAPSHOT") as txn:
        write(dev, "raw/a", "APPEND", 6)
        txn.write(pa.table({"x": [9]}))
    assert rows(main, "raw/a") == [9]


def test_a_first_snapshot_on_a_branch_copies_no_rows(main: Lake) -> None:
    write(main, "raw/a", "SNAPSHOT", 1)
    write(main, "raw/a", "APPEND", 2)
    branches.create(main.engine, "dev")
    dev = on(main, "dev")
    dev_id = _branch_id(main, "dev")
    write(dev, "raw/a", "SNAPSHOT", 8)
    assert len(live_paths(main, "raw/a", dev_id)) == 1
    assert rows(dev, "raw/a") == [8]


def test_merge_fast_forwards_every_dataset_in_one_commit(main: Lake) -> None:
    write(main, "raw/a", "SNAPSHOT", 1, 2)
    branches.create(main.engine, "dev")
    dev = on(main, "dev")
    v = write(dev, "raw/a", "APPEND", 3)
    write(dev, "raw/new", "SNAPSHOT", 5)  # a dataset made on the branch
    with pytest.raises(NotFound, match="no version on branch 'main'"):
        main.version("raw/new")
    before_merge = datetime.now(UTC)

    dry = merge(main.engine, "dev", dry_run=True)
    assert {s.dataset: s.outcome for s in dry.steps} == {
        "raw/a": "fast-forward",
        "raw/new": "fast-forward",
    }
    assert main.version("raw/a").commit_id == 1  # a dry run changes nothing

    report = merge(main.engine, "dev")
    assert len(report.merged) == 2
    merged = main.version("raw/a")
    assert merged.commit_id == v and merged.branch == "main"
    assert rows(main, "raw/a") == [1, 2, 3] and rows(main, "raw/new") == [5]
    # No data copied: the version is the branch's, files and all.
    assert main.files("raw/a", version=v) == dev.files("raw/a", version=v)
    assert live_paths(main, "raw/a", "main") == sorted(f.path for f in main.files("raw/a"))
    # As of before the merge, main still read its own version.
    assert main.version("raw/a", as_of=before_merge).commit_id == 1
    # Main goes on from the merged version; the branch forks from it again.
    write(main, "raw/a", "APPEND", 4)
    assert rows(main, "raw/a") == [1, 2, 3, 4] and rows(dev, "raw/a") == [1, 2, 3]
    again = merge(main.engine, "dev")
    # Nothing written on the branch since: nothing to merge, though main moved on.
    assert {s.dataset: s.outcome for s in again.steps} == {
        "raw/a": "up-to-date",
        "raw/new": "up-to-date",
    }
    assert main.version("raw/a").commit_id == v + 1


def test_a_target_that_moved_is_a_conflict_and_nothing_merges(main: Lake) -> None:
    write(main, "raw/a", "SNAPSHOT", 1)
    write(main, "raw/b", "SNAPSHOT", 1)
    branches.create(main.engine, "dev")
    dev = on(main, "dev")
    mine = write(dev, "raw/a", "APPEND", 2)
    write(dev, "raw/b", "APPEND", 2)
    theirs = write(main, "raw/a", "APPEND", 3)
    with pytest.raises(MergeConflict) as caught:
        merge(main.engine, "dev")
    message = caught.value.message
    assert "raw/a" in message and f"version {theirs}" in message and f"{mine}" in message
    assert "Rebuild those datasets on dev" in message
    assert [c["dataset"] for c in caught.value.details["conflicts"]] == ["raw/a"]
    # All or nothing: raw/b could fast-forward, and did not.
    assert rows(main, "raw/b") == [1] and main.version("raw/b").commit_id == 1
    assert count(main, "SELECT count(*) FROM dataset_versions WHERE merged_at IS NOT NULL") == 0

    # A SNAPSHOT on the branch forks again from main's current version: the conflict clears.
    write(dev, "raw/a", "SNAPSHOT", 1, 3, 2)
    merge(main.engine, "dev")
    assert rows(main, "raw/a") == [1, 2, 3] and rows(main, "raw/b") == [1, 2]


def test_merging_into_another_branch_and_its_refusals(main: Lake) -> None:
    write(main, "raw/a", "SNAPSHOT", 1)
    branches.create(main.engine, "dev")
    branches.create(main.engine, "dev2", "dev")
    dev, dev2 = on(main, "dev"), on(main, "dev2")
    write(dev2, "raw/a", "APPEND", 2)
    with pytest.raises(BranchRefused, match="cannot be merged into itself"):
        merge(main.engine, "dev2", "dev2")
    with pytest.raises(BranchRefused, match="a branch made from it"):
        merge(main.engine, "dev", "dev2")
    with pytest.raises(BranchRefused, match="main has no parent"):
        merge(main.engine, "main")
    merge(main.engine, "dev2")  # into its parent
    assert rows(dev, "raw/a") == [1, 2] and rows(main, "raw/a") == [1]
    merge(main.engine, "dev")
    assert rows(main, "raw/a") == [1, 2]


def test_branch_names_and_deletes(main: Lake) -> None:
    write(main, "raw/a", "SNAPSHOT", 1)
    branches.create(main.engine, "feature/x")
    branches.create(main.engine, "v1.2/fix-3_a." + "x" * 86)  # 100 characters
    with pytest.raises(BranchExists, match="'feature/x' already exists"):
        branches.create(main.engine, "feature/x")
    for bad in ("", "bad name", "-x", "a\nb", "x" * 101, "a/../b", "a/./b", "a//b", "a/", "a/.x"):
        with pytest.raises(InvalidName, match="invalid branch name"):
            branches.create(main.engine, bad)
    with pytest.raises(NotFound, match="branch 'nope' does not exist"):
        branches.create(main.engine, "y", "nope")
    with pytest.raises(NotFound, match=r"branch 'nope' does not exist .*branches: main, feature/x"):
        on(main, "nope").version("raw/a")
    with pytest.raises(NotFound):
        write(on(main, "nope"), "raw/a", "APPEND", 2)
    with pytest.raises(NotFound, match="does not exist: invalid branch name"):
        on(main, "bad name").version("raw/a")
    with pytest.raises(BranchRefused, match="'main' cannot be deleted"):
        branches.delete(main.engine, "main")

    branches.create(main.engine, "child", "feature/x")
    with pytest.raises(BranchRefused, match=r"has branches made from it .*child"):
        branches.delete(main.engine, "feature/x")
    feature = on(main, "feature/x")
    v = write(feature, "raw/a", "APPEND", 2)
    branches.delete(main.engine, "child")
    gone = branches.delete(main.engine, "feature/x")
    assert gone.datasets == 1
    assert count(main, "SELECT count(*) FROM branch_heads") == 0
    # Its versions stay in history, readable by number; the name is free again.
    assert [(x.commit_id, x.branch) for x in main.versions("raw/a")][-1] == (v, "feature/x")
    assert rows(main, "raw/a", version=v) == [1, 2]
    with pytest.raises(NotFound):
        feature.version("raw/a")
    branches.create(main.engine, "feature/x")
    assert rows(on(main, "feature/x"), "raw/a") == [1]


def test_partitioned_datasets_stay_on_main_for_now(main: Lake) -> None:
    with main.transaction("raw/p", "SNAPSHOT", partition_by=["k"]) as txn:
        txn.write(pa.table({"k": ["a"], "x": [1]}))
    branches.create(main.engine, "dev")
    opened = count(main, "SELECT count(*) FROM transactions")
    with pytest.raises(InvalidArgument, match="partitioned datasets are written on main only"):
        on(main, "dev").transaction("raw/p", "APPEND")
    with pytest.raises(InvalidArgument, match="partitioned"):
        on(main, "dev").transaction("raw/q", "SNAPSHOT", partition_by=["k"])
    assert count(main, "SELECT count(*) FROM transactions") == opened


def test_two_merges_at_once_one_wins_never_a_mix(main: Lake) -> None:
    for name in ("raw/a", "raw/b"):
        write(main, name, "SNAPSHOT", 1)
    branches.create(main.engine, "one")
    branches.create(main.engine, "two")
    mine = {}
    for b, value in (("one", 10), ("two", 20)):
        for name in ("raw/a", "raw/b"):
            mine[(b, name)] = write(on(main, b), name, "APPEND", value)
    outcomes: dict[str, str] = {}
    start = threading.Barrier(2)

    def go(b: str) -> None:
        start.wait()
        try:
            merge(main.engine, b)
            outcomes[b] = "merged"
        except MergeConflict:
            outcomes[b] = "conflict"

    threads = [threading.Thread(target=go, args=(b,)) for b in ("one", "two")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes.values()) == ["conflict", "merged"]
    winner = next(b for b, o in outcomes.items() if o == "merged")
    # Both datasets come from the winner; main's live rows are exactly its files.
    for name in ("raw/a", "raw/b"):
        assert main.version(name).commit_id == mine[(winner, name)]
        assert live_paths(main, name, "main") == sorted(f.path for f in main.files(name))
    merged = count(main, "SELECT count(*) FROM dataset_versions WHERE merged_at IS NOT NULL")
    assert merged == 2


def test_a_commit_racing_a_merge_is_seen_by_it(main: Lake) -> None:
    write(main, "raw/a", "SNAPSHOT", 1)
    branches.create(main.engine, "dev")
    mine = write(on(main, "dev"), "raw/a", "APPEND", 2)
    txn = main.transaction("raw/a", "APPEND")
    txn.write(pa.table({"x": [3]}))
    landed = txn.commit().commit_id  # commits first: the merge must see it
    with pytest.raises(MergeConflict):
        merge(main.engine, "dev")
    assert main.version("raw/a").commit_id == landed != mine
    # Merged first, a SNAPSHOT on main that started before it loses.
    branches.create(main.engine, "dev3")
    write(on(main, "dev3"), "raw/a", "APPEND", 4)
    snap = main.transaction("raw/a", "SNAPSHOT")
    snap.write(pa.table({"x": [0]}))
    merge(main.engine, "dev3")
    with pytest.raises(CommitConflict):
        snap.commit()
    assert rows(main, "raw/a") == [1, 3, 4]


def test_retention_keeps_what_a_live_branch_reads(main: Lake) -> None:
    write(main, "raw/a", "SNAPSHOT", 1)
    [first] = [f.path for f in main.files("raw/a")]
    branches.create(main.engine, "dev")
    dev = on(main, "dev")
    mine = write(dev, "raw/a", "APPEND", 2)  # reads main's version 1 file, and its own
    write(main, "raw/a", "SNAPSHOT", 3)
    write(main, "raw/a", "SNAPSHOT", 4)
    policy = Policy(name="raw", datasets=("raw/*",), keep_versions=1, grace_seconds=0)
    report = Retention(main, [policy]).run()
    # Main's history is judged, the branch's version is not, and the file of main's
    # version 1 stays on disk while dev reads it.
    assert [(t.version, t.action) for t in report.touched] == [(1, "purged"), (3, "purged")]
    assert rows(dev, "raw/a") == [1, 2] and rows(main, "raw/a", version=mine) == [1, 2]
    assert on_disk(main, first)
    # Once the branch is gone, a later pass frees that file too, and purges the branch's
    # own version with the file only it wrote.
    [own] = [f.path for f in main.files("raw/a", version=mine) if f.path != first]
    branches.delete(main.engine, "dev")
    later = Retention(main, [policy]).run()
    assert [(t.version, t.action) for t in later.touched] == [(mine, "purged")]
    assert not on_disk(main, first) and not on_disk(main, own)
    with pytest.raises(PurgedVersion):
        rows(main, "raw/a", version=mine)
    assert rows(main, "raw/a") == [4]


def test_retention_purges_a_deleted_branchs_versions_after_the_grace(main: Lake) -> None:
    write(main, "raw/a", "SNAPSHOT", 1)
    [base] = [f.path for f in main.files("raw/a")]
    for name in ("dev", "other"):
        branches.create(main.engine, name)
    dev = on(main, "dev")
    two, three = write(dev, "raw/a", "APPEND", 2), write(dev, "raw/a", "APPEND", 3)
    four = write(on(main, "other"), "raw/a", "APPEND", 4)
    [f2] = [f.path for f in main.files("raw/a", version=two) if f.path != base]
    [f3] = [f.path for f in main.files("raw/a", version=three) if f.path not in (base, f2)]
    policy = Policy(name="raw", datasets=("raw/*",), keep_versions=1, grace_seconds=3600)
    keeper = Retention(main, [policy])
    keeper.pin("raw/a", three)
    branches.delete(main.engine, "dev")

    assert keeper.run().touched == []  # deleted within the grace: nothing yet
    first = keeper.run(grace_seconds=0)
    # The pinned version keeps its data, and so the files it reads.
    assert [(t.version, t.action) for t in first.touched] == [(two, "purged")]
    assert all(on_disk(main, p) for p in (base, f2, f3))
    assert rows(main, "raw/a", version=three) == [1, 2, 3]
    keeper.unpin("raw/a", three)
    second = keeper.run(grace_seconds=0)
    assert [(t.version, t.action) for t in second.touched] == [(three, "purged")]
    assert not on_disk(main, f2) and not on_disk(main, f3)
    # What main and the live branch read stays.
    assert on_disk(main, base)
    assert rows(main, "raw/a") == [1] and rows(on(main, "other"), "raw/a") == [1, 4]
    assert rows(main, "raw/a", version=four) == [1, 4]
    assert keeper.run(grace_seconds=0).touched == []


def on_disk(lake: Lake, path: str) -> bool:
    return Path(lake.storage.local(path)).is_file()


def _branch_id(lake: Lake, name: str) -> str:
    with lake.engine.connect() as conn:
        return str(
            conn.execute(
                sa.text("SELECT id FROM branches WHERE name = :n AND deleted_at IS NULL"),
                {"n": name},
            ).scalar_one()
        )
