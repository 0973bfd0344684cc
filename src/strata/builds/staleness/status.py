"""Out of date, with every cause: the current declarations against the build catalog.

A derived dataset D, written by transform T, is out of date when D has no version
(``never_built``); T's program version differs from the one that built D's current
version (``program_changed``); an input has a newer current version than the one D was
built from (``input_newer``), unless both versions have the same data fingerprint
(early cutoff: then only a note says the input moved but its rows did not); T declares
an input the build did not read (``input_added``) or the build read one T no longer
declares (``input_removed``); T was renamed since it built D (``renamed``); an input
does not exist and nothing declares it (``input_missing``); or, transitively, an
upstream derived dataset is out of date (``upstream_stale``, ``via`` that input). A
pinned input is out of date only when D was not built from the pinned version. Answers
come from the store alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from strata.builds.columns import changes as column_changes
from strata.builds.execution import incremental
from strata.builds.execution.incremental import Facts
from strata.builds.partitions import planning
from strata.builds.partitions.planning import PartitionFacts, PartitionStatus
from strata.builds.programs.discovery import Declared, Pipelines
from strata.builds.staleness.causes import Cause, CauseKind, Role, Status
from strata.builds.state import BuildState
from strata.builds.state.catalog import Current
from strata.builds.state.checks import StoredResult
from strata.errors import PipelineError, StrataError
from strata.lineage.query.jobs import JobVersionRef


@dataclass
class DatasetStatus:
    """One dataset's line of ``strata status``."""

    name: str
    role: Role
    transform: str | None  # the transform that writes it (orphaned: the one that last did)
    version: int | None
    causes: list[Cause] = field(default_factory=list)
    notes: list[Cause] = field(default_factory=list)
    partitions: list[PartitionStatus] | None = None  # a partitioned output's, by key
    namespace: str | None = None  # a foreign dataset's (a lake dataset's is the lake's)

    def partition_counts(self) -> dict[str, int] | None:
        """Partitions fresh, out of date, and (of those) never built."""
        if self.partitions is None:
            return None
        never = sum(
            1 for p in self.partitions if any(c.kind is CauseKind.NEVER_BUILT for c in p.causes)
        )
        stale = sum(1 for p in self.partitions if p.stale)
        return {
            "fresh": len(self.partitions) - stale,
            "out_of_date": stale,
            "never_built": never,
        }

    @property
    def stale(self) -> bool:
        return bool(self.causes)

    @property
    def status(self) -> Status:
        if self.role is Role.MISSING:
            return Status.MISSING
        if self.role is Role.ORPHANED:
            return Status.ORPHANED
        return Status.OUT_OF_DATE if self.causes else Status.FRESH

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "name": self.name,
                "kind": self.role.value,
                "state": self.status.value,
                "transform": self.transform,
                "version": self.version,
                "stale": self.stale,
                "causes": [c.to_dict() for c in self.causes],
                "notes": [c.to_dict() for c in self.notes],
            }
            | ({"namespace": self.namespace} if self.namespace is not None else {})
            | (
                {
                    "partition_counts": self.partition_counts(),
                    "partitions": [p.to_dict() for p in self.partitions],
                }
                if self.partitions is not None
                else {}
            )
        )


def foreign(state: BuildState) -> dict[str, DatasetStatus]:
    """Datasets written by jobs Strata does not build, while the job has a newer version
    (a new program: a changed ``sql``, ``sourceCode`` or code location) than the one that
    wrote them: out of date by ``program_changed``. Strata does not run such jobs; the
    status says what their owners have to run. Keyed ``namespace:name``."""
    out = {}
    for m in state.programs_moved_on():
        detail = {
            "foreign_job": {"namespace": m.job_namespace, "name": m.job_name},
            "old": _job_version(m.old) | {"run": m.written_by},
            "new": _job_version(m.new),
            "newest_run": {"id": m.newest_run[0], "state": m.newest_run[1]},
        }
        cause = Cause(m.name, CauseKind.PROGRAM_CHANGED, detail=detail)
        out[f"{m.namespace}:{m.name}"] = DatasetStatus(
            m.name, Role.FOREIGN, m.job_name, None, [cause], namespace=m.namespace
        )
    return out


def _job_version(v: JobVersionRef) -> dict[str, Any]:
    return {
        "version": v.uuid,
        "fingerprint": v.fingerprint,
        "program_facets": v.program_facets,
        "created_at": v.created_at.isoformat(),
    }


def _program(fingerprint: str | None, ordinal: int | None) -> dict[str, Any] | None:
    return None if fingerprint is None else {"fingerprint": fingerprint, "ordinal": ordinal}


def own_causes(
    item: Declared,
    dataset: str,
    current: Mapping[str, Current],
    ordinals: Mapping[tuple[str, str], int],
    facts: Facts | None = None,
) -> tuple[list[Cause], list[Cause]]:
    """Rules 1 to 4 for one output of ``item``: its causes, and its early-cutoff notes.
    An incremental transform's appended inputs follow :func:`incremental.input_causes`
    (``facts`` from :func:`incremental_facts`)."""
    cur = current.get(dataset)
    if cur is None:
        return [Cause(dataset, CauseKind.NEVER_BUILT)], []
    facts = facts or Facts()
    causes: list[Cause] = []
    if cur.job is not None and cur.job != item.fqn:
        causes.append(Cause(dataset, CauseKind.RENAMED, detail={"from": cur.job, "to": item.fqn}))
    if cur.program != item.fingerprint:
        old = _program(cur.program, cur.ordinal)
        new = _program(item.fingerprint, ordinals.get((item.fqn, item.fingerprint)))
        detail: dict[str, Any] = {"old": old, "new": new, "job": cur.job}
        if incremental.keeps_semantics(item, cur, facts):
            assert item.transform.incremental is not None
            detail["semantic_version"] = item.transform.incremental.semantic_version
        causes.append(Cause(dataset, CauseKind.PROGRAM_CHANGED, detail=detail))
    notes: list[Cause] = []
    by_rules = incremental.input_causes(item, dataset, current, facts)
    skipped: set[str] = set()
    if by_rules is not None:
        causes += by_rules[0]
        notes += by_rules[1]
        skipped = set(incremental.appended_inputs(item))
    for inp in item.unique_inputs:
        if inp.name in skipped:
            continue
        built = cur.inputs.get(inp.name)
        if built is None:
            causes.append(Cause(dataset, CauseKind.INPUT_ADDED, inp.name))
            continue
        now = current.get(inp.name)
        target = inp.version if inp.version is not None else (now.commit_id if now else None)
        if target is None or built.commit_id == target:
            continue
        versions: dict[str, Any] = {"built_from": built.commit_id, "current": target}
        same = (
            inp.version is None
            and now is not None
            and now.data_fingerprint is not None
            and now.data_fingerprint == built.data_fingerprint
        )
        if same:
            notes.append(Cause(dataset, CauseKind.INPUT_IDENTICAL, inp.name, versions))
        else:
            detail = {**versions, "pinned": inp.version is not None}
            causes.append(Cause(dataset, CauseKind.INPUT_NEWER, inp.name, detail))
    for gone in sorted(cur.inputs.keys() - item.input_names):
        causes.append(Cause(dataset, CauseKind.INPUT_REMOVED, gone))
    return causes, notes


def programs_to_name(
    pipelines: Pipelines,
    current: Mapping[str, Current],
    keys: Sequence[str] | None = None,
    parts: PartitionFacts | None = None,
) -> set[tuple[str, str]]:
    """The program versions a status of ``keys`` (default: all) names by ordinal: those
    of transforms whose outputs, or some partitions of them, were built by another
    program (usually none), and the programs that built those partitions."""
    items = [pipelines.transforms[k] for k in (pipelines.graph.nodes if keys is None else keys)]
    named = {
        (item.fqn, item.fingerprint)
        for item in items
        for name in item.output_names
        if (cur := current.get(name)) is not None and cur.program != item.fingerprint
    }
    records = parts.records if parts is not None else {}
    for item in items if records else ():
        for name in item.output_names:
            older = {r.program for r in records.get(name, {}).values()} - {item.fingerprint}
            named |= {(item.fqn, p) for p in older}
            named |= {(item.fqn, item.fingerprint)} if older else set()
    return named


def _with_ordinals(
    causes: list[Cause], job: str, ordinals: Mapping[tuple[str, str], int]
) -> list[Cause]:
    """Partition causes whose program changed, with each program's ordinal."""
    out = []
    for cause in causes:
        if cause.kind is not CauseKind.PROGRAM_CHANGED:
            out.append(cause)
            continue
        detail = dict(cause.detail)
        for side in ("old", "new"):
            fingerprint = cause.detail[side]["fingerprint"]
            detail[side] = _program(fingerprint, ordinals.get((job, fingerprint)))
        out.append(dataclasses.replace(cause, detail=detail))
    return out


def _partitioned_status(
    item: Declared,
    current: Mapping[str, Current],
    parts: PartitionFacts,
    upstream: Mapping[str, DatasetStatus],
    missing: set[str],
    ordinals: Mapping[tuple[str, str], int],
) -> dict[str, DatasetStatus]:
    """A partitioned transform's outputs: out of date where any partition is."""
    stale: dict[str, set[str] | bool] = {}
    for name in item.input_names:
        up = upstream.get(name)
        if up is not None and up.partitions is not None:
            stale[name] = {p.key for p in up.partitions if p.stale}
        elif up is not None and up.causes:
            stale[name] = True
    _, views = planning.assess_item(item, current, parts, stale)
    out = {}
    for dataset, assessed in views.items():
        found = [
            PartitionStatus(p.key, _with_ordinals(p.causes, item.fqn, ordinals)) if p.causes else p
            for p in assessed
        ]
        causes = [c for p in found for c in p.causes]
        causes += [
            Cause(dataset, CauseKind.INPUT_MISSING, i) for i in item.input_names if i in missing
        ]
        cur = current.get(dataset)
        version = cur.commit_id if cur else None
        out[dataset] = DatasetStatus(
            dataset, Role.DERIVED, item.fqn, version, causes, partitions=found
        )
    return out


def _broken(item: Declared, current: Mapping[str, Current], error: str) -> dict[str, DatasetStatus]:
    """The outputs of a transform whose declaration cannot be built: out of date, saying
    why."""
    return {
        name: DatasetStatus(
            name,
            Role.DERIVED,
            item.fqn,
            current[name].commit_id if name in current else None,
            [Cause(name, CauseKind.BROKEN, detail={"error": error})],
        )
        for name in item.output_names
    }


def from_store(
    state: BuildState,
    pipelines: Pipelines,
    current: Mapping[str, Current],
    keys: Sequence[str] | None = None,
) -> dict[str, DatasetStatus]:
    """:func:`assess` with every fact it needs read from the store: the one place status,
    ``build --dry-run`` and the API gather causes."""
    order = pipelines.graph.everything if keys is None else keys
    items = [pipelines.transforms[k] for k in order]
    facts = incremental.gather(state, items, current)
    declared = planning.declared_partitioning(pipelines.transforms.values())
    parts = planning.gather(state, items, current, declared)
    ordinals = state.ordinals(programs_to_name(pipelines, current, keys, parts))
    failures = state.last_check_failures([i.fqn for i in items if i.check_names])
    found = assess(pipelines, current, ordinals, keys, facts, parts, failures)
    return column_changes.with_columns(state, found)


def check_causes(
    item: Declared,
    dataset: str,
    current: Mapping[str, Current],
    failures: Mapping[str, Sequence[StoredResult]],
    stale_partitions: set[str] | None = None,
) -> list[Cause]:
    """``check_failed`` causes: the checks still declared that stopped the transform's
    last build, unless a later build committed ``dataset`` (for a partitioned output: of
    the partitions still out of date)."""
    found = failures.get(item.fqn, ())
    if not found:
        return []
    names = item.check_names
    cur = current.get(dataset)
    out = []
    for stored in found:
        r = stored.result
        if r.name not in names:
            continue
        if stale_partitions is not None:
            if r.partition is not None and r.partition not in stale_partitions:
                continue
        elif cur is not None and cur.run is not None and cur.run > stored.run:
            continue
        detail: dict[str, Any] = {
            "check": r.name,
            "expectation": r.expectation,
            "judged": r.dataset,
            "side": r.side,
            "failing": r.failing,
            "run": stored.run,
            "partition": r.partition,
        }
        if "error" in r.observed:
            detail["error"] = r.observed["error"]
        out.append(Cause(dataset, CauseKind.CHECK_FAILED, detail=detail))
    return out


def assess(
    pipelines: Pipelines,
    current: Mapping[str, Current],
    ordinals: Mapping[tuple[str, str], int],
    keys: Sequence[str] | None = None,
    facts: Facts | None = None,
    parts: PartitionFacts | None = None,
    failures: Mapping[str, Sequence[StoredResult]] | None = None,
) -> dict[str, DatasetStatus]:
    """Every dataset the pipelines name or ``current`` holds, with its causes, by name.

    ``keys`` (a post-order closed upstream, as ``Graph.post_order`` gives) limits the
    transforms assessed; ``current`` must then hold at least their inputs and outputs.
    """
    out: dict[str, DatasetStatus] = {}
    graph = pipelines.graph
    order = graph.everything if keys is None else keys
    items = [pipelines.transforms[k] for k in order]
    missing = {
        name
        for item in items
        for name in item.input_names
        if name not in current and name not in graph.producer
    }
    for item in items:
        try:
            if item.transform.broken is not None:
                raise PipelineError(item.transform.broken)
            if planning.by_partition(item, parts or PartitionFacts()):
                found = _partitioned_status(
                    item, current, parts or PartitionFacts(), out, missing, ordinals
                )
                for name, st in found.items():
                    stale = {p.key for p in st.partitions or () if p.stale}
                    st.causes += check_causes(item, name, current, failures or {}, stale)
                out.update(found)
                continue
        except StrataError as exc:  # this transform's declaration; the rest are answered
            out.update(_broken(item, current, exc.message))
            continue
        out_of_date = [i for i in item.input_names if i in out and out[i].causes]
        for dataset in item.output_names:
            causes, notes = own_causes(item, dataset, current, ordinals, facts)
            if missing:
                causes += [
                    Cause(dataset, CauseKind.INPUT_MISSING, i)
                    for i in item.input_names
                    if i in missing
                ]
            causes += [Cause(dataset, CauseKind.UPSTREAM_STALE, i) for i in out_of_date]
            causes += check_causes(item, dataset, current, failures or {})
            cur = current.get(dataset)
            version = cur.commit_id if cur else None
            out[dataset] = DatasetStatus(dataset, Role.DERIVED, item.fqn, version, causes, notes)
    for name in missing:
        out[name] = DatasetStatus(name, Role.MISSING, None, None)
    for name, cur in current.items():
        if name not in out:
            # Built by a transform no loaded pipeline declares any more: orphaned, not raw.
            role = Role.ORPHANED if cur.job is not None else Role.RAW
            out[name] = DatasetStatus(name, role, cur.job, cur.commit_id)
    return dict(sorted(out.items()))
