"""Branch routes: list, create and delete branches, a branch's datasets, and merges.

Branch names may hold slashes: they go in one path segment (``feature%2Forders``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from strata.api import views
from strata.api.contract import errors
from strata.lake import branches
from strata.lake.merge import merge, preview
from strata.lake.service import Lake

router = APIRouter(prefix="/strata", tags=["Strata branches"])

BranchName = Annotated[str, Field(pattern=branches.NAME_PATTERN, max_length=branches.NAME_MAX)]
NamePath = Annotated[str, Path(description="a branch name")]
BranchQuery = Annotated[
    str | None,
    Query(
        pattern=branches.NAME_PATTERN,
        max_length=branches.NAME_MAX,
        description="the target (default: parent)",
    ),
]


def _lake(request: Request) -> Lake:
    lake: Lake = request.app.state.builds.lake
    return lake


class NewBranch(BaseModel):
    """A branch to make, and the branch it falls back to."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    name: BranchName
    from_: BranchName = Field(default="main", alias="from")


@router.get("/branches", response_model=views.Json)
def get_branches(request: Request) -> Response:
    """Every live branch, ``main`` first: its parent and how many datasets it wrote."""
    found = branches.listed(_lake(request).engine)
    return views.json_response({"branches": [b.to_dict() for b in found]})


@router.post(
    "/branches", status_code=201, response_model=views.Json, responses=errors(400, 404, 409)
)
def post_branch(request: Request, body: NewBranch) -> Response:
    """Make a branch: one row, nothing copied."""
    made = branches.create(_lake(request).engine, body.name, body.from_)
    return views.json_response(made.to_dict(), status_code=201)


@router.delete("/branches/{name:seg}", response_model=views.Json, responses=errors(404, 409))
def delete_branch(request: Request, name: NamePath) -> Response:
    """Drop a branch's pointers; its versions stay in history."""
    return views.json_response(branches.delete(_lake(request).engine, name).to_dict())


@router.get("/branches/{name:seg}/datasets", response_model=views.Json, responses=errors(404))
def get_branch_datasets(request: Request, name: NamePath) -> Response:
    """The lake datasets as the branch reads them: its own versions, else its parent's."""
    lake = _lake(request).on_branch(name)
    found = lake.datasets()
    return views.json_response(
        {
            "branch": name,
            "datasets": [
                {
                    "name": d.name,
                    "namespace": d.namespace,
                    "latestVersion": d.latest_commit_id,
                    "rows": d.row_count,
                    "updatedAt": d.updated_at.isoformat(),
                }
                for d in found
            ],
        }
    )


@router.get("/branches/{name:seg}/merge", response_model=views.Json, responses=errors(400, 404))
def get_merge(request: Request, name: NamePath, into: BranchQuery = None) -> Response:
    """What merging the branch would do, changing nothing (a dry run: conflicts are
    outcomes here, not a 409)."""
    return views.json_response(preview(_lake(request).engine, name, into).to_dict())


@router.post(
    "/branches/{name:seg}/merge", response_model=views.Json, responses=errors(400, 404, 409)
)
def post_merge(
    request: Request,
    name: NamePath,
    into: BranchQuery = None,
    dry_run: Annotated[
        bool, Query(alias="dryRun", description="say what would merge; change nothing")
    ] = False,
) -> Response:
    """Fast-forward the target to every version the branch wrote, all or nothing; 409
    naming each conflict when the target moved since the branch forked."""
    report = merge(_lake(request).engine, name, into, dry_run)
    return views.json_response(report.to_dict())
