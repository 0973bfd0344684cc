"""Running one transform: exact inputs, one transaction for all outputs, a run in lineage.

At the start the inputs are resolved to exact versions and read by version, so a commit
landing mid-run is neither read nor recorded. The run's events (START, then COMPLETE or
FAIL) carry the program version, the exact input versions and the committed output
versions; the lake commit is the lineage output version (its commit id is the version).
A transform that raises aborts its transaction: no current version moves.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from strata.builds.checks import judging, key_counts
from strata.builds.checks.check import Check, CheckResult, failure_message
from strata.builds.checks.judging import Target
from strata.builds.columns import plan_cache, plan_lineage
from strata.builds.execution import incremental
from strata.builds.execution.handles import (
    InputHandle,
    OutputHandle,
    require_dataframe,
    require_declared_files,
)
from strata.builds.execution.incremental import Plan
from strata.builds.execution.run_events import (
    DatasetAt,
    Emitter,
    JobRef,
    RunSpec,
    build_facets,
    program_facets,
    run_event,
)
from strata.builds.programs.discovery import Declared
from strata.builds.programs.files import program_text
from strata.builds.programs.shipping import pickle_by_value
from strata.builds.programs.transforms import DF_OUTPUT
from strata.builds.staleness.causes import Outcome
from strata.builds.state import BuildState
from strata.builds.state.programs import Program
from strata.errors import (
    CheckDeclarationError,
    CheckFailed,
    CommitConflict,
    NotFound,
    TransformError,
    can_pass,
)
from strata.ids import new_id
from strata.lake import partitions as pkeys
from strata.lake.registry import Version
from strata.lake.service import Lake, reads_limited_to
from strata.lake.spark import stop_jobs
from strata.lake.transaction import Transaction

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Reads columns of one partition of an output: (output, columns, key text) -> table,
#: or None when they are too large to count on this process.
ColumnReader = Callable[[str, Sequence[str], str], "pa.Table | None"]


@dataclass
class RunResult:
    """What one transform run did."""

    transform: str
    run: str | None
    outcome: Outcome  # BUILT or FAILED
    outputs: dict[str, int | None]
    rows: int = 0
    seconds: float = 0.0
    reason: str | None = None
    program: Program | None = None
    inputs: dict[str, int] = field(default_factory=dict)
    retryable: bool = False  # failed for a reason that can pass (a conflict, an outage)
    plan: Plan | None = None
    checks: list[CheckResult] = field(default_factory=list)


def resolve_inputs(lake: Lake, item: Declared) -> dict[str, Version]:
    """Each declared input at its exact version now: latest, or the pinned one."""
    out: dict[str, Version] = {}
    for param, inp in item.inputs.items():
        try:
            out[param] = lake.version(inp.name, version=inp.version)
        except NotFound as exc:
            raise TransformError(
                f"transform {item.fqn} ({item.where}) reads {inp.name!r}: {exc.message}",
                transform=item.fqn,
                dataset=inp.name,
            ) from exc
    return out


@dataclass(frozen=True)
class Partition:
    """What partition runs read and write: the input partitions feeding them, and of
    inputs that are not partitioned but have the key's columns, the rows of their keys
    (any other input is read whole). One run writes only its ``key``; a batch of runs in
    one job writes only the keys ``among`` (texts)."""

    key: Mapping[str, str] | None
    sources: Mapping[str, Sequence[str]]
    rows: Mapping[str, Sequence[Mapping[str, str]]] = field(default_factory=dict)
    among: frozenset[str] | None = None


@dataclass(frozen=True)
class RunContext:
    """What every transform run of a build shares."""

    lake: Lake
    state: BuildState
    spark: SparkSession
    emitter: Emitter
    parent: tuple[str, JobRef] | None


def run_transform(
    ctx: RunContext, item: Declared, inputs: Mapping[str, Version], plan: Plan | None = None
) -> RunResult:
    """Run ``item`` on exactly ``inputs`` as ``plan`` says (default: whole); its outputs
    commit together or not at all."""
    started = time.monotonic()
    lake = ctx.lake
    plan = plan or incremental.whole(item, inputs)
    program = ctx.state.register_program(item.fqn, item.fingerprint, program_text(item))
    spec = RunSpec(
        new_id(),
        JobRef(lake.namespace, item.fqn),
        ctx.parent,
        program_facets(
            item.fingerprint,
            program.ordinal,
            item.fqn,
            item.code.source,
            (item.root / item.code.module_path).as_uri(),
        ),
    )
    # The transaction first: it makes the outputs lake datasets before an event names them
    # (an event naming an unknown dataset would make it an external one, versioned by runs).
    # A partitioned output none of whose inputs is partitioned is written in one run,
    # laid out by its partitions.
    by = item.partition_by
    txn = lake.transaction(
        list(item.output_names),
        write_type(item, plan),
        run_uuid=spec.run_id,
        partition_by=list(by) if by else None,
    )
    read = [_at(v, plan) for v in inputs.values()]
    writing = [DatasetAt(name, None) for name in item.output_names]
    spec = replace(spec, run_facets=build_facets(plan.recorded(), lake.branch))
    ctx.emitter.emit(
        run_event("START", spec, namespace=lake.namespace, inputs=read, outputs=writing)
    )
    result = RunResult(item.fqn, spec.run_id, Outcome.FAILED, dict.fromkeys(item.output_names))
    result.program, result.plan = program, plan
    result.inputs = {v.dataset: v.commit_id for v in inputs.values()}
    readable = (*item.input_names, *item.output_names)
    judged = result.checks
    lineage: dict[str, dict[str, Any]] = {}
    try:
        _hold_base(txn, plan)
        with reads_limited_to(f"transform {item.fqn} ({item.where})", readable):
            call_transform(lake, ctx.spark, item, inputs, txn, plan, judged=judged, lineage=lineage)
        result.rows = sum(txn.rows_written(name) for name in item.output_names)
        txn.commit()
    except BaseException as exc:
        if not isinstance(exc, Exception):
            stop_jobs(ctx.spark)
        if txn.state == "OPEN":
            txn.abort()
        kind = "FAIL" if isinstance(exc, Exception) else "ABORT"
        _end_run(ctx, item, spec, kind, (read, writing), judged, result.inputs, {}, exc)
        if not isinstance(exc, Exception):
            raise
        result.reason = failure_reason(exc, item)
        result.retryable = can_pass(exc)
        result.seconds = time.monotonic() - started
        return result
    written = [written_at(txn.versions[name], lineage) for name in item.output_names]
    committed = {name: txn.versions[name].commit_id for name in item.output_names}
    _end_run(ctx, item, spec, "COMPLETE", (read, written), judged, result.inputs, committed)
    result.outcome = Outcome.BUILT
    result.outputs = dict(committed)
    result.seconds = time.monotonic() - started
    return result


def _end_run(
    ctx: RunContext,
    item: Declared,
    spec: RunSpec,
    kind: str,
    io: tuple[Sequence[DatasetAt], Sequence[DatasetAt]],
    judged: Sequence[CheckResult],
    inputs: Mapping[str, int],
    committed: Mapping[str, int],
    exc: BaseException | None = None,
) -> None:
    """The run's last event (with what its checks found), and its check results kept."""
    read, wrote = io
    ctx.emitter.emit(
        run_event(
            kind,
            spec,
            namespace=ctx.lake.namespace,
            inputs=with_assertions(read, judged, "input"),
            outputs=with_assertions(wrote, judged, "output"),
            error=exc,
            trace=stack_trace(exc) if exc is not None else None,
        )
    )
    record_checks(ctx, spec.run_id, item, judged, inputs, committed)


def with_assertions(
    ats: Sequence[DatasetAt], judged: Sequence[CheckResult], side: str
) -> list[DatasetAt]:
    """``ats`` carrying what their checks found (OpenLineage ``dataQualityAssertions``)."""
    if not judged:
        return list(ats)
    return [
        replace(
            at,
            assertions=tuple(
                r.assertion_facet() for r in judged if r.side == side and r.dataset == at.name
            ),
        )
        for at in ats
    ]


def record_checks(
    ctx: RunContext,
    run: str,
    item: Declared,
    judged: Sequence[CheckResult],
    inputs: Mapping[str, int],
    outputs: Mapping[str, int],
) -> None:
    """Keep what a run's checks found, with the versions they judged (an output's: the
    version committed; none when the run failed)."""
    if judged:
        ctx.state.record_checks(item.fqn, [(run, judged, {**inputs, **outputs})])


def write_type(item: Declared, plan: Plan) -> str:
    """How the outputs commit: an incremental run appends, a whole run of an
    incremental transform replaces, any other transform as its outputs declare."""
    if item.transform.incremental is None:
        return item.transform.output_type
    return "APPEND" if plan.mode == "incremental" else "SNAPSHOT"


def _hold_base(txn: Transaction, plan: Plan) -> None:
    """An incremental run appends to the versions it planned from, or not at all: an
    output committed since the plan fails the run with the conflict named."""
    if plan.mode != "incremental":
        return
    for name, before in plan.previous.items():
        txn.set_type(name, "APPEND", exclusive=True)
        if txn.base_of(name) != before:
            raise CommitConflict(
                f"{name!r} moved from version {before} to {txn.base_of(name)} while this "
                "incremental build planned its run; build again",
                dataset=name,
                base_commit_id=before,
                winning_commit_id=txn.base_of(name),
            )


def call_transform(
    lake: Lake,
    spark: SparkSession,
    item: Declared,
    inputs: Mapping[str, Version],
    txn: Transaction,
    plan: Plan | None = None,
    partition: Partition | None = None,
    judged: list[CheckResult] | None = None,
    lineage: dict[str, dict[str, Any]] | None = None,
) -> None:
    """Call the function on ``inputs`` and write what it makes into ``txn`` (uncommitted);
    for one ``partition``, on the input partitions feeding it, writing only into it.
    Input checks are judged first and output checks last, into ``judged``; a failed
    FAIL check raises :class:`CheckFailed`. A batch of partitions' checks are judged per
    partition by the caller (inputs before, :func:`judge_written_partition` after). Each
    output's column lineage, derived from the plan of the frame written, goes into
    ``lineage``."""
    pickle_by_value(item.root)
    plan = plan or incremental.whole(item, inputs)
    t = item.transform
    within = partition.key if partition is not None else None
    among = partition.among if partition is not None else None
    handles = input_handles(lake, spark, item, inputs, plan, partition)
    judge = Judge(item, judged if judged is not None else [], _key_text(item, within))
    for p, inp in t.inputs.items():
        if inp.checks and among is None:
            # What the run reads: an incremental run's new rows, a partition's rows.
            judge(Target(inp.name, "input", handles[p].dataframe), inp.checks)
    mark = txn.mark()
    for o in t.outputs.values():
        if o.checks:  # judged from what the write itself observes, where it can
            txn.watch(o.name, judging.row_measures(o.checks))
    allowed = {**{v.dataset: v for v in inputs.values()}, **_previous_outputs(lake, plan)}
    traced = _Lineage(lake, allowed, wanted=lineage is not None)
    if t.kind == "df":
        df = t.func(**{p: h.dataframe() for p, h in handles.items()})
        require_dataframe(item, df, "its return value")
        require_declared_files(lake, item, allowed, df)
        traced.start(t.outputs[DF_OUTPUT].name, df)
        txn.write(df, dataset=t.outputs[DF_OUTPUT].name, within=within, among=among)
    else:
        outs = {
            p: OutputHandle(
                lake, spark, item, txn, o.name, allowed, plan, (within, among), traced.start
            )
            for p, o in t.outputs.items()
        }
        t.func(**handles, **outs)
        missing = sorted(h.name for h in outs.values() if not h.written)
        if missing:
            raise TransformError(
                f"transform {item.fqn} ({item.where}) did not write {missing}; call "
                "write_dataframe(df) on every output",
                transform=item.fqn,
            )
    if lineage is not None:
        lineage |= traced.results()
    if among is not None:
        return
    for o in t.outputs.values():
        if o.checks:
            judge(_written(lake, spark, txn, o.name, mark[o.name], within is not None), o.checks)


def input_handles(
    lake: Lake,
    spark: SparkSession,
    item: Declared,
    inputs: Mapping[str, Version],
    plan: Plan,
    partition: Partition | None = None,
) -> dict[str, InputHandle]:
    """The transform's inputs, by parameter, as ``plan`` reads them (of ``partition``,
    its input partitions and rows)."""
    sources = partition.sources if partition is not None else {}
    rows = partition.rows if partition is not None else {}
    return {
        p: InputHandle(
            lake, spark, v, plan.reads[p], item, sources.get(v.dataset), rows.get(v.dataset)
        )
        for p, v in inputs.items()
    }


def judge_written_partition(
    lake: Lake,
    spark: SparkSession,
    item: Declared,
    txn: Transaction,
    mark: Mapping[str, int],
    key: str,
    judged: list[CheckResult],
    read: ColumnReader | None = None,
) -> None:
    """The output checks of partition ``key`` (text) of a batch written since ``mark``,
    into ``judged``, as a run of that partition alone judges them; a failed FAIL check
    raises :class:`CheckFailed`. ``read`` reads its key columns (by default, alone)."""
    judge = Judge(item, judged, key)
    for o in item.transform.outputs.values():
        if o.checks:
            written = _written(lake, spark, txn, o.name, mark[o.name], True, key, read)
            judge(written, o.checks)


# Deriving a plan's lineage waits on the JVM (its plan's JSON) for tens of milliseconds:
# it runs beside the write, which waits on the JVM far longer.
_TRACERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="strata-lineage")


class _Lineage:
    """Each written frame's column lineage, derived while Spark writes the frame."""

    def __init__(self, lake: Lake, read: Mapping[str, Version], wanted: bool = True) -> None:
        self._lake, self._read, self._wanted = lake, read, wanted
        self._pending: dict[str, Future[dict[str, Any] | None]] = {}

    def start(self, name: str, frame: Any) -> None:
        if self._wanted:
            job = _TRACERS.submit(derive_lineage, self._lake, self._read, name, frame)
            self._pending[name] = job

    def results(self) -> dict[str, dict[str, Any]]:
        """Each output's ``columnLineage`` ``fields`` (none where it was not derived)."""
        done = {name: f.result() for name, f in self._pending.items()}
        return {name: fields for name, fields in done.items() if fields is not None}


def derive_lineage(
    lake: Lake, read: Mapping[str, Version], name: str, frame: Any
) -> dict[str, Any] | None:
    """The column lineage of ``frame`` written to ``name``, its leaves named by the lake
    files they read. Lineage describes the run; it is not part of it: a plan it cannot
    follow leaves that output without one, and never fails the build."""
    names = {v.dataset_uuid: v.dataset for v in read.values()}
    state = BuildState(lake.engine, lake.namespace, lake.branch)

    def dataset_of(uri: str) -> str | None:
        rel = lake.storage.relative(uri)
        return names.get(rel.split("/", 1)[0]) if rel else None

    def derived_of(plan: Any, columns: Sequence[str]) -> plan_lineage.Derived | None:
        return plan_cache.derived(state, plan, columns)

    try:
        return plan_lineage.column_lineage_fields(frame, lake.namespace, dataset_of, derived_of)
    except Exception as exc:
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        log.warning("no column lineage for %s: its plan could not be followed (%s)", name, why)
        return None


def _key_text(item: Declared, within: Mapping[str, str] | None) -> str | None:
    by = item.partition_by
    return pkeys.key_text(by, within) if within is not None and by else None


def _written(
    lake: Lake,
    spark: SparkSession,
    txn: Transaction,
    name: str,
    mark: int,
    partitioned: bool,
    key: str | None = None,
    read: ColumnReader | None = None,
) -> Target:
    """What a run wrote to ``name`` (of a batch, to partition ``key``), as its checks
    judge it: an append is judged with the output it extends (whole), its keys in the
    cheap form. What the write observed and the key columns read back usually judge it
    all: the written rows are then read as a Spark frame only when needed."""
    base = txn.base_of(name)
    if txn.type_of(name) != "APPEND" or not base or partitioned:

        def written() -> DataFrame:
            frame: DataFrame = txn.pending_frame(spark, name, since=mark, partition=key)
            return frame

        def columns(cols: Sequence[str]) -> pa.Table | None:
            if read is not None and key is not None:
                return read(name, cols, key)
            limit = key_counts.MAX_BYTES
            return txn.pending_columns(name, cols, since=mark, max_bytes=limit, partition=key)

        def column_arrays(col: str) -> Generator[pa.Array[Any], None, None]:
            return txn.pending_column_arrays(name, col, since=mark, partition=key)

        seen, types = txn.watched(name, partition=key), txn.pending_types(name)
        return Target(
            name,
            "output",
            written,
            seen=seen,
            columns=columns,
            column_arrays=column_arrays,
            types=types,
        )
    appended = txn.pending_frame(spark, name, since=mark)
    previous = lake.read(name, version=base, spark=spark)
    whole = previous.unionByName(appended, allowMissingColumns=True)
    return Target(name, "output", lambda: whole, appended=appended, previous=previous)


@dataclass
class Judge:
    """Judges a run's checks into ``judged``; raises when a FAIL check failed."""

    item: Declared
    judged: list[CheckResult]
    partition: str | None

    def __call__(self, target: Target, checks: Sequence[Check]) -> None:
        target = replace(target, partition=self.partition)
        try:
            results = judging.judge(target, checks)
        except CheckDeclarationError as exc:
            self.judged.append(judging.declaration_failure(exc, target, checks))
            raise
        self.judged.extend(results)
        failed = [r.name for r in results if r.blocks]
        if failed:
            raise CheckFailed(
                failure_message(results, self.item.fqn), transform=self.item.fqn, checks=failed
            )


def _previous_outputs(lake: Lake, plan: Plan) -> dict[str, Version]:
    """The outputs' versions an incremental run may read back (``previous``)."""
    return {
        f"{name}@previous": lake.version(name, version=before)
        for name, before in plan.previous.items()
        if before is not None
    }


def written_at(v: Version, lineage: Mapping[str, dict[str, Any]]) -> DatasetAt:
    """A committed output version as its COMPLETE event names it, with its column
    lineage (``lineage``: by output name) where one was derived."""
    return replace(_at(v, output=True), column_lineage=lineage.get(v.dataset))


def _at(v: Version, plan: Plan | None = None, output: bool = False) -> DatasetAt:
    if not output:
        ranges = plan.reads.values() if plan is not None else ()
        after = next((r.after for r in ranges if r.dataset == v.dataset), None)
        return DatasetAt(v.dataset, v.commit_id, v.schema_fields, read_from=after)
    return DatasetAt(
        v.dataset, v.commit_id, v.schema_fields, v.row_count, v.byte_count, v.file_count
    )


def failure_reason(exc: BaseException, item: Declared) -> str:
    """What went wrong, in one line, with where it was raised."""
    return f"{type(exc).__name__}: {exc}{_raised_at(exc, item)}"


def _raised_at(exc: BaseException, item: Declared) -> str:
    """`` (raised at FILE:LINE)``: the last frame of the pipeline's own code (for a
    refused write, the line that wrote), except for a transform's broken declaration,
    whose message names the transform already."""
    if isinstance(exc, TransformError):
        return ""
    root = str(item.root.resolve())
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename.startswith(root):
            return f" (raised at {frame.filename}:{frame.lineno})"
    return f" (in transform {item.fqn}, {item.where})"


def stack_trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))
