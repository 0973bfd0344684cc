"""The options the build, history and trace commands share, and the build service
they open."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from strata.cli.common import settings_from

if TYPE_CHECKING:
    from strata.builds.service import BuildService

PipelineOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--pipeline",
        help="A pipeline module or folder (repeatable); default: `pipelines` in strata.toml.",
    ),
]


OnePartition = Annotated[
    str | None,
    typer.Option(
        "--partition",
        help="One partition (every partition column once, col=value,…): trace its own "
        "provenance, or reproduce only the run that wrote it.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
BranchOpt = Annotated[
    str | None,
    typer.Option(
        "--branch", "-b", help="The branch to read and write (default main, or STRATA_BRANCH)."
    ),
]


def service_from(
    ctx: typer.Context, pipeline: list[Path] | None, branch: str | None = None
) -> BuildService:
    """The build service of the global options, on ``branch`` (default: the setting)."""
    from strata.builds.service import BuildService

    paths = [str(p) for p in pipeline] if pipeline else None
    return BuildService(settings_from(ctx, branch), paths)


Ref = Annotated[str, typer.Argument(help="DATASET or DATASET@VERSION.")]
