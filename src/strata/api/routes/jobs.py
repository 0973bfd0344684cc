"""Jobs (addressed by FQN, redirected from old or simple names), versions and runs."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse

from strata import ids
from strata.api import views
from strata.api.contract import JOB_MOVED, errors
from strata.api.deps import Eng, Limit, Offset, Partition, reading
from strata.api.models import JobIn, RunIn
from strata.api.redirects import job_uuid
from strata.errors import InvalidArgument, NotFound, StoreConflict
from strata.lake.partitions import check_filter, parse_alternatives
from strata.lineage.query import common
from strata.lineage.query import datasets as dataset_reads
from strata.lineage.query import jobs as job_reads
from strata.lineage.query import runs as run_reads
from strata.lineage.record import marquez_writes as w
from strata.store.engine import read_tx
from strata.store.owners.runs import rows as stored_runs
from strata.times import Zoneless, aware

router = APIRouter(tags=["Jobs"])
JOB = "/namespaces/{namespace:seg}/jobs/{job:seg}"


LastRunStates = Annotated[
    list[Literal["NEW", "RUNNING", "COMPLETED", "FAILED", "ABORTED"]] | None,
    Query(alias="lastRunStates", description="only jobs whose latest run is in one of these"),
]


@router.get("/namespaces/{namespace:seg}/jobs", response_model=views.Json)
def list_jobs(
    request: Request,
    namespace: str,
    limit: Limit = 100,
    offset: Offset = 0,
    last_run_states: LastRunStates = None,
) -> Response:
    with reading(request) as conn:
        page = job_reads.list_jobs(
            conn, namespace, limit, offset, sorted(set(last_run_states or ()))
        )
    return views.page("jobs", page, views.job)


@router.get("/jobs", response_model=views.Json)
def list_all_jobs(
    request: Request, limit: Limit = 100, offset: Offset = 0, last_run_states: LastRunStates = None
) -> Response:
    """Every namespace's jobs, as Marquez's ``GET /jobs`` (its web UI's job list)."""
    with reading(request) as conn:
        page = job_reads.list_jobs(conn, None, limit, offset, sorted(set(last_run_states or ())))
    return views.page("jobs", page, views.job)


@router.get(JOB, response_model=views.Json, responses=JOB_MOVED)
def get_job(request: Request, namespace: str, job: str) -> Response:
    with reading(request) as conn:
        uuid = job_uuid(conn, namespace, job)
        found = job_reads.get_job(conn, uuid)
        by_partition = stored_runs.latest_partition_runs(conn, uuid)
        children = job_reads.child_jobs(conn, uuid)
    out = views.job(found)
    if by_partition:  # Strata's: a partitioned transform's last run of each partition
        out["latestRunsByPartition"] = [views.partition_run(x) for x in by_partition]
    if children:  # Strata's: the jobs that name this one as their parent
        out["childJobs"] = [{"namespace": ns, "name": name} for ns, name in children]
    return views.json_response(out)


@router.put(JOB)
def put_job(eng: Eng, namespace: str, job: str, body: JobIn) -> dict[str, Any]:
    with read_tx(eng) as conn:
        _check_job_body(conn, namespace, job, body)
    w.upsert_job(
        eng,
        namespace,
        job,
        type=body.type,
        inputs=[(d.namespace, d.name) for d in body.inputs],
        outputs=[(d.namespace, d.name) for d in body.outputs],
        location=body.location,
        description=body.description,
    )
    if body.run_id is not None:
        w.relink_run(eng, namespace, job, str(body.run_id))
    with read_tx(eng) as conn:
        return views.job(job_reads.get_job(conn, ids.job_uuid(namespace, job)))


def _check_job_body(conn: Any, namespace: str, job: str, body: JobIn) -> None:
    """What Marquez checks of a job PUT: its run is one of this job's, its datasets exist."""
    if body.run_id is not None:
        run = run_reads.get_run(conn, str(body.run_id))  # NotFound names it
        if (run.job_namespace, run.job_name) != (namespace, job):
            raise NotFound(
                f"run {str(body.run_id)!r} is a run of job {run.job_name!r} in namespace "
                f"{run.job_namespace!r}, not of {job!r} in {namespace!r}; name one of this "
                "job's runs",
                run_id=str(body.run_id),
            )
    dataset_reads.require_datasets(
        conn, [(d.namespace, d.name) for d in [*body.inputs, *body.outputs]]
    )


@router.get(JOB + "/versions", response_model=views.Json, responses=JOB_MOVED)
def list_job_versions(
    request: Request, namespace: str, job: str, limit: Limit = 100, offset: Offset = 0
) -> Response:
    with reading(request) as conn:
        page = job_reads.list_job_versions(conn, job_uuid(conn, namespace, job), limit, offset)
    return views.page("versions", page, views.job_version)


@router.get(JOB + "/versions/{version:seg}", response_model=views.Json, responses=JOB_MOVED)
def get_job_version(request: Request, namespace: str, job: str, version: str) -> Response:
    with reading(request) as conn:
        found = job_reads.get_job_version(conn, job_uuid(conn, namespace, job), version)
    return views.json_response(views.job_version(found))


@router.get(JOB + "/runs", response_model=views.Json, responses=JOB_MOVED)
def list_runs(
    request: Request,
    namespace: str,
    job: str,
    limit: Limit = 100,
    offset: Offset = 0,
    partition: Partition = None,
) -> Response:
    if partition is not None:  # Strata's: one partition's runs, e.g. ?partition=region=JP
        key = parse_alternatives(partition)
        with reading(request) as conn:
            uuid = job_uuid(conn, namespace, job)
            columns = run_reads.job_partition_columns(conn, uuid)
            # A job with no partition runs has none that match; one with some names its
            # columns, and a filter must name only those.
            runs: common.Page[run_reads.Run] = common.Page([], 0)
            if columns:
                check_filter(f"job {namespace}/{job}", columns, key)
                runs = run_reads.list_partition_runs(conn, uuid, key, limit, offset)
        return views.page("runs", runs, views.run)
    with reading(request) as conn:
        # A job named by its FQN, the usual case, costs one statement; any other name is
        # resolved (redirect, candidates or 404) only when that finds nothing.
        page = run_reads.list_job_runs(conn, namespace, job, limit, offset)
        if page is None:
            page = run_reads.list_runs(conn, job_uuid(conn, namespace, job), limit, offset)
    return views.page("runs", page, views.run)


class _JsonNumber(str):
    """A JSON number, as the text it was written as."""


async def _raw_body(request: Request) -> bytes:
    return await request.body()  # read (and kept) already to parse the body model


def marquez_args(raw: bytes) -> dict[str, str]:
    """A run body's ``args`` as Marquez reads them: Jackson makes its ``Map<String, String>``
    from strings as they are, booleans as ``true``/``false`` and numbers as the text they were
    written as (``1.50`` stays ``1.50``), and refuses objects and arrays (400). Null is refused
    too (Marquez stores it and fails with a server error); ``"args": null`` is no args."""
    doc = json.loads(raw, parse_int=_JsonNumber, parse_float=_JsonNumber) if raw.strip() else {}
    args = doc.get("args") if isinstance(doc, dict) else None
    out: dict[str, str] = {}
    for key, value in (args or {}).items():
        if "\x00" in key or (isinstance(value, str) and "\x00" in value):
            raise InvalidArgument(
                f"run args must not hold a NUL character; args[{key!r}] does", field=f"args.{key}"
            )
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, str):
            out[key] = str(value)
        else:
            kind = {type(None): "null", dict: "an object", list: "an array"}.get(
                type(value), "not a JSON number"
            )
            raise InvalidArgument(
                f"run args map names to strings, numbers or booleans; args[{key!r}] is {kind}",
                field=f"args.{key}",
            )
    return out


@router.post(JOB + "/runs", status_code=201, responses=errors(409))
def create_run(
    eng: Eng,
    namespace: str,
    job: str,
    raw: Annotated[bytes, Depends(_raw_body)],
    body: RunIn | None = None,
) -> JSONResponse:
    body = body or RunIn()
    args = marquez_args(raw) if body.args else {}
    with read_tx(eng) as conn:
        res = job_reads.resolve_job(conn, namespace, job)
    if res.kind != "found" or res.job_uuid is None:
        raise NotFound(f"job {job!r} not found in namespace {namespace!r}", job=job)
    with read_tx(eng) as conn:
        name = job_reads.get_job(conn, res.job_uuid).name
        if body.id is not None and run_reads.runs_by_uuid(conn, [str(body.id)]):
            raise StoreConflict(
                f"run {str(body.id)!r} already exists; create a run with a new id, or "
                "move this one with /jobs/runs/{id}/start (complete, fail, abort)",
                run_id=str(body.id),
            )
    run_id = w.create_run(
        eng,
        namespace,
        name,
        run_id=str(body.id) if body.id else None,
        nominal_start_time=_aware(body.nominal_start_time),
        nominal_end_time=_aware(body.nominal_end_time),
        args=args or None,
    )
    with read_tx(eng) as conn:
        return JSONResponse(views.run(run_reads.get_run(conn, run_id)), status_code=201)


def _aware(at: datetime | None) -> datetime | None:
    # Marquez clients send local times without a zone; read them as the server's zone.
    return aware(at, Zoneless.LOCAL) if at is not None else None


@router.post(JOB + "/tags/{tag:seg}", responses=JOB_MOVED)
def tag_job(eng: Eng, namespace: str, job: str, tag: str) -> dict[str, Any]:
    with read_tx(eng) as conn:
        uuid = job_uuid(conn, namespace, job)
    w.tag_job(eng, uuid, tag)
    with read_tx(eng) as conn:
        return views.job(job_reads.get_job(conn, uuid))


@router.delete(JOB + "/tags/{tag:seg}", responses=JOB_MOVED)
def untag_job(eng: Eng, namespace: str, job: str, tag: str) -> dict[str, Any]:
    with read_tx(eng) as conn:
        uuid = job_uuid(conn, namespace, job)
    w.untag_job(eng, uuid, tag)
    with read_tx(eng) as conn:
        return views.job(job_reads.get_job(conn, uuid))
