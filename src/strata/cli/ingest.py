"""``strata ingest``'s work: check the source, read it, commit one version.

A local source that fits in memory is read by pyarrow (no JVM); a larger or remote one
by Spark. An APPEND to a dataset that has a version, or a SNAPSHOT of some of its
partitions, reads the source with that dataset's schema; only a new dataset (or a whole
SNAPSHOT) infers types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strata.cli.output import err_console
from strata.cli.progress import phases
from strata.errors import InvalidArgument, StrataError
from strata.lake.arrow_sources import (
    fits_in_memory,
    read_files,
    reads_as_spark,
    require_target_columns,
)
from strata.lake.sources import KeyPath, SourceCheck, check_source, local_files

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, DataFrameReader

    from strata.lake.registry import Version
    from strata.lake.service import Lake

_REPAIR = {
    "csv": "drop extra fields and leave missing ones empty",
    "json": "skip lines that are not JSON objects",
}


@dataclass(frozen=True)
class Split:
    """How an ingest partitions: the columns, and the partitions a SNAPSHOT replaces."""

    by: list[str] | None = None
    replace: list[dict[str, str]] | None = None


def load(
    lake: Lake,
    path: str,
    fmt: str,
    dataset: str,
    type: str,
    permissive: bool,
    spark: bool = False,
    split: Split = Split(),
) -> tuple[Version, SourceCheck]:
    """Commit ``path`` to ``dataset``; malformed rows fail it unless ``permissive``."""
    with phases(err_console, "checking") as enter:
        found = check_source(path, fmt)
        if found.refused:
            raise InvalidArgument(
                f"{found.refused[0]}: nothing was ingested; check the file", path=path
            )
        if found.count and not permissive:
            raise InvalidArgument(malformed(found, fmt), path=path, line=found.first[0].line)
        enter("reading")
        # What keeps rows of the dataset reads the source as the dataset: an APPEND, and
        # a SNAPSHOT of some partitions (an empty CSV would otherwise read as text).
        keeps = type.upper() == "APPEND" or split.replace is not None
        target = lake.schema_of(dataset) if keeps else None
        if target is not None and fmt == "json" and found.checked:
            require_target_columns(path, found.keys, target, some=True, nested=found.nested)
        files = local_files(path)
        arrow = not spark and not found.count and reads_as_spark(fmt, target)
        frame: Any = None
        if arrow and files is not None and fits_in_memory(files):
            frame = read_files(files, fmt, target, found.multiline)
        if frame is None:
            frame = _read(lake, path, fmt, found, permissive, target)
        enter("writing")
        with lake.transaction(
            dataset, type=type, partition_by=split.by, partitions=split.replace
        ) as txn:
            try:
                txn.write(frame)
            except Exception as exc:
                bad = _spark_malformed(exc, path, fmt)
                if bad is None:
                    raise
                raise bad from exc
            enter("committing")
    return txn.versions[dataset], found


def _read(
    lake: Lake, path: str, fmt: str, found: SourceCheck, permissive: bool, target: Any
) -> DataFrame:
    from strata.lake.spark import get_spark

    reader = get_spark(lake.settings).read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true")
        if found.multiline:
            reader = reader.option("multiLine", "true")
    try:
        if fmt == "csv" and target is not None:
            return _csv_by_name(reader, path, target, permissive)
        if target is not None and (fmt == "parquet" or (fmt == "json" and not found.checked)):
            # Given a schema, Spark drops the columns and fields it does not name (and a
            # Parquet file's missing columns are nulls): found first, by a pass over the
            # source's schema (a local JSON source's keys were read when it was checked).
            _require_source_fits(reader, path, fmt, permissive, target)
        if target is not None:
            from pyspark.sql.pandas.types import from_arrow_schema

            reader = reader.schema(from_arrow_schema(target))
        elif fmt == "csv":
            frame = _lenient(reader.option("inferSchema", "true"), fmt, permissive)
            return _ints_as_longs(frame.load(_spark_path(path)))
        return _lenient(reader, fmt, permissive).load(_spark_path(path))
    except StrataError:
        raise
    except Exception as exc:  # Spark's analysis errors say what is wrong with the file
        raise _spark_malformed(exc, path, fmt) or InvalidArgument(
            f"Spark cannot read {path!r} as {fmt}: {str(exc).splitlines()[0]}", path=path
        ) from exc


def _ints_as_longs(frame: DataFrame) -> DataFrame:
    """Spark infers a CSV column of small whole numbers as int, pyarrow as int64: the
    wider, so a dataset's types do not hang on which engine read its first file."""
    from pyspark.sql import functions as sf
    from pyspark.sql.types import IntegerType

    ints = [f.name for f in frame.schema.fields if isinstance(f.dataType, IntegerType)]
    if not ints:
        return frame
    return frame.withColumns({n: sf.col(_quoted(n)).cast("long") for n in ints})


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _require_source_fits(
    reader: DataFrameReader, path: str, fmt: str, permissive: bool, target: pa.Schema
) -> None:
    """Refuse a source with columns or struct fields the dataset lacks (a Parquet source
    also one that lacks a column: JSON lines leave out null keys)."""
    if fmt == "parquet":
        reader = reader.option("mergeSchema", "true")  # every file's columns, not one's
    source = _lenient(reader, fmt, permissive).load(_spark_path(path)).schema
    keys, nested = _key_paths(source.jsonValue())
    require_target_columns(path, keys, target, some=fmt == "json", nested=nested)


def _key_paths(schema: dict[str, Any]) -> tuple[list[str], set[KeyPath]]:
    """The columns and nested fields of a schema Spark read (as its JSON): the keys the
    source holds, as :func:`check_source` gathers them from a local one."""
    nested: set[KeyPath] = set()

    def within(kind: Any, path: KeyPath) -> None:
        while isinstance(kind, dict) and kind.get("type") == "array":
            kind = kind["elementType"]
        if isinstance(kind, dict) and kind.get("type") == "struct":
            for f in kind["fields"]:
                nested.add((*path, f["name"]))
                within(f["type"], (*path, f["name"]))

    columns = [f["name"] for f in schema["fields"]]
    for f in schema["fields"]:
        within(f["type"], (f["name"],))
    return columns, nested


def _lenient(reader: DataFrameReader, fmt: str, permissive: bool) -> DataFrameReader:
    if fmt not in _REPAIR:
        return reader
    # PERMISSIVE repairs a CSV row; for JSON it would add a _corrupt_record column.
    lenient = "PERMISSIVE" if fmt == "csv" else "DROPMALFORMED"
    return reader.option("mode", lenient if permissive else "FAILFAST")


def _csv_by_name(
    reader: DataFrameReader, path: str, target: pa.Schema, permissive: bool
) -> DataFrame:
    """A CSV read into a dataset's columns by the header's names, as pyarrow reads it:
    Spark given a schema would take the columns by position and ignore the header."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    header = reader.load(_spark_path(path)).columns  # the first line only: no types
    require_target_columns(path, header, target)
    in_file_order = pa.schema([target.field(name) for name in header])
    frame = _lenient(reader.schema(from_arrow_schema(in_file_order)), "csv", permissive)
    return frame.option("enforceSchema", "false").load(_spark_path(path)).select(*target.names)


def _spark_path(path: str) -> str:
    """``path`` as Spark must be told it: a local path as an absolute ``file://`` URI.

    Spark resolves a bare path on its default file system (HDFS on a YARN cluster) and
    against the JVM's starting folder, neither of which is what was checked here.
    """
    return path if "://" in path else Path(path).resolve().as_uri()


def _spark_malformed(exc: Exception, path: str, fmt: str) -> InvalidArgument | None:
    """Spark's FAILFAST error, or its Parquet reader's type mismatch, where Strata could
    not check the files itself (found in the causes too: the lake's write error keeps
    Spark's as its cause)."""
    said = _spark_said(exc, _MALFORMED)
    if said is not None:
        return InvalidArgument(
            f"Spark found a malformed row in {path!r}: {said}; nothing was ingested. Fix the "
            f"file, or pass --permissive to {_REPAIR[fmt]}",
            path=path,
        )
    said = _spark_said(exc, _PARQUET_TYPE)
    if said is not None:
        return InvalidArgument(
            f"{path!r} does not have the dataset's types: {said} Nothing was ingested. Write "
            "the file with the dataset's types, or replace the whole dataset with --type "
            "SNAPSHOT (without --partitions).",
            path=path,
        )
    return None


_MALFORMED = re.compile(r"\[MALFORMED_RECORD.*")
_PARQUET_TYPE = re.compile(
    r"Data type mismatches when reading Parquet column \[[^\]]*\]\. Expected Spark type "
    r"\S+, actual Parquet type \S+\."
)


def _spark_said(exc: BaseException, what: re.Pattern[str]) -> str | None:
    """The first line of ``exc``'s text, or of a cause's, that ``what`` matches."""
    cause: BaseException | None = exc
    while cause is not None:
        found = what.search(str(cause))
        if found is not None:
            return found.group(0).strip()
        cause = cause.__cause__
    return None


def malformed(found: SourceCheck, fmt: str) -> str:
    """The strict failure: the first bad rows by file and line, and what to do."""
    first, more = found.first[0], found.first[1:]
    also = ""
    if found.count > 1:
        named = ", ".join(f"{m.file} line {m.line}" for m in more)
        rest = " …" if found.count > len(found.first) else ""
        also = f"; {found.count} malformed rows in all (also {named}{rest})"
    return (
        f"{first}{also}; nothing was ingested. Fix the file, or pass --permissive to {_REPAIR[fmt]}"
    )


def repaired(found: SourceCheck, fmt: str) -> str:
    """What ``--permissive`` did, for stderr."""
    done = "repaired" if fmt == "csv" else "dropped"
    where = ", ".join(f"{m.file} line {m.line}" for m in found.first)
    rest = " …" if found.count > len(found.first) else ""
    rows = "row" if found.count == 1 else "rows"
    return f"--permissive: {done} {found.count} malformed {rows} ({where}{rest})"
