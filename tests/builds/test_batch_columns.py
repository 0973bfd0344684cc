"""A batch's key columns are read a group of partitions at a time: each partition's
columns as a read of that partition alone finds them, in the batch's order, no group
over the memory bound, a partition over it left to Spark (None). On both backends."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from strata.builds.partitions.batch_columns import BatchColumns
from strata.lake import column_reads
from strata.lake.service import Lake
from strata.lake.transaction import Transaction

DS = "checked/daily"
COLS = ["region", "note"]
BIG = "region=JP/day=d1"  # two containers, its notes far larger than the others'
NONE = "region=XX/day=d9"  # in the batch, but nothing written to it
# Not the order they were written in.
KEYS = ["region=UK/day=d2", BIG, NONE, "region=UK/day=d1", "region=US/day=d2"]


def _table(rows: Sequence[tuple[str, str, str]]) -> pa.Table:
    names = ("region", "day", "note")
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


@pytest.fixture
def txn(lake: Lake) -> Iterator[Transaction]:
    """An open transaction holding a batch's write: ``BIG`` in two containers."""
    with lake.transaction(DS, "SNAPSHOT", partition_by=["region", "day"]) as t:
        big = [("JP", "d1", f"note {i} " + "x" * 40) for i in range(800)]
        t.write(_table([*big, ("UK", "d1", "a"), ("UK", "d1", "a"), ("US", "d2", "b")]))
        t.write(_table([("JP", "d1", "late"), ("UK", "d2", "c")]))
        yield t
        t.abort()


def _sizes(lake: Lake) -> dict[str, int]:
    """Each partition's note and region columns' uncompressed size in its footers."""
    sizes: dict[str, int] = {}
    for path in Path(lake.storage.local("")).rglob("*.parquet"):
        key = "/".join(p.removeprefix("_") for p in path.parent.parts[-2:])
        meta = pq.ParquetFile(path).metadata
        for g in range(meta.num_row_groups):
            for i in range(meta.num_columns):
                if meta.schema.column(i).name in COLS:
                    size = meta.row_group(g).column(i).total_uncompressed_size
                    sizes[key] = sizes.get(key, 0) + size
    return sizes


def _groups(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The partitions of each group read, as they are read."""
    seen: list[list[str]] = []
    read_group = column_reads._read_group

    def recorded(found: Any, fragments: Any, files: Any, keys: Sequence[str], cols: Any) -> Any:
        seen.append(list(keys))
        return read_group(found, fragments, files, keys, cols)

    monkeypatch.setattr(column_reads, "_read_group", recorded)
    return seen


def _alone(txn: Transaction, limit: int) -> list[tuple[str, list[dict[str, Any]] | None]]:
    found = [(k, txn.pending_columns(DS, COLS, max_bytes=limit, partition=k)) for k in KEYS]
    return [(k, None if t is None else t.to_pylist()) for k, t in found]


def test_a_batch_s_partitions_read_together_are_each_as_read_alone(
    lake: Lake, txn: Transaction, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = _sizes(lake)
    small = max(v for k, v in sizes.items() if k != BIG)
    assert sizes[BIG] > 10 * small, sizes  # the layout this test relies on
    groups = _groups(monkeypatch)
    # No bound: one scan of every written partition. A bound two small partitions fill:
    # the big one over it alone (None), the rest in groups within it. A bound under all.
    expected_groups = {
        0: [KEYS],
        2 * small: [[KEYS[0]], KEYS[2:]],
        1: [[NONE]],
    }
    for limit, expected in expected_groups.items():
        groups.clear()
        together = list(txn.pending_columns_by_partition(DS, COLS, KEYS, max_bytes=limit))
        got = [(k, None if t is None else t.to_pylist()) for k, t in together]
        assert got == _alone(txn, limit), limit
        assert groups == expected, limit
        for group in groups:
            assert limit == 0 or sum(sizes.get(k, 0) for k in group) <= limit
    read = dict(got for got in _alone(txn, 0))
    assert read[NONE] is None and read["region=UK/day=d1"] == [{"region": "UK", "note": "a"}] * 2
    assert read[BIG] is not None and len(read[BIG]) == 801 and read[BIG][-1]["note"] == "late"


def test_a_long_batch_is_read_a_bounded_number_of_partitions_a_scan(
    txn: Transaction, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of more partitions than one scan holds the footers of is read in scans of
    that many, each partition's columns still as read alone."""
    monkeypatch.setattr(column_reads, "_KEYS_A_SCAN", 2)
    groups = _groups(monkeypatch)
    together = list(txn.pending_columns_by_partition(DS, COLS, KEYS))
    got = [(k, None if t is None else t.to_pylist()) for k, t in together]
    assert got == _alone(txn, 0)
    assert groups == [KEYS[0:2], KEYS[2:4], KEYS[4:]]


def test_checks_asking_in_order_read_each_group_once_and_out_of_order_alone(
    txn: Transaction, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups = _groups(monkeypatch)
    alone: list[str | None] = []
    read_alone = Transaction.pending_columns

    def recorded(self: Transaction, dataset: str, columns: Sequence[str], **kw: Any) -> Any:
        alone.append(kw.get("partition"))
        return read_alone(self, dataset, columns, **kw)

    monkeypatch.setattr(Transaction, "pending_columns", recorded)
    batch = BatchColumns(txn, {DS: 0}, KEYS)
    expected = dict(_alone(txn, 0))
    alone.clear()
    asked = [KEYS[0], BIG, KEYS[3], KEYS[4]]  # NONE never asked: skipped over
    for key in asked:
        table = batch.read(DS, COLS, key)
        assert table is not None and table.to_pylist() == expected[key], key
    assert alone == [] and len(groups) == 1
    # Asked again, or behind the stream: read alone, and still right.
    for key in (BIG, KEYS[0]):
        table = batch.read(DS, COLS, key)
        assert table is not None and table.to_pylist() == expected[key], key
    assert alone == [BIG, KEYS[0]] and len(groups) == 1
    # Other columns are a stream of their own.
    assert batch.read(DS, ["note"], KEYS[3]).to_pylist() == [{"note": "a"}] * 2  # type: ignore[union-attr]
    assert len(groups) == 2
