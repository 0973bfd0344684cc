"""Following one column: down to the raw fields it was derived from (``strata trace
--column``), and out to every field derived from it (``strata impact``).

Both read the column lineage each build stores with the versions it writes (see
:mod:`strata.builds.columns.plan_lineage`); a field names the exact version of its dataset, as
the dataset trace does.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from strata.builds.state.facade import BuildState, ColumnWalk
from strata.errors import InvalidArgument
from strata.lineage.query.column_lineage import FieldNode, InputField, field_node_id

DEPTH = 20


def parse_column_ref(text: str) -> tuple[str, str]:
    """``DATASET.COLUMN``: the column is what follows the last dot."""
    dataset, dot, column = text.rpartition(".")
    if not dot or not dataset or not column:
        raise InvalidArgument(
            f"{text!r} names no column; write DATASET.COLUMN, such as clean/clicks.user",
            value=text,
        )
    return dataset, column


def column_trace(
    state: BuildState,
    dataset: str,
    version: int | None,
    column: str,
    *,
    indirect: bool = False,
    depth: int = DEPTH,
) -> dict[str, Any]:
    """The tree of fields ``column`` of ``dataset@version`` was derived from, each at the
    version its producing run read, with how (``DIRECT/IDENTITY``…), and the raw fields
    (derived from nothing recorded) it reaches. Only the fields its values came from
    (DIRECT edges), unless ``indirect``: then also those that filtered, joined, grouped
    or ordered them. A field met again (a diamond) is ``repeated``, its inputs shown
    where it first was."""
    walk = state.column_walk(dataset, version, column, downstream=False, depth=depth)
    by_id = {n.id: n for n in walk.nodes}
    seen: set[str] = set()
    raw: dict[str, dict[str, Any]] = {}

    def subtree(node: FieldNode, how: str | None) -> dict[str, Any]:
        out = _field(walk, node) | ({"transformation": how} if how else {})
        if node.id in seen:
            return out | {"repeated": True, "inputs": []}
        seen.add(node.id)
        edges = [i for i in node.input_fields if indirect or _is_direct(i)]
        inputs = [(by_id.get(_input_id(i)), _how(i)) for i in edges]
        children = [subtree(n, h) for n, h in inputs if n is not None]
        if not node.input_fields and how is not None:
            raw[node.id] = _field(walk, node)
        return out | {"inputs": children}

    tree = subtree(by_id[walk.start], None)
    return tree | {"raw": [raw[k] for k in sorted(raw)]}


def column_impact(
    state: BuildState, dataset: str, column: str, depth: int = DEPTH, *, direct: bool = False
) -> dict[str, Any]:
    """Every field of a current dataset version derived from ``column`` of ``dataset``,
    nearest first: each with the field it was derived from, how, and its ``kind``:
    DIRECT when its values are computed from the column through DIRECT edges alone,
    INDIRECT when the column only filtered, joined, grouped or ordered its way there.
    With ``direct``, only the DIRECT ones; ``total`` counts both."""
    walk = state.column_walk(dataset, None, column, downstream=True, depth=depth)
    by_id = {n.id: n for n in walk.nodes}
    start = by_id[walk.start]
    computed = _reach(by_id, start, direct_only=True)
    found = []
    for node_id, reached in _reach(by_id, start, direct_only=False).items():
        hops, parent, edge = computed.get(node_id, reached)
        found.append(
            _field(walk, by_id[node_id])
            | {
                "hops": hops,
                "from": _field(walk, by_id[parent]),
                "kind": "DIRECT" if node_id in computed else "INDIRECT",
                "transformation": _how(edge),
            }
        )
    found.sort(key=lambda f: (f["hops"], f["dataset"], f["column"]))
    total, n_direct = len(found), len(computed)
    if direct:
        found = [f for f in found if f["kind"] == "DIRECT"]
    return _field(walk, start) | {"total": total, "direct": n_direct, "dependents": found}


def _reach(
    by_id: dict[str, FieldNode], start: FieldNode, *, direct_only: bool
) -> dict[str, tuple[int, str, InputField]]:
    """Each field reachable downstream of ``start``: (hops, the field it was reached from,
    that edge), breadth first so hops are fewest."""
    out: dict[str, tuple[int, str, InputField]] = {}
    queue = deque([(start, 0)])
    while queue:
        node, hops = queue.popleft()
        for _, child_id in node.out_edges:
            if child_id in out or child_id == start.id:
                continue
            child = by_id[child_id]
            edge = next(i for i in child.input_fields if _input_id(i) == node.id)
            if direct_only and not _is_direct(edge):
                continue
            out[child_id] = (hops + 1, node.id, edge)
            queue.append((child, hops + 1))
    return out


def _field(walk: ColumnWalk, node: FieldNode) -> dict[str, Any]:
    version = walk.commits.get(node.dataset_version or "")
    return {
        "namespace": node.namespace,
        "dataset": node.dataset,
        "version": version,
        "column": node.field,
        "type": node.field_type,
    }


def _input_id(field: InputField) -> str:
    return field_node_id(field.namespace, field.dataset, field.field, field.dataset_version)


def _is_direct(field: InputField) -> bool:
    return field.transformation_type == "DIRECT"


def _how(field: InputField) -> str | None:
    return field.transformation_description or field.transformation_type
