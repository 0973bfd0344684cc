"""JSON columns: the fast codec reads and writes exactly what ``json`` does, on both backends."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from strata.store import jsoncodec
from strata.store import schema as s

TEXTS = [
    "{}",
    '{"a": [1, 2.5, -0.0, 1e16, 1e-07, "x"]}',
    '{"big": 18446744073709551616, "neg": -9223372036854775809}',
    "[1.2345678901234567890123]",
    '{"nan": NaN, "inf": [Infinity, -Infinity]}',
    '"\\ud800"',
    '{"unicode": "h\\u00e9 \\u65e5\\u672c \\ud83d\\ude00", "ctl": "a\\u0001\\n\\t\\"\\\\"}',
    '{"null": null, "s": "null"}',
    "null",
]


@pytest.mark.parametrize("text", TEXTS)
def test_loads_decodes_as_json_does(text: str) -> None:
    want = json.loads(text)
    assert repr(jsoncodec.loads(text)) == repr(want)
    assert repr(jsoncodec.loads(text.encode())) == repr(want)
    assert repr(jsoncodec.loads(memoryview(text.encode()))) == repr(want)
    assert jsoncodec.loads(None) is None


@pytest.mark.parametrize("text", TEXTS)
def test_dumps_round_trips_as_json_does(text: str) -> None:
    value = json.loads(text)
    assert repr(json.loads(jsoncodec.dumps(value))) == repr(value)


def test_dumps_keeps_nan_and_long_integers() -> None:
    # orjson would write NaN as null and refuse integers beyond 64 bits.
    assert jsoncodec.dumps({"x": math.nan}) == '{"x": NaN}'
    assert json.loads(jsoncodec.dumps([2**70])) == [2**70]
    assert jsoncodec.dumps({1: "a"}) == '{"1": "a"}'


def test_json_text_is_stored_as_it_is() -> None:
    text = jsoncodec.JsonText('{"b":1,"a":[true]}')
    assert jsoncodec.dumps(text) is text
    # A plain string is a JSON string value, not JSON text.
    assert jsoncodec.dumps('{"b":1}') == '"{\\"b\\":1}"'


def test_json_columns_round_trip_on_the_backend(engine: sa.Engine) -> None:
    p = s.lineage_pending
    values = [
        {"a": [1, 2.5, -0.0, 1e16], "big": 2**70, "u": "h\u00e9 \U0001f600", "n": None},
        jsoncodec.JsonText('{"z": 1, "a": {"nested": [1, 2, 3]}}'),
    ]
    with engine.begin() as conn:
        for i, value in enumerate(values):
            row = {"payload_hash": f"h{i}", "payload": value, "received_at": datetime.now(UTC)}
            conn.execute(p.insert(), row)
        got = dict(conn.execute(sa.select(p.c.payload_hash, p.c.payload)).all())
    assert got["h0"] == values[0]
    assert got["h1"] == {"z": 1, "a": {"nested": [1, 2, 3]}}
