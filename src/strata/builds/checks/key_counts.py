"""Key rules judged on this process: every key's row count, exactly, from its columns.

Spark finds repeated keys with a shuffle of every row; for an output whose key columns
fit in memory it is cheaper to read just those columns from the written Parquet files
and sort them. In a key of several columns, a column with one value in every row (a
partition's own partition columns) changes no count and is left out. A single
integer-like key is sorted as it is. A small table's other keys are grouped by Arrow. A
large one's are hashed to 64 bits per row; rows whose hash is unique have a unique key,
and only the rows that share a hash are grouped by their real values, so a hash
collision never changes a count, and memory stays a few words a row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

#: Above this size of key columns (uncompressed, in the Parquet footers), Spark judges.
MAX_BYTES = 512 * 1024 * 1024
# Beyond this many rising runs a streamed key is unordered: counting it in full is cheaper.
_MAX_RUNS = 4096
# At most this many sorted runs are merged rather than sorted anew.
_FEW_RUNS = 64
# Rows of string keys hashed per step: bounds the memory of the byte arrays.
_BYTES_PER_STEP = 1 << 23
# Up to this many rows, Arrow's grouping costs less than hashing here (a partition's
# keys, say): its fixed cost is a fraction of the hash's; above, it would hold every
# distinct key at once.
_SMALL_ROWS = 1 << 16


def each_once(arrays: Iterable[pa.Array[Any]]) -> int | None:
    """The row count of one integer key column, read as a stream of arrays, when no
    value repeats and none is NULL. Proved from its rising runs: the values rise strictly
    within each run, and the runs' ranges do not overlap. That is how keys are usually
    written (ids in order, each file one run, the files in any order). None as soon as
    that is not so: a repeat, a NULL, too many runs (the caller counts the keys in
    full). Memory stays one array's, however long the column."""
    import numpy as np
    import pyarrow as pa

    rows, runs = 0, _Runs()
    for array in arrays:
        if not pa.types.is_integer(array.type) or array.null_count:
            return None
        values = array.to_numpy()
        if not len(values):
            continue
        if np.any(values[1:] == values[:-1]) or not runs.extend(values):
            return None
        rows += len(values)
    return rows if runs.disjoint() else None


class _Runs:
    """The first and last value of each strictly rising run of a stream of integers."""

    def __init__(self) -> None:
        self.firsts: list[int] = []
        self.lasts: list[int] = []

    def extend(self, values: np.ndarray) -> bool:
        """Add ``values`` (no two neighbours equal); False when the runs are too many."""
        import numpy as np

        falls = np.flatnonzero(values[1:] < values[:-1])
        if len(self.lasts) + len(falls) >= _MAX_RUNS:
            return False
        starts = (falls + 1).tolist()
        ends = [i - 1 for i in starts] + [len(values) - 1]
        if self.lasts and values[0] > self.lasts[-1]:  # the open run goes on
            self.lasts[-1] = int(values[ends[0]])
        else:
            self.firsts.append(int(values[0]))
            self.lasts.append(int(values[ends[0]]))
        self.firsts.extend(int(values[i]) for i in starts)
        self.lasts.extend(int(values[i]) for i in ends[1:])
        return True

    def disjoint(self) -> bool:
        """Whether no two runs' ranges overlap (then no value is in two runs)."""
        ranges = sorted(zip(self.firsts, self.lasts, strict=True))
        return all(a[1] < b[0] for a, b in pairwise(ranges))


def supported(types: Sequence[pa.DataType]) -> bool:
    """Whether keys of these column types are counted here (floats, decimals and
    nested values are left to Spark, whose equality for them differs from bytes')."""
    return all(_kind(t) is not None for t in types)


def group_sizes(table: pa.Table, columns: Sequence[str], skip_nulls: bool) -> np.ndarray:
    """The row count of each distinct key of ``columns`` in ``table``; with
    ``skip_nulls``, rows with a NULL in the key are not counted (nor grouped)."""
    import numpy as np
    import pyarrow.compute as pc

    columns = list(dict.fromkeys(columns))
    table = table.select(columns)
    if skip_nulls and any(table.column(c).null_count for c in columns):
        valid = pc.is_valid(table.column(columns[0]))
        for c in columns[1:]:
            valid = pc.and_(valid, pc.is_valid(table.column(c)))
        table = table.filter(valid)
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    if len(columns) > 1:  # one column counts as fast as it is tested for one value
        columns = [c for c in columns if not _constant(table.column(c))]
        if not columns:  # every row has the same key
            return np.array([table.num_rows], dtype=np.int64)
    first = table.column(columns[0])
    if len(columns) == 1 and _kind(first.type) == "int" and first.null_count == 0:
        if _strictly_ascending(first):  # the usual key: every value once, in order
            return np.ones(table.num_rows, dtype=np.int64)
        sizes, _ = _runs(_sorted(_integers(first)))
        return sizes
    if table.num_rows <= _SMALL_ROWS:
        return _sizes_by_arrow(table, columns)
    return _sizes_by_hash(table, columns)


def _constant(column: Any) -> bool:
    """Whether every row holds one and the same value (NULL in none)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count:
        return False
    try:  # streams in constant memory, where a distinct count would hold every key
        low, high = pc.min_max(column).values()
    except pa.ArrowNotImplementedError:  # durations have no order here: counted as they are
        return False
    return bool(low == high)


def _sizes_by_arrow(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Arrow's grouping, NULL a value of its own as in the hashes."""
    import numpy as np
    import pyarrow.compute as pc

    if len(columns) == 1:
        counts: Any = pc.value_counts(table.column(columns[0])).field("counts")
    else:
        counts = table.group_by(list(columns)).aggregate([([], "count_all")])["count_all"]
    return np.asarray(counts.to_numpy(), dtype=np.int64)


def _strictly_ascending(column: Any) -> bool:
    """Whether an int64 column's values rise from row to row, checked chunk by chunk
    (joining the chunks would copy them all)."""
    import pyarrow as pa

    if column.type != pa.int64():
        return False
    last = None
    for chunk in column.chunks:
        values = chunk.to_numpy()
        if not len(values):
            continue
        if (last is not None and values[0] <= last) or not (values[1:] > values[:-1]).all():
            return False
        last = values[-1]
    return True


def _sorted(values: np.ndarray) -> np.ndarray:
    """``values`` in order. Keys are often written in order (ids, times), one sorted run
    per file: such runs are merged (Timsort finds them), anything else is quicksorted."""
    import numpy as np

    descents = int(np.count_nonzero(values[1:] < values[:-1]))
    if descents == 0:
        return values
    return np.sort(values, kind="stable" if descents <= _FEW_RUNS else "quicksort")


def _sizes_by_hash(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    import numpy as np

    hashes = np.zeros(table.num_rows, dtype=np.uint64)
    for c in columns:
        hashes = _mix(hashes * np.uint64(0x9E3779B97F4A7C15) + _column_hash(table.column(c)))
    sizes, values = _runs(np.sort(hashes))
    repeated = sizes > 1
    if not repeated.any():
        return sizes
    shared = np.flatnonzero(np.isin(hashes, values[repeated]))
    exact = table.take(shared).group_by(list(columns)).aggregate([([], "count_all")])
    counted = exact.column("count_all").to_numpy().astype(np.int64)
    return np.concatenate([sizes[~repeated], counted])


def _runs(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The length and value of each run of equal values in a sorted array."""
    import numpy as np

    same = ordered[1:] == ordered[:-1]
    if not same.any():  # the usual case for a key: every value once
        return np.ones(len(ordered), dtype=np.int64), ordered
    starts = np.concatenate(([0], np.flatnonzero(~same) + 1))
    sizes = np.diff(np.append(starts, len(ordered))).astype(np.int64)
    return sizes, ordered[starts]


def _kind(t: pa.DataType) -> str | None:
    import pyarrow.types as pt

    if pt.is_integer(t) or pt.is_boolean(t) or pt.is_temporal(t):
        return "int"
    if pt.is_string(t) or pt.is_large_string(t) or pt.is_binary(t) or pt.is_large_binary(t):
        return "bytes"
    return None


def _integers(column: Any) -> np.ndarray:
    """An integer-like column's values as int64 (nulls as 0: the caller marks them)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.type == pa.int64() and column.null_count == 0:  # no copy but the join
        return np.concatenate([c.to_numpy() for c in column.chunks] or [np.zeros(0, np.int64)])
    if pa.types.is_date32(column.type) or pa.types.is_time32(column.type):
        column = column.cast(pa.int32())
    values = pc.fill_null(column.cast(pa.int64()), 0)
    return np.asarray(values.to_numpy(), dtype=np.int64)


def _column_hash(column: Any) -> np.ndarray:
    """A 64-bit hash of each value (NULL hashes apart from every value's ``0``)."""
    import numpy as np
    import pyarrow.compute as pc

    if _kind(column.type) == "int":
        hashed = _mix(_integers(column).view(np.uint64))
    else:
        hashed = np.concatenate(
            [_bytes_hash(chunk) for chunk in column.chunks] or [np.zeros(0, np.uint64)]
        )
    if column.null_count:
        valid = pc.is_valid(column).to_numpy(zero_copy_only=False)
        hashed = np.where(valid, hashed, np.uint64(0x5BD1E9955BD1E995))
    return hashed


def _bytes_hash(chunk: Any) -> np.ndarray:
    """A polynomial hash of each string's bytes, ``sum(b[j] * P**j)`` modulo 2**64, mixed
    with its length, computed over the Arrow buffers a bounded slice at a time."""
    import numpy as np
    import pyarrow as pa

    chunk = chunk.cast(pa.large_binary())
    buffers: list[Any] = chunk.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)
    offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
    data_buffer = buffers[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else None
    lengths = np.diff(offsets)
    out = np.zeros(len(chunk), dtype=np.uint64)
    longest = int(lengths.max()) if len(lengths) else 0
    powers = np.cumprod(np.full(max(longest, 1), 0x100000001B3, dtype=np.uint64))
    start = 0
    while start < len(chunk) and data is not None:
        stop = _step_end(offsets, start)
        out[start:stop] = _hash_rows(data, offsets[start : stop + 1], powers)
        start = stop
    return _mix(out ^ (lengths.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)))


def _step_end(offsets: np.ndarray, start: int) -> int:
    """The end of the slice of rows from ``start`` holding about ``_BYTES_PER_STEP``."""
    import numpy as np

    limit = offsets[start] + _BYTES_PER_STEP
    stop = int(np.searchsorted(offsets, limit, side="right")) - 1
    return min(max(stop, start + 1), len(offsets) - 1)


def _hash_rows(data: np.ndarray, offsets: np.ndarray, powers: np.ndarray) -> np.ndarray:
    import numpy as np

    lengths = np.diff(offsets)
    out = np.zeros(len(lengths), dtype=np.uint64)
    full = lengths > 0
    if not full.any():
        return out
    base = offsets[0]
    body = data[base : offsets[-1]].astype(np.uint64)
    starts = offsets[:-1][full] - base
    position = np.arange(len(body)) - np.repeat(offsets[:-1] - base, lengths)
    out[full] = np.add.reduceat(body * powers[position], starts)
    return out


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: spreads every input bit over the whole hash."""
    import numpy as np

    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    mixed: np.ndarray = x ^ (x >> np.uint64(31))
    return mixed
