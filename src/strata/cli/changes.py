"""``strata changes``: the morning's page in a terminal. What changed between two times,
and, where pipelines are loaded, what is out of date now and why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from strata.builds.staleness.causes import Status
from strata.cli.build_commands import causes_text
from strata.cli.common import parse_time, reported, settings_from
from strata.cli.options import JsonOpt, PipelineOpt, service_from
from strata.cli.output import console, emit_json, emit_table
from strata.errors import InvalidArgument

if TYPE_CHECKING:
    from pathlib import Path

    from strata.builds.staleness.status import DatasetStatus
    from strata.lineage.query.changes import Changes
    from strata.settings import Settings

TimeOpt = Annotated[str | None, typer.Option(help="ISO time (UTC if no zone).")]


def changes(
    ctx: typer.Context,
    since: TimeOpt = None,
    until: TimeOpt = None,
    limit: Annotated[
        int, typer.Option(min=1, max=1000, help="At most this many datasets and failed runs.")
    ] = 200,
    namespace: Annotated[
        str | None,
        typer.Option(help="Only this namespace's datasets and its jobs' runs (default: all)."),
    ] = None,
    pipeline: PipelineOpt = None,
    json: JsonOpt = False,
) -> None:
    """What changed between two times, and what is out of date now and why.

    From --since to --until (default: the last 24 hours): the datasets that gained
    versions, the runs by state with the failed ones (in one --namespace, or all), and
    with pipelines, each dataset out of date now with its causes. Starts no JVM.
    """
    with reported():
        end = parse_time(until) if until is not None else datetime.now(UTC)
        start = parse_time(since) if since is not None else end - timedelta(hours=24)
        if start > end:
            raise InvalidArgument(
                f"--since {start.isoformat()} is after --until {end.isoformat()}; "
                "swap them or widen the range",
                since=since,
                until=until,
            )
        settings = settings_from(ctx)
        found = _changes(settings, start, end, limit, namespace)
        stale = _out_of_date(ctx, pipeline) if pipeline or settings.pipelines else None
        if stale is not None and namespace is not None:
            stale = [s for s in stale if (s.namespace or settings.namespace) == namespace]
        if json:
            extra = {"outOfDate": [s.to_dict() for s in stale]} if stale is not None else {}
            emit_json(found.to_dict() | extra)
            return
        _print(found, stale)


def _changes(
    settings: Settings, start: datetime, end: datetime, limit: int, namespace: str | None
) -> Changes:
    from strata.lake.service import connect
    from strata.lineage.query.changes import changes as changes_in
    from strata.store.engine import read_tx

    with read_tx(connect(settings).engine) as conn:
        return changes_in(conn, start, end, limit, namespace)


def _out_of_date(ctx: typer.Context, pipeline: list[Path] | None) -> list[DatasetStatus]:
    found = service_from(ctx, pipeline).status().values()
    return [s for s in found if s.status is Status.OUT_OF_DATE]


def _print(found: Changes, stale: list[DatasetStatus] | None) -> None:
    runs = found.runs
    states = ", ".join(f"{n:,} {state.lower()}" for state, n in sorted(runs.states.items()))
    console.print(
        f"[bold]What changed[/]{_in(found.namespace)} {found.since:%Y-%m-%d %H:%M} to "
        f"{found.until:%Y-%m-%d %H:%M} UTC: "
        f"{sum(runs.states.values()):,} runs of {runs.jobs:,} jobs"
        + (f" ({states})" if states else ""),
        highlight=False,
    )
    _section(
        f"datasets with new versions ({len(found.versions)})",
        ["dataset", "versions", "latest", "latest at"],
        [
            (_name(n.namespace, n.name, n.is_lake), n.count, _label(n.latest_commit), n.latest_at)
            for n in found.versions
        ],
    )
    _section(
        f"failed runs ({len(runs.failed)})",
        ["job", "run", "failed at"],
        [(f"{f.namespace}:{f.job}", f.run, f.at) for f in runs.failed],
    )
    if stale is not None:
        _section(
            f"out of date now ({len(stale)})",
            ["dataset", "transform", "why"],
            [(s.name, s.transform or "", escape(causes_text(s))) for s in stale],
        )


def _in(namespace: str | None) -> str:
    return f" in {escape(namespace)}" if namespace is not None else ""


def _section(title: str, columns: list[str], rows: list[tuple[object, ...]]) -> None:
    if rows:
        emit_table(title, columns, rows)
    else:
        console.print(f"[bold]{title}[/]: none", highlight=False)


def _name(namespace: str, name: str, is_lake: bool) -> str:
    return name if is_lake else f"{namespace}:{name}"


def _label(commit: int | None) -> str:
    return f"v{commit}" if commit is not None else ""
