"""Marquez-style writes (the REST API's PUT and POST routes).

Namespaces, sources and tags are plain upserts. Datasets, jobs and run lifecycle
calls are turned into OpenLineage events (DatasetEvent, JobEvent, RunEvent)
and go through :func:`~strata.lineage.record.apply.record_event`, so they build
exactly the model the equivalent events build. ``create_run`` sends a
RunEvent without ``eventType`` (the run stays NEW); its ``args`` are kept as
the ``runArgs`` run facet.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.errors import InvalidArgument, NotFound
from strata.ids import new_id
from strata.lineage.producer import PRODUCER
from strata.lineage.record.apply import RecordResult, record_event
from strata.lineage.record.events import iso
from strata.lineage.record.validate import check_uuid
from strata.store.engine import read_tx, write_tx
from strata.store.owners import namespaces, sources, tags
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.jobs import aliases as job_aliases
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.jobs import versions as versions_of
from strata.store.owners.runs import rows as stored_runs

_DATASETS = dataset_rows.relation()

_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/"
_ACTIONS = {"start": "START", "complete": "COMPLETE", "fail": "FAIL", "abort": "ABORT"}

RunAction = Literal["start", "complete", "fail", "abort"]
SCHEMA_LOCATION = "schemaLocation"  # the dataset facet a stream's schema URL is kept in
DatasetId = tuple[str, str]


def _now(at: datetime | None) -> datetime:
    if at is None:
        return datetime.now(UTC)
    if at.tzinfo is None:
        raise InvalidArgument(f"time {at.isoformat()} has no time zone; pass an aware datetime")
    return at.astimezone(UTC)


def _facet(**fields: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": PRODUCER, **fields}


_DEFAULT_NAMESPACE = (
    "The default global namespace for dataset, job, and run metadata not belonging to a "
    "user-specified namespace."
)


def ensure_defaults(engine: Engine, *, at: datetime | None = None) -> None:
    """The ``default`` namespace (owner ``anonymous``) and the ``default`` source, which
    Marquez makes when it starts and its clients and web UI expect; left as they are when
    they exist."""
    now = _now(at)
    with write_tx(engine) as conn:
        namespaces.ensure(conn, "default", now, namespaces.ANONYMOUS, _DEFAULT_NAMESPACE)
        sources.ensure(conn, "default", "POSTGRESQL", "", now)


def upsert_namespace(
    engine: Engine,
    name: str,
    *,
    owner: str | None = None,
    description: str | None = None,
    at: datetime | None = None,
) -> None:
    with write_tx(engine) as conn:
        namespaces.upsert(conn, name, owner, description, _now(at))


def upsert_source(
    engine: Engine,
    name: str,
    *,
    type: str,
    connection_url: str | None = None,
    description: str | None = None,
    at: datetime | None = None,
) -> None:
    with write_tx(engine) as conn:
        sources.upsert(conn, name, type, connection_url, description, _now(at))


def upsert_dataset(
    engine: Engine,
    namespace: str,
    name: str,
    *,
    type: str = "DB_TABLE",
    physical_name: str | None = None,
    source_name: str | None = None,
    fields: Sequence[dict[str, Any]] | None = None,
    description: str | None = None,
    facets: dict[str, Any] | None = None,
    run_id: str | None = None,
    schema_location: str | None = None,
    at: datetime | None = None,
) -> RecordResult:
    """Create or update a dataset and make a version of it, as Marquez does: a
    DatasetEvent, or with ``run_id`` an output of that run (a RunEvent of the run without
    a type), so the version names the run that made it."""
    now = _now(at)
    all_facets: dict[str, Any] = dict(facets or {})
    if fields is not None:
        all_facets["schema"] = _facet(fields=[dict(f) for f in fields])
    if description is not None:
        all_facets["documentation"] = _facet(description=description)
    if schema_location is not None:  # a stream's schema (Marquez's StreamMeta)
        all_facets[SCHEMA_LOCATION] = _facet(url=schema_location)
    if source_name is not None:
        with read_tx(engine) as conn:
            source = sources.get(conn, source_name)
        url = source.connection_url if source is not None else None
        all_facets["dataSource"] = _facet(name=source_name, uri=url or source_name)
    dataset = {"namespace": namespace, "name": name, "facets": all_facets}
    if run_id is not None:
        job_namespace, job = _run_job(engine, run_id)
        event = _run_event(job_namespace, job, run_id, None, now, {})
        event["outputs"] = [dataset]
    else:
        event = {
            "eventTime": iso(now),
            "dataset": dataset,
            "producer": PRODUCER,
            "schemaURL": _SCHEMA + "DatasetEvent",
        }
    result = record_event(engine, event)
    with write_tx(engine) as conn:
        dataset_rows.describe(conn, namespace, name, type, physical_name or name)
    return result


def upsert_job(
    engine: Engine,
    namespace: str,
    name: str,
    *,
    location: str | None = None,
    description: str | None = None,
    inputs: Sequence[DatasetId] = (),
    outputs: Sequence[DatasetId] = (),
    facets: dict[str, Any] | None = None,
    type: str | None = None,
    at: datetime | None = None,
) -> RecordResult:
    """Create or update a job and declare a version for its io (a JobEvent)."""
    now = _now(at)
    job_facets: dict[str, Any] = dict(facets or {})
    if type is not None:
        processing = "STREAMING" if type.upper().startswith("STREAM") else "BATCH"
        job_facets["jobType"] = _facet(
            processingType=processing, integration="MARQUEZ", jobType=type.upper()
        )
    if location is not None:
        job_facets["sourceCodeLocation"] = _facet(type="git", url=location)
    if description is not None:
        job_facets["documentation"] = _facet(description=description)
    event = {
        "eventTime": iso(now),
        "job": {"namespace": namespace, "name": name, "facets": job_facets},
        "inputs": [{"namespace": ns, "name": n} for ns, n in inputs],
        "outputs": [{"namespace": ns, "name": n} for ns, n in outputs],
        "producer": PRODUCER,
        "schemaURL": _SCHEMA + "JobEvent",
    }
    return record_event(engine, event)


def _job_raw_name(engine: Engine, namespace: str, name: str) -> str:
    """The name events use for the job ``name`` (FQN or alias) in ``namespace``."""
    return _job_row(engine, namespace, name)[0]


def _job_row(
    engine: Engine, namespace: str, name: str
) -> tuple[str, dict[str, Any], list[Any], list[Any]]:
    """Raw name, facets and current version's inputs and outputs of a job (FQN or alias)."""
    j, jv = job_rows.relation(), versions_of.relation()
    cols = (j.c.fold_state, j.c.name, j.c.facets, jv.c.inputs, jv.c.outputs)
    with read_tx(engine) as conn:
        base = sa.select(*cols).outerjoin(jv, jv.c.uuid == j.c.current_version_uuid)
        row = conn.execute(base.where(j.c.namespace == namespace, j.c.name == name)).first()
        if row is None:
            row = conn.execute(base.where(j.c.uuid.in_(job_aliases.named(namespace, name)))).first()
    if row is None:
        raise NotFound(
            f"job {name!r} not found in namespace {namespace!r}; create it first",
            namespace=namespace,
            job=name,
        )
    raw = str((row.fold_state or {}).get("raw") or row.name)
    return raw, dict(row.facets or {}), list(row.inputs or []), list(row.outputs or [])


def _run_event(
    namespace: str,
    job: str,
    run_id: str,
    event_type: str | None,
    at: datetime,
    facets: dict[str, Any],
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "eventTime": iso(at),
        "run": {"runId": run_id, "facets": facets},
        "job": {"namespace": namespace, "name": job},
        "producer": PRODUCER,
        "schemaURL": _SCHEMA + "RunEvent",
    }
    if event_type is not None:
        event["eventType"] = event_type
    return event


def create_run(
    engine: Engine,
    namespace: str,
    job: str,
    *,
    run_id: str | None = None,
    nominal_start_time: datetime | None = None,
    nominal_end_time: datetime | None = None,
    args: dict[str, str] | None = None,
    at: datetime | None = None,
) -> str:
    """A NEW run of an existing job's current version; returns its id."""
    run = check_uuid(run_id, "runId") if run_id is not None else new_id()
    facets: dict[str, Any] = {}
    if nominal_start_time is not None:
        nominal = {"nominalStartTime": iso(_now(nominal_start_time))}
        if nominal_end_time is not None:
            nominal["nominalEndTime"] = iso(_now(nominal_end_time))
        facets["nominalTime"] = _facet(**nominal)
    if args:
        facets["runArgs"] = _facet(args=dict(args))
    record_event(engine, _job_version_event(engine, namespace, job, run, _now(at), facets))
    return run


def relink_run(engine: Engine, namespace: str, job: str, run_id: str) -> RecordResult:
    """Move run ``run_id`` to the job's current version, as a job PUT naming it does."""
    return record_event(engine, _job_version_event(engine, namespace, job, run_id, _now(None), {}))


def _job_version_event(
    engine: Engine, namespace: str, job: str, run: str, at: datetime, facets: dict[str, Any]
) -> dict[str, Any]:
    """A stateless event of run ``run`` carrying the job's current inputs, outputs and
    source facets, as a producer's run events would, so the run belongs to that version."""
    raw, job_facets, inputs, outputs = _job_row(engine, namespace, job)
    event = _run_event(namespace, raw, run, None, at, facets)
    event["job"]["facets"] = {
        k: v for k, v in job_facets.items() if k in ("sourceCodeLocation", "sourceCode")
    }
    event["inputs"] = [{"namespace": d["namespace"], "name": d["name"]} for d in inputs]
    event["outputs"] = [{"namespace": d["namespace"], "name": d["name"]} for d in outputs]
    return event


def mark_run(
    engine: Engine, run_id: str, action: str, *, at: datetime | None = None
) -> RecordResult:
    """Move a run: ``start``, ``complete``, ``fail`` or ``abort`` at ``at`` (default now)."""
    event_type = _ACTIONS.get(action.lower())
    if event_type is None:
        raise InvalidArgument(
            f"unknown run action {action!r}; use one of {sorted(_ACTIONS)}", action=action
        )
    run = check_uuid(run_id, "runId")
    namespace, job = _run_job(engine, run)
    return record_event(engine, _run_event(namespace, job, run, event_type, _now(at), {}))


def _run_job(engine: Engine, run_id: str) -> tuple[str, str]:
    """The namespace and the name events use of the job of run ``run_id``; NotFound."""
    r, j = stored_runs.relation(), job_rows.relation()
    with read_tx(engine) as conn:
        row = conn.execute(
            sa.select(j.c.namespace, j.c.fold_state, j.c.name)
            .join(r, r.c.job_uuid == j.c.uuid)
            .where(r.c.uuid == run_id)
        ).first()
    if row is None:
        raise NotFound(f"run {run_id!r} not found; create it first", run_id=run_id)
    return row.namespace, str((row.fold_state or {}).get("raw") or row.name)


def upsert_tag(engine: Engine, name: str, description: str | None = None) -> None:
    with write_tx(engine) as conn:
        tags.upsert(conn, name, description, datetime.now(UTC))


def _dataset_uuid(conn: Connection, namespace: str, name: str) -> str:
    d = _DATASETS
    found = conn.execute(
        sa.select(d.c.uuid).where(d.c.namespace == namespace, d.c.name == name)
    ).scalar()
    if found is None:
        raise NotFound(
            f"dataset {name!r} not found in namespace {namespace!r}",
            namespace=namespace,
            dataset=name,
        )
    return str(found)


def tag_dataset(engine: Engine, namespace: str, name: str, tag: str, field: str = "") -> None:
    """Tag a dataset, or one of its fields when ``field`` is given."""
    with write_tx(engine) as conn:
        tags.tag_dataset(conn, _dataset_uuid(conn, namespace, name), tag, field, datetime.now(UTC))


def untag_dataset(engine: Engine, namespace: str, name: str, tag: str, field: str = "") -> None:
    with write_tx(engine) as conn:
        tags.untag_dataset(conn, _dataset_uuid(conn, namespace, name), tag, field)


def tag_job(engine: Engine, job_uuid: str, tag: str) -> None:
    with write_tx(engine) as conn:
        tags.tag_job(conn, job_uuid, tag, datetime.now(UTC))


def untag_job(engine: Engine, job_uuid: str, tag: str) -> None:
    with write_tx(engine) as conn:
        tags.untag_job(conn, job_uuid, tag)
