"""Writing frames as Parquet containers: Spark through Spark, Arrow and pandas through pyarrow."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from strata.errors import InvalidArgument, LakeError
from strata.ids import new_id
from strata.lake import partitions, schemas, spark_hashed
from strata.lake.rowhash import (
    EMPTY,
    RowHash,
    arrow_row_hash,
    key_sums,
    observed,
    observed_extra,
    observed_hash,
    sum_hashes,
)
from strata.lake.spark import undone_on_error
from strata.lake.storage import FileEntry, Storage

if TYPE_CHECKING:
    import pyarrow as pa


def frame_kind(frame: object) -> str:
    """``spark``, ``arrow`` or ``pandas``; anything else is refused."""
    module = type(frame).__module__
    name = type(frame).__name__
    if module.startswith("pyspark.") and name == "DataFrame":
        return "spark"
    if module.startswith("pyarrow") and name in ("Table", "RecordBatch"):
        return "arrow"
    if module.startswith("pandas") and name == "DataFrame":
        return "pandas"
    raise InvalidArgument(
        f"cannot write a {module}.{name}; pass a Spark DataFrame, a pyarrow Table or a "
        "pandas DataFrame",
        type=f"{module}.{name}",
    )


@dataclass(frozen=True)
class Written:
    """What one write made: its containers, their schema, the hash of the rows written
    (:mod:`strata.lake.rowhash`) and the sums it was asked to watch (None: not seen)."""

    entries: list[FileEntry]
    schema: pa.Schema
    rows: RowHash
    seen: dict[str, int] | None = None
    # A batch's watched sums per partition (key text); None: not seen per partition.
    seen_by_key: dict[str, dict[str, int]] | None = None


def _require_fit_names(frame: Any, kind: str) -> None:
    names = frame.column_names if kind == "arrow" else [str(c) for c in frame.columns]
    problem = schemas.column_name_problem(names)
    if problem is not None:
        raise InvalidArgument(
            f"cannot write columns {names}: {problem}; give each column a name of its own",
            columns=names,
        )


def write_frame(
    storage: Storage,
    folder: str,
    frame: Any,
    by: Partitioning | None = None,
    watch: Mapping[str, Any] | None = None,
) -> Written:
    """Write ``frame`` as new containers under ``folder``. With ``by``, each container
    holds one partition's rows and carries its key.

    Spark hashes exactly what it writes in the write's own pass: its Parquet writer sums
    the rows' hash where the session can (:mod:`strata.lake.spark_hashed`), else the write
    observes it; an Arrow table or pandas frame is hashed as stored. ``watch`` (name ->
    Spark aggregate column) is observed in that same pass; it is not seen when the frame
    is not Spark's or the columns do not apply to it.
    """
    kind = frame_kind(frame)
    _require_fit_names(frame, kind)
    if kind == "spark":
        if by is not None and by.among is not None and len(by.among) > 1:
            return _write_spark_batch(storage, folder, frame, by, watch)
        if by is not None and not by.single:
            _check_spark_keys(frame, by)
        if not watch and spark_hashed.available(frame):
            return _write_spark_hashed(storage, folder, frame, by)
        watched, obs, seeing = _observed(frame, watch)
        if by is not None:
            entries, schema, _ = _write_spark_partitioned(storage, folder, watched, by)
        else:
            entries, schema, _ = _write_spark(storage, folder, watched)
        rows = observed_hash(obs)
        if by is not None:
            entries = _one_partition_hashed(entries, rows)
        seen = observed_extra(obs, watch or {}) if seeing else None
        return Written(entries, schema, rows, seen)
    import pyarrow as pa

    if kind == "pandas":
        table = pa.Table.from_pandas(frame, preserve_index=False)
    elif isinstance(frame, pa.RecordBatch):
        table = pa.Table.from_batches([frame])
    else:
        table = frame
    if by is None:
        entries, schema = _write_arrow(storage, folder, table)
        return Written(entries, schema, arrow_row_hash(table, schema))
    entries, schema = _write_arrow_partitioned(storage, folder, table, by)
    return Written(entries, schema, sum_hashes(e.row_hash for e in entries) or EMPTY)


def _write_spark_hashed(
    storage: Storage, folder: str, frame: Any, by: Partitioning | None
) -> Written:
    """Spark writes ``frame`` through its Parquet writer that sums the rows' hash."""
    if by is None:
        entries, schema, rows = _write_spark(storage, folder, frame, hashed=True)
    else:
        entries, schema, rows = _write_spark_partitioned(storage, folder, frame, by, hashed=True)
    assert rows is not None
    if by is not None:
        entries = _one_partition_hashed(entries, rows)
    return Written(entries, schema, rows)


def _write_spark_batch(
    storage: Storage,
    folder: str,
    frame: Any,
    by: Partitioning,
    watch: Mapping[str, Any] | None,
) -> Written:
    """A batch of partition runs' rows, each partition's hash its own. Spark observes one
    sum for a whole write, so the frame is kept (memory, then disk) while one pass hashes
    it by key and the write reads it back: it is computed once. The write's own totals
    are the sums over its keys (row hashes and watched measures add up), so the write
    pass hashes nothing again."""
    from pyspark import StorageLevel

    kept = frame.persist(StorageLevel.MEMORY_AND_DISK)
    with undone_on_error(kept.unpersist):
        by_key, seeing = _key_sums(kept, by, watch)
        entries, schema, _ = _write_spark_partitioned(storage, folder, kept, by)
    kept.unpersist()
    known = {
        partitions.key_text(by.columns, dict(zip(by.columns, k, strict=True))): sums
        for k, sums in by_key.items()
        if None not in k
    }
    entries = _hashed_per_key(entries, {key: h for key, (h, _) in known.items()})
    rows = sum_hashes(h for h, _ in by_key.values()) or EMPTY
    seen = _summed((extra for _, extra in by_key.values()), watch or {}) if seeing else None
    seen_by_key = {key: extra for key, (_, extra) in known.items()} if seeing else None
    return Written(entries, schema, rows, seen, seen_by_key)


def _summed(extras: Iterable[Mapping[str, int]], names: Iterable[str]) -> dict[str, int]:
    """The watched measures over a whole write, from each key's."""
    total = dict.fromkeys(names, 0)
    for extra in extras:
        for name, value in extra.items():
            total[name] += value
    return total


def _key_sums(
    kept: Any, by: Partitioning, watch: Mapping[str, Any] | None
) -> tuple[dict[tuple[str, ...], tuple[RowHash, dict[str, int]]], bool]:
    """Each key's row hash and, when they apply to the frame, ``watch``'s sums (whether
    they did: see :func:`_observed`)."""
    try:
        if watch:
            try:
                return key_sums(kept, by.columns, watch), True
            except Exception as exc:
                if not is_plan_error(exc):
                    raise
        return key_sums(kept, by.columns), False
    except Exception as exc:  # the frame's own computation failed (a UDF, a bad cast)
        raise LakeError(
            f"Spark could not compute the rows written to {by.dataset!r}: {spark_failure(exc)}",
            dataset=by.dataset,
        ) from exc


def _hashed_per_key(entries: list[FileEntry], hashes: Mapping[str, RowHash]) -> list[FileEntry]:
    """Each partition's first container carries its rows' hash, the others nothing (a
    key missing from ``hashes``: unknown)."""
    out, seen = [], set()
    for e in entries:
        key = e.partition or ""
        out.append(replace(e, row_hash=EMPTY if key in seen else hashes.get(key)))
        seen.add(key)
    return out


def _observed(frame: Any, watch: Mapping[str, Any] | None) -> tuple[Any, Any, bool]:
    """``frame`` observed with its row hash and, when they apply to it, ``watch``'s
    columns (a column it lacks or SQL it cannot parse leaves them unseen: their owner
    then reads the rows and reports the mistake in its own words)."""
    if watch:
        try:
            watched, obs = observed(frame, watch)
            return watched, obs, True
        except Exception as exc:
            if not is_plan_error(exc):
                raise
    watched, obs = observed(frame)
    return watched, obs, False


def is_plan_error(exc: BaseException) -> bool:
    """Whether Spark refused an expression before running anything (a column the frame
    lacks, SQL it cannot parse), as opposed to a failure while computing rows."""
    return type(exc).__name__ in ("AnalysisException", "ParseException")


@dataclass(frozen=True)
class Partitioning:
    """How a write is split: the dataset (for errors), its columns, the most keys."""

    dataset: str
    columns: tuple[str, ...]
    limit: int
    single: bool = False  # the rows are one partition's: no shuffle to group them
    # A batch of partition runs: rows only of these keys (texts), each one's hash known.
    among: frozenset[str] | None = None


def _write_arrow_partitioned(
    storage: Storage, folder: str, table: pa.Table, by: Partitioning
) -> tuple[list[FileEntry], pa.Schema]:
    groups = partitions.split_arrow(by.dataset, by.columns, table)
    partitions.limit_keys(by.dataset, [k for k, _ in groups], by.limit)
    entries: list[FileEntry] = []
    schema = None
    # One writer folder per write, as Spark's: a refused write is discarded whole.
    writer = f"{folder}/arrow-{new_id()}"
    for key, rows in groups:
        sub = f"{writer}/{partitions.folder_of(by.columns, partitions.parse_text(key))}"
        storage.make_dir(sub)
        written, schema = _write_arrow(storage, sub, rows)
        rows_hash = arrow_row_hash(rows, schema)  # one container per partition
        entries += [replace(e, partition=key, row_hash=rows_hash) for e in written]
    if schema is None:  # no rows: nothing to write, but the schema is the table's
        return [], table.replace_schema_metadata(None).schema
    return entries, schema


def _write_arrow(
    storage: Storage, folder: str, table: pa.Table
) -> tuple[list[FileEntry], pa.Schema]:
    import pyarrow.parquet as pq

    table = table.replace_schema_metadata(None)  # pandas metadata would leak an index name
    rel = f"{folder}/part-{new_id()}.parquet"
    try:
        # Microsecond timestamps: Spark cannot read nanosecond Parquet timestamps.
        pq.write_table(
            table,
            storage.local(rel),
            filesystem=storage.fs,
            coerce_timestamps="us",
            allow_truncated_timestamps=True,
        )
        size = storage.fs.get_file_info(storage.local(rel)).size
        schema = pq.read_schema(storage.local(rel), filesystem=storage.fs)
    except OSError as exc:
        raise LakeError(
            f"cannot write container {storage.spark_uri(rel)!r}: {exc}; check that the lake "
            "is writable",
            lake_uri=storage.uri,
        ) from exc
    return [FileEntry(rel, int(size or 0), table.num_rows)], schema


def _write_spark(
    storage: Storage, folder: str, frame: Any, *, hashed: bool = False
) -> tuple[list[FileEntry], pa.Schema, RowHash | None]:
    """Spark writes ``frame`` into a new folder; ``hashed``: through the writer that sums
    the rows' hash (:mod:`strata.lake.spark_hashed`), whose hash is returned."""
    sub = f"{folder}/spark-{new_id()}"
    rows = _spark_save(storage, storage.spark_uri(sub), frame, hashed)
    entries, schema = describe_files(storage, storage.parquet_files(sub))
    return entries, schema, rows


def _spark_save(
    storage: Storage,
    uri: str,
    frame: Any,
    hashed: bool,
    partition_by: Sequence[str] = (),
    fields: Sequence[Any] | None = None,
) -> RowHash | None:
    """Spark writes ``frame`` into the new folder ``uri``, in a folder per value of
    ``partition_by``; ``hashed``: through the writer that sums the hash of the rows'
    ``fields`` (all of its fields by default), which is returned."""
    try:
        if hashed:
            return spark_hashed.write(frame, uri, partition_by=partition_by, fields=fields)
        writer = frame.write.partitionBy(*partition_by) if partition_by else frame.write
        writer.mode("errorifexists").parquet(uri)
    except Exception as exc:  # Py4J/analysis errors carry the useful message
        raise LakeError(
            f"Spark could not write to {uri!r}: {spark_failure(exc)}", lake_uri=storage.uri
        ) from exc
    return None


def _write_spark_partitioned(
    storage: Storage, folder: str, frame: Any, by: Partitioning, *, hashed: bool = False
) -> tuple[list[FileEntry], pa.Schema, RowHash | None]:
    """Spark writes one folder per key. Spark's ``partitionBy`` takes its columns out of
    the files, so it partitions by copies (``_region``) and the files keep every column:
    any list of containers then reads as the dataset, with no folder parsing."""
    from pyspark.sql.functions import col

    fields = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    partitions.require_columns(by.dataset, by.columns, fields, spark=True)
    copies = [f"{partitions.FOLDER_PREFIX}{c}" for c in by.columns]
    clash = sorted(set(copies) & set(fields))
    if clash:
        raise InvalidArgument(
            f"the frame written to {by.dataset!r} has columns {clash}, whose names the "
            "partition folders use; rename them",
            dataset=by.dataset,
        )
    split = frame.select("*", *[col(c).alias(p) for c, p in zip(by.columns, copies, strict=True)])
    sub = f"{folder}/spark-{new_id()}"
    # One file per partition, but a shuffle costs a partition run a third of its time.
    grouped = split if by.single else split.repartition(*_tasks(frame, by), *copies)
    # The copies are the folders' names, not the rows': the hash is of the frame's columns.
    uri = storage.spark_uri(sub)
    rows = _spark_save(storage, uri, grouped, hashed, copies, frame.schema.fields)
    paths = storage.parquet_files(sub)
    try:
        keys = [partitions.key_of_path(by.dataset, by.columns, p) for p in paths]
        partitions.limit_keys(by.dataset, sorted(set(keys)), by.limit)
    except InvalidArgument:
        storage.discard(folder, paths)
        raise
    entries, schema = describe_files(storage, paths)
    if not paths:
        schema = _spark_arrow_schema(frame)
    return [replace(e, partition=k) for e, k in zip(entries, keys, strict=True)], schema, rows


def _tasks(frame: Any, by: Partitioning) -> list[int]:
    """How many tasks write a batch of partition runs: Spark's adaptive plan would
    coalesce their few rows into one task writing every partition's file in turn."""
    if by.among is None or len(by.among) < 2:
        return []
    cores = frame.sparkSession.sparkContext.defaultParallelism
    return [min(len(by.among), 4 * max(cores, 1))]


def _check_spark_keys(frame: Any, by: Partitioning) -> None:
    """Before Spark writes anything: the frame's partition columns, its keys' values (no
    null, '/', '=', NUL, nor one too long for a folder name) and how many keys it makes,
    with the same words as an Arrow write. One pass over the keys alone (a distinct, at
    most one past the limit), not a write that fails or is thrown away at the end."""
    fields = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    partitions.require_columns(by.dataset, by.columns, fields, spark=True)
    try:
        rows = frame.select(*by.columns).distinct().limit(by.limit + 1).collect()
    except Exception as exc:  # the frame's own computation failed (a UDF, a bad cast)
        raise LakeError(
            f"Spark could not compute the rows written to {by.dataset!r}: {spark_failure(exc)}",
            dataset=by.dataset,
        ) from exc
    for row in rows:
        for column, value in zip(by.columns, row, strict=True):
            text = None if value is None else partitions.value_text(value)
            partitions.check_value(by.dataset, column, text)
    if len(rows) > by.limit:
        raise InvalidArgument(
            f"this write to {by.dataset!r} makes more than {by.limit:,} partitions, the "
            "limit; partition by coarser columns or raise partition_limit",
            dataset=by.dataset,
        )


def _one_partition_hashed(entries: list[FileEntry], rows: RowHash) -> list[FileEntry]:
    """A Spark write's containers with their partition's row hash where the write held
    one partition (a partition run's): Spark observes one sum for the whole write, so a
    write of several partitions leaves theirs unknown."""
    if len({e.partition for e in entries}) != 1:
        return entries
    return [replace(e, row_hash=rows if i == 0 else EMPTY) for i, e in enumerate(entries)]


def _spark_arrow_schema(frame: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema)


_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')


def spark_failure(exc: BaseException) -> str:
    """What went wrong in a Spark job, in one line. A Python function that raised on an
    executor (a UDF) comes back as a traceback inside Spark's message, whose first line
    is empty in Spark 4: name its exception and the file and line that raised it."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    if "Traceback (most recent call last):" not in lines:
        return lines[0].strip() if lines else type(exc).__name__
    frames = [m for line in lines if (m := _PY_FRAME.match(line))]
    raised = lines[-1].strip()
    where = ""
    if frames:
        last = frames[-1]
        where = f" (at {last['file']}:{last['line']}, in {last['func'].strip()})"
    return f"a Python function raised {raised}{where}"


def describe_files(storage: Storage, paths: list[str]) -> tuple[list[FileEntry], pa.Schema]:
    """Sizes, row counts and the schema of containers, from their Parquet footers."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    entries: list[FileEntry] = []
    schema: pa.Schema | None = None
    for rel in paths:
        local = storage.local(rel)
        meta = pq.read_metadata(local, filesystem=storage.fs)
        size = storage.fs.get_file_info(local).size
        entries.append(FileEntry(rel, int(size or 0), meta.num_rows))
        if schema is None:
            schema = meta.schema.to_arrow_schema()
    if schema is None:
        schema = pa.schema([])
    return entries, schema.remove_metadata()
