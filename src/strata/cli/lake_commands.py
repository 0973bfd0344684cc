"""Data providers and consumers: ingest, datasets, versions, read, gc."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from strata.cli.common import dataset_at, lake_from, parse_time, reported, settings_from
from strata.cli.options import BranchOpt
from strata.cli.output import (
    console,
    emit_json,
    emit_table,
    emit_versions,
    err_console,
    partition_words,
)
from strata.cli.process import start_spark_ahead
from strata.errors import InvalidArgument
from strata.lake.partitions import parse_filter
from strata.lake.values import json_value

FORMATS = ("csv", "json", "parquet")

if TYPE_CHECKING:
    from strata.lake.registry import Version


def ingest(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="File or folder to load (any path Spark reads).")],
    dataset: Annotated[str, typer.Argument(help="Lake dataset to write, e.g. raw/clicks.")],
    format: Annotated[
        str | None,
        typer.Option("--format", "-f", help="csv, json or parquet (default: from the extension)."),
    ] = None,
    type: Annotated[str, typer.Option("--type", "-t", help="SNAPSHOT or APPEND.")] = "APPEND",
    permissive: Annotated[
        bool,
        typer.Option(
            help="Repair CSV rows with too many or too few fields and drop JSON lines that "
            "are not objects, instead of failing."
        ),
    ] = False,
    spark: Annotated[
        bool,
        typer.Option("--spark", help="Read with Spark even when the source fits in memory."),
    ] = False,
    partition_by: Annotated[
        str | None,
        typer.Option(
            "--partition-by",
            help="Comma-separated columns to partition the dataset by, e.g. region,day "
            "(a partitioned dataset keeps its own when omitted).",
        ),
    ] = None,
    partitions: Annotated[
        list[str] | None,
        typer.Option(
            "--partitions",
            help="With --type SNAPSHOT: replace only these partitions (col=value[,col=value]; "
            "repeatable) and keep the rest.",
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the new version as JSON.")
    ] = False,
    branch: BranchOpt = None,
) -> None:
    """Load a file into a dataset as one transaction.

    A local source that fits in memory is read without a JVM (pyarrow), a larger or
    remote one by Spark. An APPEND to an existing dataset reads the source with the
    dataset's schema. A malformed row (a CSV row whose field count differs from the
    header's, a JSON line that is not an object) or a value that does not fit the
    dataset's type fails the ingest, naming file and line, and commits nothing.
    """
    from strata.cli.ingest import Split, load, repaired

    with reported():
        fmt = (format or Path(path).suffix.lstrip(".")).lower()
        if fmt not in FORMATS:
            raise InvalidArgument(
                f"cannot tell the format of {path!r} ({fmt or 'no extension'!r}); pass "
                f"--format with one of {', '.join(FORMATS)}",
                format=fmt,
            )
        if type.upper() not in ("SNAPSHOT", "APPEND"):
            raise InvalidArgument(
                f"ingest --type must be SNAPSHOT or APPEND, got {type!r}", type=type
            )
        if "://" not in path and not Path(path).exists():
            raise InvalidArgument(f"no file or folder at {path!r}; check the path", path=path)
        by = [c.strip() for c in partition_by.split(",")] if partition_by is not None else None
        replace = [parse_filter(p) for p in partitions] if partitions else None
        if spark:
            start_spark_ahead(settings_from(ctx, branch))
        lake = lake_from(ctx, branch)
        version, found = load(lake, path, fmt, dataset, type, permissive, spark, Split(by, replace))
        if found.count:
            err_console.print(repaired(found, fmt), highlight=False)
        if json_out:
            emit_json(version.to_dict())
        else:
            _print_committed(dataset, version)


def _print_committed(dataset: str, version: Version) -> None:
    """One line for a new version (and what it did to which partitions)."""
    on = f" on {version.branch}" if version.branch != "main" else ""
    console.print(
        f"{dataset}: version {version.commit_id} ({version.type}){on}, "
        f"{version.row_count} rows in {version.file_count} file(s)"
    )
    if version.partitions is not None:
        console.print(f"  partitions: {partition_words(version.partitions)}")


def datasets(
    ctx: typer.Context,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    branch: BranchOpt = None,
) -> None:
    """List lake datasets with their latest version (on a branch: its own, else its
    parent's)."""
    with reported():
        lake = lake_from(ctx, branch)
        items = lake.datasets()
        if json_out:
            emit_json(
                [
                    {
                        "name": d.name,
                        "namespace": d.namespace,
                        "latest_version": d.latest_commit_id,
                        "rows": d.row_count,
                        "updated_at": d.updated_at,
                    }
                    for d in items
                ]
            )
            return
        on = f" on {lake.branch}" if lake.branch != "main" else ""
        emit_table(
            f"datasets in {lake.namespace}{on}",
            ["name", "latest version", "rows", "updated"],
            [(d.name, d.latest_commit_id, d.row_count, d.updated_at) for d in items],
        )


def versions(
    ctx: typer.Context,
    dataset: Annotated[str, typer.Argument(help="Lake dataset.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The version history of a dataset, on every branch (each version names its own)."""
    with reported():
        lake = lake_from(ctx)
        history = lake.versions(dataset)
        if json_out:
            emit_json([v.to_dict() for v in history])
            return
        emit_versions(dataset, history)


def read(
    ctx: typer.Context,
    dataset: Annotated[str, typer.Argument(help="Lake dataset, or DATASET@N: its version N.")],
    version: Annotated[int | None, typer.Option("--version", "-v", help="Version N.")] = None,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="ISO time; the version current then (UTC if no zone)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="Rows to show.")] = 20,
    where: Annotated[
        str | None,
        typer.Option(
            "--where",
            help="Only these partitions: col=value[,col=value], e.g. region=JP (only their "
            "files are read).",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print rows as JSON lines.")] = False,
    branch: BranchOpt = None,
) -> None:
    """Show rows of a version (read with pyarrow: no JVM); the latest and --as-of are the
    branch's."""
    with reported():
        dataset, version = dataset_at(dataset, version)
        if version is not None and as_of is not None:
            raise InvalidArgument("pass a version or --as-of, not both")
        when = parse_time(as_of) if as_of is not None else None
        lake = lake_from(ctx, branch)
        v = lake.version(dataset, version=version, as_of=when)
        wanted = parse_filter(where) if where is not None else None
        table = lake.read_arrow(dataset, version=v.commit_id, partitions=wanted).slice(0, limit)
        rows = table.to_pylist()
        if json_out:
            for row in rows:
                emit_json(json_value(row))
            return
        scope = f", {where}" if where is not None else ""
        scope += f", on {v.branch}" if v.branch != "main" else ""
        emit_table(
            f"{dataset} version {v.commit_id}{scope} ({v.row_count} rows, showing {len(rows)})",
            table.column_names,
            [[row[c] for c in table.column_names] for row in rows],
        )


def gc(
    ctx: typer.Context,
    grace: Annotated[
        float | None,
        typer.Option("--grace", help="Seconds; default from settings (gc_grace_seconds)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Remove files of aborted and abandoned transactions older than the grace period."""
    with reported():
        if grace is not None and grace < 0:
            raise InvalidArgument(f"--grace must be 0 or more seconds, got {grace}")
        report = lake_from(ctx).gc(grace)
        if json_out:
            emit_json(report.to_dict())
        else:
            console.print(
                f"removed {report.transactions} dead transaction(s): {report.folders} folder(s), "
                f"{report.orphan_folders} orphan folder(s)"
            )
