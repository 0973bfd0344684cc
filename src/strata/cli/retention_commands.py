"""`strata retention`, `pin` and `unpin`: retention of lake data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from strata.cli.common import lake_from, reported
from strata.cli.output import console, emit_json, emit_table, size_words
from strata.errors import InvalidArgument
from strata.lake.names import parse_version_ref

if TYPE_CHECKING:
    from strata.retention.archive import ArchiveReport
    from strata.retention.service import RetentionReport

_DONE = {"marked": "marked", "unmarked": "unmarked", "purged": "purged"}
_DRY = {"marked": "would mark", "unmarked": "would unmark", "purged": "would purge"}


def retention(
    ctx: typer.Context,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="List what a pass would mark and purge; change nothing."),
    ] = False,
    grace: Annotated[
        str | None,
        typer.Option(
            "--grace",
            help='How long a mark waits before its purge, for this pass (e.g. "0s", "12h"); '
            "default: each policy's grace.",
        ),
    ] = None,
    unmark: Annotated[
        list[str] | None,
        typer.Option("--unmark", help="Undo the mark of DATASET@N before its purge (repeatable)."),
    ] = None,
    dataset: Annotated[
        list[str] | None,
        typer.Option(
            "--dataset",
            help="Only these datasets (a name or glob, repeatable); such a pass is not "
            "the store's daily one.",
        ),
    ] = None,
    lineage: Annotated[
        bool,
        typer.Option(
            "--lineage",
            help="Delete lineage runs and their events older than [lineage_retention] days "
            "instead (never a run that made a lake version, nor a job's newest run).",
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Mark the versions the [[retention]] policies of strata.toml select, and purge the
    marks older than their grace: the files no kept version reads are deleted, every
    version's history stays. With --lineage, the lineage store's old runs go instead."""
    from strata.retention.policies import parse_duration
    from strata.retention.service import Retention

    if lineage:
        with reported():
            if grace is not None or unmark or dataset:
                raise InvalidArgument(
                    "--lineage takes --dry-run and --json only: --grace, --unmark and "
                    "--dataset are for lake data; run `strata retention` again without "
                    "--lineage for those"
                )
        _lineage(ctx, dry_run, json_out)
        return
    with reported():
        refs = [parse_version_ref(r) for r in unmark or []]
        seconds = parse_duration(grace, "--grace") if grace is not None else None
        service = Retention(lake_from(ctx))
        if refs:
            undone = [service.unmark(name, n) for name, n in refs]
            if json_out:
                emit_json({"versions": [t.to_dict() for t in undone]})
            else:
                for t in undone:
                    console.print(f"unmarked {t.dataset}@{t.version} (policy {t.policy})")
            return
        if not service.policies:
            console.print(
                escape(
                    "no retention policy: add a [[retention]] table to strata.toml "
                    '(datasets = ["raw/*"], keep_days = 30) to select versions to purge'
                )
            )
        report = service.run(dry_run=dry_run, grace_seconds=seconds, datasets=dataset)
        if json_out:
            emit_json(report.to_dict())
        else:
            print_report(report)


def _lineage(ctx: typer.Context, dry_run: bool, json_out: bool) -> None:
    from strata.retention.lineage import LineageRetention

    with reported():
        lake = lake_from(ctx)
        service = LineageRetention(lake.engine, lake.settings)
        report = service.run(dry_run=dry_run)
        if json_out:
            emit_json(report.to_dict())
            return
        if report.days is None:
            console.print(escape(service.NO_LIMIT + "; nothing was deleted"))
            return
        p = report.pruned
        done = "would delete at least" if dry_run else "deleted"
        console.print(
            f"{done} {p.runs:,} run(s) with {p.events:,} event(s)"
            + (f" and {p.versions:,} dataset version(s) they made" if p.versions else "")
            + f", older than {report.days:g} days (before {report.cutoff:%Y-%m-%d %H:%M} UTC); "
            f"kept {p.kept_lake:,} older run(s) that made lake versions and {p.kept:,} other(s) "
            "(each job's newest run, a job version's latest, a parent with children left)"
        )


def print_report(report: RetentionReport) -> None:
    words = _DRY if report.dry_run else _DONE
    if report.touched:
        emit_table(
            "retention (dry run: nothing changed)" if report.dry_run else "retention",
            ["version", "action", "policy", "files", "frees"],
            [
                (
                    f"{t.dataset}@{t.version}",
                    words[t.action],
                    t.policy,
                    t.files,
                    size_words(t.bytes),
                )
                for t in report.touched
            ],
        )
    purged = report.count("purged")
    console.print(
        f"{words['marked']} {report.count('marked')} version(s); {words['purged']} {purged} "
        f"({report.freed_files} file(s), {size_words(report.freed_bytes)})"
        + (f"; unmarked {report.count('unmarked')}" if report.count("unmarked") else "")
        + (
            f"; finished deleting {report.finished_files} file(s) an earlier pass left"
            if report.finished_files
            else ""
        )
    )


def pin(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="The version to keep: DATASET@N.")],
    note: Annotated[str | None, typer.Option("--note", help="Why it is kept.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Keep a version from every retention policy (until `strata unpin`)."""
    from strata.retention.service import Retention

    with reported():
        name, version = parse_version_ref(ref)
        done = Retention(lake_from(ctx)).pin(name, version, note)
        if json_out:
            emit_json(done)
        else:
            console.print(
                f"pinned {name}@{version}"
                + ("" if done["changed"] else " (it was pinned already)")
                + ("; its retention mark is undone" if done["unmarked"] else "")
            )


def unpin(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="The pinned version: DATASET@N.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Let retention policies select a pinned version again."""
    from strata.retention.service import Retention

    with reported():
        name, version = parse_version_ref(ref)
        done = Retention(lake_from(ctx)).unpin(name, version)
        if json_out:
            emit_json(done)
        else:
            console.print(f"unpinned {name}@{version}")


def archive(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what a pass would move; change nothing.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Move the files of versions older than the [[archive]] policies of strata.toml to
    their archive root: copied, verified, recorded, then deleted from the lake. Reads of
    those versions work as before."""
    from strata.retention.archive import Archive

    with reported():
        service = Archive(lake_from(ctx))
        if not service.policies and not json_out:
            console.print(
                escape(
                    "no archive policy: add an [[archive]] table to strata.toml "
                    '(datasets = ["raw/*"], older_than = "90d", uri = "file:///mnt/cold") '
                    "to move old versions' files"
                )
            )
        report = service.run(dry_run=dry_run)
        if json_out:
            emit_json(report.to_dict())
            return
        print_archive(report)


def print_archive(report: ArchiveReport) -> None:
    if report.moved:
        emit_table(
            "archive (dry run: nothing moved)" if report.dry_run else "archive",
            ["dataset", "versions", "files", "size", "to"],
            [
                (
                    m.dataset,
                    f"{m.first_version} to {m.last_version}",
                    m.files,
                    size_words(m.bytes),
                    m.uri,
                )
                for m in report.moved
            ],
        )
    console.print(
        f"{'would move' if report.dry_run else 'moved'} {report.files} file(s) "
        f"({size_words(report.bytes)})"
        + (
            f"; deleted {report.finished_files} copy(ies) earlier moves left"
            if report.finished_files
            else ""
        )
        + (
            f"; {report.waiting_files} lake copy(ies) stay until gc_grace_seconds has passed "
            "(a read that listed them still finds them), then the next pass deletes them"
            if report.waiting_files and not report.dry_run
            else ""
        )
    )


def restore(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="The version to bring back: DATASET@N.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Bring an archived version's files back to the lake, and pin it so the next
    archive pass leaves it there (`strata unpin` lets it go)."""
    from strata.retention.archive import Archive

    with reported():
        name, version = parse_version_ref(ref)
        done = Archive(lake_from(ctx)).restore(name, version)
        if json_out:
            emit_json(done)
        elif done["files"]:
            console.print(
                f"restored {done['files']} file(s) ({size_words(done['bytes'])}) of "
                f"{name}@{version} to the lake; pinned it (strata unpin {name}@{version} "
                "lets the archive take it again)"
            )
        else:
            console.print(f"{name}@{version} has no file in an archive: nothing to restore")
