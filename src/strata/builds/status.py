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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from strata.builds.catalog import Current
from strata.builds.discovery import Declared, Pipelines


@dataclass
class DatasetStatus:
    """One dataset's line of ``strata status``."""

    name: str
    kind: str  # raw | derived | missing (declared, not there) | orphaned (built, undeclared)
    transform: str | None  # the transform that writes it (orphaned: the one that last did)
    version: int | None
    causes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        return bool(self.causes)

    @property
    def state(self) -> str:
        """fresh | out_of_date | missing | orphaned."""
        if self.kind in ("missing", "orphaned"):
            return self.kind
        return "out_of_date" if self.stale else "fresh"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "state": self.state,
            "transform": self.transform,
            "version": self.version,
            "stale": self.stale,
            "causes": self.causes,
            "notes": self.notes,
        }


def _program(fingerprint: str | None, ordinal: int | None) -> dict[str, Any] | None:
    return None if fingerprint is None else {"fingerprint": fingerprint, "ordinal": ordinal}


def own_causes(
    item: Declared,
    dataset: str,
    current: Mapping[str, Current],
    ordinals: Mapping[tuple[str, str], int],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rules 1 to 4 for one output of ``item``: its causes, and its early-cutoff notes."""
    cur = current.get(dataset)
    if cur is None:
        return [{"kind": "never_built"}], []
    causes: list[dict[str, Any]] = []
    if cur.job is not None and cur.job != item.fqn:
        causes.append({"kind": "renamed", "from": cur.job, "to": item.fqn})
    if cur.program != item.fingerprint:
        old = _program(cur.program, cur.ordinal)
        new = _program(item.fingerprint, ordinals.get((item.fqn, item.fingerprint)))
        causes.append({"kind": "program_changed", "old": old, "new": new, "job": cur.job})
    notes: list[dict[str, Any]] = []
    for inp in dict((i.name, i) for i in item.inputs.values()).values():
        built = cur.inputs.get(inp.name)
        if built is None:
            causes.append({"kind": "input_added", "input": inp.name})
            continue
        now = current.get(inp.name)
        target = inp.version if inp.version is not None else (now.commit_id if now else None)
        if target is None or built.commit_id == target:
            continue
        entry = {"input": inp.name, "built_from": built.commit_id, "current": target}
        same = (
            inp.version is None
            and now is not None
            and now.data_fingerprint is not None
            and now.data_fingerprint == built.data_fingerprint
        )
        if same:
            notes.append({"kind": "input_identical", **entry})
        else:
            causes.append({"kind": "input_newer", **entry, "pinned": inp.version is not None})
    for gone in sorted(set(cur.inputs) - set(item.input_names)):
        causes.append({"kind": "input_removed", "input": gone})
    return causes, notes


def assess(
    pipelines: Pipelines,
    current: Mapping[str, Current],
    ordinals: Mapping[tuple[str, str], int],
) -> dict[str, DatasetStatus]:
    """Every dataset the pipelines name or the lake holds, with its causes, by name."""
    out: dict[str, DatasetStatus] = {}
    graph = pipelines.graph
    missing = {
        name
        for item in pipelines.transforms.values()
        for name in item.input_names
        if name not in current and name not in graph.producer
    }
    for key in graph.post_order(list(graph.nodes)):
        item = pipelines.transforms[key]
        stale_inputs = [i for i in item.input_names if i in out and out[i].stale]
        for dataset in item.output_names:
            causes, notes = own_causes(item, dataset, current, ordinals)
            causes += [
                {"kind": "input_missing", "input": i} for i in item.input_names if i in missing
            ]
            causes += [{"kind": "upstream_stale", "via": i} for i in stale_inputs]
            cur = current.get(dataset)
            out[dataset] = DatasetStatus(
                dataset, "derived", item.fqn, cur.commit_id if cur else None, causes, notes
            )
    for name in missing:
        out[name] = DatasetStatus(name, "missing", None, None)
    for name, cur in current.items():
        if name not in out:
            # Built by a transform no loaded pipeline declares any more: orphaned, not raw.
            kind = "orphaned" if cur.job is not None else "raw"
            out[name] = DatasetStatus(name, kind, cur.job, cur.commit_id)
    return dict(sorted(out.items()))
