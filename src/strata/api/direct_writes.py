"""Writes of the Marquez write API, straight against the schema.

These cover the deprecated Marquez write routes (PUT namespace/source/dataset/job, POST
runs and run transitions, tags). Switch each to ``strata.lineage.writes`` once those
helpers exist, so one module owns dataset versioning and run state rules.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.errors import InvalidArgument, NotFound, TransactionError
from strata.ids import new_id
from strata.store import schema as s
from strata.store.engine import write_tx

TERMINAL = {"COMPLETED", "FAILED", "ABORTED"}
ACTIONS = {"start": "RUNNING", "complete": "COMPLETED", "fail": "FAILED", "abort": "ABORTED"}


def _now() -> datetime:
    return datetime.now(UTC)


def _ensure_namespace(conn: Connection, name: str, owner: str | None = None) -> None:
    t = s.namespaces
    if conn.execute(sa.select(t.c.name).where(t.c.name == name)).first() is None:
        now = _now()
        conn.execute(t.insert().values(name=name, owner=owner, created_at=now, updated_at=now))


def upsert_namespace(engine: Engine, name: str, owner: str, description: str | None) -> None:
    t = s.namespaces
    with write_tx(engine) as conn:
        _ensure_namespace(conn, name, owner)
        conn.execute(
            t.update()
            .where(t.c.name == name)
            .values(owner=owner, description=description, updated_at=_now())
        )


def upsert_source(engine: Engine, name: str, type_: str, url: str, description: str | None) -> None:
    t = s.sources
    now = _now()
    with write_tx(engine) as conn:
        if conn.execute(sa.select(t.c.name).where(t.c.name == name)).first() is None:
            conn.execute(
                t.insert().values(
                    name=name,
                    type=type_,
                    connection_url=url,
                    description=description,
                    created_at=now,
                    updated_at=now,
                )
            )
        else:
            conn.execute(
                t.update()
                .where(t.c.name == name)
                .values(type=type_, connection_url=url, description=description, updated_at=now)
            )


def upsert_tag(engine: Engine, name: str, description: str | None) -> None:
    with write_tx(engine) as conn:
        _ensure_tag(conn, name, description, update=True)


def _ensure_tag(
    conn: Connection, name: str, description: str | None = None, update: bool = False
) -> None:
    t = s.tags
    now = _now()
    if conn.execute(sa.select(t.c.name).where(t.c.name == name)).first() is None:
        conn.execute(
            t.insert().values(name=name, description=description, created_at=now, updated_at=now)
        )
    elif update:
        conn.execute(
            t.update().where(t.c.name == name).values(description=description, updated_at=now)
        )


def _dataset_uuid(conn: Connection, namespace: str, name: str) -> str:
    d = s.datasets
    uuid = conn.execute(
        sa.select(d.c.uuid).where(d.c.namespace == namespace, d.c.name == name)
    ).scalar()
    if uuid is None:
        raise NotFound(
            f"dataset {name!r} not found in namespace {namespace!r}",
            namespace=namespace,
            dataset=name,
        )
    return str(uuid)


def tag_dataset(engine: Engine, namespace: str, name: str, tag: str, field: str = "") -> None:
    dt = s.dataset_tags
    with write_tx(engine) as conn:
        uuid = _dataset_uuid(conn, namespace, name)
        _require_tag(conn, tag)
        exists = conn.execute(
            sa.select(dt.c.tag_name).where(
                dt.c.dataset_uuid == uuid, dt.c.tag_name == tag, dt.c.field_name == field
            )
        ).first()
        if exists is None:
            conn.execute(
                dt.insert().values(
                    dataset_uuid=uuid, tag_name=tag, field_name=field, tagged_at=_now()
                )
            )


def untag_dataset(engine: Engine, namespace: str, name: str, tag: str, field: str = "") -> None:
    dt = s.dataset_tags
    with write_tx(engine) as conn:
        uuid = _dataset_uuid(conn, namespace, name)
        conn.execute(
            dt.delete().where(
                dt.c.dataset_uuid == uuid, dt.c.tag_name == tag, dt.c.field_name == field
            )
        )


def tag_job(engine: Engine, job_uuid: str, tag: str) -> None:
    jt = s.job_tags
    with write_tx(engine) as conn:
        _require_tag(conn, tag)
        exists = conn.execute(
            sa.select(jt.c.tag_name).where(jt.c.job_uuid == job_uuid, jt.c.tag_name == tag)
        ).first()
        if exists is None:
            conn.execute(jt.insert().values(job_uuid=job_uuid, tag_name=tag, tagged_at=_now()))


def untag_job(engine: Engine, job_uuid: str, tag: str) -> None:
    jt = s.job_tags
    with write_tx(engine) as conn:
        conn.execute(jt.delete().where(jt.c.job_uuid == job_uuid, jt.c.tag_name == tag))


def _require_tag(conn: Connection, tag: str) -> None:
    # Marquez tags must exist before use; create them on first use instead (friendlier).
    _ensure_tag(conn, tag)


def upsert_dataset(
    engine: Engine,
    namespace: str,
    name: str,
    *,
    type_: str,
    physical_name: str,
    source_name: str,
    fields: list[dict[str, Any]],
    tags: list[str],
    description: str | None,
    run_id: str | None,
) -> None:
    d, dv, src = s.datasets, s.dataset_versions, s.sources
    now = _now()
    with write_tx(engine) as conn:
        _ensure_namespace(conn, namespace)
        if conn.execute(sa.select(src.c.name).where(src.c.name == source_name)).first() is None:
            raise NotFound(
                f"source {source_name!r} not found; create it with PUT /api/v1/sources/{{name}}",
                field="sourceName",
                source=source_name,
            )
        if run_id is not None and (
            conn.execute(sa.select(s.runs.c.uuid).where(s.runs.c.uuid == run_id)).first() is None
        ):
            raise NotFound(f"run {run_id!r} not found", field="runId", run_id=run_id)
        uuid = conn.execute(
            sa.select(d.c.uuid).where(d.c.namespace == namespace, d.c.name == name)
        ).scalar()
        values = {
            "type": type_,
            "physical_name": physical_name,
            "source_name": source_name,
            "description": description,
            "updated_at": now,
            "deleted_at": None,
        }
        if uuid is None:
            uuid = new_id()
            conn.execute(
                d.insert().values(
                    uuid=uuid, namespace=namespace, name=name, created_at=now, **values
                )
            )
        else:
            conn.execute(d.update().where(d.c.uuid == uuid).values(**values))
        version = new_id()
        schema_fields = [
            {k: v for k, v in f.items() if k in ("name", "type", "description") and v is not None}
            for f in fields
        ]
        conn.execute(
            dv.insert().values(
                uuid=version,
                dataset_uuid=uuid,
                created_at=now,
                run_uuid=run_id,
                schema_fields=schema_fields,
                facets={},
            )
        )
        # A version written by a run becomes current when that run completes.
        if run_id is None:
            conn.execute(d.update().where(d.c.uuid == uuid).values(current_version_uuid=version))
        for t in tags:
            _ensure_tag(conn, t)
            _add_dataset_tag(conn, uuid, t, "")
        for f in fields:
            for t in f.get("tags") or []:
                _ensure_tag(conn, t)
                _add_dataset_tag(conn, uuid, t, f["name"])


def _add_dataset_tag(conn: Connection, uuid: str, tag: str, field: str) -> None:
    dt = s.dataset_tags
    if (
        conn.execute(
            sa.select(dt.c.tag_name).where(
                dt.c.dataset_uuid == uuid, dt.c.tag_name == tag, dt.c.field_name == field
            )
        ).first()
        is None
    ):
        conn.execute(
            dt.insert().values(dataset_uuid=uuid, tag_name=tag, field_name=field, tagged_at=_now())
        )


def upsert_job(
    engine: Engine,
    namespace: str,
    name: str,
    *,
    type_: str,
    inputs: list[tuple[str, str]],
    outputs: list[tuple[str, str]],
    location: str | None,
    description: str | None,
) -> str:
    """Create or update a top-level job; a new IO or location makes a new job version."""
    import hashlib
    import json

    j, jv, io = s.jobs, s.job_versions, s.job_version_io
    now = _now()
    with write_tx(engine) as conn:
        _ensure_namespace(conn, namespace)
        ds_in = [_dataset_uuid(conn, ns, n) for ns, n in inputs]
        ds_out = [_dataset_uuid(conn, ns, n) for ns, n in outputs]
        uuid = conn.execute(
            sa.select(j.c.uuid).where(j.c.namespace == namespace, j.c.name == name)
        ).scalar()
        if uuid is None:
            uuid = new_id()
            conn.execute(
                j.insert().values(
                    uuid=uuid,
                    namespace=namespace,
                    simple_name=name,
                    name=name,
                    parent_key="",
                    type=type_,
                    location=location,
                    description=description,
                    created_at=now,
                    updated_at=now,
                )
            )
        fingerprint = hashlib.sha256(
            json.dumps(
                [namespace, name, sorted(inputs), sorted(outputs), location], sort_keys=True
            ).encode()
        ).hexdigest()
        version = conn.execute(
            sa.select(jv.c.uuid).where(jv.c.job_uuid == uuid, jv.c.version == fingerprint)
        ).scalar()
        if version is None:
            version = new_id()
            conn.execute(
                jv.insert().values(
                    uuid=version,
                    job_uuid=uuid,
                    version=fingerprint,
                    location=location,
                    created_at=now,
                    updated_at=now,
                )
            )
            for ds, kind in [(x, "INPUT") for x in set(ds_in)] + [
                (x, "OUTPUT") for x in set(ds_out)
            ]:
                conn.execute(
                    io.insert().values(
                        job_version_uuid=version, dataset_uuid=ds, io_type=kind, job_uuid=uuid
                    )
                )
        conn.execute(
            j.update()
            .where(j.c.uuid == uuid)
            .values(
                type=type_,
                location=location,
                description=description,
                current_version_uuid=version,
                updated_at=now,
            )
        )
        return str(uuid)


def create_run(
    engine: Engine,
    job_uuid: str,
    run_id: str | None,
    nominal_start: datetime | None,
    nominal_end: datetime | None,
) -> str:
    r, j = s.runs, s.jobs
    now = _now()
    run_id = run_id or new_id()
    with write_tx(engine) as conn:
        if conn.execute(sa.select(r.c.uuid).where(r.c.uuid == run_id)).first() is not None:
            raise TransactionError(f"run {run_id!r} already exists", field="id", run_id=run_id)
        version = conn.execute(
            sa.select(j.c.current_version_uuid).where(j.c.uuid == job_uuid)
        ).scalar()
        conn.execute(
            r.insert().values(
                uuid=run_id,
                job_uuid=job_uuid,
                job_version_uuid=version,
                state="NEW",
                nominal_start_time=nominal_start,
                nominal_end_time=nominal_end,
                created_at=now,
                updated_at=now,
                transitioned_at=now,
                facets={},
            )
        )
        _record_state(conn, run_id, "NEW", now)
        if version is not None:
            conn.execute(
                s.job_versions.update()
                .where(s.job_versions.c.uuid == version)
                .values(latest_run_uuid=run_id, updated_at=now)
            )
    return run_id


def _record_state(conn: Connection, run_id: str, state: str, at: datetime) -> None:
    conn.execute(
        s.run_states.insert().values(
            uuid=new_id(), run_uuid=run_id, state=state, transitioned_at=at
        )
    )


def mark_run(engine: Engine, run_id: str, action: str, at: datetime | None) -> None:
    state = ACTIONS.get(action)
    if state is None:
        raise InvalidArgument(f"unknown run action {action!r}; use {sorted(ACTIONS)}")
    at = at or _now()
    r, dv, d = s.runs, s.dataset_versions, s.datasets
    with write_tx(engine) as conn:
        row = conn.execute(sa.select(r.c.state).where(r.c.uuid == run_id)).first()
        if row is None:
            raise NotFound(f"run {run_id!r} not found", run_id=run_id)
        if row.state in TERMINAL:
            raise TransactionError(
                f"run {run_id!r} is already {row.state}; a finished run cannot be {action}ed",
                run_id=run_id,
                state=row.state,
            )
        values: dict[str, Any] = {"state": state, "transitioned_at": at, "updated_at": _now()}
        if state == "RUNNING":
            values["started_at"] = at
        else:
            values["ended_at"] = at
        conn.execute(r.update().where(r.c.uuid == run_id).values(**values))
        _record_state(conn, run_id, state, at)
        if state == "COMPLETED":
            for v in conn.execute(
                sa.select(dv.c.uuid, dv.c.dataset_uuid).where(dv.c.run_uuid == run_id)
            ).all():
                conn.execute(
                    d.update().where(d.c.uuid == v.dataset_uuid).values(current_version_uuid=v.uuid)
                )
