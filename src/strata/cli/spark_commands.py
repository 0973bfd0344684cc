"""`strata spark-cache`: the class cache Spark's JVM starts from, and Strata's own
classes (the local file system without a forked chmod, the Parquet writer that hashes
rows as it writes them)."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from strata.cli.common import reported, settings_from
from strata.cli.output import console, emit_json, size_words

if TYPE_CHECKING:
    from strata.lake.spark_classes import Made
    from strata.settings import Settings


def spark_cache(
    ctx: typer.Context,
    force: Annotated[
        bool, typer.Option("--force", help="Make it again, though one is made.")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", help="Print nothing unless it makes one now.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Make Spark's class cache, once per machine: every command that starts Spark then
    starts it about 2.5 s sooner (the JDK's class-data sharing).

    One cache serves every home for this Java and Spark installation; it is kept under
    ~/.cache/strata/spark. Making it runs the demo's first hours in a throwaway home,
    about 40 s. Where a JDK's javac is found, it also compiles Strata's classes for local
    masters: a local file system that does not fork a chmod for each file, and a Parquet
    writer that sums each row's hash as it writes the row (the data fingerprint, at about
    half the cost). STRATA_SPARK_CLASS_CACHE=0 starts Spark without either."""
    from strata.cli.demo.command import rehearse
    from strata.lake import spark_classes

    with reported():
        settings = settings_from(ctx)
        files = _file_system(force)
        made = None if force else spark_classes.existing()
        if made is None:
            working = (
                nullcontext()
                if json_out
                else console.status(
                    "making Spark's class cache: the demo's first hours in a throwaway "
                    "home, then the JVM writes the classes it loaded"
                )
            )
            with working:
                made = spark_classes.make(settings, rehearse)
        elif quiet and not files.made_now:
            return
        _report(settings, made, files, json_out)


@dataclass(frozen=True)
class _FileSystem:
    """The local file system class's jar: where, whether made now, or why there is none."""

    path: Path | None
    made_now: bool
    not_made_because: str | None


def _file_system(force: bool) -> _FileSystem:
    """Compile Spark's local file system class where it is not (a missing JDK is no error:
    Spark then keeps Hadoop's own)."""
    from strata.errors import LakeError
    from strata.lake import spark_jar

    found = None if force else spark_jar.existing()
    if found is not None:
        return _FileSystem(found, False, None)
    try:
        return _FileSystem(spark_jar.make(), True, None)
    except LakeError as exc:
        return _FileSystem(None, False, str(exc))


def _report(settings: Settings, made: Made, files: _FileSystem, json_out: bool) -> None:
    from strata.lake.spark_classes import java_option
    from strata.lake.spark_jar import used as fs_used

    used = java_option(settings) is not None
    why_not = _why_unused(settings) if not used else None
    fs_in_use = fs_used(settings) is not None
    if json_out:
        data: dict[str, Any] = {
            "path": str(made.path),
            "bytes": made.size,
            "made_now": made.seconds > 0,
            "seconds": round(made.seconds, 1),
            "used": used,
            "not_used_because": why_not,
            "file_system": {
                "path": str(files.path) if files.path else None,
                "made_now": files.made_now,
                "used": fs_in_use,
                "not_made_because": files.not_made_because,
            },
        }
        emit_json(data)
        return
    what = f"{made.path} ({size_words(made.size)})"
    said = (
        f"made Spark's class cache in {made.seconds:.0f} s: {what}"
        if made.seconds > 0
        else f"Spark's class cache is made: {what}; --force makes it again"
    )
    tail = "commands that start Spark start from it" if used else f"not used: {why_not}"
    lines = [said, tail, _file_system_line(settings, files, fs_in_use)]
    console.print("\n".join(lines), highlight=False, soft_wrap=True)


def _file_system_line(settings: Settings, files: _FileSystem, in_use: bool) -> str:
    if files.path is None:
        return f"local files: Hadoop's own (it forks chmod for each): {files.not_made_because}"
    made = "compiled" if files.made_now else "compiled before"
    if in_use:
        return f"local files: {made} {files.path}; local masters write without forking chmod"
    why = (
        "the spark_class_cache setting is off"
        if not settings.spark_class_cache
        else f"the master {settings.spark_master} runs executors in JVMs of their own"
    )
    return f"local files: {made} {files.path}; not used: {why}"


def _why_unused(settings: Settings) -> str:
    from strata.lake.spark_classes import blocking_folders

    if not settings.spark_class_cache:
        return "the spark_class_cache setting is off (STRATA_SPARK_CLASS_CACHE)"
    folders = ", ".join(str(f) for f in blocking_folders())
    return f"Spark's class path holds folders with files ({folders})"
