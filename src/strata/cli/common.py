"""What every command shares: settings from the global options, and one error exit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from strata.errors import InvalidArgument, StrataError
from strata.settings import Settings
from strata.times import Zoneless, aware

if TYPE_CHECKING:
    from strata.lake.service import Lake

F = TypeVar("F", bound=Callable[..., Any])


def settings_from(ctx: typer.Context, branch: str | None = None) -> Settings:
    """The settings of the global options (and of a command's ``--branch``)."""
    obj: dict[str, Any] = ctx.obj or {}
    overrides = dict(obj.get("overrides", {}))
    if branch is not None:
        overrides["branch"] = branch
    return Settings.load(config_file=obj.get("config"), **overrides)


def lake_from(ctx: typer.Context, branch: str | None = None) -> Lake:
    """The lake of the global options (and of a command's ``--branch``). Its modules load
    here, for the commands that use it only: every command's start imports this module."""
    from strata.lake.service import connect

    return connect(settings_from(ctx, branch))


@contextmanager
def reported() -> Iterator[None]:
    """Turn a StrataError into a one-line message on stderr and exit status 1."""
    from rich.markup import escape

    from strata.cli.output import err_console

    try:
        yield
    except StrataError as exc:
        err_console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        point_to_spark_log()
        raise typer.Exit(1) from exc


def point_to_spark_log() -> None:
    """After a failure, say where Spark's log is, if this command started Spark quietly."""
    from rich.markup import escape

    from strata.cli.output import err_console
    from strata.lake.spark import spark_log

    log = spark_log()
    if log is not None:
        err_console.print(f"[dim]Spark's log: {escape(str(log))}[/]", highlight=False)


def parse_time(text: str) -> datetime:
    """ISO 8601; a time without a zone is taken as UTC."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidArgument(
            f"cannot read time {text!r}; use ISO 8601 such as 2026-01-31T12:00:00Z",
            value=text,
        ) from exc
    return aware(value, Zoneless.UTC)


def dataset_at(ref: str, version: int | None) -> tuple[str, int | None]:
    """``DATASET`` with ``--version N``, or ``DATASET@N`` as `strata trace` takes it."""
    from strata.lake.names import parse_ref

    _, at, digits = ref.rpartition("@")
    if not at or not digits.isdigit():
        return ref, version  # a name with no version after its last '@'
    name, named = parse_ref(ref)
    if version is not None and version != named:
        raise InvalidArgument(
            f"{ref!r} names version {named} and --version says {version}; pass one of them",
            value=ref,
        )
    return name, named
