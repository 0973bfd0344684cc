"""Incremental builds: what an ``@incremental`` transform reads and whether it runs whole.

A build of an incremental transform reads, of each input not in ``snapshot_inputs``,
the rows appended after the version its output's current version was built from, up
to the version this build reads: the range ``(from, to]``. It runs whole instead (every
read sees everything, its outputs are replaced) the first time, with ``--full``, when
its ``semantic_version`` changed (without one: its program changed), when an input was
rewritten in the range (a SNAPSHOT, UPDATE or DELETE), or when something other than
this transform wrote an output since. The facts come from the store in two statements
(:class:`Facts`); the rules are pure.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from strata.builds.programs.discovery import Declared
from strata.builds.staleness.causes import Cause, CauseKind
from strata.builds.state.build_reads import BuildRead, InputRead
from strata.builds.state.catalog import Current
from strata.lake.registry import Moved, Version

Mode = Literal["incremental", "full"]
Span = tuple[str, int, int]  # (input dataset, after, upto)


@dataclass(frozen=True)
class Facts:
    """What the rules need from the store: how inputs moved over spans, and the
    ``semantic_version`` each last build's program declared."""

    moves: Mapping[Span, Moved] = field(default_factory=dict)
    semantic: Mapping[tuple[str, str], int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class ReadRange:
    """What one input is read as: ``(after, upto]``, or whole (``after`` None)."""

    dataset: str
    after: int | None
    upto: int
    rows: int | None = None  # rows in the range (the version's, when read whole)


@dataclass(frozen=True)
class Plan:
    """How one run of an incremental transform reads and writes."""

    mode: Mode
    reads: dict[str, ReadRange]  # by parameter
    previous: dict[str, int | None]  # output -> its version before the build (None: none)
    why_full: tuple[str, ...] = ()

    def recorded(self) -> BuildRead:
        """The plan as the catalog keeps it on the run."""
        reads = {r.dataset: InputRead(r.after, r.upto, r.rows) for r in self.reads.values()}
        return BuildRead(self.mode, reads, dict(self.previous))

    def read_json(self) -> dict[str, dict[str, int | None]]:
        return {name: r.to_dict() for name, r in (self.recorded().read or {}).items()}


def whole(item: Declared, inputs: Mapping[str, Version]) -> Plan:
    """A plan that reads every input whole and replaces the outputs."""
    reads = {p: ReadRange(v.dataset, None, v.commit_id, v.row_count) for p, v in inputs.items()}
    return Plan("full", reads, dict.fromkeys(item.output_names))


def appended_inputs(item: Declared) -> list[str]:
    """The input datasets an incremental build reads as added rows."""
    inc = item.transform.incremental
    assert inc is not None
    return list(
        dict.fromkeys(i.name for p, i in item.inputs.items() if p not in inc.snapshot_inputs)
    )


def spans(item: Declared, current: Mapping[str, Current]) -> list[Span]:
    """The input spans the rules ask about: built-from version to current, per input."""
    built = _built(item, current)
    if built is None:
        return []
    out = []
    for name in appended_inputs(item):
        was, now = built.inputs.get(name), current.get(name)
        if was is not None and was.commit_id is not None and now is not None:
            out.append((name, was.commit_id, now.commit_id))
    return out


def _built(item: Declared, current: Mapping[str, Current]) -> Current | None:
    """The outputs' current entry, when this transform made all of them in one run."""
    made = [current.get(name) for name in item.output_names]
    first = made[0]
    if first is None or any(m is None or m.run != first.run for m in made):
        return None
    return first if first.job == item.fqn else None


def whole_because(
    item: Declared, current: Mapping[str, Current], facts: Facts, targets: Mapping[str, int]
) -> list[str]:
    """Why the next build of ``item`` must run whole (empty: it can be incremental), with
    its inputs read at ``targets`` (dataset -> version)."""
    inc = item.transform.incremental
    assert inc is not None
    built = _built(item, current)
    if built is None:
        made = [current.get(name) for name in item.output_names]
        if all(m is None for m in made):
            return ["first build"]
        return ["an output was written by something other than this transform since"]
    reasons = []
    if inc.semantic_version is None:
        if built.program != item.fingerprint:
            reasons.append("program changed (no semantic_version)")
    else:
        last = facts.semantic.get((item.fqn, built.program or ""))
        if last != inc.semantic_version:
            reasons.append(f"semantic_version changed: {last} → {inc.semantic_version}")
    for name in appended_inputs(item):
        was = built.inputs.get(name)
        if was is None or was.commit_id is None:
            reasons.append(f"input {name} was not read by the last build")
            continue
        to = targets[name]
        if to < was.commit_id:
            reasons.append(f"input {name} is read at {to}, before {was.commit_id}")
            continue
        moved = facts.moves.get((name, was.commit_id, to))
        if moved is not None and moved.rewrite is not None:
            version, kind = moved.rewrite
            if kind == "PURGED":
                reasons.append(f"input {name}: retention purged version {version} of the range")
            elif kind == "MERGED":
                reasons.append(f"input {name}: version {version} was merged from a branch")
            else:
                reasons.append(f"input {name} was rewritten: version {version} is a {kind}")
    return reasons


def plan(
    item: Declared,
    current: Mapping[str, Current],
    inputs: Mapping[str, Version],
    facts: Facts,
    full: bool = False,
) -> Plan:
    """How this run of incremental ``item`` reads ``inputs`` (its resolved versions)."""
    targets = {v.dataset: v.commit_id for v in inputs.values()}
    reasons = ["--full"] if full else whole_because(item, current, facts, targets)
    if reasons:
        w = whole(item, inputs)
        return Plan("full", w.reads, w.previous, tuple(reasons))
    built = _built(item, current)
    assert built is not None and item.transform.incremental is not None
    snapshot = item.transform.incremental.snapshot_inputs
    reads = {}
    for param, v in inputs.items():
        if param in snapshot:
            reads[param] = ReadRange(v.dataset, None, v.commit_id, v.row_count)
            continue
        was = built.inputs[v.dataset].commit_id
        assert was is not None
        moved = facts.moves.get((v.dataset, was, v.commit_id))
        reads[param] = ReadRange(v.dataset, was, v.commit_id, moved.rows if moved else 0)
    previous: dict[str, int | None] = {name: current[name].commit_id for name in item.output_names}
    return Plan("incremental", reads, previous)


def keeps_semantics(item: Declared, built: Current | None, facts: Facts) -> bool:
    """Whether a program change of incremental ``item`` keeps its semantic version: the
    new program then applies to new rows only."""
    inc = item.transform.incremental
    if inc is None or inc.semantic_version is None or built is None:
        return False
    return facts.semantic.get((item.fqn, built.program or "")) == inc.semantic_version


def input_causes(
    item: Declared, dataset: str, current: Mapping[str, Current], facts: Facts
) -> tuple[list[Cause], list[Cause]] | None:
    """The input causes of an incremental ``item``'s output, by the incremental rules:
    ``input_appended`` (the next build reads the new rows), ``input_rewritten`` (it runs
    whole) and, for an append of no rows, only a note. None: not incremental, or not
    built incrementally yet (the usual rules apply)."""
    built = _built(item, current)
    if item.transform.incremental is None or built is None:
        return None
    causes: list[Cause] = []
    notes: list[Cause] = []
    for name in appended_inputs(item):
        was, now = built.inputs.get(name), current.get(name)
        if was is None or was.commit_id is None or now is None or now.commit_id == was.commit_id:
            continue
        versions: dict[str, Any] = {"built_from": was.commit_id, "current": now.commit_id}
        moved = facts.moves.get((name, was.commit_id, now.commit_id))
        if moved is None or moved.rewrite is not None:
            version, kind = moved.rewrite if moved and moved.rewrite else (now.commit_id, "?")
            detail = {**versions, "version": version, "type": kind}
            causes.append(Cause(dataset, CauseKind.INPUT_REWRITTEN, name, detail))
        elif moved.rows == 0:
            notes.append(Cause(dataset, CauseKind.INPUT_IDENTICAL, name, versions))
        else:
            detail = {**versions, "rows": moved.rows, "commits": moved.commits}
            causes.append(Cause(dataset, CauseKind.INPUT_APPENDED, name, detail))
    return causes, notes


class FactSource(Protocol):
    """The store's answers the rules need (:class:`strata.builds.state.BuildState`)."""

    def moves(self, spans: Collection[Span]) -> dict[Span, Moved]: ...

    def semantic_versions(
        self, programs_: Collection[tuple[str, str]]
    ) -> dict[tuple[str, str], int | None]: ...


def gather(
    state: FactSource,
    items: Iterable[Declared],
    current: Mapping[str, Current],
    targets: Mapping[str, int] | None = None,
) -> Facts:
    """The facts about the incremental ones of ``items``: two statements at most. Spans
    end at each input's current version, or at ``targets`` (a run's resolved inputs)."""
    wanted: list[Span] = []
    programs: set[tuple[str, str]] = set()
    for item in items:
        if item.transform.incremental is None:
            continue
        built = _built(item, current)
        if built is None:
            continue
        if built.program is not None:
            programs.add((item.fqn, built.program))
        for name, after, upto in spans(item, current):
            wanted.append((name, after, targets.get(name, upto) if targets else upto))
    return Facts(state.moves(wanted), state.semantic_versions(programs) if programs else {})
