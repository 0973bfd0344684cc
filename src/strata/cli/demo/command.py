"""The ``strata demo`` command: set the stage, tell the story, say what to explore."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from strata.cli.common import reported, settings_from
from strata.cli.output import console
from strata.cli.process import start_spark_ahead
from strata.settings import Settings

if TYPE_CHECKING:
    from strata.cli.demo.example import DemoState
    from strata.cli.demo.story import Story
    from strata.lake.service import Lake


def demo(
    ctx: typer.Context,
    fresh: Annotated[
        bool, typer.Option(help="Start over: delete ./.strata's store, lake and demo folder.")
    ] = False,
    hours: Annotated[int, typer.Option(min=1, max=48, help="Hours of clicks to ingest.")] = 6,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic clickstream.")] = 7,
) -> None:
    """Run the experiments pipeline end to end and show each part of Strata on it.

    Hourly (incremental) and daily pipelines over a synthetic clickstream for three
    regions: builds, a no-op build, a program change, late data through the worker, a
    failure and its fix, an upstream rewrite, history, trace and time travel, and a
    partitioned pipeline where late JP clicks rebuild only JP's partitions, and a
    retention policy and an archive policy at work. Run it again to go on where it stopped.
    """
    from strata.cli.demo.example import start_over

    with reported():
        t0 = time.perf_counter()
        settings = settings_from(ctx)
        if fresh:
            gone = start_over(settings)
            console.print(f"started over: removed {len(gone)} files and folders")
        start_spark_ahead(settings)  # every run of the story builds
        state, story = _stage(settings, seed)
        _introduce(settings, state, story)
        story.hours(hours)
        story.day()
        story.no_op()
        story.program_change()
        story.late_data()
        story.failure()
        story.bad_batch()
        story.rewrite()
        story.provenance()
        story.partitions()
        story.retention()
        story.archive()
        story.branch()
        _explore(settings, story.pipelines, time.perf_counter() - t0)


def rehearse(settings: Settings, hours: int = 2) -> None:
    """The demo's first hours and day in ``settings``' home, printing nothing: the work
    ``strata spark-cache`` runs, so that its cache holds the classes a build loads."""
    quiet, console.quiet = console.quiet, True
    try:
        state, story = _stage(settings, seed=7)
        _introduce(settings, state, story)
        story.hours(hours)
        story.day()
    finally:
        console.quiet = quiet


def _stage(settings: Settings, seed: int) -> tuple[DemoState, Story]:
    """The demo's state, and its story over a fresh copy of the example pipelines."""
    from strata.builds.service import BuildService
    from strata.cli.demo.example import (
        DemoState,
        copy_pipelines,
        example_folder,
        load_generator,
    )
    from strata.cli.demo.story import Story
    from strata.lake.service import connect

    folder = settings.home / "demo"
    source = example_folder()
    pipelines = copy_pipelines(source, folder)
    lake = connect(settings)
    state = DemoState.load(folder, seed)
    _check_store(lake, state)
    service = BuildService(settings, [str(pipelines)], lake=lake)
    return state, Story(lake, service, pipelines, load_generator(source), state)


def _check_store(lake: Lake, state: DemoState) -> None:
    """A first run needs a store without the demo's raw datasets written by others."""
    from strata.errors import StrataError

    if not state.is_new:
        return
    taken = {d.name for d in lake.datasets()} & {"raw/clicks", "raw/experiments"}
    if taken:
        raise StrataError(
            f"{', '.join(sorted(taken))} already exist in {lake.settings.database_url} but the "
            "demo did not write them; run `strata demo --fresh` or pick another --home"
        )


def _introduce(settings: Settings, state: DemoState, story: Story) -> None:
    """Say where everything lives; write the experiments on a first run."""
    console.rule("[bold]Strata demo: a website experimentation pipeline", align="left")
    console.print(
        f"store {settings.database_url}\nlake  {settings.lake_uri}\n"
        f"spark {settings.spark_master}\npipelines {story.pipelines} (hourly, daily)",
        highlight=False,
    )
    if state.is_new:
        with story.lake.transaction("raw/experiments", type="SNAPSHOT") as txn:
            txn.write(story.data.experiments_table(state.hour("first_hour").date()))
        state.save()
        console.print("raw/experiments@1: checkout-v2 (US, UK), search-ranking (all), jp-banner")
    else:
        console.print(f"going on from {state.next_hour} (`strata demo --fresh` starts over)")


def _explore(settings: Settings, pipelines: Path, seconds: float) -> None:
    """What to run next, against what the demo built."""
    ns = settings.namespace
    site = f"http://{settings.api_host}:{settings.api_port}"
    base = f"{site}/api/v1"
    console.print()
    console.rule(f"[bold]done in {seconds:.0f} s: explore what it built", align="left")
    console.print(
        f"export STRATA_PIPELINES={pipelines}\n"
        "strata status · strata history metrics/experiment_daily · "
        "strata trace metrics/experiment_cumulative@1\n"
        "strata status regions/daily · strata history regions/daily --partition region=JP\n\n"
        "strata serve            # the web UI, the Marquez API and OpenLineage ingest, then:\n"
        f"curl '{base}/lineage?nodeId=dataset:{ns}:metrics/experiment_cumulative&depth=20'\n"
        f"curl '{base}/namespaces/{ns}/jobs/daily.experiment_metrics/runs'\n"
        f"curl '{base}/namespaces/{ns}/jobs/regions.daily/runs?partition=region=JP'\n"
        f"curl '{base}/namespaces/{ns}/datasets/metrics%2Fexperiment_daily/versions'\n"
        f"curl '{base}/column-lineage?depth=20&nodeId=datasetField:{ns}:"
        "metrics/experiment_daily:clicks_per_customer'\n"
        f"open {site}/             # lineage, versions and what is out of date, in a browser",
        highlight=False,
        soft_wrap=True,
    )
