"""A stored schema's Spark types, as a batch's checks ask them of every partition."""

from __future__ import annotations

import pyarrow as pa

from strata.lake import schemas


def test_encoded_spark_types_are_those_of_the_schema_it_stores() -> None:
    schema = pa.schema([("region", pa.string()), ("n", pa.int64()), ("at", pa.timestamp("us"))])
    assert schemas.encoded_spark_types(schemas.encode(schema)) == {
        "region": "string",
        "n": "bigint",
        "at": "timestamp",
    }
    other = pa.schema([("region", pa.string()), ("amount", pa.float64())])
    assert schemas.encoded_spark_types(schemas.encode(other)) == {
        "region": "string",
        "amount": "double",
    }


def test_each_answer_is_the_callers_own() -> None:
    encoded = schemas.encode(pa.schema([("n", pa.int32())]))
    first = schemas.encoded_spark_types(encoded)
    assert first == {"n": "int"}
    first["n"] = "changed"
    assert schemas.encoded_spark_types(encoded) == {"n": "int"}


def test_a_type_spark_cannot_map_leaves_the_types_unknown() -> None:
    encoded = schemas.encode(pa.schema([("t", pa.time64("us"))]))
    assert schemas.encoded_spark_types(encoded) is None
    assert schemas.encoded_spark_types(encoded) is None
