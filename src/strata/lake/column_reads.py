"""Columns of written containers, read back on this process with pyarrow.

Checks count keys from the key columns a write left in its containers. One pyarrow
scan over many containers reads them about three times faster than a scan per
container, since it opens them in parallel: the partitions of a batch are read a group
at a time, each batch of rows tagged with the container it came from.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from strata.lake.storage import FileEntry, Storage


def read_columns(
    storage: Storage, entries: Sequence[FileEntry], columns: Sequence[str], max_bytes: int = 0
) -> pa.Table | None:
    """``columns`` of ``entries``; None when there are none, or when their size in the
    containers' footers is over ``max_bytes`` (0: no limit)."""
    import pyarrow.dataset as pads

    if not entries:
        return None
    found = pads.dataset(
        [storage.local(e.path) for e in entries], format="parquet", filesystem=storage.fs
    )
    if max_bytes and sum(column_bytes(f, columns) for f in found.get_fragments()) > max_bytes:
        return None
    return found.to_table(columns=list(columns))


#: Partitions whose files one pyarrow dataset holds: their footers are held at once.
_KEYS_A_SCAN = 1024


def read_by_partition(
    storage: Storage,
    entries: Sequence[FileEntry],
    columns: Sequence[str],
    keys: Sequence[str],
    max_bytes: int = 0,
) -> Iterator[tuple[str, pa.Table | None]]:
    """``columns`` of each partition of ``keys`` (key texts), in that order, as
    :func:`read_columns` reads that partition's ``entries`` alone. Read a group of
    partitions at a time, a group's columns at most ``max_bytes`` (0: no limit), so that
    memory stays one group's (and the footers of :data:`_KEYS_A_SCAN` partitions')."""
    wanted = set(keys)
    files: dict[str, list[str]] = {k: [] for k in keys}
    for e in entries:
        if e.partition in wanted:
            files[e.partition].append(storage.local(e.path))
    for start in range(0, len(keys), _KEYS_A_SCAN):
        some = keys[start : start + _KEYS_A_SCAN]
        yield from _read_keys(storage, {k: files[k] for k in some}, columns, max_bytes)


def _read_keys(
    storage: Storage, files: dict[str, list[str]], columns: Sequence[str], max_bytes: int
) -> Iterator[tuple[str, pa.Table | None]]:
    """Each partition's of ``files`` (key text -> its files' paths), in groups."""
    import pyarrow.dataset as pads

    everything = [p for paths in files.values() for p in paths]
    if not everything:
        yield from ((k, None) for k in files)
        return
    found = pads.dataset(everything, format="parquet", filesystem=storage.fs)
    fragments = {f.path: f for f in found.get_fragments()}
    sizes = {path: column_bytes(f, columns) for path, f in fragments.items()}
    group: list[str] = []
    held = 0
    for key, paths in files.items():
        size = sum(sizes[p] for p in paths)
        over = bool(max_bytes) and size > max_bytes
        if group and (over or (max_bytes and held + size > max_bytes)):
            yield from _read_group(found, fragments, files, group, columns)
            group, held = [], 0
        if over:
            yield key, None
            continue
        group.append(key)
        held += size
    if group:
        yield from _read_group(found, fragments, files, group, columns)


def _read_group(
    found: Any,
    fragments: dict[str, Any],
    files: dict[str, list[str]],
    keys: Sequence[str],
    columns: Sequence[str],
) -> Iterator[tuple[str, pa.Table | None]]:
    """Each of ``keys``' columns, from one scan of all their containers (None for a key
    with none)."""
    import pyarrow as pa
    import pyarrow.dataset as pads

    chosen = [fragments[p] for k in keys for p in files[k]]
    if not chosen:
        yield from ((k, None) for k in keys)
        return
    scan = pads.FileSystemDataset(chosen, found.schema, found.format, found.filesystem)
    batches: dict[str, list[pa.RecordBatch]] = {}
    for tagged in scan.scanner(columns=list(columns)).scan_batches():
        fragment: Any = tagged.fragment  # a file's, whose path the stubs do not know
        batches.setdefault(fragment.path, []).append(tagged.record_batch)
    schema = pa.schema([found.schema.field(c) for c in columns])
    for key in keys:
        held = [b for p in files[key] for b in batches.pop(p, [])]
        yield key, pa.Table.from_batches(held, schema=schema) if files[key] else None


def column_bytes(fragment: Any, columns: Sequence[str]) -> int:
    """The uncompressed size of ``columns`` in a Parquet fragment's footer."""
    meta = fragment.metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    wanted = [i for i, n in enumerate(names) if n in columns]
    return sum(
        meta.row_group(g).column(i).total_uncompressed_size
        for g in range(meta.num_row_groups)
        for i in wanted
    )
