"""The quick structural check never accepts an event the pinned schema rejects."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lineage_support import corpus, load
from scenario import story

from strata.lineage.record import validate as v

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


def _samples() -> list[dict[str, Any]]:
    files = sorted(p for p in corpus().rglob("*.json") if p.name != "config.json")
    out = [load(str(p.relative_to(corpus()))) for p in files]
    return [e for e in out if isinstance(e, dict)] + story()


SAMPLES = _samples()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*prefix, i))
    return out


def _schema_ok(payload: Any, kind: v.EventKind) -> bool:
    return not list(v._validator(kind).iter_errors(payload))


def test_quick_check_accepts_the_corpus() -> None:
    for event in SAMPLES:
        kind = v.classify(event)
        if _schema_ok(event, kind):
            assert v._quick_valid(event, kind), event


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_quick_check_is_sound(data: st.DataObject) -> None:
    event = copy.deepcopy(data.draw(st.sampled_from(SAMPLES)))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(event)[1:]))
        parent = event
        for part in path[:-1]:
            parent = parent[part]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(JSON)
    try:
        kind = v.classify(event)
    except Exception:
        return
    if v._quick_valid(event, kind):
        assert _schema_ok(event, kind), event
