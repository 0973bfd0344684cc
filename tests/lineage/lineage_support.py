"""Helpers for the lineage ingest tests: the shared corpus, event builders, table dumps."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import ol_events
from strata.store import schema as s

CONFORMANCE = Path(__file__).parents[2].parent / "shared" / "conformance"
EVENTS = CONFORMANCE / "events"
PRODUCER = "https://example.com/strata-tests"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def corpus() -> Path:
    if not EVENTS.is_dir():
        pytest.fail(
            f"the conformance corpus is missing: expected {EVENTS} (a `shared/conformance` "
            "folder next to the repository)"
        )
    return EVENTS


def load(relative: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((corpus() / relative).read_text("utf-8"))
    return data


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def rid(label: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"strata-test/{label}"))


def ds(namespace: str, name: str, **facets: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"namespace": namespace, "name": name}
    if facets:
        out["facets"] = {
            k: {"_producer": PRODUCER, "_schemaURL": PRODUCER, **v} for k, v in facets.items()
        }
    return out


def run_event(
    event_type: str | None,
    minutes: float,
    run: str,
    job: str,
    *,
    namespace: str = "ns",
    inputs: list[dict[str, Any]] | None = None,
    outputs: list[dict[str, Any]] | None = None,
    parent: tuple[str, str] | None = None,
    parent_namespace: str | None = None,
    run_facets: dict[str, Any] | None = None,
    job_facets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    facets: dict[str, Any] = {
        k: {"_producer": PRODUCER, "_schemaURL": PRODUCER, **v}
        for k, v in (run_facets or {}).items()
    }
    if parent is not None:
        facets["parent"] = {
            "_producer": PRODUCER,
            "_schemaURL": PRODUCER,
            "run": {"runId": rid(parent[0])},
            "job": {"namespace": parent_namespace or namespace, "name": parent[1]},
        }
    return ol_events.run_event(
        event_type,
        rid(run),
        namespace=namespace,
        at=at(minutes),
        inputs=inputs or [],
        outputs=outputs or [],
        producer=PRODUCER,
        run={"runId": rid(run), "facets": facets},
        job={
            "namespace": namespace,
            "name": job,
            "facets": {
                k: {"_producer": PRODUCER, "_schemaURL": PRODUCER, **v}
                for k, v in (job_facets or {}).items()
            },
        },
    )


def dataset_event(
    minutes: float, namespace: str, name: str, *, fields: list[str] | None = None
) -> dict[str, Any]:
    """A DatasetEvent (what a dataset PUT sends), with a schema of ``fields`` if given."""
    schema = {"fields": [{"name": f, "type": "STRING"} for f in fields]} if fields else None
    return {
        "eventTime": at(minutes),
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
        "dataset": ds(namespace, name, **({"schema": schema} if schema else {})),
    }


# received_at is the only column allowed to depend on arrival.
_SKIP = {"lineage_events": {"received_at"}}


def wipe(engine: sa.Engine) -> None:
    """Empty every table of the store."""
    with engine.begin() as conn:
        for table in reversed(s.metadata.sorted_tables):
            conn.execute(table.delete())


def dump(engine: sa.Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every lineage table's rows, sorted, JSON normalised, without arrival columns."""
    tables = [
        s.namespaces,
        s.sources,
        s.datasets,
        s.dataset_versions,
        s.jobs,
        s.job_aliases,
        s.job_versions,
        s.job_version_io,
        s.runs,
        s.run_states,
        s.run_inputs,
        s.lineage_events,
        s.dataset_symlinks,
        s.column_lineage,
    ]
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for t in tables:
            cols = [c for c in t.columns if c.name not in _SKIP.get(t.name, set())]
            rows = conn.execute(sa.select(*cols)).all()
            norm = [
                tuple(
                    json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v for v in row
                )
                for row in rows
            ]
            out[t.name] = sorted(norm, key=repr)
    return out


def one(engine: sa.Engine, query: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(query).one()


def rows(engine: sa.Engine, query: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(query).all())
