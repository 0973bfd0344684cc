"""`strata status`, `build`, `worker`, `schedules`."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer
from rich.console import Console
from rich.markup import escape

from strata.builds.staleness.causes import Outcome, Status
from strata.cli.common import point_to_spark_log, reported, settings_from
from strata.cli.options import BranchOpt, JsonOpt, PipelineOpt, service_from
from strata.cli.output import emit_json, emit_table, err_console
from strata.cli.process import kept_for_the_command, start_spark_ahead
from strata.cli.progress import BuildProgress, first_line
from strata.errors import InvalidArgument, StrataError

if TYPE_CHECKING:
    from strata.builds.execution.builder import BuildReport
    from strata.builds.service import BuildService
    from strata.builds.staleness.status import DatasetStatus


def _progress_to(json: bool) -> tuple[Console, TextIO | None]:
    """Where a build's progress goes: the terminal's stderr, or with ``--json`` nothing
    but JSON event lines on stderr (stdout holds the report)."""
    return (Console(quiet=True), sys.stderr) if json else (err_console, None)


def status(
    ctx: typer.Context,
    dataset: Annotated[
        str | None, typer.Argument(help="One dataset (and what is upstream of it) only.")
    ] = None,
    pipeline: PipelineOpt = None,
    columns: Annotated[
        bool,
        typer.Option(
            "--columns",
            help="Plan each transform whose program changed on its current inputs (starts "
            "Spark, runs nothing) and say which columns the change touches.",
        ),
    ] = False,
    json: JsonOpt = False,
    branch: BranchOpt = None,
) -> None:
    """Every dataset (or DATASET): fresh or out of date, with every cause; a partitioned
    dataset's partitions too; on a branch, as the branch reads them. Starts no JVM
    unless asked for --columns."""
    with reported():
        service = service_from(ctx, pipeline, branch)
        planned = _plan_columns(service, dataset, json) if columns else None
        result = service.status() if dataset is None else {dataset: service.dataset_status(dataset)}
        if json:
            answer: dict[str, Any] = {"datasets": [s.to_dict() for s in result.values()]}
            if planned is not None:
                answer["planned"], answer["unplanned"] = planned
            emit_json(answer)
            return
        rows = [
            (
                f"{s.namespace}:{s.name}" if s.namespace else s.name,
                s.role.value,
                s.transform or "",
                s.version,
                _STATUS_LABELS[s.status],
                escape(causes_text(s)),  # causes name partitions in brackets: not markup
            )
            for s in result.values()
        ]
        emit_table("status", ["dataset", "kind", "transform", "version", "state", "why"], rows)
        if dataset is not None:
            _print_partitions(result[dataset])


_PARTITIONS_SHOWN = 50


def _plan_columns(
    service: BuildService, dataset: str | None, json: bool
) -> tuple[list[str], list[str]]:
    """The transforms planned and those that could not be (each said in one line)."""
    console, _ = _progress_to(json)
    with console.status("planning the transforms whose program changed…"):
        planned, failed = service.plan_columns(dataset)
    for fqn in failed:
        err_console.print(f"could not plan {fqn}: its columns are not compared (the log says why)")
    if failed:
        point_to_spark_log()
    return planned, failed


def causes_text(s: DatasetStatus) -> str:
    counts = s.partition_counts()
    if counts is None:
        return "; ".join(c.describe() for c in s.causes + s.notes)
    total = counts["fresh"] + counts["out_of_date"]
    never = f" ({counts['never_built']:,} never built)" if counts["never_built"] else ""
    return f"{counts['out_of_date']:,} of {total:,} partitions out of date{never}"


def _print_partitions(s: DatasetStatus) -> None:
    """A partitioned dataset's out-of-date partitions, each with its causes."""
    stale = [p for p in s.partitions or () if p.stale]
    if not stale:
        return
    rows = [
        (p.key, escape("; ".join(c.describe() for c in p.causes)))
        for p in stale[:_PARTITIONS_SHOWN]
    ]
    more = len(stale) - _PARTITIONS_SHOWN
    title = f"out-of-date partitions of {s.name}" + (
        f" (first {_PARTITIONS_SHOWN}; {more:,} more with --json)" if more > 0 else ""
    )
    emit_table(title, ["partition", "why"], rows)


_STATUS_LABELS = {
    Status.FRESH: "[green]fresh[/]",
    Status.OUT_OF_DATE: "[red]stale[/]",
    Status.MISSING: "[yellow]missing[/]",
    Status.ORPHANED: "[yellow]orphaned[/]",
}


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised wherever the command is, as Ctrl-C raises KeyboardInterrupt."""


@contextmanager
def _stops_on_signal(what: str, *, after_sigterm: int) -> Iterator[None]:
    """SIGTERM stops ``what`` as Ctrl-C does: open runs end ABORTED, transactions abort.
    Either way one line says so, and the command exits with ``after_sigterm`` after
    SIGTERM (0 for a service asked to stop), 130 after Ctrl-C."""

    def interrupt(signum: int, frame: Any) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    except KeyboardInterrupt as stop:
        terminated = isinstance(stop, _Terminated)
        how = "SIGTERM" if terminated else "Ctrl-C"
        err_console.print(f"{what} stopped by {how}; runs under way ended ABORTED", highlight=False)
        raise typer.Exit(after_sigterm if terminated else 130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def build(
    ctx: typer.Context,
    datasets: Annotated[
        list[str] | None, typer.Argument(help="Datasets to bring up to date.")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Build every root dataset.")] = False,
    force: Annotated[bool, typer.Option(help="Run every transform, out of date or not.")] = False,
    full: Annotated[
        bool,
        typer.Option(help="Run the named datasets' transforms whole, incremental ones too."),
    ] = False,
    dry_run: Annotated[bool, typer.Option(help="Print the plan with causes; run nothing.")] = False,
    jobs: Annotated[int, typer.Option(min=1, help="Independent transforms run at once.")] = 1,
    partitions: Annotated[
        list[str] | None,
        typer.Option(
            "--partitions",
            help="Only these partitions of the named datasets: col=value[,col=value], a value "
            "may be a range a..b (e.g. 'region=JP,day=2026-11-01..2026-11-20'); repeatable. "
            "With --force, all of them run.",
        ),
    ] = None,
    pipeline: PipelineOpt = None,
    json: JsonOpt = False,
    branch: BranchOpt = None,
) -> None:
    """Build what DATASETS need, post-order, running only what is out of date; with
    --branch, outputs are written on the branch and inputs read as it reads them."""
    from strata.lake.partitions import parse_filter

    with reported():
        if not datasets and not all_:
            raise InvalidArgument("name the datasets to build, or pass --all for every root")
        if not dry_run:
            start_spark_ahead(settings_from(ctx, branch))
        with kept_for_the_command():
            service = service_from(ctx, pipeline, branch)
            service.pipelines  # noqa: B018 - loads them
        progress = BuildProgress(*_progress_to(json))
        with _stops_on_signal("build", after_sigterm=143), progress:
            report = service.build(
                datasets or [],
                everything=all_,
                force=force,
                full=full,
                dry_run=dry_run,
                jobs=jobs,
                reporter=progress,
                partitions=[parse_filter(p) for p in partitions] if partitions else None,
            )
        if json:
            emit_json(report.to_dict())
        else:
            print_report(report, dry_run)
    if report.failed:
        raise typer.Exit(1)


def print_report(report: BuildReport, dry_run: bool) -> None:
    rows = []
    for s in report.steps:
        outputs = ", ".join(f"{k}@{v}" if v is not None else k for k, v in s.outputs.items())
        why = escape(first_line(s.reason) if s.reason else causes_line(s))
        took = f"{s.seconds:.1f}s" if s.outcome.ran else ""
        outcome = s.outcome.value + how_it_ran(s)
        rows.append((s.transform, outcome, outputs, s.rows or "", took, why))
    title = "build plan" if dry_run else f"build {report.run} — {report.state}"
    emit_table(title, ["transform", "outcome", "outputs", "rows", "time", "why"], rows)
    if report.failed:
        failed = [s for s in report.steps if s.outcome is Outcome.FAILED or s.partly_failed]
        _print_failure_details(failed)
        names = ", ".join(s.transform for s in failed)
        err_console.print(f"[bold red]error:[/] build failed: {names}")
        point_to_spark_log()


def how_it_ran(step: Any) -> str:
    """`` (incremental)`` or `` (3 of 4 partitions)``: what the outcome alone leaves out."""
    if step.partitions is not None:
        built = sum(1 for p in step.partitions if p.outcome is Outcome.BUILT)
        return f" ({built} of {len(step.partitions)} partitions)"
    return f" ({step.mode})" if step.mode == "incremental" else ""


def causes_line(step: Any) -> str:
    """Each output's causes; a partitioned output's, the first and how many more."""
    out = []
    for dataset, causes in step.causes.items():
        shown = causes[: 1 if step.partitions is not None else None]
        where = shown[0].partition if shown and shown[0].partition else None
        head = dataset + (f"[{', '.join(f'{k}={v}' for k, v in where.items())}]" if where else "")
        more = len(causes) - len(shown)
        words = ", ".join(c.describe() for c in shown)
        out.append(f"{head}: {words}" + (f" (+{more} more)" if more else ""))
    return "; ".join(out)


_DETAIL_LINES = 6


def _print_failure_details(failed: list[Any]) -> None:
    """A failure whose reason has more to say than the table's one line (a schema
    mismatch's two schemas and its hint) is printed whole, a few lines at most."""
    from rich.markup import escape

    for step in failed:
        lines = (step.reason or "").strip().splitlines()
        if len(lines) < 2:
            continue
        shown = "\n".join(lines[:_DETAIL_LINES])
        more = (
            f"\n  … {len(lines) - _DETAIL_LINES} more lines" if len(lines) > _DETAIL_LINES else ""
        )
        err_console.print(
            f"[red]{escape(step.transform)}[/]: {escape(shown)}{more}", highlight=False
        )


def worker(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option(help="Drain the pending triggers, then exit.")] = False,
    poll: Annotated[float, typer.Option(min=0.01, help="Seconds between looks when idle.")] = 0.2,
    pipeline: PipelineOpt = None,
    json: JsonOpt = False,
    branch: BranchOpt = None,
) -> None:
    """Build the out-of-date dependents of each commit, as commits land, and what each
    schedule names when it is due; run retention daily where a policy exists. A worker
    watches one branch: main, or --branch (its commits and its schedules)."""
    from rich.markup import escape

    from strata.builds.workers.scheduler import Fired
    from strata.builds.workers.worker import Attempt, run_worker
    from strata.retention.service import RetentionReport
    from strata.store.owners.triggers import Claim

    with reported():
        service = service_from(ctx, pipeline, branch)
        progress = BuildProgress(*_progress_to(json))

        def told(claimed: Claim, done: Attempt) -> None:
            if json:
                return
            line = f"trigger {claimed.dataset}@{claimed.commit_id}: {done.outcome}"
            if done.retry_in is not None:
                line = f"{line} in {done.retry_in:g} s: {done.error}"
            err_console.print(escape(line), highlight=False)

        def fired(f: Fired) -> None:
            if json:
                return
            tail = f": {f.error}" if f.error else ""
            on = f" on {f.branch}" if f.branch != "main" else ""
            due = f"{f.due_at:%Y-%m-%d %H:%M %Z}"
            line = f"schedule {f.schedule}{on} due {due}: {f.outcome}{tail}"
            err_console.print(escape(line), highlight=False)

        def swept(r: RetentionReport) -> None:
            if not json:
                err_console.print(
                    f"retention: marked {r.count('marked')}, purged {r.count('purged')} "
                    f"version(s) ({r.freed_files} file(s) deleted)",
                    highlight=False,
                )

        with _stops_on_signal("worker", after_sigterm=0), progress:
            report = run_worker(
                service,
                once=once,
                poll=poll,
                reporter=progress,
                on_build=told,
                on_fire=fired,
                on_retention=swept,
            )
        if json:
            emit_json(report.to_dict())
        if report.pending:
            raise StrataError(
                f"{len(report.pending)} trigger(s) stay queued after a failure that can pass "
                f"({report.pending[0]['dataset']}: {report.pending[0]['error']}); "
                "`strata worker` tries them again"
            )


def schedules(ctx: typer.Context, pipeline: PipelineOpt = None, json: JsonOpt = False) -> None:
    """Each schedule: its cron and targets, its last firing and outcome, its next firing."""
    from strata.builds.workers.scheduler import overview

    with reported():
        found = overview(service_from(ctx, pipeline))
        if json:
            emit_json({"schedules": found})
            return
        if not found:
            err_console.print(
                escape("no schedules: add [[schedule]] to strata.toml, or schedule= to a transform")
            )
            return
        emit_table(
            "schedules",
            ["schedule", "branch", "cron", "builds", "last firing", "outcome", "next firing"],
            [
                (
                    s["name"],
                    s["branch"],
                    f"{s['cron']} ({s['timezone']})",
                    ", ".join(s["build"]),
                    s["last"]["due_at"] if s["last"] else "never",
                    (s["last"]["outcome"] or "running") if s["last"] else "",
                    s["next_due_at"],
                )
                for s in found
            ],
        )
