"""The archive tier: old files move to another root (copy, verify, record, delete),
reads of archived versions work as before through Arrow and Spark, and a restore brings
a version back; every step leaves each file readable from the place the catalog names."""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

from strata.errors import ConfigError, LakeError, NotFound, PurgedVersion
from strata.lake.service import Lake
from strata.retention import archive_state
from strata.retention.archive import Archive
from strata.retention.archive_policies import ArchivePolicy, load
from strata.retention.policies import Policy
from strata.retention.service import Retention
from strata.retention.tiers import copy_verified
from strata.settings import Settings
from strata.store.schema import dataset_files, pending_deletes

DAY = 86400.0


def ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def commit(lake: Lake, ds: str, kind: str, *values: int) -> int:
    with lake.transaction(ds, kind) as txn:
        txn.write(ids(*values))
    return txn.versions[ds].commit_id


def cold(tmp_path: Path) -> str:
    return (tmp_path / "cold").as_uri()


def archive(lake: Lake, tmp_path: Path, older_than: float = 0.0) -> Archive:
    return Archive(lake, [ArchivePolicy("cold", ("raw/*",), older_than, cold(tmp_path))])


def where_files_lie(lake: Lake, ds: str, version: int) -> list[str | None]:
    return [f.archive for f in lake.files(ds, version=version)]


def in_lake(lake: Lake, path: str) -> bool:
    return Path(lake.storage.local(path)).is_file()


def in_archive(tmp_path: Path, path: str) -> bool:
    return (tmp_path / "cold" / path).is_file()


def every_version_reads(lake: Lake, ds: str) -> None:
    for v in lake.versions(ds):
        assert lake.read_arrow(ds, version=v.commit_id).num_rows == v.row_count, v.commit_id


def test_old_snapshots_move_and_the_current_view_stays(lake: Lake, tmp_path: Path) -> None:
    ds = "raw/daily"
    for day in range(1, 5):
        commit(lake, ds, "SNAPSHOT", day, day * 10)
    report = archive(lake, tmp_path).run()

    assert report.files == 3 and report.moved[0].to_dict()["versions"] == [1, 3]
    for version in (1, 2, 3):
        (place,) = where_files_lie(lake, ds, version)
        assert place == cold(tmp_path)
        path = lake.files(ds, version=version)[0].path
        assert in_archive(tmp_path, path) and not in_lake(lake, path)
    assert where_files_lie(lake, ds, 4) == [None]  # the current view stays in the lake
    assert lake.read_arrow(ds, version=2).column("id").to_pylist() == [2, 20]
    every_version_reads(lake, ds)
    with lake.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(pending_deletes)).scalar() == 0
        assert archive_state.archived_counts(conn, lake.version(ds).dataset_uuid) == {
            1: (1, 1),
            2: (1, 1),
            3: (1, 1),
        }
    assert archive(lake, tmp_path).run().files == 0  # nothing left to move


def test_an_append_chain_keeps_the_files_its_current_version_reads(
    lake: Lake, tmp_path: Path
) -> None:
    ds = "raw/events"
    commit(lake, ds, "SNAPSHOT", 1)
    commit(lake, ds, "APPEND", 2)
    commit(lake, ds, "SNAPSHOT", 3)
    commit(lake, ds, "APPEND", 4)
    archive(lake, tmp_path).run()
    assert where_files_lie(lake, ds, 2) == [cold(tmp_path), cold(tmp_path)]
    assert where_files_lie(lake, ds, 4) == [None, None]
    every_version_reads(lake, ds)


def test_the_copy_a_move_leaves_waits_out_the_gc_grace(settings: Settings, tmp_path: Path) -> None:
    """A read that listed a file in the lake before the move still finds it there."""
    lake = Lake(dataclasses.replace(settings, gc_grace_seconds=3600))
    ds = "raw/daily"
    for day in range(1, 3):
        commit(lake, ds, "SNAPSHOT", day)
    path = lake.files(ds, version=1)[0].path
    report = archive(lake, tmp_path).run()
    assert report.files == 1 and report.waiting_files == 1
    assert in_lake(lake, path) and in_archive(tmp_path, path)
    assert where_files_lie(lake, ds, 1) == [cold(tmp_path)]
    assert archive(lake, tmp_path).run().finished_files == 0  # still within the grace
    later = archive(lake, tmp_path).run(now=datetime.now(UTC) + timedelta(hours=2))
    assert later.finished_files == 1 and later.waiting_files == 0
    assert not in_lake(lake, path)
    every_version_reads(lake, ds)
    lake.engine.dispose()


def test_only_versions_older_than_the_policy_move(lake: Lake, tmp_path: Path) -> None:
    ds = "raw/daily"
    for day in range(1, 4):
        commit(lake, ds, "SNAPSHOT", day)
    dry = archive(lake, tmp_path, older_than=DAY).run(dry_run=True)
    assert dry.files == 0
    later = datetime.now(UTC) + timedelta(days=2)
    dry = archive(lake, tmp_path, older_than=DAY).run(dry_run=True, now=later)
    assert dry.dry_run and dry.files == 2
    assert where_files_lie(lake, ds, 1) == [None]  # a dry run moves nothing
    archive(lake, tmp_path, older_than=DAY).run(now=later)
    assert where_files_lie(lake, ds, 1) == [cold(tmp_path)]


def test_archived_versions_read_through_spark_beside_lake_files(
    lake: Lake, tmp_path: Path, spark: object
) -> None:
    ds = "raw/events"
    commit(lake, ds, "SNAPSHOT", 1, 2)
    commit(lake, ds, "APPEND", 3)
    commit(lake, ds, "SNAPSHOT", 9)
    commit(lake, ds, "APPEND", 10)
    archive(lake, tmp_path).run()
    old = lake.read(ds, version=2, spark=spark)  # type: ignore[arg-type]
    assert sorted(r.id for r in old.collect()) == [1, 2, 3]
    # An archived version read beside one of the lake: one frame over both tiers.
    assert sorted(r.id for r in lake.read(ds, spark=spark).collect()) == [9, 10]  # type: ignore[arg-type]


def test_restore_brings_a_version_back_and_pins_it(lake: Lake, tmp_path: Path) -> None:
    ds = "raw/daily"
    for day in range(1, 4):
        commit(lake, ds, "SNAPSHOT", day)
    arc = archive(lake, tmp_path)
    arc.run()
    path = lake.files(ds, version=1)[0].path
    result = arc.restore(ds, 1)
    assert result["files"] == 1 and result["pinned"]
    assert where_files_lie(lake, ds, 1) == [None]
    assert in_lake(lake, path) and not in_archive(tmp_path, path)
    assert arc.run().files == 0  # pinned: the next pass leaves it
    assert where_files_lie(lake, ds, 2) == [cold(tmp_path)]
    assert arc.restore(ds, 1)["files"] == 0  # nothing archived: nothing to do
    Retention(lake, []).unpin(ds, 1)
    assert arc.run().files == 1
    every_version_reads(lake, ds)


def test_restore_refuses_a_purged_version_and_an_unknown_one(lake: Lake, tmp_path: Path) -> None:
    ds = "raw/daily"
    for day in range(1, 4):
        commit(lake, ds, "SNAPSHOT", day)
    arc = archive(lake, tmp_path)
    arc.run()
    Retention(lake, [Policy("raw", ("raw/*",), keep_versions=2, grace_seconds=0)]).run()
    with pytest.raises(PurgedVersion, match="raw/daily@1 was purged"):
        arc.restore(ds, 1)
    with pytest.raises(NotFound):
        arc.restore(ds, 99)
    with pytest.raises(NotFound):
        arc.restore("no such/..", 1)


def test_a_purge_deletes_an_archived_file_from_the_archive(lake: Lake, tmp_path: Path) -> None:
    ds = "raw/daily"
    for day in range(1, 4):
        commit(lake, ds, "SNAPSHOT", day)
    archive(lake, tmp_path).run()
    path = lake.files(ds, version=1)[0].path
    assert in_archive(tmp_path, path)
    Retention(lake, [Policy("raw", ("raw/*",), keep_versions=2, grace_seconds=0)]).run()
    assert not in_archive(tmp_path, path)
    with lake.engine.connect() as conn:
        row = conn.execute(sa.select(dataset_files).where(dataset_files.c.path == path)).one()
    assert row.purged_at is not None


def test_a_copy_that_does_not_match_is_not_recorded(lake: Lake, tmp_path: Path) -> None:
    ds = "raw/daily"
    commit(lake, ds, "SNAPSHOT", 1)
    entry = lake.files(ds)[0]
    with pytest.raises(LakeError, match="does not match"):
        copy_verified(lake.storage, lake.tier(cold(tmp_path)), entry.path, entry.bytes + 1)
    assert not in_archive(tmp_path, entry.path)
    blocked = tmp_path / "blocked"  # a file where the archive's folders would go
    blocked.write_text("")
    with pytest.raises(LakeError, match="cannot copy"):
        copy_verified(lake.storage, lake.tier(blocked.as_uri()), entry.path, entry.bytes)


def test_a_leftover_copy_is_never_deleted_while_the_catalog_reads_it(
    lake: Lake, tmp_path: Path
) -> None:
    """A listed deletion of a file the catalog reads at that place (a move undone since)
    only unlists it."""
    ds = "raw/daily"
    commit(lake, ds, "SNAPSHOT", 1)
    path = lake.files(ds)[0].path
    with lake.engine.begin() as conn:
        conn.execute(
            pending_deletes.insert().values(root="", path=path, listed_at=datetime.now(UTC))
        )
    assert Archive(lake, []).finish_pending() == 0
    assert in_lake(lake, path)
    with lake.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(pending_deletes)).scalar() == 0
    assert lake.read_arrow(ds).num_rows == 1


def test_a_pass_racing_commits_and_reads_loses_nothing(settings: Settings, tmp_path: Path) -> None:
    """Reads that list files while passes move them never miss one (the lake copy waits
    out the gc grace); once it has passed, each file lies on exactly the tier the
    catalog names."""
    lake = Lake(dataclasses.replace(settings, gc_grace_seconds=3600))
    ds = "raw/busy"
    commit(lake, ds, "SNAPSHOT", 0)
    stop, errors = threading.Event(), []

    written = [0]

    def writer() -> None:
        n = 1
        while not stop.is_set():
            commit(lake, ds, "SNAPSHOT" if n % 3 == 0 else "APPEND", n)
            written[0] = n
            n += 1

    def reader() -> None:
        while not stop.is_set():
            try:
                every_version_reads(lake, ds)
            except Exception as exc:  # collected for the assertion below
                errors.append(exc)

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    try:
        # Five passes at least, and until a SNAPSHOT has replaced files twice: on a busy
        # machine five passes can end before the writer commits anything to move.
        passes, deadline = 0, time.monotonic() + 120
        while (passes < 5 or written[0] < 6) and time.monotonic() < deadline:
            archive(lake, tmp_path).run()
            passes += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    assert written[0] >= 6, f"the writer committed {written[0]} versions: nothing raced"
    archive(lake, tmp_path).run()  # what the last commits left to move
    later = archive(lake, tmp_path).run(now=datetime.now(UTC) + timedelta(hours=2))
    assert later.files == 0 and later.finished_files > 0 and later.waiting_files == 0
    every_version_reads(lake, ds)
    with lake.engine.connect() as conn:
        rows = conn.execute(sa.select(dataset_files).where(dataset_files.c.purged_at.is_(None)))
        for r in rows:  # each file on exactly the tier the catalog names
            assert in_archive(tmp_path, r.path) == (r.archive_uri is not None), r.path
            assert in_lake(lake, r.path) == (r.archive_uri is None), r.path
    lake.engine.dispose()


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"datasets": ["raw/*"], "uri": "file:///c"}, "needs older_than"),
        ({"datasets": ["raw/*"], "older_than": "soon", "uri": "file:///c"}, "not a duration"),
        ({"datasets": ["raw/*"], "older_than": "9d", "uri": "/mnt/c"}, "as a URI"),
        ({"datasets": ["raw/*"], "older_than": "9d", "uri": "file:///lake/cold"}, "overlaps"),
        ({"datasets": ["raw/*"], "older_than": "9d", "uri": "file:///"}, "overlaps"),
        ({"older_than": "9d", "uri": "file:///c"}, "needs datasets"),
        ({"datasets": ["raw/*"], "older_than": "9d", "uri": "file:///c", "x": 1}, "unknown"),
    ],
)
def test_a_wrong_policy_is_one_clear_error(table: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        load([table], "file:///lake")
