"""Branches: ``strata branch create|list|delete`` and ``strata merge``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from strata.cli.common import reported, settings_from
from strata.cli.options import JsonOpt
from strata.cli.output import console, emit_json, emit_table

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

branch_app = typer.Typer(
    name="branch",
    help="Branches: try a change on real data without touching main, then merge it.",
    no_args_is_help=True,
)


def _engine(ctx: typer.Context) -> Engine:
    from strata.lake.service import connect

    return connect(settings_from(ctx)).engine


@branch_app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The new branch, e.g. dev or feature/orders.")],
    from_: Annotated[
        str, typer.Option("--from", help="The branch it falls back to and merges into.")
    ] = "main",
    json_out: JsonOpt = False,
) -> None:
    """Make a branch: one row, nothing copied. Reads on it fall back to its parent for
    every dataset it has not written."""
    from strata.lake import branches

    with reported():
        made = branches.create(_engine(ctx), name, from_)
        if json_out:
            emit_json(made.to_dict())
        else:
            console.print(f"branch {made.name} made from {made.parent}")


@branch_app.command("list")
def list_(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """The live branches, with their parents and how many datasets each wrote."""
    from strata.lake import branches

    with reported():
        found = branches.listed(_engine(ctx))
        if json_out:
            emit_json([b.to_dict() for b in found])
            return
        emit_table(
            "branches",
            ["branch", "from", "datasets written", "created"],
            [
                (b.name, b.parent or "—", "—" if b.datasets is None else b.datasets, b.created_at)
                for b in found
            ],
        )


@branch_app.command("delete")
def delete(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The branch to delete.")],
    json_out: JsonOpt = False,
) -> None:
    """Drop a branch's pointers; the versions it wrote stay in history."""
    from strata.lake import branches

    with reported():
        gone = branches.delete(_engine(ctx), name)
        if json_out:
            emit_json(gone.to_dict())
        else:
            console.print(
                f"branch {gone.name} deleted; its versions of {gone.datasets} dataset(s) stay "
                "in history"
            )


def merge(
    ctx: typer.Context,
    branch: Annotated[str, typer.Argument(help="The branch to merge.")],
    into: Annotated[
        str | None, typer.Option("--into", help="The branch to merge into (default: its parent).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would merge; change nothing.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Fast-forward the target to every dataset version the branch wrote, in one commit:
    all or nothing. A dataset the target changed since the branch forked is a conflict,
    and nothing merges."""
    from strata.lake.merge import merge as run

    with reported():
        report = run(_engine(ctx), branch, into, dry_run)
        if json_out:
            emit_json(report.to_dict())
            return
        verb = "would merge" if dry_run else "merged"
        emit_table(
            f"{report.source} into {report.target}: {verb} {len(report.merged)} dataset(s)",
            ["dataset", "outcome", f"{report.target} had", f"{report.source} has"],
            [(s.dataset, s.outcome, s.target_version, s.branch_version) for s in report.steps],
        )
