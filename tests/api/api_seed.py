"""Rows straight into the store, so read routes are tested without the ingest path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from strata.ids import new_id
from strata.store import schema as s

T0 = datetime(2024, 1, 1, tzinfo=UTC)


class Seeder:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.clock = T0

    def tick(self, minutes: int = 1) -> datetime:
        self.clock += timedelta(minutes=minutes)
        return self.clock

    def _ins(self, table: sa.Table, **values: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(table.insert().values(**values))

    def namespace(self, name: str) -> str:
        with self.engine.begin() as conn:
            if conn.execute(sa.select(s.namespaces).where(s.namespaces.c.name == name)).first():
                return name
            conn.execute(
                s.namespaces.insert().values(
                    name=name, owner="me", created_at=self.clock, updated_at=self.clock
                )
            )
        return name

    def dataset(self, ns: str, name: str, fields: list[str] | None = None) -> str:
        self.namespace(ns)
        uuid = new_id()
        self._ins(
            s.datasets,
            uuid=uuid,
            namespace=ns,
            name=name,
            created_at=self.tick(),
            updated_at=self.clock,
        )
        if fields is not None:
            self.version(uuid, None, fields=fields)
        return uuid

    def version(
        self,
        dataset_uuid: str,
        run_uuid: str | None,
        fields: list[str] | None = None,
        commit_id: int | None = None,
        current: bool = True,
    ) -> str:
        uuid = new_id()
        self._ins(
            s.dataset_versions,
            uuid=uuid,
            dataset_uuid=dataset_uuid,
            created_at=self.tick(),
            run_uuid=run_uuid,
            commit_id=commit_id,
            schema_fields=[{"name": f, "type": "STRING"} for f in (fields or ["a"])],
            facets={},
        )
        if current:
            with self.engine.begin() as conn:
                conn.execute(
                    s.datasets.update()
                    .where(s.datasets.c.uuid == dataset_uuid)
                    .values(current_version_uuid=uuid)
                )
        return uuid

    def job(
        self, ns: str, simple: str, parent: str | None = None, parent_name: str | None = None
    ) -> str:
        self.namespace(ns)
        uuid = new_id()
        fqn = f"{parent_name}.{simple}" if parent_name else simple
        self._ins(
            s.jobs,
            uuid=uuid,
            namespace=ns,
            simple_name=simple,
            name=fqn,
            parent_job_uuid=parent,
            parent_key=parent or "",
            created_at=self.tick(),
            updated_at=self.clock,
            facets={},
        )
        return uuid

    def job_version(
        self, job_uuid: str, inputs: list[str], outputs: list[str], version: str | None = None
    ) -> str:
        uuid = new_id()
        self._ins(
            s.job_versions,
            uuid=uuid,
            job_uuid=job_uuid,
            version=version or uuid,
            created_at=self.tick(),
            updated_at=self.clock,
        )
        with self.engine.begin() as conn:
            for d in inputs:
                conn.execute(
                    s.job_version_io.insert().values(
                        job_version_uuid=uuid, dataset_uuid=d, io_type="INPUT", job_uuid=job_uuid
                    )
                )
            for d in outputs:
                conn.execute(
                    s.job_version_io.insert().values(
                        job_version_uuid=uuid, dataset_uuid=d, io_type="OUTPUT", job_uuid=job_uuid
                    )
                )
            conn.execute(
                s.jobs.update().where(s.jobs.c.uuid == job_uuid).values(current_version_uuid=uuid)
            )
        return uuid

    def run(
        self,
        job_uuid: str,
        job_version: str | None,
        inputs: list[str] = (),  # type: ignore[assignment]
        state: str = "COMPLETED",
        run_id: str | None = None,
    ) -> str:
        uuid = run_id or new_id()
        start = self.tick()
        self._ins(
            s.runs,
            uuid=uuid,
            job_uuid=job_uuid,
            job_version_uuid=job_version,
            state=state,
            created_at=start,
            updated_at=start,
            started_at=start,
            ended_at=start + timedelta(seconds=5),
            facets={"x": {"y": 1}},
        )
        with self.engine.begin() as conn:
            for v in inputs:
                conn.execute(s.run_inputs.insert().values(run_uuid=uuid, dataset_version_uuid=v))
            if job_version:
                conn.execute(
                    s.job_versions.update()
                    .where(s.job_versions.c.uuid == job_version)
                    .values(latest_run_uuid=uuid)
                )
        return uuid

    def alias(self, ns: str, name: str, job_uuid: str) -> None:
        self._ins(s.job_aliases, namespace=ns, name=name, job_uuid=job_uuid)

    def column(self, version: str, out_field: str, in_dataset: str, in_field: str) -> None:
        self._ins(
            s.column_lineage,
            dataset_version_uuid=version,
            output_field=out_field,
            input_dataset_uuid=in_dataset,
            input_field=in_field,
            transformation_type="IDENTITY",
            created_at=self.clock,
        )


def chain(seed: Seeder, ns: str = "ns") -> dict[str, str]:
    """raw -> job1 -> mid -> job2 -> out, with runs, exact input versions and column lineage."""
    ids: dict[str, str] = {}
    ids["raw"] = seed.dataset(ns, "raw")
    ids["raw_v1"] = seed.version(ids["raw"], None, ["a", "b"], commit_id=1)
    ids["mid"] = seed.dataset(ns, "mid")
    ids["out"] = seed.dataset(ns, "out")
    ids["job1"] = seed.job(ns, "job1")
    ids["job1_v"] = seed.job_version(ids["job1"], [ids["raw"]], [ids["mid"]], "fp1")
    ids["run1"] = seed.run(ids["job1"], ids["job1_v"], [ids["raw_v1"]])
    ids["mid_v1"] = seed.version(ids["mid"], ids["run1"], ["a"])
    seed.column(ids["mid_v1"], "a", ids["raw"], "a")
    ids["t_middle"] = seed.tick().isoformat()
    ids["job2"] = seed.job(ns, "job2")
    ids["job2_v"] = seed.job_version(ids["job2"], [ids["mid"]], [ids["out"]], "fp2")
    ids["run2"] = seed.run(ids["job2"], ids["job2_v"], [ids["mid_v1"]])
    ids["out_v1"] = seed.version(ids["out"], ids["run2"], ["a"])
    seed.column(ids["out_v1"], "a", ids["mid"], "a")
    return ids
