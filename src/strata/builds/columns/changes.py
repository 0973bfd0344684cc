"""Which columns a program change touches: the column lineage the new program's plan
gives each output (planned on the inputs of the day, nothing run or written) against
the lineage recorded with the version the older program built.

A column is ``changed`` when the input fields it comes from, or how, differ; ``added``
and ``removed`` when only one side has it. Staleness stays per dataset: this only says
more about a ``program_changed`` cause.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from strata.builds.execution import execute, incremental
from strata.builds.execution.handles import InputHandle, OutputHandle, require_dataframe
from strata.builds.programs.discovery import Declared, Pipelines
from strata.builds.programs.transforms import DF_OUTPUT
from strata.builds.staleness.causes import Cause, CauseKind
from strata.builds.state import BuildState
from strata.lake.service import Lake, reads_limited_to
from strata.lineage.query.column_lineage import FieldEdge, VersionColumns
from strata.lineage.record.facets import ColumnEdge, column_edges

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from strata.builds.staleness.status import DatasetStatus


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ColumnChanges:
    """An output's columns by what a program change does to them."""

    changed: list[str]
    added: list[str]
    removed: list[str]
    unchanged: list[str]

    def to_dict(self) -> dict[str, list[str]]:
        return dataclasses.asdict(self)


def compare(before: VersionColumns, after: Mapping[str, Any]) -> ColumnChanges:
    """``before`` (a built version's columns and lineage) against ``after`` (a planned
    output: ``{"columns": [...], "fields": columnLineage fields}``)."""
    old = _by_field(before.edges)
    planned = column_edges({"columnLineage": {"fields": after.get("fields") or {}}})
    new = _by_field(frozenset(_edge(e) for e in planned))
    was, now = before.columns, [str(c) for c in after.get("columns") or ()]
    changes = ColumnChanges(
        [], [c for c in now if c not in was], [c for c in was if c not in now], []
    )
    for c in now:
        if c in was:
            same = old.get(c, frozenset()) == new.get(c, frozenset())
            (changes.unchanged if same else changes.changed).append(c)
    return changes


def _edge(e: ColumnEdge) -> FieldEdge:
    how = (e.transformation_type, e.transformation_description)
    return (e.output_field, e.input_namespace, e.input_name, e.input_field, *how)


def _by_field(edges: frozenset[FieldEdge]) -> dict[str, frozenset[FieldEdge]]:
    out: dict[str, set[FieldEdge]] = {}
    for edge in edges:
        out.setdefault(edge[0], set()).add(edge)
    return {name: frozenset(found) for name, found in out.items()}


def program_changes(found: Mapping[str, DatasetStatus]) -> list[tuple[str, str, str]]:
    """``(dataset, transform, new fingerprint)`` of each ``program_changed`` cause of a
    dataset Strata builds (a foreign job's program is not planned)."""
    out = []
    for name, st in found.items():
        for c in st.causes:
            if c.kind is CauseKind.PROGRAM_CHANGED and "foreign_job" not in c.detail:
                new = c.detail.get("new") or {}
                if st.transform is not None and new.get("fingerprint"):
                    out.append((name, st.transform, str(new["fingerprint"])))
    return out


def with_columns(state: BuildState, found: dict[str, DatasetStatus]) -> dict[str, DatasetStatus]:
    """``found`` with each ``program_changed`` cause saying which columns the change
    touches, where the new program's plan was derived and the built version recorded
    its lineage."""
    changes = program_changes(found)
    planned = state.planned_lineage({(job, fp) for _, job, fp in changes})
    if not planned:
        return found
    built = state.current_columns({name for name, _, _ in changes})
    out = dict(found)
    for name, job, fp in changes:
        after = planned.get((job, fp), {}).get(name)
        before = built.get(name)
        if after is None or before is None or not before.edges:
            continue  # one side unknown: a version built before lineage was recorded
        columns = compare(before, after).to_dict()
        st = out[name]
        causes = [_with(c, columns) for c in st.causes]
        out[name] = dataclasses.replace(st, causes=causes)
    return out


def _with(c: Cause, columns: dict[str, list[str]]) -> Cause:
    if c.kind is not CauseKind.PROGRAM_CHANGED or "foreign_job" in c.detail:
        return c
    return dataclasses.replace(c, detail={**c.detail, "columns": columns})


def plan_changed(
    lake: Lake,
    spark: SparkSession,
    state: BuildState,
    pipelines: Pipelines,
    transforms: Collection[str],
) -> list[str]:
    """Plan each of ``transforms`` on its inputs of the day and keep the lineage its
    plan gives its outputs; the transforms whose plan could not be made."""
    failed = []
    for fqn in sorted(transforms):
        item = pipelines.transforms[fqn]
        try:
            outputs = planned_outputs(lake, spark, item)
        except Exception:
            log.warning("could not plan %s to compare its columns", fqn, exc_info=True)
            failed.append(fqn)
            continue
        state.record_planned_lineage(fqn, item.fingerprint, outputs)
    return failed


def planned_outputs(lake: Lake, spark: SparkSession, item: Declared) -> dict[str, dict[str, Any]]:
    """``{output: {"columns", "fields"}}`` of ``item``'s plan on its current inputs: the
    transform is called and its frames analysed, nothing is written."""
    inputs = execute.resolve_inputs(lake, item)
    plan = incremental.whole(item, inputs)
    handles = {p: InputHandle(lake, spark, v, plan.reads[p], item) for p, v in inputs.items()}
    frames: dict[str, Any] = {}
    t = item.transform
    with reads_limited_to(f"transform {item.fqn} ({item.where})", item.input_names):
        if t.kind == "df":
            df = t.func(**{p: h.dataframe() for p, h in handles.items()})
            require_dataframe(item, df, "its return value")
            frames[t.outputs[DF_OUTPUT].name] = df
        else:
            allowed = {v.dataset: v for v in inputs.values()}
            outs = {
                p: OutputHandle(
                    lake, spark, item, None, o.name, allowed, plan, on_write=frames.__setitem__
                )
                for p, o in t.outputs.items()
            }
            t.func(**handles, **outs)
    out = {}
    for name, frame in frames.items():
        fields = execute.derive_lineage(lake, inputs, name, frame) or {}
        out[name] = {"columns": list(frame.columns), "fields": fields}
    return out
