"""Strata build routes: status with causes, version history, trace, programs, reproduce.

Dataset names go in one path segment (``raw%2Fclicks``). Status needs the pipelines'
current declarations: the app holds one build service, which imports the pipelines of
its ``pipelines`` setting once and again only when a file under them changes, so an
edited transform shows as changed at once and a polled status imports nothing.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from strata.api import previews, views
from strata.api.body import settings_in_query
from strata.api.build_tasks import BuildTasks
from strata.api.contract import errors
from strata.api.deps import Partition
from strata.builds.service import BuildService
from strata.lake.branches import NAME_MAX, NAME_PATTERN
from strata.lake.partitions import parse_alternatives

router = APIRouter(prefix="/strata", tags=["Strata builds"])

Version = Annotated[int | None, Query(ge=1, le=2**62, description="commit id (default: current)")]


def _service(request: Request) -> BuildService:
    service: BuildService = request.app.state.builds
    return service


def _tasks(request: Request) -> BuildTasks:
    tasks: BuildTasks = request.app.state.build_tasks
    return tasks


# The server's pipelines setting may name pipelines that cannot be loaded (400).
BranchQuery = Annotated[
    str | None,
    Query(pattern=NAME_PATTERN, max_length=NAME_MAX, description="the branch (default: main)"),
]


@router.get("/status", response_model=views.Json, responses=errors(400, 404))
def get_status(request: Request, branch: BranchQuery = None) -> Response:
    """Every dataset, fresh or out of date with every cause (as `strata status --json`);
    on a branch, as it reads them."""
    service = _service(request).on_branch(branch)
    result = service.status()
    datasets = [s.to_dict() for s in result.values()]
    return views.json_response(
        {"namespace": service.lake.namespace, "branch": service.lake.branch, "datasets": datasets}
    )


@router.post(
    "/plans",
    response_model=views.Json,
    responses=errors(400, 404),
    dependencies=[Depends(settings_in_query)],
)
def post_plans(
    request: Request,
    dataset: Annotated[
        str | None, Query(max_length=1024, description="one dataset's transform only")
    ] = None,
) -> Response:
    """Plan each transform out of date by a program change (``dataset``'s only, if
    given) on its current inputs, as `strata status --columns` does: status then says
    which columns each change touches. Starts Spark in the server on first use; runs
    and writes no data."""
    service = _service(request)
    planned, unplanned = service.plan_columns(dataset)
    result = service.status() if dataset is None else {dataset: service.dataset_status(dataset)}
    datasets = [s.to_dict() for s in result.values()]
    return views.json_response({"planned": planned, "unplanned": unplanned, "datasets": datasets})


@router.get("/status/{dataset:seg}", response_model=views.Json)
def get_dataset_status(request: Request, dataset: str, branch: BranchQuery = None) -> Response:
    """One dataset's status and causes (on a branch, as it reads them)."""
    found = _service(request).on_branch(branch).dataset_status(dataset)
    return views.json_response(found.to_dict())


@router.get("/history/{dataset:seg}", response_model=views.Json)
def get_history(
    request: Request, dataset: str, partition: Partition = None, branch: BranchQuery = None
) -> Response:
    """Each version with the run and program version that built it and its input versions
    (``partition=region=JP``: only the versions that touched that partition; ``branch``:
    only the versions of that branch's line)."""
    wanted = parse_alternatives(partition) if partition is not None else None
    return views.json_response(_service(request).on_branch(branch).history(dataset, wanted))


@router.get("/checks/{dataset:seg}", response_model=views.Json)
def get_checks(
    request: Request, dataset: str, version: Version = None, branch: BranchQuery = None
) -> Response:
    """What the data checks found on a version (default: the branch's current one, and
    the runs since that a failed check stopped), as `strata checks --json`."""
    return views.json_response(_service(request).on_branch(branch).checks(dataset, version))


@router.get("/runs/{run}/checks", response_model=views.Json)
def get_run_checks(request: Request, run: str) -> Response:
    """What the data checks of one build run found."""
    return views.json_response(_service(request).run_checks(run))


@router.get("/schedules", response_model=views.Json, responses=errors(400))
def get_schedules(request: Request) -> Response:
    """Each schedule with its last firing and outcome and its next firing (as
    `strata schedules --json`)."""
    from strata.builds.workers.scheduler import overview

    return views.json_response({"schedules": overview(_service(request))})


@router.get("/trace/{dataset:seg}", response_model=views.Json)
def get_trace(
    request: Request,
    dataset: str,
    version: Version = None,
    partition: Partition = None,
    branch: BranchQuery = None,
) -> Response:
    """The provenance tree of a version down to raw datasets, exact versions at each level
    (``partition=col=value,…``: of that one partition, down to the partitions it read;
    without a version, the branch's current)."""
    wanted = parse_alternatives(partition) if partition is not None else None
    found = _service(request).on_branch(branch).trace(dataset, version, wanted)
    return views.json_response(found)


@router.get("/trace/{dataset:seg}/{column:seg}", response_model=views.Json)
def get_column_trace(
    request: Request,
    dataset: str,
    column: str,
    version: Version = None,
    indirect: bool = False,
    branch: BranchQuery = None,
) -> Response:
    """The fields one column of a version (default: the branch's current) was derived
    from, down to raw fields, each at the version its run read (``indirect``: also those
    that filtered, joined, grouped or ordered it), as `strata trace DATASET@N --column C
    --json`."""
    service = _service(request).on_branch(branch)
    tree = service.trace(dataset, version, column=column, indirect=indirect)
    return views.json_response(tree)


@router.get("/impact/{dataset:seg}/{column:seg}", response_model=views.Json)
def get_impact(request: Request, dataset: str, column: str, direct: bool = False) -> Response:
    """Every field of the current versions derived from one column, directly or not,
    nearest first (``direct``: only the fields whose values are computed from it), as
    `strata impact DATASET.COLUMN [--direct] --json`."""
    return views.json_response(_service(request).impact(dataset, column, direct=direct))


@router.get("/programs/{dataset:seg}", response_model=views.Json)
def get_program(request: Request, dataset: str, version: Version = None) -> Response:
    """The stored program version (source files included) that built a dataset version."""
    built = _service(request).program(dataset, version)
    body = {"dataset": dataset, "version": built.version, "run": built.run}
    return views.json_response({**body, "inputs": built.inputs, **built.program.to_dict()})


@router.post(
    "/reproduce/{dataset:seg}",
    response_model=views.Json,
    responses=errors(400, 410),
    dependencies=[Depends(settings_in_query)],
)
def post_reproduce(
    request: Request,
    dataset: str,
    version: Version = None,
    partition: Partition = None,
    branch: BranchQuery = None,
) -> Response:
    """Run the stored program of a built version again on its recorded inputs, in a
    scratch transaction never committed, and compare data fingerprints (a version built
    by partition: partition by partition; ``partition=col=value,…``: that one only).
    Starts Spark in the server (the `spark_master` setting) on first use."""
    # An unknown dataset or version is a 404 before Spark starts (BuildService.reproduce).
    wanted = parse_alternatives(partition) if partition is not None else None
    result = _service(request).on_branch(branch).reproduce(dataset, version, wanted)
    return views.json_response(result.to_dict())


class NewBuild(BaseModel):
    """A build of one dataset and what it needs, as ``strata build DATASET``."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is refused, not dropped

    dataset: str = Field(min_length=1, max_length=1024, description="e.g. metrics/daily")
    force: bool = Field(default=False, description="run its transform even if fresh")


@router.post("/builds", status_code=202, response_model=views.Json, responses=errors(404))
def post_build(request: Request, body: NewBuild) -> Response:
    """Start a build (a write token where tokens are set). It runs in the server, one at a
    time, Spark started on first use; poll ``GET /strata/builds/{id}`` for its progress."""
    return views.json_response(_tasks(request).start(body.dataset, body.force), status_code=202)


@router.get("/builds", response_model=views.Json)
def get_builds(request: Request) -> Response:
    """The last 100 builds asked for (of any server of the store), newest first."""
    return views.json_response({"builds": _tasks(request).recent()})


@router.get("/builds/{id}", response_model=views.Json)
def get_build(request: Request, id: str) -> Response:
    """One build: planned, running and finished transforms, its state and error."""
    return views.json_response(_tasks(request).get(id))


Rows = Annotated[int, Query(ge=0, le=previews.MAX_ROWS, description="rows to return")]


@router.get("/preview/{dataset:seg}", response_model=views.Json)
def get_preview(
    request: Request,
    dataset: str,
    version: Version = None,
    rows: Rows = 100,
    branch: BranchQuery = None,
) -> Response:
    """The first rows of a version (default: the branch's current), read without Spark."""
    lake = _service(request).lake.on_branch(branch)
    return views.json_response(previews.preview(lake, dataset, version, rows))
