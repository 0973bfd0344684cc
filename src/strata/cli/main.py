"""The ``strata`` command: one entry point over the same services the API uses."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from strata.cli import (
    branch_commands,
    build_commands,
    history_commands,
    lake_commands,
    process,
    retention_commands,
    spark_commands,
    trace_commands,
)
from strata.cli.changes import changes
from strata.cli.common import reported, settings_from
from strata.cli.demo import demo
from strata.cli.options import PipelineOpt
from strata.cli.output import console

app = typer.Typer(
    name="strata",
    help="Strata: versioned datasets, builds and lineage for PySpark pipelines.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Docstrings wrap at the source's width: markdown joins a paragraph's lines again.
    rich_markup_mode="markdown",
)


@app.callback()
def main(
    ctx: typer.Context,
    home: Annotated[Path | None, typer.Option(help="State folder (default ./.strata).")] = None,
    database_url: Annotated[
        str | None, typer.Option(help="Metadata store URL (sqlite:///… or postgresql://…).")
    ] = None,
    lake_uri: Annotated[
        str | None, typer.Option(help="Lake root URI (file://, hdfs://, s3a://).")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="A strata.toml to read.")] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            help="Show Spark's own log lines (otherwise in <home>/logs/spark.log); "
            "or set STRATA_VERBOSE=1.",
        ),
    ] = False,
) -> None:
    """Options here override STRATA_* variables and strata.toml."""
    overrides = {
        "home": home,
        "database_url": database_url,
        "lake_uri": lake_uri,
        "verbose": True if verbose else None,
    }
    ctx.obj = {"config": config, "overrides": {k: v for k, v in overrides.items() if v is not None}}


@app.command()
def init(ctx: typer.Context) -> None:
    """Create or migrate the metadata store and the lake folder."""
    from strata.lake.storage import Storage
    from strata.store import migrate
    from strata.store.engine import engine_for

    with reported():
        settings = settings_from(ctx)
        revision = migrate.upgrade(engine_for(settings))
        Storage(settings.lake_uri).make_dir("")
        url = settings.database_url
        console.print(
            f"metadata store {url} at schema revision {revision}; lake {settings.lake_uri}"
        )


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 5000, as Marquez).")] = None,
    pipeline: PipelineOpt = None,
) -> None:
    """Run the server: the web pages at /, OpenLineage ingest and the Marquez REST API;
    with pipelines, also status and builds."""
    import dataclasses

    from strata.cli.serve import serve as run

    with reported():
        settings = settings_from(ctx)
        if pipeline:
            paths = tuple(str(p.resolve()) for p in pipeline)
            settings = dataclasses.replace(settings, pipelines=paths)
        run(settings, host=host, port=port)


app.command()(lake_commands.ingest)
app.command()(lake_commands.datasets)
app.command()(lake_commands.versions)
app.command()(lake_commands.read)
app.command()(lake_commands.gc)
app.command()(retention_commands.retention)
app.command()(retention_commands.pin)
app.command()(retention_commands.unpin)
app.command()(retention_commands.archive)
app.command()(retention_commands.restore)
app.add_typer(branch_commands.branch_app)
app.command()(branch_commands.merge)
app.command()(demo)
app.command()(changes)
app.command()(build_commands.status)
app.command()(build_commands.build)
app.command()(build_commands.worker)
app.command()(build_commands.schedules)
app.command()(history_commands.history)
app.command()(history_commands.checks)
app.command()(trace_commands.trace)
app.command()(trace_commands.impact)
app.command("show-program")(trace_commands.show_program)
app.command()(trace_commands.reproduce)
app.command("spark-cache")(spark_commands.spark_cache)


if __name__ == "__main__":  # pragma: no cover
    process.claim()
    app()
