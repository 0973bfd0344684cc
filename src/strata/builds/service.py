"""The build service as the CLI and the API use it: pipelines, status and builds over
one lake."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from strata.builds import history
from strata.builds.builder import Builder, BuildReport, Reporter
from strata.builds.catalog import Current, load_current, program_ordinals
from strata.builds.discovery import Pipelines, load_pipelines
from strata.builds.history import Entry
from strata.builds.status import DatasetStatus, assess
from strata.errors import NotFound, PipelineError
from strata.lake.service import Lake, connect
from strata.settings import Settings
from strata.store import schema as s
from strata.store.engine import read_tx

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from strata.builds.reproduce import Reproduction


class BuildService:
    """Transforms from ``pipelines`` (default: the ``pipelines`` setting) over one lake."""

    def __init__(
        self,
        settings: Settings,
        pipelines: Sequence[str] | None = None,
        lake: Lake | None = None,
    ) -> None:
        self.settings = settings
        self.paths = list(pipelines or settings.pipelines)
        self.lake = lake or connect(settings)

    @cached_property
    def pipelines(self) -> Pipelines:
        loaded = load_pipelines(self.paths)
        with read_tx(self.lake.engine) as conn:
            current = load_current(conn, self.lake.namespace, _outputs(loaded))
            _refuse_raw_outputs(conn, self.lake.namespace, loaded, current)
        return loaded

    def reload(self) -> None:
        """Forget the loaded pipelines: the next use imports them again."""
        self.__dict__.pop("pipelines", None)

    def status(self) -> dict[str, DatasetStatus]:
        """Every dataset, fresh or out of date with every cause (no JVM)."""
        pipelines = self.pipelines
        with _collections_paused(), read_tx(self.lake.engine) as conn:
            current = load_current(conn, self.lake.namespace)
            ordinals = program_ordinals(conn, self.lake.namespace)
            return assess(pipelines, current, ordinals)

    def dataset_status(self, name: str) -> DatasetStatus:
        found = self.status().get(name)
        if found is None:
            raise NotFound(
                f"dataset {name!r} is neither in the lake nor named by a transform; "
                "`strata status` lists them",
                dataset=name,
            )
        return found

    def builder(self) -> Builder:
        return Builder(
            self.lake,
            self.pipelines,
            self._spark,
            lease_seconds=self.settings.build_lease_seconds,
        )

    def build(
        self,
        datasets: Sequence[str] = (),
        *,
        everything: bool = False,
        force: bool = False,
        dry_run: bool = False,
        jobs: int = 1,
        reporter: Reporter | None = None,
    ) -> BuildReport:
        """Bring ``datasets`` (or every root) up to date; see :mod:`strata.builds.builder`."""
        builder = self.builder()
        order = builder.plan(datasets, everything)
        if dry_run:
            return builder.dry_run(order, force)
        return builder.build(order, force=force, jobs=jobs, reporter=reporter)

    def history(self, dataset: str) -> dict[str, Any]:
        with read_tx(self.lake.engine) as conn:
            return history.history(conn, self.lake.namespace, dataset)

    def trace(self, dataset: str, version: int | None = None) -> dict[str, Any]:
        with read_tx(self.lake.engine) as conn:
            return history.trace(conn, self.lake.namespace, dataset, version)

    def program(self, dataset: str, version: int | None = None) -> Entry:
        with read_tx(self.lake.engine) as conn:
            return history.entry(conn, self.lake.namespace, dataset, version)

    def reproduce(self, dataset: str, version: int | None = None) -> Reproduction:
        from strata.builds.reproduce import reproduce

        return reproduce(self.lake, self._spark, dataset, version)

    def _spark(self) -> SparkSession:
        from strata.lake.spark import get_spark

        return get_spark(self.settings)


@contextmanager
def _collections_paused() -> Iterator[None]:
    """No garbage collection in the block: a status of thousands of datasets allocates
    tens of thousands of short-lived objects, freed by reference counting, and the
    collector's passes over them were most of its time's variance."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _outputs(pipelines: Pipelines) -> set[str]:
    return {o for t in pipelines.transforms.values() for o in t.output_names}


def _refuse_raw_outputs(
    conn: sa.Connection, namespace: str, pipelines: Pipelines, current: dict[str, Current]
) -> None:
    """A transform may not write a dataset that only hands (no build) ever wrote."""
    suspects = sorted(n for n, c in current.items() if c.run is None)
    if not suspects:
        return
    d, t = s.datasets, s.transactions
    raw: list[str] = list(
        conn.execute(
            sa.select(d.c.name)
            .join(t, sa.and_(t.c.dataset_uuid == d.c.uuid, t.c.state == "COMMITTED"))
            .where(d.c.namespace == namespace, d.c.name.in_(suspects))
            .group_by(d.c.name)
            .having(sa.func.count(t.c.run_uuid) == 0)
        ).scalars()
    )
    for name in raw:
        item = pipelines.producer(name)
        assert item is not None
        raise PipelineError(
            f"transform {item.fqn} ({item.where}) writes {name!r}, a raw dataset written by "
            "hand (ingest or a transaction), not by a build; give the output another name",
            dataset=name,
            transform=item.fqn,
        )
