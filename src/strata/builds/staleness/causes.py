"""What ``status`` and ``build`` answer, as types: a dataset's status and role, why it is
out of date, and what a build did with each transform.

Every answer is serialised here, once, for the CLI (words), ``--json`` and the API (the
same dicts). "Fresh" and "stale" describe a dataset's status and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """A dataset's status."""

    FRESH = "fresh"
    OUT_OF_DATE = "out_of_date"
    MISSING = "missing"  # declared as an input, neither in the lake nor made by a transform
    ORPHANED = "orphaned"  # built by a transform no loaded pipeline declares any more


class Role(StrEnum):
    """What a dataset is to the pipelines."""

    RAW = "raw"  # written by hand (ingest, transactions), read by transforms
    DERIVED = "derived"  # written by a declared transform
    MISSING = "missing"
    ORPHANED = "orphaned"
    FOREIGN = "foreign"  # written by a job Strata does not build (it does not run it)


class CauseKind(StrEnum):
    """Why a derived dataset is out of date (or, for a note, why it is not)."""

    NEVER_BUILT = "never_built"
    RENAMED = "renamed"
    PROGRAM_CHANGED = "program_changed"
    INPUT_NEWER = "input_newer"
    INPUT_PARTITION_NEWER = "input_partition_newer"  # a partition feeding this one changed
    INPUT_APPENDED = "input_appended"  # incremental: the next build reads the new rows
    INPUT_REWRITTEN = "input_rewritten"  # incremental: the next build runs whole
    INPUT_ADDED = "input_added"
    INPUT_REMOVED = "input_removed"
    INPUT_MISSING = "input_missing"
    UPSTREAM_STALE = "upstream_stale"  # an upstream derived dataset is out of date
    INPUT_IDENTICAL = "input_identical"  # a note: the input moved but its rows did not
    BROKEN = "broken"  # the transform's declaration cannot be built: fix it
    CHECK_FAILED = "check_failed"  # its last build was stopped by a failed data check


class Outcome(StrEnum):
    """What a build did with one transform."""

    BUILT = "built"
    FRESH = "fresh"  # its outputs were fresh: nothing ran
    FAILED = "failed"
    SKIPPED = "skipped"  # an upstream transform of the same build failed or was skipped
    WOULD_BUILD = "would_build"  # dry run: out of date for a cause of its own
    MAY_BUILD = "may_build"  # dry run: runs only if an upstream's rebuild changes rows

    @property
    def ran(self) -> bool:
        return self in (Outcome.BUILT, Outcome.FAILED)


@dataclass(frozen=True)
class Cause:
    """One reason ``dataset`` (``partition`` of it, where partitioned) is out of date.

    ``dependency`` is the input the cause is about (for ``UPSTREAM_STALE``, the input it
    is out of date through); ``detail`` carries the kind's own fields (versions, program
    versions, names).
    """

    dataset: str
    kind: CauseKind
    dependency: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    partition: Mapping[str, str] | None = None

    @property
    def own(self) -> bool:
        """Out of date for a reason of its own, not only through an upstream."""
        return self.kind is not CauseKind.UPSTREAM_STALE

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.dependency is not None:
            out["via" if self.kind is CauseKind.UPSTREAM_STALE else "input"] = self.dependency
        out.update(self.detail)
        if self.partition is not None:
            out["partition"] = dict(self.partition)
        out["text"] = self.describe()  # the CLI's words, so every reader says the same
        return out

    def describe(self) -> str:
        """The cause in words, as the CLI prints it."""
        return _WORDS[self.kind](self)


def program_label(program: Mapping[str, Any] | None, unnumbered: str = "new ") -> str:
    """``v3 (46aaa10554)``; a program with no ordinal yet is ``unnumbered``."""
    if not program:
        return "?"
    ordinal = program.get("ordinal")
    head = f"v{ordinal} " if ordinal else unnumbered
    return f"{head}({program['fingerprint'][:10]})"


def _program_changed(c: Cause) -> str:
    if "foreign_job" in c.detail:
        return _foreign_program_changed(c)
    old = c.detail.get("old")
    was = program_label(old, unnumbered="") if old else "written outside a build"
    kept = c.detail.get("semantic_version")
    tail = f" (semantic version {kept} kept: applies to new rows)" if kept is not None else ""
    columns = _columns_touched(c.detail.get("columns"))
    return f"program changed: {was} → {program_label(c.detail.get('new'))}{tail}{columns}"


def _columns_touched(columns: Mapping[str, list[str]] | None) -> str:
    """``; columns changed: a, b; added: c`` from a planned comparison, if any."""
    if columns is None:
        return ""
    parts = [
        f"{label}: {', '.join(columns[key])}"
        for key, label in (
            ("changed", "columns changed"),
            ("added", "added"),
            ("removed", "removed"),
        )
        if columns.get(key)
    ]
    return "; " + "; ".join(parts) if parts else "; no column's lineage changed"


def _foreign_program_changed(c: Cause) -> str:
    d = c.detail
    job, newest = d["foreign_job"], d.get("newest_run")

    def label(v: Mapping[str, Any]) -> str:
        facets = v.get("program_facets")
        head = f"{', '.join(facets)} " if facets else ""
        return f"{head}{v['fingerprint'][:10]}"

    tail = f"; its newest run {newest['state']}" if newest else ""
    return (
        f"program changed: job {job['namespace']}:{job['name']} is at {label(d['new'])}, "
        f"this version was written by {label(d['old'])}{tail} (run the job to catch up)"
    )


def _input_appended(c: Cause) -> str:
    d = c.detail
    commits = f"{d['commits']} commit{'s' if d['commits'] != 1 else ''}"
    rows = f"{d['rows']:,} row{'s' if d['rows'] != 1 else ''}"
    return (
        f"input {c.dependency}: {rows} appended in {commits} ({d['built_from']} → {d['current']})"
    )


def _input_rewritten(c: Cause) -> str:
    d = c.detail
    if d["type"] == "PURGED":
        return (
            f"input {c.dependency}: retention purged version {d['version']} "
            f"({d['built_from']} → {d['current']}), so the next build runs whole"
        )
    if d["type"] == "MERGED":
        return (
            f"input {c.dependency}: version {d['version']} was merged from a branch "
            f"({d['built_from']} → {d['current']}), so the next build runs whole"
        )
    return (
        f"input {c.dependency}: rewritten by {d['type']} {d['version']} "
        f"({d['built_from']} → {d['current']}), so the next build runs whole"
    )


def _input_newer(c: Cause) -> str:
    pinned = " (pinned)" if c.detail.get("pinned") else ""
    return (
        f"input {c.dependency}: built from {c.detail['built_from']}, "
        f"now {c.detail['current']}{pinned}"
    )


def _input_partition_newer(c: Cause) -> str:
    key = ", ".join(f"{k}={v}" for k, v in c.detail["partition"].items())
    return (
        f"input partition {c.dependency}[{key}] newer: built from {c.detail['built_from']}, "
        f"changed in {c.detail['current']}"
    )


def _check_failed(c: Cause) -> str:
    d = c.detail
    where = f"[{d['partition']}]" if d.get("partition") else ""
    side = "input" if d["side"] == "input" else "output"
    if d.get("error"):
        found = f"cannot apply: {d['error']}"
    elif d.get("failing") is not None:
        found = f"{d['failing']:,} failing"
    else:
        found = "failed"
    return (
        f"last build stopped by check {d['check']!r} ({d['expectation']}) on {side} "
        f"{d['judged']}{where}: {found}"
    )


_WORDS: dict[CauseKind, Callable[[Cause], str]] = {
    CauseKind.NEVER_BUILT: lambda c: "never built",
    CauseKind.RENAMED: lambda c: f"renamed from {c.detail['from']}",
    CauseKind.PROGRAM_CHANGED: _program_changed,
    CauseKind.INPUT_NEWER: _input_newer,
    CauseKind.INPUT_PARTITION_NEWER: _input_partition_newer,
    CauseKind.INPUT_APPENDED: _input_appended,
    CauseKind.INPUT_REWRITTEN: _input_rewritten,
    CauseKind.INPUT_ADDED: lambda c: f"input added: {c.dependency}",
    CauseKind.INPUT_REMOVED: lambda c: f"input removed: {c.dependency}",
    CauseKind.INPUT_MISSING: lambda c: f"input {c.dependency} does not exist",
    CauseKind.UPSTREAM_STALE: lambda c: f"via {c.dependency}",
    CauseKind.BROKEN: lambda c: f"cannot be built as declared: {c.detail['error']}",
    CauseKind.CHECK_FAILED: _check_failed,
    CauseKind.INPUT_IDENTICAL: lambda c: (
        f"input {c.dependency} moved {c.detail['built_from']} → {c.detail['current']} "
        "with identical rows"
    ),
}
