"""`strata demo`: a short walk through the transaction service on the current settings."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated

import typer

from strata.cli.common import reported, settings_from
from strata.cli.output import console, emit_table, emit_versions
from strata.lake.service import connect

DATASET = "demo/clicks"


def demo(
    ctx: typer.Context,
    spark: Annotated[bool, typer.Option(help="Also write and read through Spark.")] = True,
) -> None:
    """Create a dataset, append twice, snapshot, read back in time, print the history."""
    import pyarrow as pa

    with reported():
        lake = connect(settings_from(ctx))
        console.print(
            f"[bold]Strata demo[/] — store {lake.settings.database_url}, "
            f"lake {lake.settings.lake_uri}"
        )
        known = {d.name: d for d in lake.datasets()}
        if DATASET in known:
            console.print(
                f"{DATASET} exists with {known[DATASET].latest_commit_id} version(s); adding more"
            )

        with lake.transaction(DATASET, type="APPEND") as txn:
            txn.write(
                pa.table({"user": ["ada", "bob"], "page": ["/home", "/docs"], "clicks": [3, 1]})
            )
        first = txn.versions[DATASET]
        console.print(f"1. APPEND from pyarrow -> version {first.commit_id}")
        time.sleep(0.01)
        between = datetime.now(UTC)
        time.sleep(0.01)

        import pandas as pd

        with lake.transaction(DATASET, type="APPEND") as txn:
            txn.write(pd.DataFrame({"user": ["cy"], "page": ["/home"], "clicks": [7]}))
        console.print(f"2. APPEND from pandas  -> version {txn.versions[DATASET].commit_id}")

        if spark:
            from strata.lake.spark import get_spark

            session = get_spark(lake.settings)
            totals = (
                lake.read(DATASET, spark=session)
                .groupBy("user", "page")
                .sum("clicks")
                .withColumnRenamed("sum(clicks)", "clicks")
            )
            with lake.transaction(DATASET, type="SNAPSHOT") as txn:
                txn.write(totals)
            how = "a Spark aggregate of the latest version"
        else:
            latest = lake.read_arrow(DATASET)
            with lake.transaction(DATASET, type="SNAPSHOT") as txn:
                txn.write(latest)
            how = "the latest version, rewritten by pyarrow"
        snap = txn.versions[DATASET]
        console.print(f"3. SNAPSHOT of {how} -> version {snap.commit_id}")

        old = lake.read_arrow(DATASET, as_of=between)
        console.print(
            f"4. Time travel: as of {between.isoformat(timespec='milliseconds')} the "
            f"dataset had {old.num_rows} rows (version {first.commit_id}):"
        )
        emit_table("", old.column_names, [list(r.values()) for r in old.to_pylist()])
        if spark:
            n = lake.read(DATASET, version=first.commit_id).count()
            console.print(f"   Spark reads version {first.commit_id} with {n} rows too.")

        console.print("5. History:")
        emit_versions(DATASET, lake.versions(DATASET))
