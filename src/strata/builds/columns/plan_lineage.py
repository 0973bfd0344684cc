"""Column lineage from a Spark plan: for each output column, the input columns it came
from and how (OpenLineage's transformation types).

The analyzed logical plan arrives as Spark's own JSON (one call into the JVM): a
pre-order list of nodes, each with ``num-children``, whose expressions are pre-order
lists too. Walking it bottom-up gives every attribute the leaf columns it derives from.
A column's own expression makes DIRECT edges (IDENTITY for a plain reference or rename,
TRANSFORMATION for any computation, AGGREGATION under an aggregate); what selects,
joins, groups, sorts or windows the rows makes INDIRECT edges to every output column, as
OpenLineage's Spark integration does. Leaves are matched to the lake datasets they read
by their files (:func:`leaf_datasets`), so a self-join, whose second side Spark gives
new attribute ids, still names the right dataset.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DIRECT, INDIRECT = "DIRECT", "INDIRECT"
_RANK = {"IDENTITY": 0, "TRANSFORMATION": 1, "AGGREGATION": 2}


@dataclass(frozen=True, order=True)
class How:
    """One transformation: ``type`` DIRECT or INDIRECT and its ``subtype``."""

    type: str
    subtype: str

    def then(self, outer: How) -> How:
        """This transformation seen through ``outer``: what ``outer`` does to the rows when
        it is INDIRECT (a sort by a column sorts by all it came from), else this one when
        it is, else DIRECT with the stronger of the two subtypes."""
        if outer.type == INDIRECT:
            return outer
        if self.type == INDIRECT:
            return self
        stronger = max(self.subtype, outer.subtype, key=lambda s: _RANK.get(s, 1))
        return How(DIRECT, stronger)


IDENTITY = How(DIRECT, "IDENTITY")
Source = tuple[int, str]  # (leaf number, column name)
Lineage = dict[Source, set[How]]


@dataclass
class _Node:
    """A plan or expression node: its JSON fields and children."""

    kind: str
    fields: dict[str, Any]
    children: list[_Node] = field(default_factory=list)


def _tree(items: Sequence[dict[str, Any]], at: int = 0) -> tuple[_Node, int]:
    """The node at ``items[at]`` with its subtree, and the index after it."""
    item = items[at]
    node = _Node(str(item.get("class", "")).rsplit(".", 1)[-1], item)
    at += 1
    for _ in range(int(item.get("num-children", 0))):
        child, at = _tree(items, at)
        node.children.append(child)
    return node, at


def _expr(value: Any) -> _Node | None:
    """An expression field (a pre-order list) as a tree."""
    if isinstance(value, list) and value and isinstance(value[0], dict) and "class" in value[0]:
        return _tree(value)[0]
    return None


def _exprs(value: Any) -> list[_Node]:
    """A field holding a list of expressions."""
    if not isinstance(value, list):
        return []
    return [e for v in value if (e := _expr(v)) is not None]


def _id(node: _Node) -> int | None:
    ident = node.fields.get("exprId")
    return int(ident["id"]) if isinstance(ident, dict) and "id" in ident else None


def _refs(node: _Node | None) -> list[int]:
    if node is None:
        return []
    found = [i for i in [_id(node)] if node.kind == "AttributeReference" and i is not None]
    for child in node.children:
        found += _refs(child)
    return found


@dataclass
class _Walk:
    """The lineage of every attribute seen so far, and each leaf's columns."""

    of: dict[int, Lineage] = field(default_factory=dict)
    leaves: list[list[tuple[int, str]]] = field(default_factory=list)

    def through(self, refs: Iterable[int], how: How) -> Lineage:
        """What ``refs`` derive from, seen through ``how``."""
        out: Lineage = {}
        for ref in refs:
            for source, hows in self.of.get(ref, {}).items():
                out.setdefault(source, set()).update(h.then(how) for h in hows)
        return out


def _merge(into: Lineage, more: Lineage) -> Lineage:
    for source, hows in more.items():
        into.setdefault(source, set()).update(hows)
    return into


def _column(walk: _Walk, node: _Node, how: How = IDENTITY) -> Lineage:
    """What an expression's value derives from (its own edges, before the plan's)."""
    kind = node.kind
    if kind == "AttributeReference":
        ident = _id(node)
        return walk.through([ident] if ident is not None else [], how)
    if kind == "Alias":
        return _column(walk, node.children[0], how) if node.children else {}
    computed = how.then(How(DIRECT, "TRANSFORMATION"))
    if kind == "AggregateExpression":
        computed = how.then(How(DIRECT, "AGGREGATION"))
    out: Lineage = {}
    if kind in ("CaseWhen", "If"):
        tests = set(range(0, 2 * (len(node.children) // 2), 2)) if kind == "CaseWhen" else {0}
        for i, child in enumerate(node.children):
            if i in tests:
                _merge(out, walk.through(_refs(child), How(INDIRECT, "CONDITIONAL")))
            else:
                _merge(out, _column(walk, child, computed))
        return out
    if kind == "WindowExpression" and len(node.children) == 2:
        spec = node.children[1]
        _merge(out, _column(walk, node.children[0], how.then(How(DIRECT, "AGGREGATION"))))
        return _merge(out, walk.through(_refs(spec), How(INDIRECT, "WINDOW")))
    for child in node.children:
        _merge(out, _column(walk, child, computed))
    return out


def _visit(walk: _Walk, node: _Node) -> tuple[list[int], Lineage]:
    """The node's output attribute ids (in order) and the rows' INDIRECT lineage."""
    outs = [_visit(walk, child) for child in node.children]
    indirect: Lineage = {}
    for _, rows in outs:
        _merge(indirect, rows)
    f, kind = node.fields, node.kind
    if not node.children:
        return _leaf(walk, f), indirect
    first = outs[0][0]
    if kind in ("Project", "Aggregate", "Window", "Expand", "Generate"):
        if kind == "Aggregate":
            grouping = [r for e in _exprs(f.get("groupingExpressions")) for r in _refs(e)]
            _merge(indirect, walk.through(grouping, How(INDIRECT, "GROUP_BY")))
        return _projected(walk, node, first), indirect
    if kind == "Filter":
        _merge(indirect, walk.through(_refs(_expr(f.get("condition"))), How(INDIRECT, "FILTER")))
        return first, indirect
    if kind == "Join":
        cond = _refs(_expr(f.get("condition")))
        _merge(indirect, walk.through(cond, How(INDIRECT, "JOIN")))
        join_type = str((f.get("joinType") or {}).get("object", ""))
        left_only = "LeftSemi" in join_type or "LeftAnti" in join_type
        return first if left_only else first + (outs[1][0] if len(outs) > 1 else []), indirect
    if kind == "Sort":
        order = [r for e in _exprs(f.get("order")) for r in _refs(e)]
        _merge(indirect, walk.through(order, How(INDIRECT, "SORT")))
        return first, indirect
    if kind == "Union":
        for position, ident in enumerate(first):
            for other, _ in outs[1:]:
                if position < len(other):
                    _merge(walk.of.setdefault(ident, {}), walk.of.get(other[position], {}))
        return first, indirect
    return _opaque(walk, node, outs), indirect


def _leaf(walk: _Walk, f: Mapping[str, Any]) -> list[int]:
    """A leaf's columns: each its own source (leaf number, name)."""
    number, ids, columns = len(walk.leaves), [], []
    for attr in _exprs(f.get("output")):
        ident = _id(attr)
        if ident is None:
            continue
        name = str(attr.fields.get("name"))
        walk.of[ident] = {(number, name): {IDENTITY}}
        ids.append(ident)
        columns.append((ident, name))
    walk.leaves.append(columns)
    return ids


def _projected(walk: _Walk, node: _Node, child_out: list[int]) -> list[int]:
    """Nodes that compute named columns from their child's rows."""
    f, kind = node.fields, node.kind
    if kind == "Generate":
        generated = _column(walk, _expr(f.get("generator")) or _Node("", {}))
        skip = {int(i) for i in f.get("unrequiredChildIndex") or []}
        kept = [a for i, a in enumerate(child_out) if i not in skip]
        made = [i for e in _exprs(f.get("generatorOutput")) if (i := _id(e)) is not None]
        for ident in made:
            walk.of[ident] = {
                s: {h.then(How(DIRECT, "TRANSFORMATION")) for h in hows}
                for s, hows in generated.items()
            }
        return kept + made
    if kind == "Expand":
        out = [i for e in _exprs(f.get("output")) if (i := _id(e)) is not None]
        for row in f.get("projections") or []:
            for ident, e in zip(out, _exprs(row), strict=False):
                _merge(walk.of.setdefault(ident, {}), _column(walk, e))
        return out
    named = _exprs(
        f.get(
            "windowExpressions"
            if kind == "Window"
            else "aggregateExpressions"
            if kind == "Aggregate"
            else "projectList"
        )
    )
    out = list(child_out) if kind == "Window" else []
    for e in named:
        key = _id(e)
        if key is None:
            continue
        if e.kind != "AttributeReference":
            walk.of[key] = _column(walk, e)
        out.append(key)
    return out


def _opaque(walk: _Walk, node: _Node, outs: list[tuple[list[int], Lineage]]) -> list[int]:
    """Any other node: passes its child's columns on, or, when it declares columns of
    its own (a pandas function's), makes each of them from all of its child's."""
    declared = [i for e in _exprs(node.fields.get("output")) if (i := _id(e)) is not None]
    inputs = [i for ids, _ in outs for i in ids]
    if not declared:
        return inputs if len(outs) > 1 else outs[0][0]
    made = walk.through(inputs, How(DIRECT, "TRANSFORMATION"))
    for ident in declared:
        if ident not in inputs:
            walk.of[ident] = {s: set(h) for s, h in made.items()}
    return declared


@dataclass(frozen=True)
class FieldLineage:
    """An output column's sources: (leaf number, column) -> transformations."""

    name: str
    sources: dict[Source, frozenset[How]]


def derive(plan_json: str, names: Sequence[str]) -> Derived | None:
    """Each output column's lineage from an analyzed plan's JSON (``names``: the
    frame's columns, in order), and the plan's leaf count; None when the plan's output
    is not those columns."""
    root, _ = _tree(json.loads(plan_json))
    walk = _Walk()
    out, indirect = _visit(walk, root)
    if len(out) != len(names):
        return None
    fields = []
    for ident, name in zip(out, names, strict=True):
        sources: Lineage = {}
        _merge(sources, walk.of.get(ident, {}))
        _merge(sources, indirect)
        fields.append(FieldLineage(name, {s: frozenset(h) for s, h in sources.items()}))
    return fields, len(walk.leaves)


def derive_plan(plan: Any, names: Sequence[str]) -> Derived | None:
    """:func:`derive` of an analyzed plan (a JVM object), through its JSON."""
    return derive(str(plan.toJSON()), names)


def facet_fields(
    fields: Sequence[FieldLineage],
    dataset_of: Callable[[int], tuple[str, str] | None],
) -> dict[str, Any]:
    """OpenLineage ``columnLineage`` ``fields``: each output column's input fields with
    their transformations; ``dataset_of`` names a leaf's (namespace, dataset), None for
    a leaf that is not a lake dataset (literal rows, a range)."""
    out: dict[str, Any] = {}
    for f in fields:
        inputs = []
        for (leaf, column), hows in sorted(f.sources.items()):
            where = dataset_of(leaf)
            if where is None:
                continue
            inputs.append(
                {
                    "namespace": where[0],
                    "name": where[1],
                    "field": column,
                    "transformations": [
                        {"type": h.type, "subtype": h.subtype, "description": "", "masking": False}
                        for h in sorted(hows)
                    ],
                }
            )
        # Two output columns of one name (``select *`` over a join) are one field.
        before = out.get(f.name, {}).get("inputFields", [])
        out[f.name] = {"inputFields": _merged(before + inputs)}
    return out


def _merged(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per input field (a self-join reads one field through two leaves)."""
    by: dict[tuple[str, str, str], dict[str, Any]] = {}
    for i in inputs:
        key = (i["namespace"], i["name"], i["field"])
        if key in by:
            seen = by[key]["transformations"]
            seen += [t for t in i["transformations"] if t not in seen]
        else:
            by[key] = i
    return list(by.values())


Derived = tuple[list[FieldLineage], int]  # each column's lineage, the plan's leaf count


def encode(derived: Derived) -> str:
    """``derived`` as JSON text, for :func:`decode`."""
    fields, leaves = derived
    rows = [
        [
            f.name,
            [
                [leaf, col, sorted([h.type, h.subtype] for h in hows)]
                for (leaf, col), hows in sorted(f.sources.items())
            ],
        ]
        for f in fields
    ]
    return json.dumps([leaves, rows])


def decode(text: str) -> Derived:
    leaves, fields = json.loads(text)
    out = []
    for name, sources in fields:
        found: dict[Source, frozenset[How]] = {}
        for leaf, col, hows in sources:
            found[(int(leaf), str(col))] = frozenset(How(t, st) for t, st in hows)
        out.append(FieldLineage(str(name), found))
    return out, int(leaves)


def plan_and_leaves(frame: Any) -> tuple[Any, list[str | None]]:
    """A Spark frame's analyzed plan (a JVM object), and the first file each of its
    leaves reads (None for a leaf that reads no files), in the plan's pre-order."""
    plan = frame._jdf.queryExecution().analyzed()
    leaves = plan.collectLeaves()
    files: list[str | None] = []
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() != "LogicalRelation":
            files.append(None)
            continue
        roots = leaf.relation().location().rootPaths()
        files.append(str(roots.head().toString()) if roots.nonEmpty() else None)
    return plan, files


def column_lineage_fields(
    frame: Any,
    namespace: str,
    dataset_of_file: Callable[[str], str | None],
    derived_of: Callable[[Any, Sequence[str]], Derived | None] | None = None,
) -> dict[str, Any] | None:
    """The ``columnLineage`` ``fields`` of what ``frame`` computes, its leaves named by
    ``dataset_of_file``; None when the plan's leaves cannot be matched to its JSON.
    ``derived_of(plan, columns)`` may answer a plan seen before (default: derive it)."""
    plan, files = plan_and_leaves(frame)
    derived = (derived_of or derive_plan)(plan, frame.columns)
    if derived is None or derived[1] != len(files):
        return None
    fields = derived[0]
    names = [dataset_of_file(f) if f is not None else None for f in files]

    def dataset_of(leaf: int) -> tuple[str, str] | None:
        name = names[leaf]
        return (namespace, name) if name is not None else None

    return facet_fields(fields, dataset_of)
