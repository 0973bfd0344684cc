"""Retention of lake data: a pass marks what its policy selects, purges marks older than
their grace, and deletes only files no kept version reads; a purged version keeps its
row and says so when read."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

from strata.errors import InvalidArgument, NotFound, PurgedVersion
from strata.lake.service import Lake
from strata.retention.policies import Policy
from strata.retention.service import Retention
from strata.store.schema import dataset_files, pending_deletes

HOUR = 3600.0


def ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def commit(lake: Lake, ds: str, kind: str, *values: int, remove: list[str] | None = None) -> int:
    with lake.transaction(ds, kind) as txn:
        txn.write(ids(*values))
        for path in remove or []:
            txn.remove(path)
    return txn.versions[ds].commit_id


def on_disk(lake: Lake, path: str) -> bool:
    return Path(lake.storage.local(path)).is_file()


def files_of(lake: Lake, ds: str, version: int) -> list[str]:
    return [f.path for f in lake.files(ds, version=version)]


def kept_versions_read_whole(lake: Lake, ds: str) -> None:
    """Every version not purged reads back, every file of it on disk."""
    for v in lake.versions(ds):
        if v.purged_at is None:
            assert all(on_disk(lake, p) for p in files_of(lake, ds, v.commit_id)), v.commit_id
            assert lake.read_arrow(ds, version=v.commit_id).num_rows == v.row_count


def policy(**kw: object) -> Policy:
    return Policy(name=str(kw.pop("name", "raw/*")), datasets=("raw/*",), **kw)  # type: ignore[arg-type]


def test_a_pass_marks_then_purges_after_the_grace_and_keeps_the_current_view(lake: Lake) -> None:
    ds = "raw/daily"
    for day in range(1, 6):
        commit(lake, ds, "SNAPSHOT", day)
    old = {v: files_of(lake, ds, v) for v in (1, 2, 3)}
    retention = Retention(lake, [policy(keep_versions=2, grace_seconds=HOUR)])
    t0 = datetime.now(UTC)

    first = retention.run(now=t0)
    assert [(t.version, t.action) for t in first.touched] == [
        (1, "marked"),
        (2, "marked"),
        (3, "marked"),
    ]
    assert all(t.bytes > 0 and t.files == 1 for t in first.touched)
    assert lake.read_arrow(ds, version=1).column("id").to_pylist() == [1]  # only marked
    assert retention.run(now=t0 + timedelta(minutes=30)).touched == []  # within the grace

    second = retention.run(now=t0 + timedelta(hours=2))
    assert [(t.version, t.action, t.policy) for t in second.touched] == [
        (1, "purged", "raw/*"),
        (2, "purged", "raw/*"),
        (3, "purged", "raw/*"),
    ]
    assert second.freed_files == 3
    assert all(not on_disk(lake, p) for paths in old.values() for p in paths)
    with pytest.raises(PurgedVersion) as err:
        lake.read_arrow(ds, version=2)
    message = err.value.message
    assert message.startswith(f"{ds}@2 was purged on ")
    assert "by retention policy raw/*; its history remains (strata trace raw/daily@2)" in message
    assert err.value.http_status == 410
    with pytest.raises(PurgedVersion):
        lake.files(ds, version=3)
    # The catalog keeps every version, purged ones marked.
    versions = lake.versions(ds)
    assert [v.commit_id for v in versions] == [1, 2, 3, 4, 5]
    assert [v.purged_by for v in versions] == ["raw/*"] * 3 + [None, None]
    assert versions[0].row_count == 1 and versions[0].data_fingerprint
    kept_versions_read_whole(lake, ds)
    assert retention.run(now=t0 + timedelta(hours=3)).touched == []  # nothing left to do


def test_an_append_chain_is_the_current_view_and_keeps_its_files(lake: Lake) -> None:
    ds = "raw/clicks"
    for n in range(1, 6):
        commit(lake, ds, "APPEND", n)
    retention = Retention(lake, [policy(keep_versions=1, grace_seconds=0)])
    assert retention.run().touched == []  # no SNAPSHOT: every version is the current view
    # After a SNAPSHOT the old chain may go; the new chain is the view.
    commit(lake, ds, "SNAPSHOT", 10)
    commit(lake, ds, "APPEND", 11)
    report = retention.run()
    assert [(t.version, t.action) for t in report.touched] == [(n, "purged") for n in range(1, 6)]
    assert report.freed_files == 5
    # Each file goes under the last version that read it: version 5 read all five.
    assert [t.files for t in report.touched] == [0, 0, 0, 0, 5]
    assert lake.read_arrow(ds).column("id").to_pylist() == [10, 11]
    kept_versions_read_whole(lake, ds)


def test_files_go_only_when_no_kept_version_reads_them(lake: Lake) -> None:
    ds = "raw/mixed"
    commit(lake, ds, "APPEND", 1)  # file a
    commit(lake, ds, "APPEND", 2)  # file b
    [a] = [p for p in files_of(lake, ds, 1)]
    commit(lake, ds, "UPDATE", 3, remove=[a])  # v3: b and c
    [c] = [p for p in files_of(lake, ds, 3) if p not in files_of(lake, ds, 2)]
    [b] = [p for p in files_of(lake, ds, 2) if p != a]
    commit(lake, ds, "SNAPSHOT", 4)
    commit(lake, ds, "APPEND", 5)
    retention = Retention(lake, [policy(keep_versions=1, grace_seconds=0)])
    retention.pin(ds, 2, note="the audit read it")

    report = retention.run()
    assert [(t.version, t.action) for t in report.touched] == [(1, "purged"), (3, "purged")]
    # Version 2 is pinned: it reads a and b, so only c (read by version 3 alone) goes.
    assert [on_disk(lake, p) for p in (a, b, c)] == [True, True, False]
    assert lake.read_arrow(ds, version=2).column("id").to_pylist() == [1, 2]
    with pytest.raises(PurgedVersion, match="raw/mixed@1 was purged"):
        lake.read_arrow(ds, version=1)  # its file is still there, but the version is purged

    retention.unpin(ds, 2)
    again = retention.run()
    assert [(t.version, t.action, t.files) for t in again.touched] == [(2, "purged", 2)]
    assert [on_disk(lake, p) for p in (a, b)] == [False, False]
    kept_versions_read_whole(lake, ds)


def test_keep_days_and_keep_versions_each_keep_a_version(lake: Lake) -> None:
    ds = "raw/both"
    for n in range(1, 7):
        commit(lake, ds, "SNAPSHOT", n)
    now = datetime.now(UTC)
    by_days = Retention(lake, [policy(keep_days=1, grace_seconds=0)])
    assert by_days.run(dry_run=True, now=now).touched == []  # all committed today
    later = now + timedelta(days=2)
    either = Retention(lake, [policy(keep_days=1, keep_versions=3, grace_seconds=0)])
    dry = either.run(dry_run=True, now=later)
    assert [(t.version, t.action) for t in dry.touched] == [
        (1, "purged"),
        (2, "purged"),
        (3, "purged"),
    ]
    assert dry.freed_bytes > 0
    assert all(v.purged_at is None for v in lake.versions(ds))  # a dry run changes nothing
    assert all(on_disk(lake, p) for p in files_of(lake, ds, 1))
    real = either.run(now=later)
    assert [t.to_dict() for t in real.touched] == [t.to_dict() for t in dry.touched]


def test_a_policy_may_name_the_transaction_types_it_purges(lake: Lake) -> None:
    ds = "raw/typed"
    commit(lake, ds, "SNAPSHOT", 1)
    commit(lake, ds, "APPEND", 2)
    commit(lake, ds, "SNAPSHOT", 3)
    commit(lake, ds, "SNAPSHOT", 4)
    only = Retention(lake, [policy(keep_versions=1, grace_seconds=0, types=("APPEND",))])
    assert [(t.version, t.action) for t in only.run().touched] == [(2, "purged")]
    assert lake.read_arrow(ds, version=1).column("id").to_pylist() == [1]


def test_marks_can_be_undone_and_pins_keep_a_version(lake: Lake) -> None:
    ds = "raw/undo"
    for n in range(1, 5):
        commit(lake, ds, "SNAPSHOT", n)
    retention = Retention(lake, [policy(keep_versions=1, grace_seconds=HOUR)])
    t0 = datetime.now(UTC)
    assert retention.run(now=t0).count("marked") == 3
    assert retention.unmark(ds, 2).action == "unmarked"
    with pytest.raises(NotFound, match=r"raw/undo@2 is not marked"):
        retention.unmark(ds, 2)
    assert retention.pin(ds, 1)["unmarked"] is True
    marks = retention.overview()["marks"]
    assert [m["version"] for m in marks] == [3]
    # Version 2 is selected again (with a new grace); version 1 stays pinned.
    later = retention.run(now=t0 + timedelta(hours=2))
    assert [(t.version, t.action) for t in later.touched] == [(2, "marked"), (3, "purged")]
    overview = retention.overview()
    assert [(p["dataset"], p["version"]) for p in overview["pins"]] == [(ds, 1)]
    assert overview["passes"][0]["purged"] == 1 and overview["passes"][0]["marked"] == 1
    with pytest.raises(InvalidArgument, match=r"raw/undo@3 was purged .* no data left to keep"):
        retention.pin(ds, 3)
    with pytest.raises(NotFound, match=r"raw/undo@2 is not pinned"):
        retention.unpin(ds, 2)
    with pytest.raises(NotFound, match="has no version 9"):
        retention.pin(ds, 9)


def test_a_removed_policy_unmarks_what_it_had_marked(lake: Lake) -> None:
    ds = "raw/gone"
    for n in range(1, 4):
        commit(lake, ds, "SNAPSHOT", n)
    assert Retention(lake, [policy(keep_versions=1, grace_seconds=HOUR)]).run().count("marked") == 2
    report = Retention(lake, []).run()
    assert [(t.version, t.action) for t in report.touched] == [(1, "unmarked"), (2, "unmarked")]
    assert Retention(lake, []).overview()["marks"] == []


def test_a_pass_killed_after_the_purge_leaves_nothing_a_read_trusts(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The purge commits first (versions purged, files listed), then the files go: a pass
    that dies in between leaves purged versions that refuse to be read, kept versions
    whole, and a list the next pass finishes."""
    ds = "raw/killed"
    for n in range(1, 6):
        commit(lake, ds, "SNAPSHOT", n)
    doomed = [p for v in (1, 2, 3) for p in files_of(lake, ds, v)]
    deleted: list[str] = []
    real_delete = lake.storage.delete_file

    def die_after_one(rel: str) -> bool:
        if deleted:
            raise KeyboardInterrupt("killed mid-sweep")
        deleted.append(rel)
        return real_delete(rel)

    monkeypatch.setattr(lake.storage, "delete_file", die_after_one)
    retention = Retention(lake, [policy(keep_versions=2, grace_seconds=0)])
    with pytest.raises(KeyboardInterrupt):
        retention.run()
    monkeypatch.setattr(lake.storage, "delete_file", real_delete)
    assert sum(on_disk(lake, p) for p in doomed) == 2  # one went before the kill
    for v in (1, 2, 3):
        with pytest.raises(PurgedVersion):
            lake.read_arrow(ds, version=v)
    kept_versions_read_whole(lake, ds)
    assert retention.overview()["pending_files"] == 3

    report = Retention(lake, [policy(keep_versions=2, grace_seconds=0)]).run()
    assert report.finished_files == 3 and report.touched == []
    assert not any(on_disk(lake, p) for p in doomed)
    with lake.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(pending_deletes)).scalar() == 0
        purged = conn.execute(
            sa.select(sa.func.count()).where(dataset_files.c.purged_at.is_not(None))
        ).scalar()
    assert purged == 3


def test_a_pass_racing_commits_never_deletes_a_file_a_kept_version_reads(lake: Lake) -> None:
    """Passes with no grace in a loop while a writer commits SNAPSHOTs and APPENDs: after
    the race every version not purged reads back whole, and the newest view was never
    purged."""
    ds = "raw/race"
    commit(lake, ds, "SNAPSHOT", 0)
    stop = threading.Event()
    failures: list[BaseException] = []
    passes: list[int] = []

    def sweep() -> None:
        other = Lake(lake.settings)
        try:
            while not stop.is_set():
                Retention(other, [policy(keep_versions=2, grace_seconds=0)]).run()
                passes.append(1)
        except BaseException as exc:  # reported below
            failures.append(exc)
        finally:
            other.engine.dispose()

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    deadline = time.monotonic() + 6
    n = 0
    try:
        while time.monotonic() < deadline and n < 120:
            n += 1
            commit(lake, ds, "SNAPSHOT" if n % 3 == 0 else "APPEND", n)
    finally:
        stop.set()
        sweeper.join(timeout=60)
    assert not failures, failures
    assert n >= 20 and len(passes) >= 5, (n, len(passes))
    Retention(lake, [policy(keep_versions=2, grace_seconds=0)]).run()
    versions = lake.versions(ds)
    assert any(v.purged_at is not None for v in versions)
    kept_versions_read_whole(lake, ds)
    latest_snapshot = max(v.commit_id for v in versions if v.type == "SNAPSHOT")
    assert all(v.purged_at is None for v in versions if v.commit_id >= latest_snapshot)
    assert lake.read_arrow(ds).num_rows == versions[-1].row_count


class _ReadOnlyLake:
    """A lake file system that refuses deletes, as a read-only mount or bucket does."""

    def __init__(self, fs: object) -> None:
        self.fs = fs

    def delete_file(self, path: str) -> None:
        raise PermissionError(f"[Errno 13] Permission denied: '{path}'")

    def __getattr__(self, name: str) -> object:
        return getattr(self.fs, name)


def test_a_lake_that_refuses_deletes_is_one_error_and_the_next_pass_finishes(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    from strata.errors import LakeError

    ds = "raw/readonly"
    for n in range(1, 4):
        commit(lake, ds, "SNAPSHOT", n)
    [old] = files_of(lake, ds, 1)
    retention = Retention(lake, [policy(keep_versions=2, grace_seconds=0)])
    fs = lake.storage.fs
    monkeypatch.setattr(lake.storage, "_fs", _ReadOnlyLake(fs))
    with pytest.raises(LakeError, match=r"cannot delete file://.* from the lake \(.*Permission"):
        retention.run()
    assert retention.overview()["pending_files"] == 1 and on_disk(lake, old)
    with pytest.raises(PurgedVersion):
        lake.read_arrow(ds, version=1)
    monkeypatch.setattr(lake.storage, "_fs", fs)
    assert retention.run().finished_files == 1
    assert not on_disk(lake, old) and retention.overview()["pending_files"] == 0
