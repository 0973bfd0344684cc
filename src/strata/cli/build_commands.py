"""`strata status`, `build`, `worker`, `history`, `checks`, `trace`, `impact`,
`reproduce`, `show-program`."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer
from rich.console import Console
from rich.markup import escape

from strata.builds.causes import Outcome, Status, program_label
from strata.builds.status import DatasetStatus
from strata.cli.common import point_to_spark_log, reported, settings_from
from strata.cli.output import emit_json, emit_table, err_console
from strata.cli.progress import BuildProgress, first_line
from strata.errors import InvalidArgument, StrataError

if TYPE_CHECKING:
    from strata.builds.builder import BuildReport
    from strata.builds.history import Entry
    from strata.builds.service import BuildService

PipelineOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--pipeline",
        help="A pipeline module or folder (repeatable); default: `pipelines` in strata.toml.",
    ),
]


def _progress_to(json: bool) -> tuple[Console, TextIO | None]:
    """Where a build's progress goes: the terminal's stderr, or with ``--json`` nothing
    but JSON event lines on stderr (stdout holds the report)."""
    return (Console(quiet=True), sys.stderr) if json else (err_console, None)


OnePartition = Annotated[
    str | None,
    typer.Option(
        "--partition",
        help="One partition (every partition column once, col=value,…): trace its own "
        "provenance, or reproduce only the run that wrote it.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def service_from(ctx: typer.Context, pipeline: list[Path] | None) -> BuildService:
    from strata.builds.service import BuildService

    paths = [str(p) for p in pipeline] if pipeline else None
    return BuildService(settings_from(ctx), paths)


def status(
    ctx: typer.Context,
    dataset: Annotated[
        str | None, typer.Argument(help="One dataset (and what is upstream of it) only.")
    ] = None,
    pipeline: PipelineOpt = None,
    json: JsonOpt = False,
) -> None:
    """Every dataset (or DATASET): fresh or out of date, with every cause; a partitioned
    dataset's partitions too. Starts no JVM."""
    with reported():
        service = service_from(ctx, pipeline)
        result = service.status() if dataset is None else {dataset: service.dataset_status(dataset)}
        if json:
            emit_json({"datasets": [s.to_dict() for s in result.values()]})
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


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops a build as Ctrl-C does: open runs end ABORTED, transactions abort."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
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
) -> None:
    """Build what DATASETS need, post-order, running only what is out of date."""
    from strata.lake.partitions import parse_filter

    with reported():
        if not datasets and not all_:
            raise InvalidArgument("name the datasets to build, or pass --all for every root")
        service = service_from(ctx, pipeline)
        progress = BuildProgress(*_progress_to(json))
        with _sigterm_interrupts(), progress:
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
) -> None:
    """Build the out-of-date dependents of each commit, as commits land, and what each
    schedule names when it is due."""
    from rich.markup import escape

    from strata.builds.scheduler import Fired
    from strata.builds.state.triggers import Claim
    from strata.builds.worker import Attempt, run_worker

    with reported():
        service = service_from(ctx, pipeline)
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
            line = f"schedule {f.schedule} due {f.due_at:%Y-%m-%d %H:%M %Z}: {f.outcome}{tail}"
            err_console.print(escape(line), highlight=False)

        with _sigterm_interrupts(), progress:
            report = run_worker(
                service, once=once, poll=poll, reporter=progress, on_build=told, on_fire=fired
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
    from strata.builds.scheduler import overview

    with reported():
        found = overview(service_from(ctx, pipeline))
        if json:
            emit_json({"schedules": found})
            return
        if not found:
            err_console.print(
                "no schedules: add [[schedule]] to strata.toml, or schedule= to a transform"
            )
            return
        emit_table(
            "schedules",
            ["schedule", "cron", "builds", "last firing", "outcome", "next firing"],
            [
                (
                    s["name"],
                    f"{s['cron']} ({s['timezone']})",
                    ", ".join(s["build"]),
                    s["last"]["due_at"] if s["last"] else "never",
                    (s["last"]["outcome"] or "running") if s["last"] else "",
                    s["next_due_at"],
                )
                for s in found
            ],
        )


Ref = Annotated[str, typer.Argument(help="DATASET or DATASET@VERSION.")]


def history(
    ctx: typer.Context,
    dataset: Annotated[str | None, typer.Argument(help="The dataset (or --job).")] = None,
    partition: Annotated[
        str | None,
        typer.Option(
            "--partition",
            help="Only the versions that touched this partition (col=value[,col=value]), "
            "with the run that built it in each.",
        ),
    ] = None,
    job: Annotated[
        str | None,
        typer.Option(
            "--job",
            help="A job's versions instead: each program its events named (sourceCode, sql, "
            "sourceCodeLocation), newest first.",
        ),
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="The job's namespace (default: the lake's).")
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Each version: commit time, type, rows, the run and program that built it, its inputs
    (and, partitioned, what it did to which partitions); with --job, a job's versions."""
    from strata.lake.partitions import parse_alternatives

    with reported():
        if (dataset is None) == (job is None):
            raise InvalidArgument(
                "name a dataset or a job: strata history DATASET, or strata history --job JOB",
                dataset=dataset,
                job=job,
            )
        if job is not None:
            found = service_from(ctx, []).job_history(job, namespace)
            if json:
                emit_json(found)
            else:
                print_job_history(found)
            return
        assert dataset is not None
        wanted = parse_alternatives(partition) if partition is not None else None
        result = service_from(ctx, []).history(dataset, wanted)
        if json:
            emit_json(result)
            return
        print_history(dataset, result)


def print_job_history(found: dict[str, Any]) -> None:
    """A job's versions: what made each a new program, and its latest run."""
    rows = [
        (
            v["version"][:8],
            v["fingerprint"][:10],
            v["created_at"],
            _program_source(v["program_facets"]),
            (f"{v['latest_run']['id'][:13]} {v['latest_run']['state']}" if v["latest_run"] else ""),
            ", ".join(v["inputs"]) or "—",
            ", ".join(v["outputs"]) or "—",
        )
        for v in found["versions"]
    ]
    more = found["total"] - len(rows)
    emit_table(
        f"versions of job {found['job']} in {found['namespace']}"
        + (f" (newest {len(rows)} of {found['total']})" if more else ""),
        ["version", "fingerprint", "created at", "program from", "latest run", "reads", "writes"],
        rows,
    )


def _program_source(facets: list[str] | None) -> str:
    if facets is None:
        return "?"  # kept before Strata recorded it
    return ", ".join(facets) or "its inputs and outputs only"


def print_history(dataset: str, result: dict[str, Any]) -> None:
    """A dataset's versions with the run, program and exact inputs of each."""
    partitioned = any("partitions" in v for v in result["versions"])
    rows = [
        (
            v["version"],
            v["committed_at"],
            v["type"],
            v["rows"],
            _run_label(v),
            program_label(v["program"]) if v["program"] else "written by hand",
            _inputs_read(v),
        )
        + ((_partitions_label(v),) if partitioned else ())
        for v in result["versions"]
    ]
    warned = any(v.get("warnings") for v in result["versions"])
    if warned:  # versions committed although a WARN check failed
        rows = [
            (*row, "⚠ " + ", ".join(v["warnings"]) if v["warnings"] else "")
            for row, v in zip(rows, result["versions"], strict=True)
        ]
    emit_table(
        f"history of {dataset}",
        ["version", "committed at", "type", "rows", "run", "program", "inputs"]
        + (["partitions"] if partitioned else [])
        + (["warnings"] if warned else []),
        rows,
    )


OUTCOME_MARKS = {"passed": "✓ passed", "warned": "⚠ warned", "failed": "✗ failed"}


def checks(
    ctx: typer.Context,
    dataset: str,
    version: Annotated[
        int | None,
        typer.Option("--version", min=1, help="Of this version (default: the current one)."),
    ] = None,
    run: Annotated[str | None, typer.Option("--run", help="The checks of one run instead.")] = None,
    pipeline: PipelineOpt = None,
    json: JsonOpt = False,
) -> None:
    """What the data checks found on a dataset version (default: the current version, and
    the builds since that a check stopped): each check, its outcome and what it saw."""
    with reported():
        service = service_from(ctx, pipeline)
        result = service.run_checks(run) if run else service.checks(dataset, version)
        if json:
            emit_json(result)
            return
        print_checks(dataset, result)


def print_checks(dataset: str, result: dict[str, Any]) -> None:
    results = result["results"]
    if not results:
        at = f" version {result['version']}" if result.get("version") else ""
        err_console.print(f"no check results for {dataset}{at}: no build of it declares checks")
        return
    rows = [
        (
            r["version"] if r["version"] is not None else "not committed",
            (r["run"] or "")[:13],
            r["check"],
            f"{r['side']} {r['dataset']}" + (f"[{r['partition']}]" if r["partition"] else ""),
            r["expectation"],
            OUTCOME_MARKS[r["outcome"]],
            _found(r),
        )
        for r in results
    ]
    emit_table(
        f"checks of {dataset}",
        ["version", "run", "check", "on", "expectation", "outcome", "found"],
        rows,
    )


def _found(r: dict[str, Any]) -> str:
    observed = r["observed"]
    if "error" in observed:
        return f"cannot apply: {observed['error']}"
    words = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in observed.items())
    if r["failing"]:
        words = f"{r['failing']:,} failing; {words}"
    if r["samples"]:
        words += f"; e.g. {r['samples'][0]}"
    return words


def _run_label(v: dict[str, Any]) -> str:
    runs = v.get("partition_runs")
    if runs:  # asked for one partition: the run that built it in this version
        return ", ".join((r["run"] or "by hand")[:13] for r in runs)
    return (v["run"] or "")[:13] + (f" {v['state']}" if v["state"] else "")


def _partitions_label(v: dict[str, Any]) -> str:
    counts = {k: len(keys) for k, keys in (v.get("partitions") or {}).items() if keys}
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def _inputs_read(version: dict[str, Any]) -> str:
    """``raw/clicks@3``, or ``raw/clicks(1, 3]`` for an input an incremental run read as
    the rows appended after version 1 up to version 3."""
    read = version.get("read") or {}
    out = []
    for name, n in version["inputs"].items():
        r = read.get(name) or {}
        out.append(f"{name}({r['from']}, {n}]" if r.get("from") is not None else f"{name}@{n}")
    return ", ".join(out)


ColumnOpt = Annotated[
    str | None,
    typer.Option(
        "--column", "-c", help="Trace one column down to the raw fields it was derived from."
    ),
]


def trace(
    ctx: typer.Context,
    ref: Ref,
    partition: OnePartition = None,
    column: ColumnOpt = None,
    indirect: Annotated[
        bool,
        typer.Option(
            "--indirect",
            help="With --column: also the fields that filtered, joined, grouped or ordered it.",
        ),
    ] = False,
    json: JsonOpt = False,
) -> None:
    """The provenance tree of a version down to raw datasets, with exact versions."""
    from strata.builds.history import parse_ref
    from strata.lake.partitions import parse_alternatives

    with reported():
        name, version = parse_ref(ref)
        wanted = parse_alternatives(partition) if partition is not None else None
        tree = service_from(ctx, []).trace(name, version, wanted, column=column, indirect=indirect)
        if json:
            emit_json(tree)
        elif column is not None:
            print_column_trace(tree)
        else:
            print_trace(tree)


def impact(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="DATASET.COLUMN, such as clean/clicks.user.")],
    direct: Annotated[
        bool,
        typer.Option("--direct", help="Only the fields whose values are computed from it."),
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Every field of the current versions derived from a column, directly or not."""
    from strata.builds.column_trace import parse_column_ref

    with reported():
        dataset, column = parse_column_ref(ref)
        found = service_from(ctx, []).impact(dataset, column, direct=direct)
        if json:
            emit_json(found)
            return
        rows = [
            [_field_name(d), d["hops"], _field_name(d["from"]), d["kind"], d["transformation"]]
            for d in found["dependents"]
        ]
        total, n_direct = found["total"], found["direct"]
        emit_table(
            f"{total} fields derived from {_field_name(found)}: {n_direct} directly, "
            f"{total - n_direct} indirectly (filtered, joined, grouped or ordered by it)"
            + ("; the direct ones:" if direct else ""),
            ["field", "hops", "from", "kind", "how"],
            rows,
        )


def print_column_trace(tree: dict[str, Any]) -> None:
    """A column's derivation as a tree, down to raw fields."""
    from rich.tree import Tree

    from strata.cli.output import console

    def grow(node: dict[str, Any], into: Any) -> Any:
        for child in node["inputs"]:
            how = (
                f"  [dim]← {escape(child['transformation'])}[/]"
                if child.get("transformation")
                else ""
            )
            again = " [dim](repeated, see above)[/]" if child.get("repeated") else ""
            grow(child, into.add(f"{_field_label(child)}{how}{again}"))
        return into

    console.print(grow(tree, Tree(_field_label(tree))))
    raw = ", ".join(_field_name(f) for f in tree["raw"])
    console.print(f"raw fields: {escape(raw)}" if raw else "no recorded inputs", soft_wrap=True)


def _field_name(field: dict[str, Any]) -> str:
    """``dataset@version.column``."""
    at = f"@{field['version']}" if field["version"] is not None else ""
    return f"{field['dataset']}{at}.{field['column']}"


def _field_label(field: dict[str, Any]) -> str:
    kind = f" [dim]{escape(field['type'])}[/]" if field.get("type") else ""
    return f"[bold]{escape(_field_name(field))}[/]{kind}"


def print_trace(tree: dict[str, Any]) -> None:
    """A version's provenance as a tree, down to raw datasets."""
    from rich.tree import Tree

    from strata.cli.output import console

    console.print(_tree(tree, Tree(_label(tree))))


def _label(node: dict[str, Any]) -> str:
    program = node["program"]
    made = f" ← {program['transform']} v{program['ordinal']}" if program else " (raw)"
    state = f" run {node['run'][:13]} {node['state']}" if node["run"] else ""
    how = " incremental" if node.get("mode") == "incremental" else ""
    read = node.get("read")
    # An input read as a range: the rows versions from+1 … to added.
    ref = f"({read['from']}, {read['to']}]" if read else f"@{node['version']}"
    # A version met again (a diamond): its inputs were shown where it first appeared.
    again = " [dim](repeated, see above)[/]" if node.get("repeated") else ""
    where = node.get("partition")
    part = escape(f"[{', '.join(f'{k}={v}' for k, v in where.items())}]") if where else ""
    return f"[bold]{escape(node['dataset'])}{part}{ref}[/]{made}{how}{state}{again}"


def _tree(node: dict[str, Any], into: Any) -> Any:
    for child in node["inputs"]:
        branch = into.add(_label(child))
        for earlier in child.get("also_read", ()):
            _tree(earlier, branch.add(_label(earlier)))
        if child.get("also_read"):
            branch = branch.add(_label({**child, "read": None}))
        _tree(child, branch)
    return into


def show_program(
    ctx: typer.Context,
    ref: Ref,
    diff: Annotated[
        int | None,
        typer.Option(help="Show the change from the program of version M of the dataset."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """The stored source files of the program version that built a dataset version."""
    from strata.builds.history import parse_ref
    from strata.builds.program_files import files_diff

    with reported():
        name, version = parse_ref(ref)
        service = service_from(ctx, [])
        built = service.program(name, version)
        p = built.program
        changes = None if diff is None else files_diff(service.program(name, diff).program, p)
        if json:
            extra = {} if changes is None else {"diff_from": diff, "diff": changes}
            emit_json({"dataset": name, "version": built.version, **p.to_dict(), **extra})
            return
        _print_program(name, built, diff, changes)


def _print_program(
    name: str, built: Entry, diff: int | None, changes: dict[str, str] | None
) -> None:
    from rich.markup import escape
    from rich.rule import Rule
    from rich.syntax import Syntax

    from strata.cli.output import console

    p = built.program
    console.print(
        f"[bold]{escape(name)}@{built.version}[/] was built by {escape(p.job_name)} "
        f"v{p.ordinal} ({p.fingerprint[:12]}), run {built.run}, from "
        + escape(", ".join(f"{k}@{v}" for k, v in built.inputs.items())),
        highlight=False,
    )
    if changes is not None:
        if not changes:
            console.print(f"no stored file differs from the program of {escape(name)}@{diff}")
        for path, text in changes.items():
            console.print(Rule(escape(path), align="left"))
            console.print(Syntax(text, "diff", line_numbers=False))
        return
    for path, text in sorted(p.files.items()):
        console.print(Rule(escape(path), align="left"))
        console.print(Syntax(text, "python", line_numbers=True))


def reproduce(
    ctx: typer.Context,
    ref: Ref,
    partition: OnePartition = None,
    json: JsonOpt = False,
) -> None:
    """Run a version's stored program on its recorded inputs; compare the rows. A version
    built partition by partition is run again partition by partition."""
    from strata.builds.history import parse_ref
    from strata.lake.partitions import parse_alternatives

    with reported():
        name, version = parse_ref(ref)
        wanted = parse_alternatives(partition) if partition is not None else None
        result = service_from(ctx, []).reproduce(name, version, wanted)
        if json:
            emit_json(result.to_dict())
        else:
            verdict = "[green]identical[/]" if result.identical else "[red]different[/]"
            what = f"{name}@{result.version}"
            if result.partition is not None:
                what += "[" + ", ".join(f"{k}={v}" for k, v in result.partition.items()) + "]"
            elif result.partitions:
                what += f" ({result.partitions} partition runs)"
            err_console.print(
                f"{escape(what)}: {verdict} (recorded {str(result.recorded)[:12]}, "
                f"reproduced {str(result.reproduced)[:12]})"
            )
            for k, v in result.differences.items():
                if v:
                    err_console.print(f"  {k.replace('_', ' ')}: {v}")
    if not result.identical:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(history)
    app.command()(checks)
    app.command()(schedules)
    app.command()(trace)
    app.command()(impact)
    app.command()(reproduce)
    app.command("show-program")(show_program)
    app.command()(worker)
    app.command()(status)
    app.command()(build)
