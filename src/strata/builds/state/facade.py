"""The one door to build state: every read and write of the build tables.

The build service (builder, worker, history, status) asks :class:`BuildState`; the
small stores beside it (:mod:`.catalog`, :mod:`.programs`, :mod:`.leases`,
:mod:`.runs`, :mod:`.checks`) and the owners of the tables the build shares with other
layers (:mod:`strata.store.owners.triggers`, the commit outbox;
:mod:`strata.store.owners.partition_builds`, the partition catalog) hold the SQL. Each method is one
SQL transaction of its own, so callers never hold a connection.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine

from strata.builds.state import catalog, checks, leases, programs, requests, runs, schedules
from strata.builds.state.build_reads import BuildRead
from strata.builds.state.catalog import Current, VersionEntry
from strata.builds.state.checks import StoredResult
from strata.builds.state.programs import Program, ProgramText
from strata.builds.state.requests import BuildRequest
from strata.builds.state.runs import Running
from strata.builds.state.schedules import Firing
from strata.errors import InvalidArgument, NotFound
from strata.lake import branches, partition_hashes, partition_index, registry
from strata.lake.branches import MAIN
from strata.lake.registry import Moved
from strata.lineage.query import column_lineage as columns
from strata.lineage.query import common
from strata.lineage.query import jobs as job_reads
from strata.lineage.query.provenance import ProvenanceNode, provenance
from strata.retention import archive_state
from strata.retention import state as retention_state
from strata.retention.state import Mark
from strata.store.engine import read_tx, write_tx
from strata.store.owners import branches as stored_branches
from strata.store.owners import check_results as stored_checks
from strata.store.owners import partition_builds as partitions
from strata.store.owners import triggers
from strata.store.owners.partition_builds import PartitionBuild
from strata.store.owners.runs import rows as stored_runs
from strata.store.owners.triggers import Claim


@dataclass(frozen=True)
class BuiltVersion:
    """One committed version and what made it (``run`` None: written by hand)."""

    dataset: str
    version: int
    data_fingerprint: str | None
    run: str | None
    program: Program | None
    inputs: dict[str, int | None]


@dataclass(frozen=True)
class ColumnWalk:
    """The field lineage around one column of one version: ``start`` is its node's id,
    ``commits`` each version's commit id (None where events declared the version)."""

    version: int
    start: str
    nodes: list[columns.FieldNode]
    commits: dict[str, int | None]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class BuildState:
    """Build state of one namespace of one store."""

    def __init__(self, engine: Engine, namespace: str, branch: str = MAIN) -> None:
        self.engine, self.namespace, self.branch = engine, namespace, branch

    # -- the catalog --------------------------------------------------------------------

    def current(self, names: Collection[str] | None = None) -> dict[str, Current]:
        """Current versions with their catalog entries, as this state's branch reads them:
        every lake dataset, or ``names``."""
        with read_tx(self.engine) as conn:
            on = branches.require(conn, self.branch).id
            return catalog.load_current(conn, self.namespace, names, on)

    def ordinals(self, programs_: Collection[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``(transform, fingerprint) -> ordinal`` of those of ``programs_`` registered."""
        if not programs_:
            return {}
        by_uuid = {programs.program_uuid(self.namespace, j, fp): (j, fp) for j, fp in programs_}
        with read_tx(self.engine) as conn:
            found = programs.ordinals_of(conn, by_uuid)
        return {by_uuid[uuid]: ordinal for uuid, (_, ordinal) in found.items()}

    def semantic_versions(
        self, programs_: Collection[tuple[str, str]]
    ) -> dict[tuple[str, str], int | None]:
        """``(transform, fingerprint) -> the semantic_version`` that program declared."""
        by_uuid = {programs.program_uuid(self.namespace, j, fp): (j, fp) for j, fp in programs_}
        with read_tx(self.engine) as conn:
            found = programs.declared_semantic_versions(conn, by_uuid)
        return {by_uuid[uuid]: value for uuid, value in found.items()}

    def moves(self, spans: Collection[tuple[str, int, int]]) -> dict[tuple[str, int, int], Moved]:
        """For each ``(dataset, after, upto)``: how the dataset moved in between."""
        if not spans:
            return {}
        with read_tx(self.engine) as conn:
            uuids = catalog.dataset_uuids(conn, self.namespace, {d for d, _, _ in spans})
            keyed = [(uuids[d], a, b) for d, a, b in spans if d in uuids]
            found = registry.moves(conn, keyed)
        names = {u: d for d, u in uuids.items()}
        return {(names[u], a, b): moved for (u, a, b), moved in found.items()}

    def hand_written(self, names: Collection[str]) -> list[str]:
        """Those of ``names`` that only hands (ingest, transactions) ever wrote."""
        with read_tx(self.engine) as conn:
            suspects = catalog.made_without_run(conn, self.namespace).intersection(names)
            return catalog.hand_written(conn, self.namespace, suspects)

    def history(self, dataset: str) -> tuple[list[VersionEntry], dict[str, dict[str, int | None]]]:
        """Every version of a lake dataset, oldest first, and each run's input versions."""
        with read_tx(self.engine) as conn:
            ds = registry.require_lake_dataset(conn, self.namespace, dataset)
            rows = catalog.version_entries(conn, str(ds["uuid"]))
            return rows, catalog.run_inputs(conn, {x.run for x in rows if x.run})

    def branch_line(self) -> list[str] | None:
        """The ids of this state's branch and those it falls back to, nearest first; None
        on main, whose history is every branch's."""
        if self.branch == MAIN:
            return None
        with read_tx(self.engine) as conn:
            return stored_branches.chain(conn, branches.require(conn, self.branch).id)

    def retention_marks(self, dataset: str) -> dict[int, Mark]:
        """The versions of ``dataset`` a retention policy marked, waiting for their purge."""
        with read_tx(self.engine) as conn:
            found = catalog.dataset_uuids(conn, self.namespace, [dataset]).get(dataset)
            return {m.commit_id: m for m in retention_state.marks(conn, found)} if found else {}

    def archived(self, dataset: str) -> dict[int, tuple[int, int]]:
        """Per version of ``dataset`` with files in an archive: (archived files, all)."""
        with read_tx(self.engine) as conn:
            found = catalog.dataset_uuids(conn, self.namespace, [dataset]).get(dataset)
            return archive_state.archived_counts(conn, found) if found else {}

    def purged(self, version_uuids: Collection[str]) -> dict[str, tuple[datetime, str]]:
        """When, and by which policy, retention purged those of ``version_uuids`` it did."""
        with read_tx(self.engine) as conn:
            return catalog.purged(conn, version_uuids)

    def run_details(self, runs: Collection[str]) -> dict[str, stored_runs.Detail]:
        """Each run's state, program version uuid and facets."""
        with read_tx(self.engine) as conn:
            return stored_runs.details(conn, runs)

    def run_inputs(self, runs: Collection[str]) -> dict[str, dict[str, int | None]]:
        """Each run's exact input versions."""
        with read_tx(self.engine) as conn:
            return catalog.run_inputs(conn, runs)

    def program(self, uuid: str) -> Program | None:
        """A stored program version by its uuid (a run's ``job_version``)."""
        with read_tx(self.engine) as conn:
            return programs.by_uuid(conn, uuid)

    def build_reads(self, runs: Collection[str]) -> dict[str, BuildRead]:
        """``run -> how it read its inputs`` (mode, ranges, previous outputs)."""
        with read_tx(self.engine) as conn:
            return catalog.reads_of_runs(conn, runs)

    def built_version(self, dataset: str, version: int | None) -> BuiltVersion:
        """``dataset`` at ``version`` (default: current) and the run that made it."""
        with read_tx(self.engine) as conn:
            v = registry.resolve_version(conn, self.namespace, dataset, version=version)
            run, job_version, fp = catalog.producer(conn, v.uuid)
            program = programs.by_uuid(conn, job_version) if job_version else None
            inputs = catalog.run_inputs(conn, {run}).get(run, {}) if run else {}
            return BuiltVersion(dataset, v.commit_id, fp, run, program, inputs)

    def provenance(self, dataset: str, version: int | None, depth: int) -> ProvenanceNode:
        """The provenance tree of ``dataset`` at ``version`` (default: current)."""
        with read_tx(self.engine) as conn:
            registry.resolve_version(conn, self.namespace, dataset, version=version)
            return provenance(
                conn, self.namespace, dataset, str(version) if version else None, depth
            )

    def column_walk(
        self, dataset: str, version: int | None, column: str, *, downstream: bool, depth: int
    ) -> ColumnWalk:
        """The fields ``column`` of ``dataset`` at ``version`` (default: current) was
        derived from, or with ``downstream`` those derived from it, ``depth`` steps away."""
        with read_tx(self.engine) as conn:
            at = registry.resolve_version(conn, self.namespace, dataset, version=version)
            names = [str(f.get("name")) for f in at.schema_fields]
            if column not in names:
                raise NotFound(
                    f"{dataset}@{at.commit_id} has no column {column!r}; its columns are "
                    f"{', '.join(names) or 'none'}",
                    dataset=dataset,
                    column=column,
                )
            start = columns.field_node_id(self.namespace, dataset, column, at.uuid)
            found = columns.column_lineage(
                conn, start, depth, with_downstream=downstream, with_upstream=not downstream
            )
            versions = {n.dataset_version for n in found if n.dataset_version}
            return ColumnWalk(at.commit_id, start, found, columns.commit_ids(conn, versions))

    def current_columns(self, names: Collection[str]) -> dict[str, columns.VersionColumns]:
        """Each lake dataset's current columns and the column lineage recorded with them."""
        with read_tx(self.engine) as conn:
            return columns.current_columns(conn, self.namespace, names)

    def planned_lineage(
        self, programs_: Collection[tuple[str, str]]
    ) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
        """``(transform, fingerprint) -> {output: {"columns", "fields"}}`` of those
        program versions whose plan was derived (:meth:`record_planned_lineage`)."""
        if not programs_:
            return {}
        with read_tx(self.engine) as conn:
            return programs.planned(conn, self.namespace, programs_)

    def record_planned_lineage(
        self, job_name: str, fingerprint: str, outputs: dict[str, dict[str, Any]]
    ) -> None:
        programs.record_planned(self.engine, self.namespace, job_name, fingerprint, outputs)

    def plan_lineage(self, signature: str) -> str | None:
        """Lineage derived from the plan of ``signature`` by an earlier build."""
        with read_tx(self.engine) as conn:
            return programs.plan_lineage(conn, signature)

    def keep_plan_lineage(self, signature: str, derived: str) -> None:
        programs.keep_plan_lineage(self.engine, signature, derived)

    # -- partitions -------------------------------------------------------------------

    def job_versions(
        self, namespace: str, job: str, limit: int
    ) -> tuple[common.Page[job_reads.JobVersion], str]:
        """A job's versions, newest first, and its name (an old name or a simple name
        finds the job it now is)."""
        with read_tx(self.engine) as conn:
            found = job_reads.resolve_job(conn, namespace, job)
            if found.kind == "ambiguous":
                names = ", ".join(name for _, name in found.candidates)
                raise InvalidArgument(
                    f"job {job!r} in namespace {namespace!r} names several jobs ({names}); "
                    "write the whole name",
                    job=job,
                    namespace=namespace,
                )
            assert found.job_uuid is not None and found.name is not None
            return job_reads.list_job_versions(conn, found.job_uuid, limit, 0), found.name

    def programs_moved_on(self) -> list[job_reads.ProgramMoved]:
        """Datasets outside the lake whose job has a newer version than their writer's."""
        with read_tx(self.engine) as conn:
            return job_reads.programs_moved_on(conn, self.namespace)

    def job_namespaces(self, job: str) -> list[str]:
        """The namespaces holding a job of this name."""
        with read_tx(self.engine) as conn:
            return job_reads.namespaces_of_job(conn, job)

    def partition_by(self, names: Collection[str]) -> dict[str, list[str]]:
        """The partition columns of those of ``names`` that are partitioned."""
        with read_tx(self.engine) as conn:
            uuids = catalog.dataset_uuids(conn, self.namespace, set(names))
            found = {n: partition_index.partition_by(conn, u) for n, u in uuids.items()}
        return {n: by for n, by in found.items() if by}

    def partition_changes(
        self, versions: Mapping[str, int], floors: Mapping[str, int] | None = None
    ) -> dict[str, dict[str, int]]:
        """For each ``dataset -> version``: every partition key it holds or held up to that
        version, with the last version that changed its rows (removal included; a rewrite
        that left its rows as they were does not count: per-partition early cutoff).

        With ``floors`` (dataset -> a version), a key that changed at its dataset's floor
        or before shows its last file change instead, which is no later than the floor
        too: exact only above the floor, for a caller comparing with versions at or
        above it."""
        with read_tx(self.engine) as conn:
            uuids = catalog.dataset_uuids(conn, self.namespace, set(versions))
            return {
                n: partition_hashes.data_changed_at(
                    conn,
                    u,
                    partition_index.changed_at(conn, u, versions[n], removed_too=True),
                    versions[n],
                    after=(floors or {}).get(n, 0),
                )
                for n, u in uuids.items()
            }

    def live_partitions(self, dataset: str, version: int) -> list[str]:
        """The partition keys ``dataset`` holds at ``version``."""
        with read_tx(self.engine) as conn:
            uuid = catalog.dataset_uuids(conn, self.namespace, {dataset})[dataset]
            return sorted(partition_index.live_counts(conn, uuid, at=version))

    def partition_records(self, dataset: str) -> dict[str, PartitionBuild]:
        """What last built each partition of ``dataset`` (none: never built by partition)."""
        with read_tx(self.engine) as conn:
            uuids = catalog.dataset_uuids(conn, self.namespace, {dataset})
            return partitions.records(conn, uuids[dataset]) if dataset in uuids else {}

    def record_partitions(
        self, dataset: str, built: Sequence[PartitionBuild], replace_all: bool = False
    ) -> None:
        """Record what built each of ``built``'s partitions (``replace_all``: and forget
        every other partition's entry, after a repartition)."""
        with write_tx(self.engine) as conn:
            uuid = catalog.dataset_uuids(conn, self.namespace, {dataset})[dataset]
            if replace_all:
                partitions.forget(conn, uuid)
            partitions.record(conn, uuid, built, datetime.now(UTC))

    # -- check results ------------------------------------------------------------------

    def record_checks(self, job: str, runs: Sequence[checks.RunChecks]) -> None:
        """Keep what the checks of ``runs`` of ``job`` found, each result with the version
        of its dataset judged: in one transaction, however many runs (a batch's
        partitions)."""
        names = {r.dataset for _, results, _ in runs for r in results}
        if not names:
            return
        with write_tx(self.engine) as conn:
            uuids = catalog.dataset_uuids(conn, self.namespace, names)
            checks.record(conn, job, runs, uuids, datetime.now(UTC))

    def check_results(
        self, dataset: str, version: int | None = None, writer: str | None = None
    ) -> tuple[int | None, list[StoredResult]]:
        """The results that judged ``version`` of ``dataset`` (default: its current one on
        this state's branch, and those of the runs since that committed nothing;
        ``writer``: the transform that writes it, when it has no version yet)."""
        with read_tx(self.engine) as conn:
            on = branches.require(conn, self.branch).id
            uuid = catalog.dataset_uuids(conn, self.namespace, [dataset]).get(dataset)
            if uuid is None:
                raise NotFound(
                    f"no dataset {dataset!r} in the lake; list datasets with `strata datasets`",
                    dataset=dataset,
                )
            current = catalog.load_current(conn, self.namespace, [dataset], on).get(dataset)
            at = version if version is not None else (current.commit_id if current else None)
            found = checks.of_version(conn, uuid, at) if at is not None else []
            if version is None:
                since = checks.committed_at(conn, uuid, at) if at is not None else None
                job = current.job if current is not None and current.job else writer
                found += checks.failed_runs_since(conn, uuid, job, since or _EPOCH)
            return at, found

    def run_checks(self, run: str) -> list[StoredResult]:
        with read_tx(self.engine) as conn:
            return checks.of_run(conn, run)

    def last_check_failures(self, jobs: Collection[str]) -> dict[str, list[StoredResult]]:
        """Per transform, what failed in the latest of its runs a check stopped."""
        if not jobs:
            return {}
        with read_tx(self.engine) as conn:
            return checks.last_failures(conn, jobs)

    def warned_versions(self, dataset: str) -> dict[int, list[str]]:
        with read_tx(self.engine) as conn:
            uuid = catalog.dataset_uuids(conn, self.namespace, [dataset]).get(dataset)
            return stored_checks.warned_versions(conn, uuid) if uuid is not None else {}

    # -- schedules --------------------------------------------------------------------

    def register_schedules(self, branch: str, names: Collection[str]) -> dict[str, datetime]:
        """When each schedule of ``branch`` was first seen by any worker (now, for new ones)."""
        with write_tx(self.engine) as conn:
            return schedules.register(conn, branch, names, datetime.now(UTC))

    def last_firings(self, branch: str, names: Collection[str]) -> dict[str, datetime]:
        """The due time of each schedule's latest firing taken."""
        with read_tx(self.engine) as conn:
            return schedules.last_due(conn, branch, names)

    def take_firing(self, branch: str, name: str, due: datetime, holder: str, hold: float) -> bool:
        """Take one firing, held for ``hold`` seconds unless renewed; False when another
        worker took it first."""
        now = datetime.now(UTC)
        with write_tx(self.engine) as conn:
            return schedules.take(conn, branch, name, due, holder, now, timedelta(seconds=hold))

    def renew_firing(self, branch: str, name: str, due: datetime, holder: str, hold: float) -> None:
        """Hold ``holder``'s running firing for ``hold`` seconds more."""
        until = datetime.now(UTC) + timedelta(seconds=hold)
        with write_tx(self.engine) as conn:
            schedules.renew(conn, branch, name, due, holder, until)

    def end_lapsed_firings(self, branch: str) -> int:
        """End ABORTED the running firings of ``branch`` whose worker's hold lapsed."""
        with write_tx(self.engine) as conn:
            return schedules.end_lapsed(conn, branch, datetime.now(UTC))

    def finish_firing(
        self,
        branch: str,
        name: str,
        due: datetime,
        outcome: str,
        run: str | None,
        error: str | None,
    ) -> None:
        with write_tx(self.engine) as conn:
            schedules.finish(conn, branch, name, due, datetime.now(UTC), outcome, run, error)

    def firings(self, branch: str, name: str, limit: int = 10) -> list[Firing]:
        with read_tx(self.engine) as conn:
            return schedules.firings(conn, branch, name, limit, datetime.now(UTC))

    def existing(self, names: Collection[str]) -> list[str]:
        """Those of ``names`` that are lake datasets with a version."""
        return sorted(n for n in self.current(set(names)) if n in names)

    def ordinals_of(self, program_uuids: Collection[str]) -> dict[str, tuple[str, int]]:
        with read_tx(self.engine) as conn:
            return programs.ordinals_of(conn, program_uuids)

    # -- program versions ---------------------------------------------------------------

    def register_program(self, job_name: str, fingerprint: str, text: ProgramText) -> Program:
        return programs.register(self.engine, self.namespace, job_name, fingerprint, text)

    # -- leases and the runs they guard ---------------------------------------------------

    def try_lease(self, name: str, holder: str, seconds: float) -> leases.Taken | None:
        """Take the lease on ``name``; None when taken, else who holds it until when."""
        return leases.try_acquire(self.engine, name, holder, seconds)

    def renew_lease(self, name: str, holder: str, seconds: float) -> None:
        leases.renew(self.engine, name, holder, seconds)

    def release_lease(self, name: str, holder: str) -> None:
        leases.release(self.engine, name, holder)

    def drop_expired_leases(self) -> list[str]:
        return leases.drop_expired(self.engine)

    def running(self, transforms: Collection[str]) -> list[Running]:
        with read_tx(self.engine) as conn:
            return runs.running(conn, self.namespace, transforms)

    def has_running_children(self, run_id: str) -> bool:
        with read_tx(self.engine) as conn:
            return stored_runs.has_running_children(conn, run_id)

    # -- the trigger queue ----------------------------------------------------------------

    def claim(
        self, holder: str, lease: float, *, skip: Collection[int] = (), waiting: bool = False
    ) -> Claim | None:
        """Claim this state's branch's oldest pending trigger (see :func:`triggers.claim`)."""
        on = MAIN
        if self.branch != MAIN:  # a worker polls: main's resolves without a transaction
            with read_tx(self.engine) as conn:
                on = branches.require(conn, self.branch).id
        return triggers.claim(
            self.engine, self.namespace, holder, lease, skip=skip, waiting=waiting, branch_id=on
        )

    def renew_claim(self, claimed: Claim, holder: str) -> None:
        triggers.renew(self.engine, claimed, holder)

    def finish_claim(self, claimed: Claim, holder: str, error: str | None) -> None:
        triggers.finish(self.engine, claimed, holder, error)

    def retry_later(self, claimed: Claim, holder: str, error: str) -> float:
        return triggers.retry_later(self.engine, claimed, holder, error)

    def mark_handled(self, commits: Iterable[tuple[str, int]], by: str) -> int:
        return triggers.mark_handled(self.engine, self.namespace, commits, by)

    # -- builds asked for over HTTP -------------------------------------------------------

    def add_build_request(self, request: BuildRequest) -> None:
        with write_tx(self.engine) as conn:
            requests.add(conn, request)

    def update_build_request(self, request_id: str, **values: Any) -> None:
        with write_tx(self.engine) as conn:
            requests.update(conn, request_id, **values)

    def build_request(self, request_id: str) -> BuildRequest | None:
        self._expire_build_requests()
        with read_tx(self.engine) as conn:
            return requests.get(conn, request_id)

    def build_requests(self, limit: int) -> list[BuildRequest]:
        self._expire_build_requests()
        with read_tx(self.engine) as conn:
            return requests.recent(conn, limit)

    def _expire_build_requests(self) -> None:
        """Requests whose server stopped renewing its lease read as ABORTED, on every
        server (:func:`requests.expire_abandoned`). Read first: polls take no write
        lock while every server is alive."""
        now = datetime.now(UTC)
        with read_tx(self.engine) as conn:
            if not requests.any_abandoned(conn, now):
                return
        with write_tx(self.engine) as conn:
            requests.expire_abandoned(conn, now)

    def abandon_build_requests(self, holder: str | None, why: str) -> int:
        with write_tx(self.engine) as conn:
            return requests.abandon(conn, holder, datetime.now(UTC), why)
