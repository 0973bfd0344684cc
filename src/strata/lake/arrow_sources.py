"""Reading small local sources with pyarrow, so an ingest of a file that fits in memory
starts no JVM.

A new dataset gets the types Spark would infer from the same file (:mod:`strata.cli.ingest`
widens Spark's CSV ints to 64 bits, as pyarrow reads them; here a JSON string that looks
like a time stays a string and JSON fields come in name order, as Spark reads them),
with what Spark's catalog relies on: times without a zone are UTC (the session's zone),
and a column with no values is a string.
An append reads each file with the dataset's own schema, so a day whose ``amount`` holds
only integers still lands as the dataset's doubles; a value that does not fit is
refused by file, line and column. The CSV dialect is Spark's (``"`` quotes, doubled or
backslash-escaped; blank lines skipped; an empty field is null).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strata.errors import InvalidArgument, SchemaMismatch
from strata.lake.schemas import fields_of, render
from strata.lake.sources import KeyPath

if TYPE_CHECKING:
    import pyarrow as pa

ARROW_MAX_BYTES = 256 * 2**20  # sources up to this size are read by pyarrow, larger by Spark
_CSV_COLUMN = re.compile(r"In CSV column #(\d+)")
_MIXED_JSON = re.compile(r"Column\(.*\) changed from \w+ to \w+")
_TRUE, _FALSE = ["true", "True", "TRUE"], ["false", "False", "FALSE"]


def fits_in_memory(files: list[Path] | None) -> bool:
    return files is not None and sum(f.stat().st_size for f in files) <= ARROW_MAX_BYTES


def reads_as_spark(fmt: str, target: pa.Schema | None) -> bool:
    """Whether pyarrow reads ``fmt`` into ``target``'s types as Spark does. It reads no
    JSON maps, a JSON date as an error and JSON binary as the text's bytes (Spark decodes
    base64), and no CSV of nested types: such a dataset is read by Spark."""
    import pyarrow as pa

    def same(kind: pa.DataType) -> bool:
        if pa.types.is_struct(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind):
            inner = [kind.field(i).type for i in range(kind.num_fields)]
            return fmt == "json" and all(same(t) for t in inner)
        if pa.types.is_date(kind) or pa.types.is_binary(kind):
            return fmt != "json"
        return not pa.types.is_map(kind)

    return fmt == "parquet" or target is None or all(same(f.type) for f in target)


def read_files(
    files: list[Path], fmt: str, target: pa.Schema | None, multiline: bool
) -> pa.Table | None:
    """Every file as one table: with ``target``'s columns and types, or inferred; None
    when pyarrow infers no one type for a JSON key (a number here, text there), which
    Spark's reader widens to text."""
    import pyarrow as pa

    tables = []
    for file in files:
        if fmt == "parquet":
            table = _read_parquet(file)
        elif fmt == "json" and target is None:
            inferred = _infer_json(file)
            if inferred is None:
                return None
            table = inferred
        else:
            table = _read_text(file, fmt, target, multiline)
        tables.append(table if target is None else _as_target(file, table, target))
        if target is None:
            target = _normalised(tables[0].schema)  # the first file's types for the rest
            tables[0] = tables[0].cast(target)
    if not tables:
        raise InvalidArgument("no files to ingest", files=[])
    return pa.concat_tables(tables)


def _read_parquet(file: Path) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(file)


def _infer_json(file: Path) -> pa.Table | None:
    """The file as Spark would infer it: pyarrow's types, but a string that looks like
    a time stays a string (Spark infers no times from JSON, and a date would become a
    timestamp), and fields in name order, Spark's; None when a key holds numbers and
    text."""
    import pyarrow as pa
    import pyarrow.json as pajson

    try:
        table = pajson.read_json(_stream(file))
        inferred = _as_spark_infers(pa.struct(list(table.schema)))
        as_spark = pa.schema([inferred.field(i) for i in range(inferred.num_fields)])
        if as_spark == pa.schema(sorted(table.schema, key=lambda f: f.name)):
            return table.select(as_spark.names)  # only the columns' order differs
        # A time's text, or a struct's order of fields, needs the file read again.
        parse = pajson.ParseOptions(explicit_schema=as_spark)
        table = pajson.read_json(_stream(file), parse_options=parse)
    except pa.ArrowInvalid as exc:
        if _MIXED_JSON.search(str(exc)):
            return None
        raise _misfit(file, str(exc), None) from exc
    return table


def _as_spark_infers(kind: pa.DataType) -> pa.DataType:
    import pyarrow as pa

    if pa.types.is_timestamp(kind):
        return pa.string()
    if pa.types.is_struct(kind):
        fields = sorted(kind, key=lambda f: f.name)
        return pa.struct([f.with_type(_as_spark_infers(f.type)) for f in fields])
    if pa.types.is_list(kind):
        return pa.list_(_as_spark_infers(kind.value_type))
    return kind


def _read_text(file: Path, fmt: str, target: pa.Schema | None, multiline: bool) -> pa.Table:

    if fmt == "json":
        import pyarrow.json as pajson

        assert target is not None  # else _infer_json
        parse = pajson.ParseOptions(
            explicit_schema=_as_read(target), unexpected_field_behavior="error"
        )
        return _checked(file, lambda: pajson.read_json(_stream(file), parse_options=parse))
    import pyarrow.csv as pacsv

    parse_csv = pacsv.ParseOptions(
        escape_char="\\", double_quote=True, newlines_in_values=multiline, ignore_empty_lines=True
    )
    types = {} if target is None else {f.name: f.type for f in _as_read(target)}
    convert = pacsv.ConvertOptions(
        null_values=[""],
        strings_can_be_null=True,
        true_values=_TRUE,
        false_values=_FALSE,
        column_types=types,
    )
    return _checked(
        file,
        lambda: pacsv.read_csv(_stream(file), parse_options=parse_csv, convert_options=convert),
        target,
    )


def _stream(file: Path) -> Any:
    import pyarrow as pa

    return pa.input_stream(str(file), compression="detect")


def _checked(file: Path, read: Any, target: pa.Schema | None = None) -> pa.Table:
    import pyarrow as pa

    try:
        table: pa.Table = read()
    except pa.ArrowInvalid as exc:
        raise _misfit(file, str(exc), target) from exc
    return table


def _as_read(schema: pa.Schema) -> pa.Schema:
    """``schema`` as text is parsed: zoned times first as strings (pyarrow will not read
    a time without an offset as zoned), converted after."""
    import pyarrow as pa

    return pa.schema(
        [f.with_type(pa.string()) if _zoned(f.type) else f for f in schema], metadata=None
    )


def _zoned(t: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_timestamp(t) and t.tz is not None


def _normalised(schema: pa.Schema) -> pa.Schema:
    """Inferred types as Spark's catalog wants them: naive times are UTC, microseconds;
    a column with no values is a string."""
    import pyarrow as pa

    fields = []
    for f in schema:
        kind = f.type
        if pa.types.is_timestamp(kind):
            kind = pa.timestamp("us", tz=kind.tz or "UTC")
        elif pa.types.is_null(kind):
            kind = pa.string()
        fields.append(f.with_type(kind))
    return pa.schema(fields)


def require_target_columns(
    source: str,
    columns: Iterable[str],
    target: pa.Schema,
    *,
    some: bool = False,
    nested: Iterable[KeyPath] = (),
) -> None:
    """A source read into an existing dataset must have its columns, by name (``some``:
    some of them, as JSON lines, whose missing keys are nulls; ``nested``: the keys
    within its values, each a field of its struct)."""
    have, want = set(columns), set(target.names)
    unknown = _unknown_fields(nested, target)
    if not have - want and not unknown and (some or have == want):
        return
    missing = [] if some else sorted(want - have)
    extra = sorted(have - want) + unknown
    differ = ", ".join(
        f"{what} {names}" for what, names in (("missing", missing), ("extra", extra)) if names
    )
    raise SchemaMismatch(
        f"{source} does not have the dataset's columns ({differ}).\n"
        f"  dataset schema: {render(fields_of(target))}\n"
        "Write the file with the dataset's columns, or replace the whole dataset with "
        "--type SNAPSHOT (without --partitions).",
        file=source,
    )


def key_paths(schema: pa.Schema) -> set[KeyPath]:
    """The fields within ``schema``'s columns: each struct's, through lists (a map's keys
    are data, not fields)."""
    import pyarrow as pa

    found: set[KeyPath] = set()

    def within(kind: pa.DataType, path: KeyPath) -> None:
        kind = _items(kind)
        if pa.types.is_struct(kind):
            for f in kind:
                found.add((*path, f.name))
                within(f.type, (*path, f.name))

    for f in schema:
        within(f.type, (f.name,))
    return found


def _items(kind: pa.DataType) -> pa.DataType:
    """A list's item type, through lists of lists (as Spark reads a JSON array's objects);
    any other type itself."""
    import pyarrow as pa

    while pa.types.is_list(kind) or pa.types.is_large_list(kind):
        kind = kind.value_type
    return kind


def _unknown_fields(paths: Iterable[KeyPath], target: pa.Schema) -> list[str]:
    """Those of ``paths`` that name no field of a struct in ``target``, as dotted names.
    Keys within a map, or within a value the dataset keeps as text, are its data."""
    import pyarrow as pa

    unknown = set()
    for path in paths:
        if path[0] not in target.names:
            continue  # a column the dataset lacks: said once, by its own name
        kind = target.field(path[0]).type
        for depth, name in enumerate(path[1:], start=2):
            kind = _items(kind)
            if not pa.types.is_struct(kind):
                break
            index = kind.get_field_index(name)
            if index < 0:
                unknown.add(".".join(path[:depth]))
                break
            kind = kind.field(index).type
    return sorted(unknown)


def _as_target(file: Path, table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` with exactly ``target``'s columns, in its order and types."""
    import pyarrow as pa

    require_target_columns(str(file), table.column_names, target, nested=key_paths(table.schema))
    columns = []
    for f in target:
        column = table.column(f.name)
        if column.type != f.type:
            column = _cast(file, f, column)
        columns.append(column)
    return pa.table(columns, schema=target)


def _cast(file: Path, field: pa.Field[Any], column: Any) -> Any:
    import pyarrow as pa

    if _zoned(field.type) and pa.types.is_string(column.type):
        return _parse_times(file, field, column)
    try:
        return column.cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidArgument(
            f"{file}: column {field.name!r} cannot be read as the dataset's "
            f"{field.type} ({exc}); fix the file or ingest it as a SNAPSHOT",
            file=str(file),
            column=field.name,
        ) from exc


def _times(column: Any, kind: pa.DataType) -> Any:
    """ISO 8601 times, with or without an offset (without: UTC); None if one is not."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.assume_timezone(column.cast(pa.timestamp("us")), "UTC").cast(kind)
    except pa.ArrowInvalid:
        pass
    try:
        return column.cast(kind)
    except pa.ArrowInvalid:
        return None


def _parse_times(file: Path, field: pa.Field[Any], column: Any) -> Any:
    parsed = _times(column, field.type)
    if parsed is not None:
        return parsed
    line, value = _first_bad_value(file, field.name, field.type)
    raise InvalidArgument(
        f"{file} line {line}: column {field.name!r} value {value!r} is not a "
        f"{field.type} time; write ISO 8601 such as 2026-01-31T12:00:00Z",
        file=str(file),
        line=line,
        column=field.name,
    )


def _misfit(file: Path, said: str, target: pa.Schema | None) -> InvalidArgument:
    """A value pyarrow could not convert, located by line (pyarrow names no row)."""
    found = _CSV_COLUMN.search(said)
    if target is None or found is None:
        return InvalidArgument(f"cannot read {file}: {said}", file=str(file))
    header = _header(file)
    index = int(found.group(1))
    name = header[index] if index < len(header) else f"#{index}"
    kind = target.field(name).type if name in target.names else "its type"
    line, value = _first_bad_value(file, name, kind)
    return InvalidArgument(
        f"{file} line {line}: column {name!r} value {value!r} does not fit the dataset's "
        f"{kind}; fix the file, or ingest it as a SNAPSHOT to change the schema",
        file=str(file),
        line=line,
        column=name,
    )


def _rows(file: Path) -> Any:
    import gzip

    opener: Any = gzip.open if file.suffix == ".gz" else open
    with opener(file, "rt", encoding="utf-8", newline="") as text:
        reader = csv.reader(text, escapechar="\\", doublequote=True)
        ends = 0
        for row in reader:
            yield ends + 1, row
            ends = reader.line_num


def _header(file: Path) -> list[str]:
    return next((row for _, row in _rows(file) if row), [])


def _first_bad_value(file: Path, column: str, kind: Any) -> tuple[int, str]:
    import pyarrow as pa

    rows = _rows(file)
    header: list[str] = next((row for _, row in rows if row), [])
    at = header.index(column) if column in header else -1
    for line, row in rows:
        value = row[at] if 0 <= at < len(row) else ""
        if value == "":
            continue
        if _zoned(kind):
            if _times(pa.array([value]), kind) is None:
                return line, value
            continue
        try:
            pa.array([value]).cast(kind)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return line, value
    return 0, ""
