"""History, trace and programs of dataset versions, read from the store alone.

``history`` lists each version with the run and program version that made it and the
exact input versions; ``trace`` is the provenance tree of one version down to raw
datasets (the lineage provenance walk, with program ordinals added), for past versions
as for current ones; ``program_of`` is the stored program version that built one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from strata.builds.state import BuildState
from strata.builds.state.build_reads import BuildRead
from strata.builds.state.catalog import VersionEntry
from strata.builds.state.programs import Program
from strata.errors import NotFound
from strata.lake import partitions as pkeys
from strata.lake.partition_index import summary_dicts, touched_keys
from strata.lineage.query.provenance import ProvenanceNode
from strata.retention.state import Mark

TRACE_DEPTH = 100


def _program_json(job: str | None, ordinal: int | None, fp: str | None) -> dict[str, Any] | None:
    if fp is None or ordinal is None:
        return None
    return {"transform": job, "ordinal": ordinal, "fingerprint": fp}


def history(
    state: BuildState, dataset: str, partition: pkeys.Alternatives | None = None
) -> dict[str, Any]:
    """Every version of a lake dataset with its catalog entry, oldest first; a partitioned
    dataset's say what each did to which partition. With ``partition`` (each column's
    wanted values), only the versions that touched it, each with the runs that built it
    there. On a branch, only the versions of its line: its own and those of the branches
    it falls back to (on main, every branch's, each naming its branch)."""
    rows, inputs = state.history(dataset)
    line = state.branch_line()
    if line is not None:
        rows = [x for x in rows if x.branch_id in line]
    warned = state.warned_versions(dataset)
    marks = state.retention_marks(dataset)
    archived = state.archived(dataset)
    if partition is not None:
        by = state.partition_by([dataset]).get(dataset)
        wanted = pkeys.Chosen(dataset, by, partition)
        rows = [x for x in rows if any(map(wanted.holds, touched_keys(x.partitions)))]
    versions = [
        {
            "version": x.version,
            "committed_at": x.committed_at.isoformat(),
            "type": x.type,
            "branch": x.branch,
            "rows": x.rows,
            "data_fingerprint": x.data_fingerprint,
            "run": x.run,
            "state": x.state,
            "program": _program_json(x.job, x.ordinal, x.fingerprint),
            "inputs": inputs.get(x.run, {}) if x.run else {},
            "warnings": warned.get(x.version, []),
            "purged": _purged(x.purged_at, x.purged_by),
            "marked": _marked(marks.get(x.version)),
            "archived": _archived(archived.get(x.version)),
            **_how_read(x, inputs.get(x.run, {}) if x.run else {}),
            **_partitions(x, wanted if partition is not None else None),
        }
        for x in rows
    ]
    return {"dataset": dataset, "branch": state.branch, "versions": versions}


def _purged(at: datetime | None, policy: str | None) -> dict[str, Any] | None:
    """``{"at", "policy"}`` of a version retention purged: its history stays, its data
    is gone."""
    return {"at": at.isoformat(), "policy": policy} if at is not None else None


def _marked(mark: Mark | None) -> dict[str, Any] | None:
    """``{"at", "policy"}`` of a version marked for purging (undone by a pin or
    ``strata retention --unmark``)."""
    return {"at": mark.marked_at.isoformat(), "policy": mark.policy} if mark else None


def _archived(counts: tuple[int, int] | None) -> dict[str, int] | None:
    """``{"files", "of"}``: how many of a version's files lie in an archive (reads work
    from there, only slower; ``strata restore`` brings them back)."""
    return {"files": counts[0], "of": counts[1]} if counts else None


def _partitions(x: VersionEntry, wanted: pkeys.Chosen | None) -> dict[str, Any]:
    """A partitioned version's ``partitions`` (and, asked for some, ``partition_runs``:
    each matching key with the run that built it in this version)."""
    if x.partitions is None:
        return {}
    out: dict[str, Any] = {"partitions": summary_dicts(x.partitions)}
    if wanted is not None:
        runs = x.partitions.get("runs", {})
        out["partition_runs"] = [
            {"key": pkeys.parse_text(k), "run": runs.get(k)}
            for k in touched_keys(x.partitions)
            if wanted.holds(k)
        ]
    return out


def _how_read(x: VersionEntry, inputs: dict[str, int | None]) -> dict[str, Any]:
    """``mode`` and ``read`` of a built version (a build before ranges were recorded read
    every input whole); both None for a version written by hand."""
    if x.run is None or x.fingerprint is None:
        return {"mode": None, "read": None}
    whole = {name: {"from": None, "to": v, "rows": None} for name, v in inputs.items()}
    if x.build is None or x.build.read is None:
        return {"mode": x.build.mode if x.build else "full", "read": whole}
    return {"mode": x.build.mode, "read": {k: r.to_dict() for k, r in x.build.read.items()}}


def trace(state: BuildState, dataset: str, version: int | None) -> dict[str, Any]:
    """The provenance tree of ``dataset`` at ``version`` (default: current). An input an
    incremental run read as a range ``(from, to]`` is version ``to`` with ``read`` set,
    and ``also_read`` the range's earlier versions, each with its own tree: the rows the
    run read were added by all of them."""
    root = state.provenance(dataset, version, TRACE_DEPTH)
    return _Tracer(state).node(root)


def _job_versions(node: ProvenanceNode) -> set[str]:
    found = {node.run.job_version} if node.run and node.run.job_version else set()
    for child in node.inputs:
        found |= _job_versions(child)
    return found


def _versions(node: ProvenanceNode) -> set[str]:
    found = {node.version}
    for child in node.inputs:
        found |= _versions(child)
    return found


def _runs(node: ProvenanceNode) -> set[str]:
    found = {node.run.id} if node.run else set()
    for child in node.inputs:
        found |= _runs(child)
    return found


class _Tracer:
    """Trace nodes as JSON, with the programs and read ranges of their runs."""

    def __init__(self, state: BuildState) -> None:
        self.state = state
        self.ordinals: dict[str, tuple[str, int]] = {}
        self.builds: dict[str, BuildRead] = {}
        self.made: dict[str, ProvenanceNode] = {}
        self.purged: dict[str, tuple[datetime, str]] = {}

    def node(self, root: ProvenanceNode, depth: int = TRACE_DEPTH) -> dict[str, Any]:
        self.ordinals.update(self.state.ordinals_of(_job_versions(root)))
        self.builds.update(self.state.build_reads(_runs(root)))
        self.made.update(_expanded(root, {}))
        self.purged.update(self.state.purged(_versions(root)))
        return self._json(root, depth)

    def _json(self, node: ProvenanceNode, depth: int) -> dict[str, Any]:
        """A trace node; a version met again (a diamond) says ``repeated`` and is not
        expanded twice, but names its run and program all the same."""
        run = self.made.get(node.version, node).run
        program = None
        if run is not None and run.job_version in self.ordinals:
            job, ordinal = self.ordinals[run.job_version]
            program = {"transform": job, "ordinal": ordinal, "fingerprint": run.program_version}
        build = self.builds.get(run.id) if run else None
        out: dict[str, Any] = {
            "dataset": node.name,
            "version": node.commit_id,
            "run": run.id if run else None,
            "state": run.state if run else None,
            "program": program,
            "mode": build.mode if build else None,
            "inputs": [self._input(child, build, depth - 1) for child in node.inputs],
        }
        previous = {k: v for k, v in (build.previous if build else {}).items() if v is not None}
        if build is not None and build.mode == "incremental" and previous:
            out["previous"] = previous
        if node.version in self.purged:
            out["purged"] = _purged(*self.purged[node.version])
        if node.repeated:
            out["repeated"] = True
        return out

    def _input(self, child: ProvenanceNode, build: BuildRead | None, depth: int) -> dict[str, Any]:
        out = self._json(child, depth)
        read = (build.read or {}).get(child.name) if build else None
        if read is None or read.after is None or read.upto is None or child.repeated:
            return out
        out["read"] = {"from": read.after, "to": read.upto}
        earlier = range(read.after + 1, read.upto)
        if earlier:  # the range's other versions added rows the run read too
            out["also_read"] = [self._version(child.name, v, depth) for v in earlier]
        return out

    def _version(self, dataset: str, version: int, depth: int) -> dict[str, Any]:
        if depth <= 0:
            return {"dataset": dataset, "version": version, "truncated": True}
        return self.node(self.state.provenance(dataset, version, depth), depth)


def _expanded(node: ProvenanceNode, into: dict[str, ProvenanceNode]) -> dict[str, ProvenanceNode]:
    if not node.repeated:
        into.setdefault(node.version, node)
    for child in node.inputs:
        _expanded(child, into)
    return into


@dataclass(frozen=True)
class Entry:
    """The catalog entry of one built version."""

    dataset: str
    version: int
    data_fingerprint: str | None
    run: str
    program: Program
    inputs: dict[str, int | None]


def entry(state: BuildState, dataset: str, version: int | None) -> Entry:
    """The run, program version and inputs that built ``dataset`` at ``version``."""
    built = state.built_version(dataset, version)
    if built.run is None or built.program is None:
        raise NotFound(
            f"{dataset}@{built.version} was not built by a transform (it was written by "
            "hand); only built versions have a program",
            dataset=dataset,
            version=built.version,
        )
    return Entry(
        dataset, built.version, built.data_fingerprint, built.run, built.program, built.inputs
    )


def job_history(state: BuildState, namespace: str, job: str, limit: int = 100) -> dict[str, Any]:
    """A job's versions, newest first: for a job Strata did not build, each program its
    events named (by ``sourceCode``, ``sql`` or ``sourceCodeLocation``) is a version,
    with the facets that made it and its latest run."""
    try:
        page, name = state.job_versions(namespace, job, limit)
    except NotFound:
        elsewhere = [ns for ns in state.job_namespaces(job) if ns != namespace]
        if not elsewhere:
            raise
        raise NotFound(
            f"job {job!r} not found in namespace {namespace!r}; it is in "
            f"{', '.join(map(repr, elsewhere))}: pass --namespace {elsewhere[0]}",
            job=job,
            namespace=namespace,
        ) from None
    versions = [
        {
            "version": v.uuid,
            "fingerprint": v.version,
            "created_at": v.created_at.isoformat(),
            "program_facets": v.program_facets,
            "location": v.location,
            "inputs": [f"{d.namespace}:{d.name}" for d in v.inputs],
            "outputs": [f"{d.namespace}:{d.name}" for d in v.outputs],
            "latest_run": (
                {"id": v.latest_run.uuid, "state": v.latest_run.state} if v.latest_run else None
            ),
        }
        for v in page.items
    ]
    return {"namespace": namespace, "job": name, "total": page.total, "versions": versions}
