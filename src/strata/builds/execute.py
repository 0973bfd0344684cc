"""Running one transform: exact inputs, one transaction for all outputs, a run in lineage.

At the start the inputs are resolved to exact versions and read by version, so a commit
landing mid-run is neither read nor recorded. The run's events (START, then COMPLETE or
FAIL) carry the program version, the exact input versions and the committed output
versions; the lake commit is the lineage output version (its commit id is the version).
A transform that raises aborts its transaction: no current version moves.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from strata.builds.causes import Outcome
from strata.builds.discovery import Declared
from strata.builds.program_files import program_text
from strata.builds.run_events import DatasetAt, Emitter, JobRef, RunSpec, program_facets, run_event
from strata.builds.shipping import pickle_by_value
from strata.builds.state import BuildState
from strata.builds.state.programs import Program
from strata.builds.transforms import DF_OUTPUT
from strata.errors import NotFound, StrataError, TransformError, can_pass
from strata.ids import new_id
from strata.lake.registry import Version
from strata.lake.service import Lake, reads_limited_to
from strata.lake.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


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


class InputHandle:
    """A declared input of a ``@transform``: its exact version, read on demand."""

    def __init__(self, lake: Lake, spark: SparkSession, version: Version) -> None:
        self._lake, self._spark, self.version = lake, spark, version
        self.name = version.dataset

    def dataframe(self) -> DataFrame:
        return self._lake.read(self.name, version=self.version.commit_id, spark=self._spark)


class OutputHandle:
    """A declared output of a ``@transform``: written once, committed with the others."""

    def __init__(
        self, lake: Lake, item: Declared, txn: Transaction, name: str, inputs: Mapping[str, Version]
    ) -> None:
        self._lake, self._item, self._txn, self.name = lake, item, txn, name
        self._inputs = inputs
        self.written = False

    def write_dataframe(self, df: Any) -> None:
        _require_dataframe(self._item, df, f"write_dataframe for {self.name!r}")
        _require_declared_files(self._lake, self._item, self._inputs, df)
        if self.written:
            raise TransformError(
                f"transform {self._item.fqn} ({self._item.where}) wrote {self.name!r} twice; "
                "union the frames and write once"
            )
        self._txn.write(df, dataset=self.name)
        self.written = True


def _require_dataframe(item: Declared, value: Any, what: str) -> None:
    kind = type(value)
    if not (kind.__module__.startswith("pyspark.") and kind.__name__ == "DataFrame"):
        raise TransformError(
            f"transform {item.fqn} ({item.where}): {what} got a {kind.__module__}."
            f"{kind.__qualname__}, not a Spark DataFrame; return the DataFrame to write",
            transform=item.fqn,
        )


def _require_declared_files(
    lake: Lake, item: Declared, inputs: Mapping[str, Version], df: DataFrame
) -> None:
    lake.refuse_undeclared_files(df, f"transform {item.fqn} ({item.where})", inputs.values())


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
class RunContext:
    """What every transform run of a build shares."""

    lake: Lake
    state: BuildState
    spark: SparkSession
    emitter: Emitter
    parent: tuple[str, JobRef] | None


def run_transform(ctx: RunContext, item: Declared, inputs: Mapping[str, Version]) -> RunResult:
    """Run ``item`` on exactly ``inputs``; its outputs commit together or not at all."""
    started = time.monotonic()
    lake = ctx.lake
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
    txn = lake.transaction(
        list(item.output_names), item.transform.output_type, run_uuid=spec.run_id
    )
    read = [_at(v) for v in inputs.values()]
    writing = [DatasetAt(name, None) for name in item.output_names]
    ctx.emitter.emit(
        run_event("START", spec, namespace=lake.namespace, inputs=read, outputs=writing)
    )
    result = RunResult(item.fqn, spec.run_id, Outcome.FAILED, dict.fromkeys(item.output_names))
    result.program = program
    result.inputs = {v.dataset: v.commit_id for v in inputs.values()}
    try:
        with reads_limited_to(f"transform {item.fqn} ({item.where})", item.input_names):
            call_transform(lake, ctx.spark, item, inputs, txn)
        txn.commit()
    except BaseException as exc:
        if txn.state == "OPEN":
            txn.abort()
        kind = "FAIL" if isinstance(exc, Exception) else "ABORT"
        event = run_event(
            kind,
            spec,
            namespace=lake.namespace,
            inputs=read,
            outputs=writing,
            error=exc,
            trace=_trace(exc),
        )
        ctx.emitter.emit(event)
        if not isinstance(exc, Exception):
            raise
        result.reason = f"{type(exc).__name__}: {exc}{_raised_at(exc, item)}"
        result.retryable = can_pass(exc)
        result.seconds = time.monotonic() - started
        return result
    written = [_at(txn.versions[name], output=True) for name in item.output_names]
    ctx.emitter.emit(
        run_event("COMPLETE", spec, namespace=lake.namespace, inputs=read, outputs=written)
    )
    result.outcome = Outcome.BUILT
    result.outputs = {name: txn.versions[name].commit_id for name in item.output_names}
    result.rows = sum(txn.versions[name].row_count for name in item.output_names)
    result.seconds = time.monotonic() - started
    return result


def call_transform(
    lake: Lake,
    spark: SparkSession,
    item: Declared,
    inputs: Mapping[str, Version],
    txn: Transaction,
) -> None:
    """Call the function on ``inputs`` and write what it makes into ``txn`` (uncommitted)."""
    pickle_by_value(item.root)
    t = item.transform
    if t.kind == "df":
        frames = {
            p: lake.read(v.dataset, version=v.commit_id, spark=spark) for p, v in inputs.items()
        }
        df = t.func(**frames)
        _require_dataframe(item, df, "its return value")
        _require_declared_files(lake, item, inputs, df)
        txn.write(df, dataset=t.outputs[DF_OUTPUT].name)
        return
    handles: dict[str, Any] = {p: InputHandle(lake, spark, v) for p, v in inputs.items()}
    outs = {p: OutputHandle(lake, item, txn, o.name, inputs) for p, o in t.outputs.items()}
    t.func(**handles, **outs)
    missing = sorted(h.name for h in outs.values() if not h.written)
    if missing:
        raise TransformError(
            f"transform {item.fqn} ({item.where}) did not write {missing}; call "
            "write_dataframe(df) on every output",
            transform=item.fqn,
        )


def _at(v: Version, output: bool = False) -> DatasetAt:
    if not output:
        return DatasetAt(v.dataset, v.commit_id, v.schema_fields)
    return DatasetAt(
        v.dataset, v.commit_id, v.schema_fields, v.row_count, v.byte_count, v.file_count
    )


def _raised_at(exc: BaseException, item: Declared) -> str:
    """`` (raised at FILE:LINE)``: the last frame of the pipeline's own code, for an
    exception Strata did not raise on purpose (those name the transform already)."""
    if isinstance(exc, StrataError):
        return ""
    root = str(item.root.resolve())
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename.startswith(root):
            return f" (raised at {frame.filename}:{frame.lineno})"
    return f" (in transform {item.fqn}, {item.where})"


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))
