"""Strict JSON: what no store can hold is found by its path, at any depth, and what is
strict reads and hashes exactly as before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata.store import jsoncodec
from strata.store.jsoncodec import NotStrict


@pytest.mark.parametrize(
    ("text", "path", "why"),
    [
        ('{"a": [1, NaN]}', "$.a[1]", "NaN"),
        ('{"a": {"b": Infinity}}', "$.a.b", "Infinity"),
        ('{"a": -Infinity}', "$.a", "-Infinity"),
        ('{"a": 1e400}', "$.a", "Infinity"),
        ('{"x": [' + "9" * 5001 + "]}", "$.x[0]", "5,001 digits"),
        ('{"s": "a\\ud800"}', "$.s", "lone surrogate"),
        ('{"k": {"\\udc00": 1}}', "$.k", "lone surrogate"),
        ("[" * 1100 + "]" * 1100, "$", "levels deep"),
    ],
)
def test_what_no_store_holds_is_named_by_its_path(text: str, path: str, why: str) -> None:
    with pytest.raises(NotStrict) as caught:
        jsoncodec.loads_strict(text.encode())
    assert caught.value.path == path and why in caught.value.why


def test_an_event_deeper_than_its_limit_is_found_without_recursion() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(NotStrict, match="more than 200 levels"):
        jsoncodec.strict_canonical({"facet": deep}, 200)
    found = jsoncodec.strict_problem({"facet": deep}, 200)
    assert found is not None and found[0].startswith("$.facet.a.a")


def test_long_integers_within_the_limit_stay_exact() -> None:
    value = jsoncodec.loads_strict(b'{"n": 123456789012345678901234567890}')
    assert value == {"n": 123456789012345678901234567890}


_STRICT = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(_STRICT)
def test_strict_documents_read_and_hash_as_before(value: Any) -> None:
    doc = {"v": value}
    assert jsoncodec.strict_problem(doc, 200) is None
    assert jsoncodec.strict_canonical(doc, 200) == jsoncodec.canonical(doc)
    text = json.dumps(doc, ensure_ascii=False).encode()
    assert jsoncodec.loads_strict(text) == json.loads(text)
