"""Transaction semantics on SQLite and PostgreSQL: versions, time travel, conflicts, atomicity."""

from __future__ import annotations

from datetime import timedelta, timezone
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import sqlalchemy as sa

from strata.errors import CommitConflict, InvalidArgument, SchemaMismatch, TransactionClosed
from strata.lake.service import Lake
from strata.store.schema import build_triggers, transactions


def ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def read_ids(lake: Lake, dataset: str, **where: object) -> list[int]:
    return sorted(lake.read_arrow(dataset, **where).column("id").to_pylist())  # type: ignore[arg-type]


def commit(lake: Lake, dataset: str, kind: str, *tables: pa.Table, remove: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    with lake.transaction(dataset, kind) as txn:
        for t in tables:
            txn.write(t)
        if remove:
            txn.remove(*remove)
    return txn.versions[dataset]


def txn_states(lake: Lake) -> dict[str, str]:
    with lake.engine.connect() as conn:
        return dict(conn.execute(sa.select(transactions.c.uuid, transactions.c.state)).all())


def test_append_append_snapshot_and_time_travel(lake: Lake) -> None:
    ds = "raw/clicks"
    with lake.transaction(ds, "APPEND") as txn:
        txn.write(ids(1, 2))
    v1 = txn.versions[ds]
    with lake.transaction(ds, "APPEND") as txn:
        txn.write(pd.DataFrame({"id": [3]}))  # pandas, same columns and type
    v2 = txn.versions[ds]
    with lake.transaction(ds, "SNAPSHOT") as txn:
        txn.write(ids(10, 11))
    v3 = txn.versions[ds]

    assert [v1.commit_id, v2.commit_id, v3.commit_id] == [1, 2, 3]
    assert v1.committed_at < v2.committed_at < v3.committed_at
    # What commit returned is what the catalog says.
    assert lake.versions(ds) == [v1, v2, v3]
    assert [v.type for v in lake.versions(ds)] == ["APPEND", "APPEND", "SNAPSHOT"]
    assert [(v.row_count, v.file_count) for v in (v1, v2, v3)] == [(2, 1), (3, 2), (2, 1)]

    assert read_ids(lake, ds, version=1) == [1, 2]
    assert read_ids(lake, ds, version=2) == [1, 2, 3]
    assert read_ids(lake, ds, version=3) == [10, 11]
    assert read_ids(lake, ds) == [10, 11]
    assert lake.read_arrow(ds, version=2).schema.field("id").type == pa.int64()

    assert read_ids(lake, ds, as_of=v1.committed_at) == [1, 2]
    assert read_ids(lake, ds, as_of=v2.committed_at - timedelta(microseconds=1)) == [1, 2]
    assert read_ids(lake, ds, as_of=v2.committed_at) == [1, 2, 3]
    assert read_ids(lake, ds, as_of=v3.committed_at - timedelta(microseconds=1)) == [1, 2, 3]
    assert read_ids(lake, ds, as_of=v3.committed_at + timedelta(days=1)) == [10, 11]
    assert lake.version(ds, as_of=v2.committed_at).commit_id == 2
    # as_of in any time zone means the same instant.
    east, west = timezone(timedelta(hours=5)), timezone(timedelta(hours=-7))
    assert lake.version(ds, as_of=v2.committed_at.astimezone(east)).commit_id == 2
    just_before = (v2.committed_at - timedelta(microseconds=1)).astimezone(west)
    assert lake.version(ds, as_of=just_before).commit_id == 1
    assert lake.version(ds).uuid == v3.uuid

    [info] = lake.datasets()
    assert (info.name, info.latest_commit_id, info.row_count) == (ds, 3, 2)


def test_update_and_delete(lake: Lake) -> None:
    ds = "dim/users"
    commit(lake, ds, "APPEND", ids(1, 2))
    [a] = lake.files(ds)
    commit(lake, ds, "APPEND", ids(3))
    [_, b] = lake.files(ds)

    v3 = commit(lake, ds, "UPDATE", ids(20), remove=(a.path,))
    assert read_ids(lake, ds) == [3, 20]
    files3 = lake.files(ds)
    assert b in files3 and a not in files3 and len(files3) == 2
    assert (v3.type, v3.row_count, v3.file_count) == ("UPDATE", 2, 2)

    v4 = commit(lake, ds, "DELETE", remove=(b.path,))
    assert read_ids(lake, ds) == [20]
    assert (v4.type, v4.row_count, v4.file_count) == ("DELETE", 1, 1)

    [c] = lake.files(ds)
    v5 = commit(lake, ds, "DELETE", remove=(c.path,))
    assert (v5.row_count, v5.file_count, v5.byte_count) == (0, 0, 0)
    empty = lake.read_arrow(ds)
    assert empty.num_rows == 0
    assert empty.schema.names == ["id"]  # an empty version keeps its schema

    # History is untouched by later removals.
    assert read_ids(lake, ds, version=1) == [1, 2]
    assert read_ids(lake, ds, version=2) == [1, 2, 3]
    assert read_ids(lake, ds, version=3) == [3, 20]
    # An UPDATE that only adds is an append with another name.
    commit(lake, ds, "UPDATE", ids(7))
    assert read_ids(lake, ds) == [7]


def test_misused_update_and_delete_leave_no_version(lake: Lake) -> None:
    ds = "dim/items"
    commit(lake, ds, "APPEND", ids(1))
    commit(lake, ds, "UPDATE", ids(2), remove=(lake.files(ds, version=1)[0].path,))
    gone = lake.files(ds, version=1)[0].path

    with pytest.raises(InvalidArgument, match="remove"), lake.transaction(ds, "DELETE") as txn:
        txn.write(ids(5))
    with pytest.raises(InvalidArgument, match="removes no files"):
        commit(lake, ds, "DELETE")
    with pytest.raises(InvalidArgument) as info:
        commit(lake, ds, "DELETE", remove=(gone,))
    assert gone in info.value.message
    assert info.value.details["paths"] == [gone]
    with pytest.raises(InvalidArgument, match=r"nope\.parquet"):
        commit(lake, ds, "UPDATE", ids(9), remove=("nope.parquet",))
    for kind in ("APPEND", "SNAPSHOT"):
        with pytest.raises(InvalidArgument, match=kind), lake.transaction(ds, kind) as txn:
            txn.remove(gone)

    assert [v.commit_id for v in lake.versions(ds)] == [1, 2]
    assert read_ids(lake, ds) == [2]


def test_counts_and_content_hash(lake: Lake) -> None:
    ds = "facts/sales"
    v1 = commit(lake, ds, "APPEND", ids(1, 2, 3))
    v2 = commit(lake, ds, "APPEND", ids(4), ids(5, 6))
    added = [f for f in lake.files(ds) if f not in lake.files(ds, version=1)]
    v3 = commit(lake, ds, "DELETE", remove=tuple(f.path for f in added))
    v4 = commit(lake, ds, "SNAPSHOT", ids(1, 2, 3))  # same rows, new container

    for v in (v1, v2, v3, v4):
        files = lake.files(ds, version=v.commit_id)
        assert v.file_count == len(files)
        assert (
            v.row_count
            == sum(f.rows for f in files)
            == lake.read_arrow(ds, version=v.commit_id).num_rows
        )
        assert v.byte_count == sum(f.bytes for f in files)
        assert v.byte_count == sum(Path(lake.storage.local(f.path)).stat().st_size for f in files)
        assert len(v.content_hash) == 64
        int(v.content_hash, 16)
    assert (v2.row_count, v2.file_count) == (6, 3)
    # Equal file sets hash equal, whatever path led to them; different sets differ.
    assert lake.files(ds, version=3) == lake.files(ds, version=1)
    assert v3.content_hash == v1.content_hash
    assert len({v1.content_hash, v2.content_hash, v4.content_hash}) == 3
    # A SNAPSHOT of equal rows is still another file set.
    assert read_ids(lake, ds, version=4) == read_ids(lake, ds, version=1)
    assert v4.content_hash != v1.content_hash


def test_commit_ids_stay_gap_free(lake: Lake) -> None:
    ds = "gap/free"
    commit(lake, ds, "APPEND", ids(1))
    aborted = lake.transaction(ds, "APPEND")
    aborted.write(ids(2))
    aborted.abort()
    loser = lake.transaction(ds, "SNAPSHOT")
    loser.write(ids(3))
    commit(lake, ds, "APPEND", ids(4))
    with pytest.raises(CommitConflict):
        loser.commit()
    with pytest.raises(RuntimeError), lake.transaction(ds, "APPEND") as txn:
        txn.write(ids(5))
        raise RuntimeError("writer failed")
    commit(lake, ds, "APPEND", ids(6))
    assert [v.commit_id for v in lake.versions(ds)] == [1, 2, 3]
    assert read_ids(lake, ds) == [1, 4, 6]
    # One build trigger per commit, in the same SQL transaction (the outbox).
    with lake.engine.connect() as conn:
        triggers = conn.execute(sa.select(build_triggers.c.commit_id)).scalars().all()
    assert sorted(triggers) == [1, 2, 3]


def test_multi_dataset_transaction_commits_together(lake: Lake) -> None:
    with lake.transaction(["out/a", "out/b"], "APPEND") as txn:
        with pytest.raises(InvalidArgument, match="dataset="):
            txn.write(ids(0))
        with pytest.raises(InvalidArgument, match="out/c"):
            txn.write(ids(0), dataset="out/c")
        txn.write(ids(1), dataset="out/a")
        txn.write(ids(2), dataset="out/b")
    assert sorted(txn.versions) == ["out/a", "out/b"]
    assert txn.versions["out/a"].commit_id == txn.versions["out/b"].commit_id == 1
    assert read_ids(lake, "out/a") == [1]
    assert read_ids(lake, "out/b") == [2]
    with lake.engine.connect() as conn:
        groups = conn.execute(sa.select(transactions.c.group_uuid).distinct()).scalars().all()
    assert groups == [txn.group_uuid]


def test_multi_dataset_transaction_commits_all_or_none(lake: Lake) -> None:
    commit(lake, "out/a", "APPEND", ids(1))
    commit(lake, "out/b", "APPEND", ids(1))
    txn = lake.transaction(["out/a", "out/b"], "SNAPSHOT")
    txn.write(ids(100), dataset="out/a")
    txn.write(ids(200), dataset="out/b")
    folders = [
        Path(lake.storage.local(f"{p.dataset_uuid}/{p.txn_uuid}")) for p in txn._parts.values()
    ]
    assert all(f.is_dir() for f in folders)
    winner = commit(lake, "out/b", "APPEND", ids(2))  # out/b moves on; out/a does not

    with pytest.raises(CommitConflict) as info:
        txn.commit()
    assert info.value.details["dataset"] == "out/b"
    assert info.value.details["winning_commit_id"] == winner.commit_id
    # out/a, committed first inside the SQL transaction, was rolled back with it.
    assert [v.commit_id for v in lake.versions("out/a")] == [1]
    assert read_ids(lake, "out/a") == [1]
    assert read_ids(lake, "out/b") == [1, 2]
    assert txn.state == "ABORTED"
    states = txn_states(lake)
    assert {states[p.txn_uuid] for p in txn._parts.values()} == {"ABORTED"}
    assert not any(f.exists() for f in folders)
    with lake.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(build_triggers)).scalar() == 3


def test_interleaved_appends_both_land(lake: Lake) -> None:
    ds = "events/stream"
    commit(lake, ds, "APPEND", ids(0))
    first = lake.transaction(ds, "APPEND")
    second = lake.transaction(ds, "APPEND")
    first.write(ids(1))
    second.write(ids(2))
    v_second = second.commit()
    v_first = first.commit()
    assert (v_second.commit_id, v_first.commit_id) == (2, 3)
    assert read_ids(lake, ds) == [0, 1, 2]
    assert read_ids(lake, ds, version=2) == [0, 2]
    assert v_first.row_count == 3


@pytest.mark.parametrize("kind", ["SNAPSHOT", "UPDATE", "DELETE"])
def test_stale_base_conflicts_and_names_the_winner(lake: Lake, kind: str) -> None:
    ds = "conflict/target"
    commit(lake, ds, "APPEND", ids(1))
    [a] = lake.files(ds)
    loser = lake.transaction(ds, kind)
    if kind != "DELETE":
        loser.write(ids(9))
    if kind != "SNAPSHOT":
        loser.remove(a.path)
    winner = commit(lake, ds, "APPEND", ids(2))

    with pytest.raises(CommitConflict) as info:
        loser.commit()
    err = info.value
    assert err.details["winning_commit_id"] == winner.commit_id == 2
    assert err.details["winning_transaction"] == winner.transaction_uuid
    assert err.details["base_commit_id"] == 1
    assert "version 2" in err.message
    assert str(winner.transaction_uuid) in err.message
    assert err.http_status == 409
    assert [v.commit_id for v in lake.versions(ds)] == [1, 2]
    assert read_ids(lake, ds) == [1, 2]
    assert loser.state == "ABORTED"
    with pytest.raises(TransactionClosed):
        loser.commit()
    # The explicit retry: a fresh transaction from the latest version succeeds.
    retry = lake.transaction(ds, kind)
    if kind != "DELETE":
        retry.write(ids(9))
    if kind != "SNAPSHOT":
        retry.remove(a.path)
    assert retry.commit().commit_id == 3


def test_schema_mismatch_on_append_fails_before_commit(lake: Lake) -> None:
    ds = "typed/table"
    commit(lake, ds, "APPEND", ids(1))
    with pytest.raises(SchemaMismatch) as info, lake.transaction(ds, "APPEND") as txn:
        txn.write(pa.table({"id": pa.array(["one"])}))
    message = info.value.message
    assert "id: int64" in message and "id: string" in message
    assert info.value.details["current"] == [{"name": "id", "type": "int64", "nullable": True}]
    assert info.value.details["written"][0]["type"] == "string"
    assert txn.state == "ABORTED"
    assert [v.commit_id for v in lake.versions(ds)] == [1]
    # UPDATE is held to the same rule; a wider column set is a different schema too.
    with pytest.raises(SchemaMismatch), lake.transaction(ds, "UPDATE") as txn:
        txn.write(pa.table({"id": pa.array([2], pa.int64()), "extra": pa.array([1.0])}))
    # Frames of one transaction must agree with each other.
    with (
        pytest.raises(SchemaMismatch, match="share a schema"),
        lake.transaction(ds, "SNAPSHOT") as txn,
    ):
        txn.write(pa.table({"x": [1]}))
        txn.write(pa.table({"y": ["a"]}))
    assert [v.commit_id for v in lake.versions(ds)] == [1]
    # A SNAPSHOT may change the schema; later APPENDs follow the new one.
    commit(lake, ds, "SNAPSHOT", pa.table({"name": ["a"]}))
    with pytest.raises(SchemaMismatch):
        commit(lake, ds, "APPEND", ids(3))
    commit(lake, ds, "APPEND", pa.table({"name": ["b"]}))
    assert [v.commit_id for v in lake.versions(ds)] == [1, 2, 3]


def test_schema_change_landing_first_fails_the_append_at_commit(lake: Lake) -> None:
    ds = "typed/race"
    commit(lake, ds, "APPEND", ids(1))
    append = lake.transaction(ds, "APPEND")
    append.write(ids(2))  # matches the schema it started from
    commit(lake, ds, "SNAPSHOT", pa.table({"name": ["x"]}))
    with pytest.raises(SchemaMismatch) as info:
        append.commit()
    assert "name: string" in info.value.message and "id: int64" in info.value.message
    assert append.state == "ABORTED"
    assert [v.commit_id for v in lake.versions(ds)] == [1, 2]


def test_closed_transactions_refuse_everything(lake: Lake) -> None:
    ds = "closed/one"
    done = lake.transaction(ds, "APPEND")
    done.write(ids(1))
    done.commit()
    dropped = lake.transaction(ds, "APPEND")
    dropped.write(ids(2))
    dropped.abort()
    for txn, state in ((done, "committed"), (dropped, "aborted")):
        for action in (lambda t: t.write(ids(3)), lambda t: t.commit(), lambda t: t.abort()):
            with pytest.raises(TransactionClosed) as info:
                action(txn)
            assert txn.uuid in info.value.message
            assert state in info.value.message
            assert info.value.details["state"] == state.upper()
    # Leaving a with-block of a finished transaction changes nothing.
    with done:
        pass
    assert [v.commit_id for v in lake.versions(ds)] == [1]
    assert read_ids(lake, ds) == [1]


def test_exception_in_with_block_aborts(lake: Lake) -> None:
    ds = "with/abort"
    commit(lake, ds, "APPEND", ids(1))
    with pytest.raises(ZeroDivisionError), lake.transaction(ds, "APPEND") as txn:
        [entry] = txn.write(ids(2))
        _ = 1 / 0
    assert txn.state == "ABORTED"
    assert txn_states(lake)[txn.uuid] == "ABORTED"
    assert not Path(lake.storage.local(entry.path)).exists()
    assert read_ids(lake, ds) == [1]


def test_aborted_data_cannot_be_read(lake: Lake) -> None:
    ds = "abort/me"
    commit(lake, ds, "APPEND", ids(1))
    txn = lake.transaction(ds, "APPEND")
    entries = txn.write(ids(666)) + txn.write(ids(667))
    local = [Path(lake.storage.local(e.path)) for e in entries]
    assert all(p.is_file() for p in local)
    # Written but uncommitted data is invisible already.
    assert read_ids(lake, ds) == [1]
    txn.abort()
    assert not any(p.exists() for p in local)
    assert not local[0].parent.exists()  # the whole transaction folder is gone
    paths = {e.path for e in entries}
    for v in lake.versions(ds):
        assert not paths & {f.path for f in lake.files(ds, version=v.commit_id)}
    assert read_ids(lake, ds) == [1]
    with lake.engine.connect() as conn:
        cleaned = conn.execute(
            sa.select(transactions.c.cleaned_at).where(transactions.c.uuid == txn.uuid)
        ).scalar()
    assert cleaned is not None


def test_append_keeps_columns_nullable_once_they_held_nulls(lake: Lake) -> None:
    """A version's schema describes all its rows, not only the newest frame's."""
    required = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    commit(lake, "null/a", "APPEND", pa.table({"id": pa.array([None, 1], pa.int64())}))
    v2 = commit(lake, "null/a", "APPEND", pa.Table.from_pylist([{"id": 2}], schema=required))
    assert v2.schema_fields == [{"name": "id", "type": "int64", "nullable": True}]
    assert lake.version("null/a").schema_fields == v2.schema_fields
    table = lake.read_arrow("null/a")
    assert table.schema.field("id").nullable
    table.validate(full=True)
    # What was read can be written again, e.g. as another dataset's snapshot.
    commit(lake, "null/copy", "SNAPSHOT", table)
    assert lake.read_arrow("null/copy").column("id").null_count == 1
    # Columns that never held nulls stay required.
    commit(lake, "null/b", "APPEND", pa.Table.from_pylist([{"id": 1}], schema=required))
    v = commit(lake, "null/b", "APPEND", pa.Table.from_pylist([{"id": 2}], schema=required))
    assert v.schema_fields == [{"name": "id", "type": "int64", "nullable": False}]
    assert not lake.read_arrow("null/b").schema.field("id").nullable


def test_refused_frames_leave_no_files_behind(lake: Lake) -> None:
    """A write refused for its schema deletes its containers; the transaction may go on."""
    ds = "typed/strays"
    commit(lake, ds, "APPEND", ids(1))
    txn = lake.transaction(ds, "APPEND")
    with pytest.raises(SchemaMismatch):
        txn.write(pa.table({"id": ["not a number"]}))
    [good] = txn.write(ids(2))
    with pytest.raises(SchemaMismatch, match="share a schema"):
        txn.write(pa.table({"other": [1.5]}))
    version = txn.commit()
    folder = Path(lake.storage.local(good.path)).parent
    assert sorted(p.name for p in folder.iterdir()) == [Path(good.path).name]
    assert version.file_count == 2
    assert read_ids(lake, ds) == [1, 2]
