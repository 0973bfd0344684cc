"""`strata history` and `checks`: what made each version of a dataset or a job, and what
its data checks found."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from strata.builds.staleness.causes import program_label
from strata.cli.common import dataset_at, reported
from strata.cli.options import BranchOpt, JsonOpt, PipelineOpt, service_from
from strata.cli.output import emit_json, emit_table, err_console
from strata.errors import InvalidArgument

if TYPE_CHECKING:
    pass


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
    branch: BranchOpt = None,
) -> None:
    """Each version: commit time, type, rows, the run and program that built it, its inputs
    (and, partitioned, what it did to which partitions); with --job, a job's versions.
    With --branch, the versions of the branch's line (its own and those it falls back to)."""
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
        result = service_from(ctx, [], branch).history(dataset, wanted)
        if json:
            emit_json(result)
            return
        if partition is not None and not result["versions"]:
            err_console.print(
                f"no version of {dataset} touched {partition}; `strata status {dataset}` "
                "lists its partitions",
                highlight=False,
                markup=False,
            )
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
    purged = any(v.get("purged") or v.get("archived") for v in result["versions"])
    if purged:  # versions whose data was purged (their history stays) or archived
        rows = [
            (*row, _purged_label(v["purged"]) or _archived_label(v.get("archived")))
            for row, v in zip(rows, result["versions"], strict=True)
        ]
    warned = any(v.get("warnings") for v in result["versions"])
    if warned:  # versions committed although a WARN check failed
        rows = [
            (*row, "⚠ " + ", ".join(v["warnings"]) if v["warnings"] else "")
            for row, v in zip(rows, result["versions"], strict=True)
        ]
    branched = any(v["branch"] != "main" for v in result["versions"])
    if branched:  # versions made on a branch
        rows = [(*row, v["branch"]) for row, v in zip(rows, result["versions"], strict=True)]
    on = result.get("branch", "main")
    emit_table(
        f"history of {dataset}" + (f" on {on}" if on != "main" else ""),
        ["version", "committed at", "type", "rows", "run", "program", "inputs"]
        + (["partitions"] if partitioned else [])
        + (["retention"] if purged else [])
        + (["warnings"] if warned else [])
        + (["branch"] if branched else []),
        rows,
    )


OUTCOME_MARKS = {"passed": "✓ passed", "warned": "⚠ warned", "failed": "✗ failed"}


def checks(
    ctx: typer.Context,
    dataset: Annotated[str, typer.Argument(help="Lake dataset, or DATASET@N: its version N.")],
    version: Annotated[
        int | None,
        typer.Option("--version", min=1, help="Of this version (default: the current one)."),
    ] = None,
    run: Annotated[str | None, typer.Option("--run", help="The checks of one run instead.")] = None,
    pipeline: PipelineOpt = None,
    json: JsonOpt = False,
    branch: BranchOpt = None,
) -> None:
    """What the data checks found on a dataset version (default: the current version on
    the branch, and the builds since that a check stopped): each check, its outcome and
    what it saw."""
    with reported():
        dataset, version = dataset_at(dataset, version)
        service = service_from(ctx, pipeline, branch)
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


def _purged_label(purged: dict[str, Any] | None) -> str:
    return f"purged {purged['at'][:10]} by {purged['policy']}" if purged else ""


def _archived_label(archived: dict[str, int] | None) -> str:
    if not archived:
        return ""
    whole = archived["files"] == archived["of"]
    return "archived" if whole else f"archived {archived['files']} of {archived['of']} files"
