"""The build service as the CLI and the API use it: pipelines, status and builds over
one lake."""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from strata import collector
from strata.builds import history
from strata.builds.columns import changes as column_changes
from strata.builds.columns import trace as column_trace
from strata.builds.execution.builder import Builder, BuildReport, Reporter
from strata.builds.history import Entry
from strata.builds.programs.discovery import Pipelines, load_pipelines, source_stamp
from strata.builds.staleness import status
from strata.builds.staleness.status import DatasetStatus, from_store
from strata.builds.state import BuildState
from strata.errors import InvalidArgument, NotFound, PipelineError, StrataError
from strata.lake.branches import MAIN
from strata.lake.service import Lake, connect
from strata.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from strata.builds.execution.reproduce import Reproduction


class BuildService:
    """Transforms from ``pipelines`` (default: the ``pipelines`` setting) over one lake.

    One service may serve many threads (the API server holds one): the pipelines are
    imported once, under a lock, and again only when a file under their folders changes
    (or after :meth:`reload`).
    """

    def __init__(
        self,
        settings: Settings,
        pipelines: Sequence[str] | None = None,
        lake: Lake | None = None,
    ) -> None:
        self.settings = settings
        self.paths = list(pipelines or settings.pipelines)
        self.lake = lake or connect(settings)
        self.state = BuildState(self.lake.engine, self.lake.namespace, self.lake.branch)
        self._lock = threading.Lock()
        self._loaded: tuple[object, Pipelines] | None = None

    @property
    def pipelines(self) -> Pipelines:
        """The pipelines as their files are now: imported again only if those changed."""
        stamp = source_stamp(self.paths)
        with self._lock:
            if self._loaded is None or self._loaded[0] != stamp:
                with collector.paused():
                    loaded = load_pipelines(self.paths)
                _refuse_raw_outputs(self.state, loaded)
                self._loaded = (stamp, loaded)
            return self._loaded[1]

    def reload(self) -> None:
        """Forget the loaded pipelines: the next use imports them again."""
        with self._lock:
            self._loaded = None

    def on_branch(self, branch: str | None) -> BuildService:
        """This service reading and writing ``branch`` (None: its own), with the same
        pipelines."""
        if branch is None or branch == self.lake.branch:
            return self
        import copy

        other = copy.copy(self)
        other.lake = self.lake.on_branch(branch)
        other.state = BuildState(self.lake.engine, self.lake.namespace, branch)
        return other

    def status(self) -> dict[str, DatasetStatus]:
        """Every dataset, fresh or out of date with every cause (no JVM); with the
        ``foreign_status`` setting, also the datasets of jobs Strata does not build whose
        program moved on since they were written."""
        pipelines = self.pipelines
        with collector.paused():
            found = from_store(self.state, pipelines, self.state.current())
        if self.settings.foreign_status:
            found |= status.foreign(self.state)
        return found

    def plan_columns(self, dataset: str | None = None) -> tuple[list[str], list[str]]:
        """Plan each transform out of date by a program change (of ``dataset`` only, if
        named) on its current inputs, so status can say which columns the change
        touches; starts Spark, runs nothing. The transforms planned and those whose plan
        could not be made."""
        found = self.status() if dataset is None else {dataset: self.dataset_status(dataset)}
        jobs = {job for _, job, _ in column_changes.program_changes(found)}
        if not jobs:
            return [], []
        failed = column_changes.plan_changed(
            self.lake, self._spark(), self.state, self.pipelines, jobs
        )
        return sorted(jobs - set(failed)), failed

    def dataset_status(self, name: str) -> DatasetStatus:
        """One dataset's status, reading only it and what is upstream of it."""
        pipelines = self.pipelines
        item = pipelines.producer(name)
        keys = pipelines.graph.post_order([item.fqn]) if item is not None else []
        names = {name} | _datasets_of(pipelines, keys)
        with collector.paused():
            current = self.state.current(names)
            found = from_store(self.state, pipelines, current, keys).get(name)
        if found is None and any(name in t.input_names for t in pipelines.transforms.values()):
            found = self.status().get(name)  # declared as an input and missing: rare
        if found is None:
            raise NotFound(
                f"dataset {name!r} is neither in the lake nor named by a transform; "
                "`strata status` lists them",
                dataset=name,
            )
        return found

    def builder(self) -> Builder:
        return Builder(
            self.lake,
            self.state,
            self.pipelines,
            self._spark,
            lease_seconds=self.settings.build_lease_seconds,
        )

    def build(
        self,
        datasets: Sequence[str] = (),
        *,
        everything: bool = False,
        force: bool = False,
        full: bool = False,
        dry_run: bool = False,
        jobs: int = 1,
        reporter: Reporter | None = None,
        partitions: Sequence[Mapping[str, str]] | None = None,
    ) -> BuildReport:
        """Bring ``datasets`` (or every root) up to date (see
        :mod:`strata.builds.execution.builder`).
        ``full`` runs the transforms writing ``datasets`` (every transform, with
        ``everything``) whole, incremental ones included. ``partitions`` (keys whose
        values may be ranges ``a..b``) limits the named datasets' partitioned transforms
        to those partitions."""
        builder = self.builder()
        order = builder.plan(datasets, everything)
        if partitions is not None:
            self._check_partition_names(datasets, partitions)
        if dry_run:
            return builder.dry_run(order, force or full)
        # --full: the named datasets' transforms; with --all, every transform visited.
        named = order if everything else [builder.producer_key(d) for d in datasets]
        return builder.build(
            order,
            force=force,
            full=named if full else (),
            jobs=jobs,
            reporter=reporter,
            partitions=partitions,
            backfill=named if partitions is not None else (),
        )

    def _check_partition_names(
        self, datasets: Sequence[str], partitions: Sequence[Mapping[str, str]]
    ) -> None:
        """``--partitions`` names only columns that partition every dataset named."""
        if not datasets:
            raise InvalidArgument("--partitions needs the datasets to build named, not --all")
        for name in datasets:
            item = self.pipelines.producer(name)
            by = item.partition_by if item is not None else None
            for wanted in partitions:
                unknown = sorted(set(wanted) - set(by or ()))
                if unknown:
                    what = f"partitioned by {list(by)}" if by else "not partitioned"
                    raise InvalidArgument(
                        f"--partitions names {unknown}, but {name!r} is {what}; name only "
                        "its partition columns",
                        dataset=name,
                        columns=unknown,
                    )

    def history(
        self, dataset: str, partition: Mapping[str, list[str]] | None = None
    ) -> dict[str, Any]:
        return history.history(self.state, dataset, dict(partition) if partition else None)

    def job_history(self, job: str, namespace: str | None = None) -> dict[str, Any]:
        """A job's versions (default namespace: this lake's), newest first."""
        return history.job_history(self.state, namespace or self.lake.namespace, job)

    def trace(
        self,
        dataset: str,
        version: int | None = None,
        partition: Mapping[str, list[str]] | None = None,
        *,
        column: str | None = None,
        indirect: bool = False,
    ) -> dict[str, Any]:
        """The provenance tree of a version (of one partition of it, with ``partition``:
        one value for each partition column); with ``column``, that column's
        (:func:`column_trace.column_trace`). Without a version, the branch's current."""
        version = self._current_on_branch(dataset, version)
        if column is not None:
            if partition is not None:
                raise InvalidArgument(
                    "a column is followed through the whole version; drop the partition",
                    column=column,
                )
            return column_trace.column_trace(
                self.state, dataset, version, column, indirect=indirect
            )
        if partition is None:
            return history.trace(self.state, dataset, version)
        from strata.builds.partitions.trace import partition_trace

        def whole(name: str, at: int | None) -> dict[str, Any]:
            return history.trace(self.state, name, at)

        return partition_trace(self.state, dataset, version, partition, history.TRACE_DEPTH, whole)

    def impact(self, dataset: str, column: str, *, direct: bool = False) -> dict[str, Any]:
        """Every current field derived from one column, directly or not (``direct``: only
        the fields whose values are computed from it)."""
        return column_trace.column_impact(self.state, dataset, column, direct=direct)

    def checks(self, dataset: str, version: int | None = None) -> dict[str, Any]:
        """What the checks found on ``version`` of ``dataset`` (default: its current
        version, and the runs since that a check stopped)."""
        if version is not None:
            self.lake.version(dataset, version=version)  # one that exists, else NotFound
        at, found = self.state.check_results(dataset, version, self._producer(dataset))
        return {"dataset": dataset, "version": at, "results": [r.to_dict() for r in found]}

    def _producer(self, dataset: str) -> str | None:
        """The transform the pipelines say writes ``dataset``, if they can be loaded."""
        try:
            item = self.pipelines.producer(dataset)
        except StrataError:
            return None
        return item.fqn if item is not None else None

    def run_checks(self, run: str) -> dict[str, Any]:
        """What the checks of one run found."""
        return {"run": run, "results": [r.to_dict() for r in self.state.run_checks(run)]}

    def program(self, dataset: str, version: int | None = None) -> Entry:
        return history.entry(self.state, dataset, version)

    def reproduce(
        self,
        dataset: str,
        version: int | None = None,
        partition: Mapping[str, list[str]] | None = None,
    ) -> Reproduction:
        from strata.builds.execution.reproduce import reproduce

        version = self._current_on_branch(dataset, version)
        return reproduce(self.lake, self._spark, dataset, version, partition)

    def _current_on_branch(self, dataset: str, version: int | None) -> int | None:
        """``version``, or on a branch other than main the version it reads now (main's
        current version is what the catalog calls current already)."""
        if version is not None or self.lake.branch == MAIN:
            return version
        return self.lake.version(dataset).commit_id

    def _spark(self) -> SparkSession:
        from strata.lake.spark import get_spark

        return get_spark(self.settings)


def _datasets_of(pipelines: Pipelines, keys: Collection[str]) -> set[str]:
    return {
        n
        for k in keys
        for n in (*pipelines.transforms[k].input_names, *pipelines.transforms[k].output_names)
    }


def _refuse_raw_outputs(state: BuildState, pipelines: Pipelines) -> None:
    """A transform may not write a dataset that only hands (no build) ever wrote."""
    outputs = {o for t in pipelines.transforms.values() for o in t.output_names}
    for name in state.hand_written(outputs):
        item = pipelines.producer(name)
        assert item is not None
        raise PipelineError(
            f"transform {item.fqn} ({item.where}) writes {name!r}, a raw dataset written by "
            "hand (ingest or a transaction), not by a build; give the output another name",
            dataset=name,
            transform=item.fqn,
        )
