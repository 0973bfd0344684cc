"""Lineage derived once per plan. [seam]

Deriving a plan's column lineage waits on Spark's JSON of the plan (tens of ms for a
join and an aggregation). Most builds run an unchanged program on inputs whose schemas
did not change: the same plan, whose lineage is known. A plan is known by its
signature: the verbose tree of the analyzed plan, every field shown, with each
expression id renumbered by first appearance (Spark numbers them anew in every
analysis) and without the files its leaves read (the leaves are matched to datasets on
every build). Literals, expressions, joins and names all show in it, so a plan that
would derive other lineage has another signature.

Derived lineage is kept in the store (``plan_lineage``), so a build in a new process
finds it too, and the last few in memory.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from strata.builds.columns import plan_lineage
from strata.builds.columns.plan_lineage import Derived
from strata.builds.state import BuildState

_IDS = re.compile(r"#\d+")
_KEPT = 256
_MAX_FIELDS = 2**31 - 1  # show every field: Spark elides past maxToStringFields

_memory: OrderedDict[str, Derived] = OrderedDict()
_lock = threading.Lock()


def signature(plan: Any, names: Sequence[str]) -> str:
    """The plan's signature with the frame's column ``names``."""
    tree = str(plan.treeString(True, False, _MAX_FIELDS, False))
    ids: dict[str, str] = {}
    renumbered = _IDS.sub(lambda m: ids.setdefault(m[0], f"#{len(ids)}"), tree)
    text = "\n".join([renumbered, *names])
    return hashlib.sha256(text.encode()).hexdigest()


def derived(state: BuildState, plan: Any, names: Sequence[str]) -> Derived | None:
    """The lineage of ``plan``: from memory, else from the store, else derived (and
    kept in both)."""
    key = signature(plan, names)
    with _lock:
        found = _memory.get(key)
        if found is not None:
            _memory.move_to_end(key)
            return found
    text = state.plan_lineage(key)
    if text is not None:
        found = plan_lineage.decode(text)
    else:
        found = plan_lineage.derive_plan(plan, names)
        if found is None:
            return None
        state.keep_plan_lineage(key, plan_lineage.encode(found))
    with _lock:
        _memory[key] = found
        while len(_memory) > _KEPT:
            _memory.popitem(last=False)
    return found


def forget() -> None:
    """Empty the memory (the store keeps what it has)."""
    with _lock:
        _memory.clear()
