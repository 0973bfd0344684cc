"""Runs whose builder died: ended ABORTED, with the reason, once their lease is gone.

A transform runs under a lease its builder renews; a builder killed mid-run leaves the
run RUNNING in lineage. Whoever next takes the transform's lease (a builder about to run
it, or a worker retaking a dead worker's trigger) holds it alone, so any run of that
transform still RUNNING is an orphan: it is ended with an ABORT event, and so is its
build's parent run once none of its children runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from strata.builds.execution.run_events import Emitter, JobRef, RunSpec, run_event
from strata.builds.state import BuildState
from strata.errors import RunAbandoned


def reap_expired_leases(state: BuildState, emitter: Emitter) -> list[str]:
    """Drop leases whose holder stopped renewing them and end those transforms' orphaned
    runs; the runs ended."""
    names = state.drop_expired_leases()
    return abort_orphaned_runs(state, emitter, names) if names else []


def abort_orphaned_runs(
    state: BuildState, emitter: Emitter, transforms: Sequence[str]
) -> list[str]:
    """End every RUNNING run of ``transforms`` (whose leases the caller holds or just
    freed) and their parents left with no running child; the run ids ended."""
    namespace = state.namespace
    why = RunAbandoned(
        "the builder running this transform stopped before the run ended (its lease "
        "expired); the next build runs it again"
    )
    ended: list[str] = []
    parents: dict[str, str] = {}
    for row in state.running(transforms):
        up = (row.parent, JobRef(namespace, str(row.parent_job))) if row.parent else None
        spec = RunSpec(row.run, JobRef(namespace, row.transform), up)
        emitter.emit(run_event("ABORT", spec, namespace=namespace, error=why))
        ended.append(row.run)
        if row.parent is not None and row.parent_running:
            parents[row.parent] = str(row.parent_job)
    for run_id, job in parents.items():
        if not state.has_running_children(run_id):
            spec = RunSpec(run_id, JobRef(namespace, job))
            emitter.emit(run_event("ABORT", spec, namespace=namespace, error=why))
            ended.append(run_id)
    return ended
