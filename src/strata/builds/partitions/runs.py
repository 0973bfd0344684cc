"""Running a partitioned transform: one run of the one job per output partition, and one
commit of every partition that succeeded.

Each partition's run reads only the input partitions feeding it (inputs that are not
partitioned, whole) at the versions resolved once for the build, and writes only its own
partition. The runs' writes share one transaction, a SNAPSHOT of the partitions that
succeeded: a failed partition's writes are dropped, it keeps its data, and its error is
reported without holding the others back. Each run's events carry a ``strata_partition``
run facet naming its key; the first succeeded run (in key order) names the committed
output version, so which run produced it never depends on the order events arrive in.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from strata.builds.checks.check import CheckResult
from strata.builds.execution import incremental
from strata.builds.execution.execute import (
    Partition,
    RunContext,
    RunResult,
    call_transform,
    failure_reason,
    record_checks,
    stack_trace,
    with_assertions,
    written_at,
)
from strata.builds.execution.run_events import (
    FACET_SCHEMA,
    PRODUCER,
    DatasetAt,
    JobRef,
    RunSpec,
    program_facets,
    run_event,
)
from strata.builds.partitions.planning import Layout
from strata.builds.programs.discovery import Declared
from strata.builds.programs.files import program_text
from strata.builds.staleness.causes import Outcome
from strata.errors import InvalidArgument, can_pass
from strata.ids import new_id
from strata.lake import partitions as pkeys
from strata.lake.registry import Version
from strata.lake.service import reads_limited_to
from strata.lake.transaction import Transaction
from strata.lineage.record.facets import PARTITION_FACET
from strata.store.owners.partition_builds import PartitionBuild


@dataclass
class PartitionRun:
    """What one output partition's run did."""

    key: str
    outcome: Outcome
    run: str | None  # None: skipped, never started
    reason: str | None = None
    rows: int = 0
    checks: list[CheckResult] = field(default_factory=list)
    lineage: dict[str, dict[str, Any]] = field(default_factory=dict)  # by output

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": pkeys.parse_text(self.key),
            "outcome": self.outcome.value,
            "run": self.run,
            "rows": self.rows,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass
class PartitionedResult:
    result: RunResult
    partitions: list[PartitionRun] = field(default_factory=list)


def partition_facet(key: str, read: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The run facet of one partition's run: its key, and the input partitions it read
    (an input read whole is not named)."""
    return {
        PARTITION_FACET: {
            "_producer": PRODUCER,
            "_schemaURL": f"{FACET_SCHEMA}/StrataPartitionRunFacet.json",
            "key": pkeys.parse_text(key),
            "read": {name: sorted(keys) for name, keys in read.items()},
        }
    }


def require_within_limit(item: Declared, keys: Sequence[str], limit: int) -> None:
    if len(keys) > limit:
        raise InvalidArgument(
            f"a build of {item.fqn} would run {len(keys):,} partitions, more than the limit "
            f"of {limit:,}; build a range with --partitions, or raise partition_limit",
            transform=item.fqn,
            partitions=len(keys),
        )


def run_partitions(
    ctx: RunContext,
    item: Declared,
    inputs: Mapping[str, Version],
    layout: Layout,
    keys: Sequence[str],
) -> PartitionedResult:
    """Run ``keys`` (output partition key texts) of ``item``, one run each; commit those
    that succeed together."""
    started = time.monotonic()
    lake = ctx.lake
    require_within_limit(item, keys, lake.settings.partition_limit)
    program = ctx.state.register_program(item.fqn, item.fingerprint, program_text(item))
    facets = program_facets(
        item.fingerprint,
        program.ordinal,
        item.fqn,
        item.code.source,
        (item.root / item.code.module_path).as_uri(),
    )
    # An output partitioned otherwise (or not at all) is replaced whole: a repartition.
    held = ctx.state.partition_by(item.output_names)
    repartition = any(held.get(n) != list(layout.by) for n in ctx.state.existing(item.output_names))
    txn = lake.transaction(
        list(item.output_names),
        "SNAPSHOT",
        partition_by=list(layout.by),
        partitions=None if repartition else [pkeys.parse_text(k) for k in keys],
    )
    result = RunResult(item.fqn, None, Outcome.FAILED, dict.fromkeys(item.output_names))
    result.program = program
    result.inputs = {v.dataset: v.commit_id for v in inputs.values()}
    out = PartitionedResult(result)
    specs: dict[str, RunSpec] = {}
    read = [DatasetAt(v.dataset, v.commit_id, v.schema_fields) for v in inputs.values()]
    writing = [DatasetAt(name, None) for name in item.output_names]
    try:
        for key in keys:
            run_facets = partition_facet(key, layout.sources.get(key, {}))
            job = JobRef(lake.namespace, item.fqn)
            specs[key] = spec = RunSpec(new_id(), job, ctx.parent, facets, run_facets)
            # Every partition runs one plan: its lineage is derived once per build.
            derive = not any(p.lineage for p in out.partitions)
            out.partitions.append(
                _run_one(ctx, item, inputs, txn, layout, key, spec, (read, writing), derive)
            )
    except BaseException as exc:  # interrupted: nothing commits, the open run is ABORTED
        if txn.state == "OPEN":
            txn.abort()
        _finish_all(ctx, out, specs, (read, writing), exc)
        raise
    _commit(ctx, item, txn, out, specs, (read, writing), repartition)
    for p in out.partitions:
        built = result.outputs if p.outcome is Outcome.BUILT else {}
        if p.run is not None:
            record_checks(ctx, p.run, item, p.checks, result.inputs, _known(built))
        result.checks.extend(p.checks)
    result.seconds = time.monotonic() - started
    return out


def _run_one(
    ctx: RunContext,
    item: Declared,
    inputs: Mapping[str, Version],
    txn: Transaction,
    layout: Layout,
    key: str,
    spec: RunSpec,
    io: tuple[list[DatasetAt], list[DatasetAt]],
    derive: bool = True,
) -> PartitionRun:
    """One partition's run: START, the transform on its input partitions, and FAIL if it
    raised (its writes dropped); COMPLETE waits for the commit."""
    ns = ctx.lake.namespace
    read, writing = io
    ctx.emitter.emit(run_event("START", spec, namespace=ns, inputs=read, outputs=writing))
    mark = txn.mark()
    sources = {name: sorted(ks) for name, ks in layout.sources.get(key, {}).items()}
    for name in item.input_names:
        if name not in layout.whole:
            sources.setdefault(name, [])  # no partition feeds this one: reads no rows
    where = pkeys.parse_text(key)
    filtered = {
        v.dataset: where
        for v in inputs.values()
        if v.dataset in layout.whole and set(where) <= {f["name"] for f in v.schema_fields}
    }
    partition = Partition(where, sources, filtered)
    readable = (*item.input_names, *item.output_names)
    judged: list[CheckResult] = []
    lineage: dict[str, dict[str, Any]] = {}
    try:
        with reads_limited_to(f"transform {item.fqn} ({item.where})", readable):
            plan = incremental.whole(item, inputs)
            wanted = lineage if derive else None
            call_transform(ctx.lake, ctx.spark, item, inputs, txn, plan, partition, judged, wanted)
    except Exception as exc:
        txn.rollback(mark)
        event = run_event(
            "FAIL",
            spec,
            namespace=ns,
            inputs=with_assertions(read, judged, "input"),
            outputs=with_assertions(writing, judged, "output"),
            error=exc,
            trace=stack_trace(exc),
        )
        ctx.emitter.emit(event)
        reason = failure_reason(exc, item)
        return PartitionRun(key, Outcome.FAILED, spec.run_id, reason, checks=judged)
    rows = sum(txn.rows_written(n, since=mark[n]) for n in item.output_names)
    return PartitionRun(key, Outcome.BUILT, spec.run_id, rows=rows, checks=judged, lineage=lineage)


def _known(versions: Mapping[str, int | None]) -> dict[str, int]:
    return {k: v for k, v in versions.items() if v is not None}


def _commit(
    ctx: RunContext,
    item: Declared,
    txn: Transaction,
    out: PartitionedResult,
    specs: Mapping[str, RunSpec],
    io: tuple[list[DatasetAt], list[DatasetAt]],
    repartition: bool = False,
) -> None:
    """Commit the partitions that succeeded (with ``repartition``, as the whole output);
    COMPLETE their runs (FAIL them all if the commit fails) and record what built each
    partition."""
    ns = ctx.lake.namespace
    read, writing = io
    done = [p for p in out.partitions if p.outcome is Outcome.BUILT]
    runs = {p.key: p.run for p in done if p.run is not None}
    result = out.result
    if not done:
        txn.abort()
        result.reason = _summary(out)
        return
    try:
        if not repartition:
            txn.narrow([pkeys.parse_text(p.key) for p in done])
        txn.note_runs(runs)
        txn.commit()
    except Exception as exc:
        if txn.state == "OPEN":
            txn.abort()
        for p in done:
            p.outcome, p.reason = Outcome.FAILED, failure_reason(exc, item)
            ctx.emitter.emit(
                run_event(
                    "FAIL",
                    specs[p.key],
                    namespace=ns,
                    inputs=read,
                    outputs=writing,
                    error=exc,
                    trace=stack_trace(exc),
                )
            )
        result.reason, result.retryable = _summary(out), can_pass(exc)
        return
    _complete(ctx, item, txn, out, specs, io)
    for name in item.output_names:
        commit_id = txn.versions[name].commit_id
        ctx.state.record_partitions(
            name,
            [
                PartitionBuild(key, commit_id, run, item.fingerprint, result.inputs)
                for key, run in runs.items()
            ],
            replace_all=repartition,
        )
    result.outcome = Outcome.BUILT
    result.run = done[0].run
    result.outputs = {n: txn.versions[n].commit_id for n in item.output_names}
    result.rows = sum(p.rows for p in done)
    failed = [p for p in out.partitions if p.outcome is Outcome.FAILED]
    result.reason = _summary(out) if failed else None


def _complete(
    ctx: RunContext,
    item: Declared,
    txn: Transaction,
    out: PartitionedResult,
    specs: Mapping[str, RunSpec],
    io: tuple[list[DatasetAt], list[DatasetAt]],
) -> None:
    """COMPLETE each built partition's run; the first names the committed versions."""
    read, writing = io
    # Every partition runs the same plan: the lineage derived is the version's.
    lineage = next((p.lineage for p in out.partitions if p.lineage), {})
    written = [written_at(txn.versions[n], lineage) for n in item.output_names]
    done = [p for p in out.partitions if p.outcome is Outcome.BUILT]
    for i, p in enumerate(done):
        ctx.emitter.emit(
            run_event(
                "COMPLETE",
                specs[p.key],
                namespace=ctx.lake.namespace,
                inputs=with_assertions(read, p.checks, "input"),
                outputs=with_assertions(written if i == 0 else writing, p.checks, "output"),
            )
        )


def _finish_all(
    ctx: RunContext,
    out: PartitionedResult,
    specs: Mapping[str, RunSpec],
    io: tuple[list[DatasetAt], list[DatasetAt]],
    exc: BaseException,
) -> None:
    """An interrupted build: every run that had not failed is ABORTED."""
    read, writing = io
    settled = {p.key for p in out.partitions if p.outcome is Outcome.FAILED}
    for key, spec in specs.items():
        if key not in settled:
            ctx.emitter.emit(
                run_event(
                    "ABORT",
                    spec,
                    namespace=ctx.lake.namespace,
                    inputs=read,
                    outputs=writing,
                    error=exc,
                )
            )


def _summary(out: PartitionedResult) -> str:
    failed = [p for p in out.partitions if p.outcome is Outcome.FAILED]
    first = failed[0]
    others = len(failed) - 1
    more = f" (and {others} more failed partition{'s' if others > 1 else ''})" if others else ""
    return (
        f"{len(failed)} of {len(out.partitions)} partitions failed; {first.key}: "
        f"{first.reason}{more}"
    )
