"""Retention and archive routes: the policies, marks, pins, archives and last passes; a
retention pass; an archive pass; a restore; marks undone; versions pinned and unpinned.
Dataset names go in one path segment (``raw%2Fclicks``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from strata.api import views
from strata.api.body import settings_in_query
from strata.api.contract import errors
from strata.errors import InvalidArgument
from strata.retention.archive import Archive
from strata.retention.lineage import LineageRetention
from strata.retention.policies import parse_duration
from strata.retention.service import Retention

router = APIRouter(prefix="/strata", tags=["Strata retention"])

VersionPath = Annotated[int, Path(ge=1, le=2**62, description="commit id")]


def _retention(request: Request) -> Retention:
    return Retention(request.app.state.builds.lake)


def _archive(request: Request) -> Archive:
    return Archive(request.app.state.builds.lake)


def _lineage(request: Request) -> LineageRetention:
    lake = request.app.state.builds.lake
    return LineageRetention(lake.engine, lake.settings)


@router.get("/retention", response_model=views.Json, responses=errors(400))
def get_retention(request: Request, passes: Annotated[int, Query(ge=1, le=1000)] = 10) -> Response:
    """The policies of ``strata.toml``, the versions marked for purging, the pinned
    versions, the last passes (retention, archive and restore) and, under ``archive``,
    the archive policies and how many files lie in each archive."""
    overview = _retention(request).overview(passes)
    overview["archive"] = _archive(request).overview()
    overview["lineage"] = _lineage(request).overview()
    return views.json_response(overview)


@router.post(
    "/retention",
    response_model=views.Json,
    responses=errors(400, 404),
    dependencies=[Depends(settings_in_query)],
)
def post_retention(
    request: Request,
    dry_run: Annotated[
        bool, Query(description="list what a pass would do; change nothing")
    ] = False,
    grace: Annotated[
        str | None,
        Query(
            pattern=r"^\d{1,4}(\.\d{1,3})?[smhdw]$",
            description='this pass\'s grace, e.g. "0s" or "12h"',
        ),
    ] = None,
    lineage: Annotated[
        bool, Query(description="a pass over the lineage store's old runs instead")
    ] = False,
    dataset: Annotated[
        list[str] | None,
        Query(description="only these datasets (a name or glob, repeatable)"),
    ] = None,
) -> Response:
    """Run a retention pass, as `strata retention` does: every version it marked,
    unmarked or purged (``dataset=…``: over those datasets only, a pass left out of the
    passes listed; 404 for one that matches no dataset). With ``lineage=true``, as
    `strata retention --lineage` does: the runs and events it deleted (``grace`` and
    ``dataset`` are lake data's: 400 with either)."""
    if lineage:
        if grace is not None or dataset:
            raise InvalidArgument(
                "lineage=true takes dry_run only: grace and dataset are for lake data; "
                "post again without lineage=true for those",
                grace=grace,
                dataset=dataset,
            )
        done = _lineage(request).run(dry_run=dry_run, trigger="api")
        return views.json_response(done.to_dict())
    seconds = parse_duration(grace, "grace") if grace is not None else None
    report = _retention(request).run(
        dry_run=dry_run, grace_seconds=seconds, trigger="api", datasets=dataset
    )
    return views.json_response(report.to_dict())


@router.delete(
    "/retention/marks/{dataset:seg}/{version}",
    response_model=views.Json,
    responses=errors(400, 404),
)
def delete_mark(request: Request, dataset: str, version: VersionPath) -> Response:
    """Undo a version's mark before its purge."""
    return views.json_response(_retention(request).unmark(dataset, version).to_dict())


class NewPin(BaseModel):
    """Why a version is kept."""

    model_config = ConfigDict(extra="forbid")

    note: str | None = Field(default=None, max_length=1000)


@router.put("/pins/{dataset:seg}/{version}", response_model=views.Json, responses=errors(400, 404))
def put_pin(
    request: Request,
    dataset: str,
    version: VersionPath,
    body: Annotated[NewPin | None, Body()] = None,
) -> Response:
    """Keep a version from every retention policy."""
    note = body.note if body is not None else None
    return views.json_response(_retention(request).pin(dataset, version, note))


@router.delete(
    "/pins/{dataset:seg}/{version}", response_model=views.Json, responses=errors(400, 404)
)
def delete_pin(request: Request, dataset: str, version: VersionPath) -> Response:
    """Let retention policies select a pinned version again."""
    return views.json_response(_retention(request).unpin(dataset, version))


@router.post(
    "/archive",
    response_model=views.Json,
    responses=errors(400),
    dependencies=[Depends(settings_in_query)],
)
def post_archive(
    request: Request,
    dry_run: Annotated[
        bool, Query(description="list what a pass would move; change nothing")
    ] = False,
) -> Response:
    """Run an archive pass, as `strata archive` does: per dataset, the files moved."""
    report = _archive(request).run(dry_run=dry_run, trigger="api")
    return views.json_response(report.to_dict())


@router.post(
    "/archive/restore/{dataset:seg}/{version}",
    response_model=views.Json,
    responses=errors(400, 404, 410),
)
def post_restore(request: Request, dataset: str, version: VersionPath) -> Response:
    """Bring a version's archived files back to the lake and pin it."""
    return views.json_response(_archive(request).restore(dataset, version, trigger="api"))
