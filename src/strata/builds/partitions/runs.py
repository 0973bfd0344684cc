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

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from strata.builds.checks.check import CheckResult
from strata.builds.execution import incremental
from strata.builds.execution.execute import (
    RunContext,
    RunResult,
    call_transform,
    failure_reason,
    judge_written_partition,
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
from strata.builds.partitions.batch_columns import BatchColumns
from strata.builds.partitions.input_checks import InputsJudged, judge_inputs
from strata.builds.partitions.planning import Layout
from strata.builds.partitions.reads import batch_of, partition_of
from strata.builds.programs.discovery import Declared
from strata.builds.programs.files import program_text
from strata.builds.staleness.causes import Outcome
from strata.errors import InvalidArgument, can_pass
from strata.ids import new_id
from strata.lake import partitions as pkeys
from strata.lake.registry import Version
from strata.lake.service import reads_limited_to
from strata.lake.spark import stop_jobs
from strata.lake.transaction import Transaction
from strata.lineage.record.facets import PARTITION_FACET
from strata.store.owners.partition_builds import PartitionBuild

log = logging.getLogger(__name__)


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
    job = JobRef(lake.namespace, item.fqn)
    planned = {
        key: RunSpec(
            new_id(), job, ctx.parent, facets, partition_facet(key, layout.sources.get(key, {}))
        )
        for key in keys
    }
    try:
        if runs_together(item, keys):
            specs.update(planned)  # every run STARTs with the job
            out.partitions = _run_together(ctx, item, inputs, txn, layout, specs, (read, writing))
        ended = {p.key for p in out.partitions}
        rest = {k: s for k, s in planned.items() if k not in ended}
        if rest:  # one job each; or the job of them all failed
            _run_each(ctx, (item, inputs, txn, layout), rest, specs, out, (read, writing))
            order = {k: i for i, k in enumerate(keys)}
            out.partitions.sort(key=lambda p: order[p.key])
    except BaseException as exc:  # interrupted: nothing commits, the open runs are ABORTED
        if not isinstance(exc, Exception):
            stop_jobs(ctx.spark)
        if txn.state == "OPEN":
            txn.abort()
        _finish_all(ctx, out, specs, (read, writing), exc)
        raise
    _commit(ctx, item, txn, out, specs, (read, writing), repartition)
    judged = []
    for p in out.partitions:
        built = result.outputs if p.outcome is Outcome.BUILT else {}
        if p.run is not None:
            judged.append((p.run, p.checks, {**result.inputs, **_known(built)}))
        result.checks.extend(p.checks)
    ctx.state.record_checks(item.fqn, judged)
    result.seconds = time.monotonic() - started
    return out


def _run_each(
    ctx: RunContext,
    what: tuple[Declared, Mapping[str, Version], Transaction, Layout],
    planned: Mapping[str, RunSpec],
    specs: dict[str, RunSpec],
    out: PartitionedResult,
    io: tuple[list[DatasetAt], list[DatasetAt]],
) -> None:
    """Each of the ``planned`` runs in a Spark job of its own, into ``out``; ``specs``
    holds the runs started (a failed job of them all started them already)."""
    item, inputs, txn, layout = what
    for key, spec in planned.items():
        started = key in specs
        specs[key] = spec
        # Every partition runs one plan: its lineage is derived once per build.
        derive = not any(p.lineage for p in out.partitions)
        out.partitions.append(
            _run_one(ctx, item, inputs, txn, layout, key, spec, io, derive, started)
        )


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
    started: bool = False,
) -> PartitionRun:
    """One partition's run: START (unless the job of a batch ``started`` it), the
    transform on its input partitions, and FAIL if it raised (its writes dropped);
    COMPLETE waits for the commit."""
    ns = ctx.lake.namespace
    read, writing = io
    if not started:
        ctx.emitter.emit(run_event("START", spec, namespace=ns, inputs=read, outputs=writing))
    mark = txn.mark()
    partition = partition_of(item, inputs, layout, key)
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
        ctx.emitter.emit(_failed(ctx, spec, judged, exc, io))
        reason = failure_reason(exc, item)
        return PartitionRun(key, Outcome.FAILED, spec.run_id, reason, checks=judged)
    rows = sum(txn.rows_written(n, since=mark[n]) for n in item.output_names)
    return PartitionRun(key, Outcome.BUILT, spec.run_id, rows=rows, checks=judged, lineage=lineage)


def runs_together(item: Declared, keys: Sequence[str]) -> bool:
    """Whether the runs of ``keys`` go in one Spark job: more than one, of a
    partition-local transform (its checks are judged per partition, the inputs' before
    the job and the outputs' after it)."""
    return len(keys) > 1 and item.transform.partition_local


def _run_together(
    ctx: RunContext,
    item: Declared,
    inputs: Mapping[str, Version],
    txn: Transaction,
    layout: Layout,
    specs: Mapping[str, RunSpec],
    io: tuple[list[DatasetAt], list[DatasetAt]],
) -> list[PartitionRun]:
    """Every partition's run in one Spark job: one read of the input partitions feeding
    any of them, one write split by key, each partition's rows and row hash its own.
    Each run STARTs here, and a run its input checks stop ends here (FAIL). When the job
    fails nothing of it is kept and no other run ends (those then go one job each, so
    the good ones commit): only the stopped runs are returned."""
    ns = ctx.lake.namespace
    read, writing = io
    ctx.emitter.emit_all(
        [run_event("START", s, namespace=ns, inputs=read, outputs=writing) for s in specs.values()]
    )
    owner = f"transform {item.fqn} ({item.where})"
    readable = (*item.input_names, *item.output_names)
    judged = InputsJudged({k: [] for k in specs}, {})
    if item.transform.has_input_checks:
        try:
            with reads_limited_to(owner, readable):
                judged = judge_inputs(ctx.lake, ctx.spark, item, inputs, layout, list(specs))
        except Exception as exc:  # reading the batch's inputs: each run tells its own
            _going_apart(item, len(specs), exc)
            return []
    stopped = _stopped(ctx, item, judged, specs, io)
    keys = [k for k in specs if k not in judged.stopped]
    if not keys:
        return stopped
    lineage: dict[str, dict[str, Any]] = {}
    mark = txn.mark()
    try:
        with reads_limited_to(owner, readable):
            plan = incremental.whole(item, inputs)
            batch = batch_of(item, inputs, layout, keys)
            call_transform(ctx.lake, ctx.spark, item, inputs, txn, plan, batch, None, lineage)
    except Exception as exc:
        txn.rollback(mark)
        _going_apart(item, len(keys), exc)
        return stopped
    written = [txn.rows_by_partition(n, since=mark[n]) for n in item.output_names]
    runs = [
        PartitionRun(
            key,
            Outcome.BUILT,
            specs[key].run_id,
            rows=sum(w.get(key, 0) for w in written),
            checks=judged.checks[key],
            lineage=lineage if i == 0 else {},
        )
        for i, key in enumerate(keys)
    ]
    if any(o.checks for o in item.transform.outputs.values()):
        _judge_each(ctx, item, txn, mark, runs, specs, io)
    order = {k: i for i, k in enumerate(specs)}
    return sorted([*stopped, *runs], key=lambda p: order[p.key])


def _going_apart(item: Declared, count: int, exc: Exception) -> None:
    log.info(
        "%s: the job of %d partitions failed (%s); running them one job each",
        item.fqn,
        count,
        failure_reason(exc, item),
    )


def _stopped(
    ctx: RunContext,
    item: Declared,
    judged: InputsJudged,
    specs: Mapping[str, RunSpec],
    io: tuple[list[DatasetAt], list[DatasetAt]],
) -> list[PartitionRun]:
    """The runs their input checks stopped, ended (FAIL) as each run alone ends."""
    runs, events = [], []
    for key, exc in judged.stopped.items():
        checks = judged.checks[key]
        events.append(_failed(ctx, specs[key], checks, exc, io))
        reason = failure_reason(exc, item)
        runs.append(PartitionRun(key, Outcome.FAILED, specs[key].run_id, reason, checks=checks))
    ctx.emitter.emit_all(events)
    return runs


def _judge_each(
    ctx: RunContext,
    item: Declared,
    txn: Transaction,
    mark: Mapping[str, int],
    runs: Sequence[PartitionRun],
    specs: Mapping[str, RunSpec],
    io: tuple[list[DatasetAt], list[DatasetAt]],
) -> None:
    """Each partition's output checks on its own rows of the job's write: a partition
    whose FAIL check failed fails alone (FAIL, its rows dropped), as its own run would."""
    failed: dict[str, dict[str, Any]] = {}  # key -> its FAIL event
    batch = BatchColumns(txn, mark, [p.key for p in runs])
    for p in runs:
        try:
            judge_written_partition(
                ctx.lake, ctx.spark, item, txn, mark, p.key, p.checks, batch.read
            )
        except Exception as exc:
            p.outcome, p.reason, p.rows = Outcome.FAILED, failure_reason(exc, item), 0
            failed[p.key] = _failed(ctx, specs[p.key], p.checks, exc, io)
    if failed:
        txn.drop_partitions(list(failed))
        ctx.emitter.emit_all(list(failed.values()))


def _failed(
    ctx: RunContext,
    spec: RunSpec,
    checks: Sequence[CheckResult],
    exc: Exception,
    io: tuple[list[DatasetAt], list[DatasetAt]],
) -> dict[str, Any]:
    """The FAIL event of a partition's run, its datasets carrying the checks judged."""
    read, writing = io
    return run_event(
        "FAIL",
        spec,
        namespace=ctx.lake.namespace,
        inputs=with_assertions(read, checks, "input"),
        outputs=with_assertions(writing, checks, "output"),
        error=exc,
        trace=stack_trace(exc),
    )


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
    ctx.emitter.emit_all(
        [
            run_event(
                "COMPLETE",
                specs[p.key],
                namespace=ctx.lake.namespace,
                inputs=with_assertions(read, p.checks, "input"),
                outputs=with_assertions(written if i == 0 else writing, p.checks, "output"),
            )
            for i, p in enumerate(done)
        ]
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
