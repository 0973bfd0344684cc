"""Builds: bring datasets up to date, visiting their upstream graph in post-order.

Each transform is run only when one of its outputs is out of date at the moment it is
visited (after its upstreams were rebuilt), or always with ``force``. Downstream of a
failure nothing runs in that build; independent branches go on. A build is one parent
run per pipeline it runs transforms of (the pipeline is the parent job); each transform
run is a child. Transforms are leased while they run, so two builders never run one
transform at once; a builder that waited re-checks before running.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from strata.builds.execution import incremental
from strata.builds.execution.execute import RunContext, RunResult, resolve_inputs, run_transform
from strata.builds.execution.leasing import held, lease_holder
from strata.builds.execution.orphans import abort_orphaned_runs
from strata.builds.execution.run_events import Emitter, JobRef, RunSpec, run_event
from strata.builds.partitions import planning
from strata.builds.partitions.runs import PartitionRun, run_partitions
from strata.builds.programs.discovery import Declared, Pipelines
from strata.builds.staleness.causes import Cause, Outcome
from strata.builds.staleness.status import from_store, own_causes
from strata.builds.state import BuildState
from strata.builds.state.catalog import Current
from strata.builds.state.leases import Taken
from strata.errors import NotFound, StrataError, can_pass
from strata.ids import new_id
from strata.lake.registry import Version
from strata.lake.service import Lake

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class Step:
    """One transform's part in a build."""

    transform: str
    outcome: Outcome
    outputs: dict[str, int | None]
    reason: str | None = None
    causes: dict[str, list[Cause]] = field(default_factory=dict)
    run: str | None = None
    seconds: float = 0.0
    rows: int = 0
    retryable: bool = False  # failed for a reason that can pass; a worker tries again
    mode: str | None = None  # "incremental" or "full" when it ran
    read: dict[str, dict[str, int | None]] = field(default_factory=dict)  # input -> range
    partitions: list[PartitionRun] | None = None  # a partitioned transform's runs

    @property
    def partly_failed(self) -> bool:
        return any(p.outcome is Outcome.FAILED for p in self.partitions or ())

    @property
    def incomplete(self) -> bool:
        """Failed or skipped, whole or in some partitions: what reads it must wait."""
        return self.outcome in (Outcome.FAILED, Outcome.SKIPPED) or any(
            p.outcome in (Outcome.FAILED, Outcome.SKIPPED) for p in self.partitions or ()
        )

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["outcome"] = self.outcome.value
        out["causes"] = {d: [c.to_dict() for c in cs] for d, cs in self.causes.items()}
        if not self.retryable:
            del out["retryable"]
        if self.partitions is None:
            del out["partitions"]
        else:
            out["partitions"] = [p.to_dict() for p in self.partitions]
        return out


@dataclass
class BuildReport:
    run: str
    state: str
    steps: list[Step]
    runs: dict[str, str] = field(default_factory=dict)  # pipeline -> its parent run

    @property
    def failed(self) -> bool:
        return self.state != "COMPLETED"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "state": self.state,
            "runs": self.runs,
            "transforms": [s.to_dict() for s in self.steps],
        }


class Reporter(Protocol):
    """Hears of a build's progress (the CLI draws it)."""

    def planned(self, keys: Sequence[str]) -> None: ...
    def started(self, key: str) -> None: ...
    def finished(self, step: Step) -> None: ...
    def waiting(self, key: str, taken: Taken) -> None: ...


class Silent:
    def planned(self, keys: Sequence[str]) -> None: ...
    def started(self, key: str) -> None: ...
    def finished(self, step: Step) -> None: ...
    def waiting(self, key: str, taken: Taken) -> None: ...


@dataclass
class Builder:
    """Runs builds over one lake, one set of pipelines and one Spark session."""

    lake: Lake
    state: BuildState
    pipelines: Pipelines
    spark: Callable[[], SparkSession]
    holder: str = field(default_factory=lambda: lease_holder("build"))
    lease_seconds: float = 300.0
    _emitter: Emitter | None = None

    @property
    def emitter(self) -> Emitter:
        if self._emitter is None:
            self._emitter = Emitter(self.lake.engine)
        return self._emitter

    def plan(self, datasets: Sequence[str], everything: bool = False) -> list[str]:
        """The transforms a build of ``datasets`` (or of every root) visits, in order."""
        graph = self.pipelines.graph
        if everything:
            return graph.post_order(graph.roots())
        return graph.post_order([self.producer_key(name) for name in datasets])

    def producer_key(self, dataset: str) -> str:
        """The transform that writes ``dataset``; NotFound names it."""
        item = self.pipelines.producer(dataset)
        if item is None:
            raise NotFound(
                f"no transform writes dataset {dataset!r}; `strata status` lists the derived "
                "datasets a build can make",
                dataset=dataset,
            )
        return item.fqn

    def current(self, names: set[str] | None = None) -> dict[str, Current]:
        return self.state.current(names)

    def dry_run(self, order: Sequence[str], force: bool = False) -> BuildReport:
        """What a build would run now, with causes; nothing runs."""
        status = from_store(self.state, self.pipelines, self.state.current())
        steps = []
        for key in order:
            item = self.pipelines.transforms[key]
            causes = {d: status[d].causes for d in item.output_names if status[d].causes}
            own = any(c.own for cs in causes.values() for c in cs)
            # Out of date through an upstream only: rebuilt if the upstream's rows change.
            outcome = (
                Outcome.WOULD_BUILD
                if own or force
                else Outcome.MAY_BUILD
                if causes
                else Outcome.FRESH
            )
            outputs = {d: status[d].version for d in item.output_names}
            steps.append(Step(key, outcome, outputs, causes=causes))
        return BuildReport(new_id(), "COMPLETED", steps)

    def build(
        self,
        order: Sequence[str],
        *,
        force: bool = False,
        full: Collection[str] = (),
        jobs: int = 1,
        reporter: Reporter | None = None,
        partitions: Sequence[Mapping[str, str]] | None = None,
        backfill: Collection[str] = (),
    ) -> BuildReport:
        """Visit ``order`` (a post-order plan); run what is out of date. The transforms in
        ``full`` run, and run whole (incremental ones too). ``partitions`` limits the
        partitioned transforms partitioned by its columns to those partitions (values
        may be ranges ``a..b``); those of ``backfill`` run every such partition, out of
        date or not."""
        run = _BuildRun(self, force, reporter or Silent(), set(full))
        run.wanted, run.backfill = partitions, set(backfill)
        run.reporter.planned(order)
        try:
            _visit_all(order, self.pipelines, run.visit, jobs)
        except BaseException:
            run.parents.finish("ABORT")
            raise
        return run.report()


class _BuildRun:
    """The state of one build while it runs (visits may run on several threads)."""

    def __init__(self, builder: Builder, force: bool, reporter: Reporter, full: set[str]) -> None:
        self.builder, self.force, self.reporter, self.full = builder, force, reporter, full
        self.id = new_id()
        self.lock = threading.Lock()
        self.steps: dict[str, Step] = {}
        self.current = builder.current()
        self.parents = _Parents(builder, self.id)
        self.committed: list[tuple[str, int]] = []  # (dataset, commit id) this build made
        self.wanted: Sequence[Mapping[str, str]] | None = None
        self.backfill: set[str] = set()

    def visit(self, key: str) -> None:
        item = self.builder.pipelines.transforms[key]
        run = self._run_partitions if self._by_partition(item) else self._run_if_out_of_date
        step = self._blocked(item) or self._broken(item) or run(item)
        with self.lock:
            self.steps[key] = step
        self.reporter.finished(step)

    @cached_property
    def _declared(self) -> dict[str, Sequence[str]]:
        """Each partitioned output the loaded pipelines declare, with its columns."""
        return planning.declared_partitioning(self.builder.pipelines.transforms.values())

    def _by_partition(self, item: Declared) -> bool:
        """Whether ``item`` builds partition by partition (one of its inputs is
        partitioned): one small query, not the partitions' facts."""
        if item.partition_by is None:
            return False
        stored = self.builder.state.partition_by(item.input_names)
        return any(n in stored or n in self._declared for n in item.input_names)

    def _partition_facts(self, item: Declared, now: dict[str, Current]) -> planning.PartitionFacts:
        return planning.gather(self.builder.state, [item], now, self._declared)

    def _blocked(self, item: Declared) -> Step | None:
        """Skipped: an upstream transform of this build failed or was skipped, whole or
        in some partitions. A transform built by partition waits only for the partitions
        fed by failed ones (:meth:`_held_back`), and is skipped, not fresh, when nothing
        else of it is due (:meth:`_upstream_incomplete`)."""
        for up in self.builder.pipelines.graph.upstream(item.fqn):
            with self.lock:
                prior = self.steps.get(up)
            if prior is None or not prior.incomplete:
                continue
            if prior.partitions and self._by_partition(item):
                continue
            return Step(item.fqn, Outcome.SKIPPED, self._versions(item), reason=_why(up, prior))
        return None

    def _broken(self, item: Declared) -> Step | None:
        """Failed before it runs: its declaration cannot be built."""
        if item.transform.broken is None:
            return None
        return Step(item.fqn, Outcome.FAILED, self._versions(item), reason=item.transform.broken)

    def _upstream_incomplete(self, item: Declared) -> Step | None:
        """Skipped rather than fresh: nothing is due, but an upstream of this build left
        partitions unbuilt, so what is here may not be what the inputs will be."""
        for up in self.builder.pipelines.graph.upstream(item.fqn):
            with self.lock:
                prior = self.steps.get(up)
            if prior is not None and prior.incomplete:
                return Step(item.fqn, Outcome.SKIPPED, self._versions(item), reason=_why(up, prior))
        return None

    def _causes(self, item: Declared, current: dict[str, Current]) -> dict[str, list[Cause]]:
        out = {}
        facts = incremental.gather(self.builder.state, [item], current)
        for dataset in item.output_names:
            causes, _ = own_causes(item, dataset, current, {}, facts)
            if causes:
                out[dataset] = causes
        return out

    def _run_if_out_of_date(self, item: Declared) -> Step:
        with self.lock:
            names = (*item.output_names, *item.input_names)
            snapshot = {n: self.current[n] for n in names if n in self.current}
        forced = self.force or item.fqn in self.full
        if not forced and not self._causes(item, snapshot):
            return Step(item.fqn, Outcome.FRESH, self._versions(item))
        b = self.builder
        waiting = lambda taken: self.reporter.waiting(item.fqn, taken)  # noqa: E731
        with held(b.state, item.fqn, b.holder, b.lease_seconds, waiting):
            # Holding the lease alone: a run of this transform still RUNNING is a dead
            # builder's.
            abort_orphaned_runs(b.state, b.emitter, [item.fqn])
            now = b.current(set(item.output_names) | set(item.input_names))
            causes = self._causes(item, now)
            if not causes and not forced:
                self._remember(now)
                return Step(item.fqn, Outcome.FRESH, self._versions(item))
            self.reporter.started(item.fqn)
            result = self._execute(item, now)
            self._remember(b.current(set(item.output_names)))
        return _step(result, causes, self._versions(item))

    def _partitions_due(
        self, item: Declared, now: dict[str, Current]
    ) -> tuple[Any, list[str], dict[str, list[Cause]]]:
        """A partitioned transform's map, the partitions this build runs, and the causes
        of those out of date, by output."""
        facts = self._partition_facts(item, now)
        layout, views = planning.assess_item(item, now, facts)
        found = next(iter(views.values()))
        by = item.partition_by or ()
        wanted = [w for w in self.wanted or () if set(w) <= set(by)]
        forced = self.force or item.fqn in self.full or (item.fqn in self.backfill and wanted)
        keys = planning.select(
            [p.key for p in found if forced or p.stale], wanted if wanted else None
        )
        chosen = set(keys)
        causes = {
            name: [c for p in parts if p.key in chosen for c in p.causes]
            for name, parts in views.items()
        }
        return layout, keys, {n: cs for n, cs in causes.items() if cs}

    def _run_partitions(self, item: Declared) -> Step:
        """Run the partitions of ``item`` that are out of date (or wanted), each its own
        run, under the transform's lease."""
        b = self.builder
        waiting = lambda taken: self.reporter.waiting(item.fqn, taken)  # noqa: E731
        try:
            with self.lock:
                snapshot = dict(self.current)
            _, keys, _ = self._partitions_due(item, snapshot)
            if not keys:
                return self._upstream_incomplete(item) or Step(
                    item.fqn, Outcome.FRESH, self._versions(item)
                )
            with held(b.state, item.fqn, b.holder, b.lease_seconds, waiting):
                abort_orphaned_runs(b.state, b.emitter, [item.fqn])
                now = b.current(set(item.output_names) | set(item.input_names))
                layout, keys, causes = self._partitions_due(item, now)
                if not keys:
                    self._remember(now)
                    return self._upstream_incomplete(item) or Step(
                        item.fqn, Outcome.FRESH, self._versions(item)
                    )
                held_back = self._held_back(item, layout, keys)
                keys = [k for k in keys if k not in held_back]
                if not keys:
                    return _skipped_partitions(item, self._versions(item), held_back)
                self.reporter.started(item.fqn)
                done = self._execute_partitions(item, layout, keys)
                done.partitions += held_back.values()
                self._remember(b.current(set(item.output_names)))
        except StrataError as exc:
            return Step(
                item.fqn,
                Outcome.FAILED,
                self._versions(item),
                reason=exc.message,
                retryable=can_pass(exc),
            )
        step = _step(done.result, causes, self._versions(item))
        step.partitions = done.partitions
        return step

    def _held_back(self, item: Declared, layout: Any, keys: list[str]) -> dict[str, PartitionRun]:
        """The output partitions fed by an upstream partition that failed in this build:
        skipped, while the others run."""
        failed: dict[str, set[str]] = {}
        graph = self.builder.pipelines.graph
        for up in graph.upstream(item.fqn):
            with self.lock:
                prior = self.steps.get(up)
            for p in (prior.partitions or ()) if prior is not None else ():
                if p.outcome in (Outcome.FAILED, Outcome.SKIPPED):
                    for name in self.builder.pipelines.transforms[up].output_names:
                        failed.setdefault(name, set()).add(p.key)
        out = {}
        for key in keys:
            for name, feeding in layout.sources.get(key, {}).items():
                bad = sorted(failed.get(name, set()).intersection(feeding))
                if bad:
                    reason = f"upstream partition {name}[{bad[0]}] failed"
                    out[key] = PartitionRun(key, Outcome.SKIPPED, None, reason)
                    break
        return out

    def _execute_partitions(self, item: Declared, layout: Any, keys: list[str]) -> Any:
        b = self.builder
        inputs = resolve_inputs(b.lake, item)
        parent = self.parents.start(item.pipeline)
        ctx = RunContext(b.lake, b.state, b.spark(), b.emitter, parent)
        done = run_partitions(ctx, item, inputs, layout, keys)
        ok = done.result.outcome is Outcome.BUILT and not any(
            p.outcome is Outcome.FAILED for p in done.partitions
        )
        self.parents.record(item.pipeline, ok)
        with self.lock:
            self.committed += [(d, c) for d, c in done.result.outputs.items() if c is not None]
        return done

    def _execute(self, item: Declared, now: dict[str, Current]) -> RunResult:
        b = self.builder
        try:
            inputs = resolve_inputs(b.lake, item)
            plan = self._plan(item, now, inputs)
        except StrataError as exc:
            failed = RunResult(item.fqn, None, Outcome.FAILED, {}, reason=exc.message)
            failed.retryable = can_pass(exc)
            return failed
        parent = self.parents.start(item.pipeline)
        ctx = RunContext(b.lake, b.state, b.spark(), b.emitter, parent)
        result = run_transform(ctx, item, inputs, plan)
        self.parents.record(item.pipeline, result.outcome is Outcome.BUILT)
        with self.lock:
            self.committed += [(d, c) for d, c in result.outputs.items() if c is not None]
        return result

    def _plan(
        self, item: Declared, now: dict[str, Current], inputs: dict[str, Version]
    ) -> incremental.Plan:
        """How the run reads and writes: an incremental transform's plan, else whole."""
        if item.transform.incremental is None:
            return incremental.whole(item, inputs)
        targets = {v.dataset: v.commit_id for v in inputs.values()}
        facts = incremental.gather(self.builder.state, [item], now, targets)
        return incremental.plan(item, now, inputs, facts, full=item.fqn in self.full)

    def _remember(self, rows: dict[str, Current]) -> None:
        with self.lock:
            self.current.update(rows)

    def _versions(self, item: Declared) -> dict[str, int | None]:
        with self.lock:
            return {
                d: (self.current[d].commit_id if d in self.current else None)
                for d in item.output_names
            }

    def report(self) -> BuildReport:
        failed = any(s.outcome is Outcome.FAILED or s.partly_failed for s in self.steps.values())
        state = "FAILED" if failed else "COMPLETED"
        runs = self.parents.finish()
        ordered = list(self.steps.values())
        run = next(iter(runs.values()), self.id)
        b = self.builder
        b.state.mark_handled(self.handled_commits(), run)
        return BuildReport(run, state, ordered, runs)

    def handled_commits(self) -> list[tuple[str, int]]:
        """Commits of this build whose readers this build visited after them: their
        triggers need no worker (a dataset nothing reads is handled by its commit)."""
        readers: dict[str, list[str]] = {}
        for key, node in self.builder.pipelines.graph.nodes.items():
            for name in node.inputs:
                readers.setdefault(name, []).append(key)
        return [
            (dataset, commit_id)
            for dataset, commit_id in self.committed
            if all(k in self.steps for k in readers.get(dataset, ()))
        ]


def _why(up: str, prior: Step) -> str:
    """Why what reads ``up`` waits: it failed (whole or in some partitions), or was
    skipped for a reason of its own upstream."""
    if prior.outcome is Outcome.FAILED or prior.partly_failed:
        return f"upstream {up} failed"
    return prior.reason or f"upstream {up} skipped"


def _skipped_partitions(
    item: Declared, versions: dict[str, int | None], held_back: Mapping[str, PartitionRun]
) -> Step:
    first = next(iter(held_back.values()))
    step = Step(item.fqn, Outcome.SKIPPED, versions, reason=first.reason)
    step.partitions = list(held_back.values())
    return step


def _step(result: RunResult, causes: dict[str, list[Cause]], after: dict[str, int | None]) -> Step:
    return Step(
        result.transform,
        result.outcome,
        after,
        reason=result.reason,
        causes=causes,
        run=result.run,
        seconds=round(result.seconds, 3),
        rows=result.rows,
        retryable=result.retryable,
        mode=result.plan.mode if result.plan is not None and result.run else None,
        read=result.plan.read_json() if result.plan is not None and result.run else {},
    )


class _Parents:
    """One parent run per pipeline, started when its first transform runs."""

    def __init__(self, builder: Builder, build_id: str) -> None:
        self.builder, self.build_id = builder, build_id
        self.lock = threading.Lock()
        self.specs: dict[str, RunSpec] = {}
        self.ok: dict[str, bool] = {}

    def start(self, pipeline: str) -> tuple[str, JobRef]:
        ns = self.builder.lake.namespace
        with self.lock:
            spec = self.specs.get(pipeline)
            if spec is None:
                # The first pipeline's run is the build's own id, so a one-pipeline build
                # (the usual case) is one parent run a user can look up by that id.
                run_id = self.build_id if not self.specs else new_id()
                spec = RunSpec(run_id, JobRef(ns, pipeline))
                self.builder.emitter.emit(run_event("START", spec, namespace=ns))
                self.specs[pipeline] = spec
                self.ok[pipeline] = True
        return spec.run_id, spec.job

    def record(self, pipeline: str, ok: bool) -> None:
        with self.lock:
            self.ok[pipeline] = self.ok[pipeline] and ok

    def finish(self, forced: str | None = None) -> dict[str, str]:
        ns = self.builder.lake.namespace
        with self.lock:
            for pipeline, spec in self.specs.items():
                kind = forced or ("COMPLETE" if self.ok[pipeline] else "FAIL")
                self.builder.emitter.emit(run_event(kind, spec, namespace=ns))
            runs = {p: s.run_id for p, s in self.specs.items()}
            self.specs = {}
        return runs


def _visit_all(
    order: Sequence[str], pipelines: Pipelines, visit: Callable[[str], None], jobs: int
) -> None:
    """Visit in ``order``; with ``jobs`` > 1, a transform as soon as its upstreams are done."""
    if jobs <= 1:
        for key in order:
            visit(key)
        return
    within = set(order)
    ups = {k: [u for u in pipelines.graph.upstream(k) if u in within] for k in order}
    pending, done = list(order), set[str]()
    running: dict[Future[None], str] = {}
    with ThreadPoolExecutor(jobs, thread_name_prefix="strata-build") as pool:
        while pending or running:
            ready = [k for k in pending if all(u in done for u in ups[k])]
            for key in ready[: jobs - len(running)]:
                pending.remove(key)
                running[pool.submit(visit, key)] = key
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                done.add(running.pop(fut))
                fut.result()
