"""Errors a lake user meets: they are typed, say what is wrong, and change nothing."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

from strata.errors import InvalidArgument, InvalidName, LakeError, NotFound
from strata.lake.service import Lake
from strata.settings import Settings
from strata.store.schema import datasets, namespaces, transactions


def ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def row_counts(lake: Lake) -> tuple[int, int, int]:
    with lake.engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()
            for t in (namespaces, datasets, transactions)
        )


@pytest.mark.parametrize("kind", ["MERGE", "", None, 3, "SNAPSHOTS"])
def test_unknown_transaction_type(lake: Lake, kind: object) -> None:
    with pytest.raises(InvalidArgument) as info:
        lake.transaction("some/data", kind)  # type: ignore[arg-type]
    assert repr(kind) in info.value.message
    for known in ("SNAPSHOT", "APPEND", "UPDATE", "DELETE"):
        assert known in info.value.message
    assert row_counts(lake) == (0, 0, 0)


def test_bad_dataset_lists(lake: Lake) -> None:
    with pytest.raises(InvalidArgument, match="at least one"):
        lake.transaction([], "APPEND")
    with pytest.raises(InvalidArgument, match="twice"):
        lake.transaction(["a/b", "a/b"], "APPEND")
    with pytest.raises(InvalidName, match=r"'bad/\.\./name'"):
        lake.transaction(["ok/name", "bad/../name"], "APPEND")
    assert row_counts(lake) == (0, 0, 0)


def test_unwritable_frame_type(lake: Lake) -> None:
    with pytest.raises(InvalidArgument) as info, lake.transaction("x/y") as txn:
        txn.write({"id": [1]})
    assert "builtins.dict" in info.value.message
    assert "pyarrow Table" in info.value.message
    assert txn.state == "ABORTED"
    assert lake.versions("x/y") == []


@pytest.mark.parametrize(
    ("names", "says"),
    [
        (["id", "id"], "columns 1 and 2 are both named 'id'"),
        (["id", "ID"], "columns 1 and 2, 'id' and 'ID', differ only in case"),
        (["id", " "], "column 2 has no name"),
    ],
)
def test_columns_without_a_name_of_their_own_are_refused(
    lake: Lake, names: list[str], says: str
) -> None:
    """pyarrow cannot read a file with two columns of one name, and Spark reads names
    ignoring case: such a write would commit a version no one can read."""
    table = pa.table([pa.array([1]), pa.array([2])], names=names)
    with pytest.raises(InvalidArgument) as info, lake.transaction("x/y") as txn:
        txn.write(table)
    assert says in info.value.message and "a name of its own" in info.value.message
    assert txn.state == "ABORTED"
    assert lake.versions("x/y") == []


def test_unknown_dataset(lake: Lake) -> None:
    for call in (
        lambda: lake.read_arrow("no/such"),
        lambda: lake.versions("no/such"),
        lambda: lake.version("no/such"),
        lambda: lake.files("no/such", version=1),
    ):
        with pytest.raises(NotFound) as info:
            call()
        assert "'no/such'" in info.value.message
        assert "strata datasets" in info.value.message
        assert info.value.http_status == 404
        assert info.value.details["dataset"] == "no/such"


def test_dataset_without_a_commit(lake: Lake) -> None:
    open_txn = lake.transaction("not/yet", "APPEND")
    open_txn.write(ids(1))
    assert lake.versions("not/yet") == []
    with pytest.raises(NotFound, match="no committed version yet"):
        lake.read_arrow("not/yet")
    with pytest.raises(NotFound, match="no committed version yet"):
        lake.version("not/yet", version=1)
    open_txn.commit()
    assert lake.read_arrow("not/yet").num_rows == 1


def test_version_that_was_never_committed(lake: Lake) -> None:
    for n in range(2):
        with lake.transaction("two/versions") as txn:
            txn.write(ids(n))
    for missing in (3, 0, -1, 10_000):
        with pytest.raises(NotFound) as info:
            lake.read_arrow("two/versions", version=missing)
        assert f"no version {missing}" in info.value.message
        assert "1 to 2" in info.value.message
        assert info.value.details["latest"] == 2


def test_as_of_before_the_first_commit(lake: Lake) -> None:
    with lake.transaction("early/bird") as txn:
        txn.write(ids(1))
    first = txn.versions["early/bird"]
    before = first.committed_at - timedelta(seconds=1)
    with pytest.raises(NotFound) as info:
        lake.read_arrow("early/bird", as_of=before)
    assert before.isoformat() in info.value.message
    assert first.committed_at.isoformat() in info.value.message
    with pytest.raises(InvalidArgument, match="time zone"):
        lake.read_arrow("early/bird", as_of=datetime(2030, 1, 1))
    with pytest.raises(InvalidArgument, match="either version or as_of"):
        lake.read_arrow("early/bird", version=1, as_of=first.committed_at)


def test_invalid_name_is_refused_everywhere(lake: Lake) -> None:
    for call in (
        lambda: lake.transaction("a/../b"),
        lambda: lake.read_arrow("a/../b"),
        lambda: lake.versions("a/../b"),
    ):
        with pytest.raises(InvalidName, match=r"'a/\.\./b'"):
            call()
    assert row_counts(lake) == (0, 0, 0)


@pytest.mark.parametrize("how", ["under-a-file", "bad-scheme"])
def test_unwritable_lake_records_nothing(settings: Settings, tmp_path: Path, how: str) -> None:
    if how == "under-a-file":
        blocker = tmp_path / "not-a-dir"
        blocker.write_text("a file where the lake should be")
        uri = (blocker / "lake").as_uri()
    else:
        uri = "nosuchscheme://bucket/lake"
    lake = Lake(dataclasses.replace(settings, lake_uri=uri))
    try:
        with pytest.raises(LakeError) as info:
            lake.transaction("raw/clicks", "APPEND")
        assert uri in info.value.message
        assert info.value.details["lake_uri"] == uri
        assert row_counts(lake) == (0, 0, 0)
        assert lake.datasets() == []
        with pytest.raises(NotFound):
            lake.versions("raw/clicks")
    finally:
        lake.engine.dispose()


def test_names_never_reach_the_file_system(lake: Lake, settings: Settings) -> None:
    names = ["Secret Project/Ünïcödé 数据", "secret-project/evil..name"]
    with pytest.raises(InvalidName):
        lake.transaction(names[1])
    with lake.transaction(names[0], "APPEND") as txn:
        txn.write(ids(1))
    assert lake.read_arrow(names[0]).num_rows == 1
    root = Path(lake.storage.local(""))
    entries = [p.relative_to(root).as_posix() for p in root.rglob("*")]
    assert entries
    for word in ("Secret", "secret", "Project", "Ünïcödé", "数据", "evil"):
        assert not any(word in e for e in entries), word
    [info] = lake.datasets()
    for f in lake.files(names[0]):
        assert f.path.startswith(info.uuid + "/")
