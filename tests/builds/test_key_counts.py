"""Key rules counted on the driver: every key's row count, exactly, whatever the types,
the NULLs, the Arrow chunking, and whether hashes collide."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from strata.builds.checks import key_counts


def _expected(table: pa.Table, columns: list[str], skip_nulls: bool) -> list[int]:
    """Each distinct key's row count, the plain Python way."""
    rows = zip(*[table.column(c).to_pylist() for c in columns], strict=True)
    kept = [r for r in rows if not (skip_nulls and any(v is None for v in r))]
    return sorted(Counter(kept).values())


def _table(rows: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    words = ["", "a", "ab", "ba", "é", "日本", "x" * 40, None]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return pa.table(
        {
            "n": pa.array([rng.choice([1, 2, 3, -(2**62), None]) for _ in range(rows)], pa.int64()),
            "s": pa.array([rng.choice(words) for _ in range(rows)], pa.string()),
            "b": pa.array([rng.choice([b"\x00", b"\x00\x00", b"", None]) for _ in range(rows)]),
            "d": pa.array([date(2026, 1, rng.randint(1, 3)) for _ in range(rows)]),
            "t": pa.array([start + timedelta(seconds=rng.randint(0, 2)) for _ in range(rows)]),
            "f": pa.array([rng.random() < 0.5 for _ in range(rows)]),
        }
    )


KEYS = [["n"], ["s"], ["b"], ["d"], ["t"], ["f"], ["s", "n"], ["d", "s", "b"], ["n", "n"]]


@pytest.fixture(params=["arrow", "hashes"])
def grouping(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Counted both ways: by Arrow's grouping (a small table) and by hashes (a large one)."""
    if request.param == "hashes":
        monkeypatch.setattr(key_counts, "_SMALL_ROWS", 0)
    return str(request.param)


@pytest.mark.parametrize("columns", KEYS, ids=["+".join(k) for k in KEYS])
@pytest.mark.parametrize("skip_nulls", [True, False])
def test_counts_match_a_plain_count(columns: list[str], skip_nulls: bool, grouping: str) -> None:
    table = _table(3000, seed=len(columns))
    got = key_counts.group_sizes(table, columns, skip_nulls)
    assert sorted(got.tolist()) == _expected(table, list(dict.fromkeys(columns)), skip_nulls)


def test_chunked_and_sliced_arrays_count_as_one(grouping: str) -> None:
    whole = _table(2000, seed=7)
    pieces = pa.concat_tables([whole.slice(0, 700), whole.slice(700, 1), whole.slice(701)])
    assert pieces.column("s").num_chunks == 3
    for columns in (["s"], ["s", "t"], ["b", "n"]):
        got = key_counts.group_sizes(pieces, columns, skip_nulls=False)
        assert sorted(got.tolist()) == _expected(whole, columns, skip_nulls=False)


def test_strings_hash_the_same_in_any_step_size(monkeypatch: pytest.MonkeyPatch) -> None:
    strings = pa.array([f"key-{i}" * (i % 5) for i in range(500)])
    whole = key_counts._bytes_hash(strings)
    monkeypatch.setattr(key_counts, "_BYTES_PER_STEP", 7)
    assert np.array_equal(key_counts._bytes_hash(strings), whole)
    assert len(set(whole.tolist())) == len(set(strings.to_pylist()))


def test_colliding_hashes_never_change_a_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every value hashed alike: the exact grouping of rows that share a hash decides."""

    def collide(column: Any) -> Any:
        return np.zeros(len(column), dtype=np.uint64)

    monkeypatch.setattr(key_counts, "_column_hash", collide)
    monkeypatch.setattr(key_counts, "_SMALL_ROWS", 0)
    table = _table(1000, seed=3)
    for columns in (["s"], ["s", "d"]):
        got = key_counts.group_sizes(table, columns, skip_nulls=True)
        assert sorted(got.tolist()) == _expected(table, columns, skip_nulls=True)


def test_unique_keys_are_all_ones_and_empty_tables_have_none() -> None:
    unique = pa.table({"id": pa.array(np.random.default_rng(1).permutation(100_000))})
    sizes = key_counts.group_sizes(unique, ["id"], skip_nulls=True)
    assert len(sizes) == 100_000 and int(sizes.max()) == 1
    in_order = pa.table({"id": pa.array(np.arange(10) // 2)})  # sorted: no sort needed
    assert key_counts.group_sizes(in_order, ["id"], skip_nulls=True).tolist() == [2] * 5
    runs = pa.table({"id": pa.chunked_array([np.arange(5, 10), np.arange(0, 7)])})  # merged
    assert sorted(key_counts.group_sizes(runs, ["id"], skip_nulls=True).tolist()) == [1] * 8 + [
        2,
        2,
    ]
    nothing = pa.table({"id": pa.array([None, None], pa.int64())})
    assert key_counts.group_sizes(nothing, ["id"], skip_nulls=True).tolist() == []
    assert key_counts.group_sizes(nothing, ["id"], skip_nulls=False).tolist() == [2]


@pytest.mark.parametrize("skip_nulls", [True, False])
def test_columns_of_one_value_count_as_the_rest_do(skip_nulls: bool, grouping: str) -> None:
    """A partition's own partition columns hold one value in every row: the counts are
    those of the key with them, a column with a NULL among one value is no such column,
    and a key all of one value is one key of every row."""
    table = _table(2000, seed=11)
    region = pa.array(["JP"] * 2000)
    day = pa.array([date(2026, 1, 4)] * 2000)
    once_null = pa.array(["JP"] * 1999 + [None])
    table = table.append_column("region", region).append_column("day", day)
    table = table.append_column("mostly", once_null)
    for columns in (["region", "day", "s"], ["region", "mostly"], ["day", "n", "region"]):
        got = key_counts.group_sizes(table, columns, skip_nulls)
        assert sorted(got.tolist()) == _expected(table, columns, skip_nulls), columns
    every = key_counts.group_sizes(table, ["region", "day"], skip_nulls)
    assert every.tolist() == [2000]


def test_a_duration_key_counts_though_arrow_cannot_order_it(grouping: str) -> None:
    spans = pa.array([timedelta(seconds=s) for s in (1, 1, 2, 3)])
    table = pa.table({"span": spans, "one": pa.array([timedelta(1)] * 4)})
    got = key_counts.group_sizes(table, ["one", "span"], skip_nulls=True)
    assert sorted(got.tolist()) == [1, 1, 2]
    assert key_counts.group_sizes(table, ["one"], skip_nulls=True).tolist() == [4]


def test_float_decimal_and_nested_keys_are_left_to_spark() -> None:
    assert key_counts.supported([pa.string(), pa.int32(), pa.date32(), pa.timestamp("us")])
    for t in (pa.float64(), pa.decimal128(10, 2), pa.list_(pa.int64())):
        assert not key_counts.supported([pa.string(), t])


@pytest.mark.parametrize(
    "chunks",
    [
        [[1, 2, 3], [3, 4]],  # the last key of one file is the first of the next
        [[1, 2, 2, 3], [4, 5]],  # a repeat inside a file written in order
        [[4, 5], [1, 2]],  # each file in order, the files not
        [[1, 2], [], [2, 9]],  # an empty chunk between the repeats
    ],
)
def test_keys_written_in_order_still_count_a_repeat(chunks: list[list[int]]) -> None:
    column = pa.chunked_array([pa.array(c, pa.int64()) for c in chunks], pa.int64())
    table = pa.table({"id": column})
    got = key_counts.group_sizes(table, ["id"], skip_nulls=True)
    assert sorted(got.tolist()) == _expected(table, ["id"], skip_nulls=True)
    ascending = pa.table({"id": pa.chunked_array([[1, 2, 3], [], [7, 8]], pa.int64())})
    assert key_counts.group_sizes(ascending, ["id"], skip_nulls=True).tolist() == [1] * 5


def test_a_key_streamed_in_rising_runs_is_proved_unique() -> None:
    def arrays(*parts: list[int | None]) -> list[pa.Array]:
        return [pa.array(p, pa.int64()) for p in parts]

    assert key_counts.each_once(arrays([1, 2, 5], [], [9, 10])) == 5
    assert key_counts.each_once(iter(arrays(list(range(100_000))))) == 100_000
    assert key_counts.each_once([pa.array([3, 4], pa.int32())]) == 2
    assert key_counts.each_once([]) == 0
    # Files written in order, listed in any order: runs whose ranges do not overlap.
    assert key_counts.each_once(arrays([50, 60], [70], [1, 2], [3, 40])) == 7
    assert key_counts.each_once(arrays([10, 11, 1, 2, 5, 6])) == 6
    # Anything else is left to the full count: a repeat (in a run, across arrays, in
    # another run), overlapping runs, a NULL, a type that is not an integer.
    assert key_counts.each_once(arrays([1, 2, 2, 3])) is None
    assert key_counts.each_once(arrays([1, 2], [2, 3])) is None
    assert key_counts.each_once(arrays([5, 6], [1, 5])) is None
    assert key_counts.each_once(arrays([1, 5], [3, 4])) is None
    assert key_counts.each_once(arrays([1, None, 3])) is None
    assert key_counts.each_once([pa.array(["a", "b"])]) is None


def test_unordered_keys_stop_the_stream_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the limit of runs the stream is read no further: the full count is cheaper."""
    monkeypatch.setattr(key_counts, "_MAX_RUNS", 4)
    taken: list[int] = []

    def arrays() -> Iterator[pa.Array]:
        for i, part in enumerate(([1, 2], [0, 9, 3, 8, 4, 7, 5], [7, 8])):
            taken.append(i)
            yield pa.array(part, pa.int64())

    assert key_counts.each_once(arrays()) is None
    assert taken == [0, 1]
    shuffled = np.random.default_rng(5).permutation(100_000)
    assert key_counts.each_once([pa.array(shuffled)]) is None
