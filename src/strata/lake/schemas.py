"""Version schemas: recorded per version, compared on APPEND and UPDATE."""

from __future__ import annotations

import base64
import contextlib
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from strata.errors import SchemaMismatch

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

ARROW_SCHEMA_FACET = "strata_arrowSchema"

# Types that are the same column to every reader, whatever the writer chose.
_ALIASES = {"large_string": "string", "large_binary": "binary", "large_utf8": "string"}


def type_name(t: pa.DataType) -> str:
    name = str(t)
    return _ALIASES.get(name, name)


def column_name_problem(names: Iterable[str]) -> str | None:
    """What makes ``names`` unfit for a dataset's columns: an empty one, or two alike
    ignoring case (Spark resolves column names so, and pyarrow cannot read a file with
    two of one name); None when they are fit."""
    seen: dict[str, tuple[int, str]] = {}
    for number, name in enumerate(names, start=1):
        if not name.strip():
            return f"column {number} has no name"
        first, was = seen.setdefault(name.casefold(), (number, name))
        if first == number:
            continue
        if was == name:
            return f"columns {first} and {number} are both named {name!r}"
        return (
            f"columns {first} and {number}, {was!r} and {name!r}, differ only in case "
            "(Spark reads them as one)"
        )
    return None


def fields_of(schema: pa.Schema) -> list[dict[str, Any]]:
    """Schema fields in the OpenLineage schema-facet shape (plus nullability)."""
    return [{"name": f.name, "type": type_name(f.type), "nullable": f.nullable} for f in schema]


def encode(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def decode(text: str) -> pa.Schema:
    import pyarrow as pa

    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def _key(fields: list[dict[str, Any]]) -> dict[str, str]:
    return {f["name"]: f["type"] for f in fields}


def compatible(current: list[dict[str, Any]], new: list[dict[str, Any]]) -> bool:
    """Same column names with the same types; order and nullability may differ."""
    return _key(current) == _key(new)


def keep_nullable(
    previous: list[dict[str, Any]], fields: list[dict[str, Any]], arrow: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """The schema of a version that keeps earlier containers: a column that could hold
    nulls before still can, whatever the newest frame declared."""
    import pyarrow as pa

    was_nullable = {f["name"] for f in previous if f.get("nullable", True)}
    if not any(f["name"] in was_nullable and not f["nullable"] for f in fields):
        return fields, arrow
    fields = [{**f, "nullable": f["nullable"] or f["name"] in was_nullable} for f in fields]
    if arrow:
        schema = decode(arrow)
        metadata: Any = schema.metadata
        schema = pa.schema(
            [f.with_nullable(True) if f.name in was_nullable else f for f in schema],
            metadata=metadata,
        )
        arrow = encode(schema)
    return fields, arrow


def render(fields: list[dict[str, Any]]) -> str:
    return ", ".join(f"{f['name']}: {f['type']}" for f in fields) or "(no columns)"


def require_compatible(
    dataset: str, current: list[dict[str, Any]] | None, new: list[dict[str, Any]], what: str
) -> None:
    if current is None or compatible(current, new):
        return
    raise SchemaMismatch(
        f"{what} to dataset {dataset!r} has an incompatible schema.\n"
        f"  dataset schema: {render(current)}\n"
        f"  written schema: {render(new)}\n"
        "Write frames with the dataset's columns and types, or replace the data with a "
        "SNAPSHOT transaction.",
        dataset=dataset,
        current=current,
        written=new,
    )


def spark_types(known: pa.Schema) -> dict[str, str] | None:
    """Each column's Spark type (its simple string) as :func:`read_parquet` reads files
    of the ``known`` schema, found without the JVM; None when Spark infers them."""
    from pyspark.sql.pandas.types import from_arrow_schema

    try:
        struct = from_arrow_schema(known)
    except TypeError:
        return None
    return {f.name: f.dataType.simpleString() for f in struct.fields}


def encoded_spark_types(encoded: str) -> dict[str, str] | None:
    """:func:`spark_types` of a schema in its stored form (:func:`encode`); each form is
    worked out once, since a batch's checks ask it of every partition's write."""
    found = _spark_types_of(encoded)
    return dict(found) if found is not None else None


@functools.lru_cache(maxsize=32)
def _spark_types_of(encoded: str) -> tuple[tuple[str, str], ...] | None:
    types = spark_types(decode(encoded))
    return tuple(types.items()) if types is not None else None


def read_parquet(session: SparkSession, uris: list[str], known: pa.Schema | None) -> DataFrame:
    """Parquet files as one Spark frame, read with their ``known`` schema: Spark then
    runs no job to infer it from the footers (it does when it has to)."""
    reader = session.read
    if known is not None:
        from pyspark.sql.pandas.types import from_arrow_schema

        # A type Spark's Arrow mapping lacks: Spark infers the schema itself.
        with contextlib.suppress(TypeError):
            reader = reader.schema(from_arrow_schema(known))
    return reader.parquet(*uris)
