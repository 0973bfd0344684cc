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
import math
from typing import Any

import orjson

# orjson reads integers beyond 64 bits as floats; json keeps them exact. Text with a run of
# 19 digits goes to json: found by mapping every digit to "0" (a C table lookup, ten times
# faster than a regular expression).
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x2E for i in range(256))
_LONG_RUN = b"0" * 19


class NotStrict(ValueError):
    """A document is valid JSON syntax but not strict JSON (see :func:`strict_problem`)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path} {why}")
        self.path = path
        self.why = why


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
    text = _orjson_canonical(value, _ORJSON_DEPTH)
    if text is not None:
        return text
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def strict_canonical(value: Any, max_depth: int) -> str:
    """:func:`canonical` of a strict document (see :func:`strict_problem`); ValueError
    naming the first problem otherwise. What orjson writes is strict but for its depth,
    so only documents it cannot write are walked."""
    text = _orjson_canonical(value, max_depth)
    if text is not None:
        return text
    found = strict_problem(value, max_depth)
    if found is not None:
        _refuse(found)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_ORJSON_DEPTH = 254  # orjson refuses to write deeper documents


def _orjson_canonical(value: Any, max_depth: int) -> str | None:
    """The canonical text by orjson, or None where it would differ from json's or fail."""
    if type(value) in (dict, list) and _plain(value, max_depth):
        try:
            return orjson.dumps(value, option=_CANONICAL).decode("utf-8")
        except TypeError:  # integers beyond 64 bits, lone surrogates, keys not strings
            pass
    return None


def _plain(value: dict[Any, Any] | list[Any], depth: int) -> bool:
    """``value`` holds nothing but dicts, lists and :data:`_EXACT` values, nested at most
    ``depth`` levels."""
    if depth < 1:
        return False
    for item in value.values() if type(value) is dict else value:
        kind = type(item)
        if kind is dict or kind is list:
            if not _plain(item, depth - 1):
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


# Python refuses to turn longer digit strings into integers (and back), as a guard against
# quadratic conversion: such a number could be read but never written again.
_MAX_INT_DIGITS = 4300


def strict_problem(value: Any, max_depth: int) -> tuple[str, str] | None:
    """Where and why ``value`` is not strict JSON every store can hold, or None.

    Strict JSON, as RFC 8259 parsers read it: no ``NaN`` or infinities (PostgreSQL's json
    type refuses them), no lone surrogates (not Unicode, so not UTF-8), no integer of more
    than 4,300 digits, keys that are strings, and at most ``max_depth`` levels of nesting.
    Walked with a stack, not recursion, so any depth is answered.
    """
    # Entries are (item, key, parent entry, depth): the path is spelled only if needed.
    stack: list[tuple[Any, Any, Any, int]] = [(value, None, None, 1)]
    while stack:
        entry = stack.pop()
        item, _key, _parent, depth = entry
        why = _not_strict(item, depth, max_depth)
        if why is not None:
            return _path(entry), why
        if type(item) is list:
            stack.extend((v, i, entry, depth + 1) for i, v in enumerate(item))
        elif type(item) is dict:
            stack.extend((v, k, entry, depth + 1) for k, v in item.items())
    return None


def _not_strict(item: Any, depth: int, max_depth: int) -> str | None:
    """Why ``item`` itself (not what it holds) is not strict JSON, or None."""
    kind = type(item)
    if kind is dict or kind is list:
        if depth > max_depth:
            return f"nests more than {max_depth} levels deep"
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return f"has a key that is not a string: {key!r}"
                if not _is_unicode(key):
                    return f"has a key with a lone surrogate: {key!r}"
        return None
    if kind is str:
        return None if _is_unicode(item) else "holds a lone surrogate, which is not Unicode"
    if kind is float:
        if math.isnan(item):
            return "is NaN, which strict JSON cannot hold; send a number or text"
        if math.isinf(item):
            return (
                f"is {'' if item > 0 else '-'}Infinity (or beyond a double's range), which "
                "strict JSON cannot hold; send a finite number or text"
            )
        return None
    if kind is int:
        return (
            None
            if item.bit_length() < 14_000 or _writable(item)
            else (f"is an integer of more than {_MAX_INT_DIGITS:,} digits")
        )
    if kind is bool or item is None or isinstance(item, int | float | str):
        return None
    if kind is _LongInt:
        return f"is an integer of {item.digits:,} digits; at most {_MAX_INT_DIGITS:,} are read"
    return f"is a {kind.__name__}, which is not JSON"


def _path(entry: tuple[Any, Any, Any, int]) -> str:
    parts: list[str] = []
    while entry[2] is not None:
        key = entry[1]
        text = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
        parts.append(f"[{key}]" if isinstance(key, int) else f".{text}")
        entry = entry[2]
    path = "$" + "".join(reversed(parts))
    return path if len(path) <= 200 else f"{path[:120]}…{path[-60:]}"


def _writable(number: int) -> bool:
    """Whether Python writes ``number`` in decimal (at most 4,300 digits, about 14,284 bits)."""
    try:
        str(number)
    except ValueError:
        return False
    return True


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def loads_strict(data: bytes) -> Any:
    """``data`` decoded as strict JSON (see :func:`strict_problem`), nested at most
    :data:`READ_DEPTH` levels; :class:`NotStrict` (a ValueError) naming the first problem
    by its JSON path, or json's own error for text that is not JSON. Integers beyond 64
    bits stay exact. Deeper limits (events: 200 levels) are the reader's to check."""
    if _LONG_RUN not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)  # it refuses all that is not strict, and > 1,024 levels
        except orjson.JSONDecodeError:
            pass  # json words most errors better; integers past 64 bits need it
    try:
        # NaN, infinities and over-long integers are read as values the walk below
        # refuses by their path.
        value = json.loads(data, parse_int=_exact_int)
    except RecursionError:
        raise NotStrict("$", f"nests more than {READ_DEPTH} levels deep") from None
    found = strict_problem(value, READ_DEPTH)
    return value if found is None else _refuse(found)


READ_DEPTH = 1024  # orjson's limit; json's recursion stops near it too


def _refuse(found: tuple[str, str]) -> Any:
    raise NotStrict(*found)


class _LongInt:
    """An integer too long for Python to read, kept as its digit count."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _exact_int(text: str) -> int | _LongInt:
    digits = len(text.lstrip("-"))
    return _LongInt(digits) if digits > _MAX_INT_DIGITS else int(text)
