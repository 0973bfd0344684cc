"""`strata spark-cache`: the class cache Spark's JVM starts from."""

from __future__ import annotations

from contextlib import nullcontext
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
    about 40 s. STRATA_SPARK_CLASS_CACHE=0 starts Spark without it."""
    from strata.cli.demo.command import rehearse
    from strata.lake import spark_classes

    with reported():
        settings = settings_from(ctx)
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
        elif quiet:
            return
        _report(settings, made, json_out)


def _report(settings: Settings, made: Made, json_out: bool) -> None:
    from strata.lake.spark_classes import java_option

    used = java_option(settings) is not None
    why_not = _why_unused(settings) if not used else None
    if json_out:
        data: dict[str, Any] = {
            "path": str(made.path),
            "bytes": made.size,
            "made_now": made.seconds > 0,
            "seconds": round(made.seconds, 1),
            "used": used,
            "not_used_because": why_not,
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
    console.print(f"{said}\n{tail}", highlight=False, soft_wrap=True)


def _why_unused(settings: Settings) -> str:
    from strata.lake.spark_classes import blocking_folders

    if not settings.spark_class_cache:
        return "the spark_class_cache setting is off (STRATA_SPARK_CLASS_CACHE)"
    folders = ", ".join(str(f) for f in blocking_folders())
    return f"Spark's class path holds folders with files ({folders})"
