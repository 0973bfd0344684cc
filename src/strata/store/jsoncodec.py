"""JSON for the store's JSON columns: orjson where it reads and writes what ``json`` does.

Every engine encodes and decodes its JSON columns with :func:`dumps` and :func:`loads`
(``create_engine(json_serializer=…, json_deserializer=…)``): orjson is several times
faster than ``json``, and JSON columns are a large part of what lineage ingest writes and
reads. Where the two disagree, ``json`` is used, so values round-trip exactly as before:
orjson reads integers beyond 64 bits as floats and refuses ``NaN``, lone surrogates and
more; it writes ``NaN`` and infinities as ``null`` and refuses integers beyond 64 bits.

A value that is already JSON text (:class:`JsonText`) is stored as it is, so a payload
serialised once (to hash it) is not serialised again.

:func:`canonical` is the text an event's hash is taken of, byte for byte what
``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` writes.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# orjson reads integers beyond 64 bits as floats; json keeps them exact. Text with a run of
# 19 digits goes to json: found by mapping every digit to "0" (a C table lookup, ten times
# faster than a regular expression).
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x2E for i in range(256))
_LONG_RUN = b"0" * 19


class JsonText(str):
    """JSON text already serialised: :func:`dumps` passes it through unchanged."""

    __slots__ = ()


def dumps(value: Any) -> str:
    """``value`` as JSON text, as ``json.dumps`` would read back."""
    if type(value) is JsonText:
        return value
    try:
        out = orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits, keys that are not strings
        return json.dumps(value, ensure_ascii=False)
    if b"null" in out:  # maybe NaN or an infinity, which orjson writes as null
        return json.dumps(value, ensure_ascii=False)
    return out.decode("utf-8")


# What orjson writes byte for byte as json does: the JSON types but floats (it writes
# 1e-05 as 0.00001 and NaN as null), which go to json.
_EXACT = frozenset({str, int, bool, type(None)})
_CANONICAL = orjson.OPT_SORT_KEYS


def canonical(value: Any) -> str:
    """``value`` as sorted, compact JSON text, exactly as ``json.dumps`` writes it.

    Hashes are taken of this text, so it must never change: orjson writes it (ten times
    faster) only for documents it writes identically, made of dicts, lists, strings,
    integers, booleans and nulls."""
    if type(value) in (dict, list) and _plain(value):
        try:
            return orjson.dumps(value, option=_CANONICAL).decode("utf-8")
        except TypeError:  # integers beyond 64 bits, lone surrogates, keys not strings
            pass
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _plain(value: dict[Any, Any] | list[Any]) -> bool:
    """``value`` holds nothing but dicts, lists and :data:`_EXACT` values."""
    for item in value.values() if type(value) is dict else value:
        kind = type(item)
        if kind is dict or kind is list:
            if not _plain(item):
                return False
        elif kind not in _EXACT:
            return False
    return True


def loads(text: str | bytes | bytearray | memoryview | None) -> Any:
    """Decode JSON text as ``json.loads`` would."""
    if text is None:
        return None
    if isinstance(text, memoryview):
        text = bytes(text)
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _LONG_RUN not in data.translate(_DIGITS):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:  # NaN and lone surrogates, which json accepts
            pass
    return json.loads(text)
