"""JSON columns: the fast codec reads and writes exactly what ``json`` does, on both backends."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _canonical_by_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("text", [*TEXTS, '{"z": {"b": [true, false], "a": ""}, "\u00e9": 0}'])
def test_canonical_text_is_what_json_writes(text: str) -> None:
    value = json.loads(text)
    assert jsoncodec.canonical(value) == _canonical_by_json(value)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_canonical_text_is_what_json_writes_for_any_value(value: object) -> None:
    # Event ids are hashes of this text: any difference would store an event sent again
    # as a second event.
    assert jsoncodec.canonical(value) == _canonical_by_json(value)


def test_canonical_text_falls_back_where_orjson_writes_differently() -> None:
    for value in ({"f": 1e-05}, {"n": [math.nan]}, {"big": 2**64}, ["\ud800"], {1: "a"}):
        assert jsoncodec.canonical(value) == _canonical_by_json(value)


def test_json_text_is_stored_as_it_is() -> None:
    text = jsoncodec.JsonText('{"b":1,"a":[true]}')
    assert jsoncodec.dumps(text) is text
    # A plain string is a JSON string value, not JSON text.
    assert jsoncodec.dumps('{"b":1}') == '"{\\"b\\":1}"'


def test_json_columns_round_trip_on_the_backend(engine: sa.Engine) -> None:
    e = s.lineage_events
    values = [
        {"a": [1, 2.5, -0.0, 1e16], "big": 2**70, "u": "h\u00e9 \U0001f600", "n": None},
        jsoncodec.JsonText('{"z": 1, "a": {"nested": [1, 2, 3]}}'),
    ]
    with engine.begin() as conn:
        for i, value in enumerate(values):
            now = datetime.now(UTC)
            row = {"uuid": f"u{i}", "payload_hash": f"h{i}", "payload": value}
            conn.execute(e.insert(), {**row, "event_time": now, "received_at": now})
        got = dict(conn.execute(sa.select(e.c.payload_hash, e.c.payload)).all())
    assert got["h0"] == values[0]
    assert got["h1"] == {"z": 1, "a": {"nested": [1, 2, 3]}}
