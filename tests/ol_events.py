"""The tests' one OpenLineage event builder: a RunEvent as a producer sends it."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

PRODUCER = "https://example.com/strata-tests"
SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/"

DatasetRef = str | tuple[str, str] | dict[str, Any]


def dataset(ref: DatasetRef) -> dict[str, Any]:
    """``"namespace|name"``, ``(namespace, name)`` or a dataset document as is."""
    if isinstance(ref, dict):
        return ref
    namespace, name = ref.split("|", 1) if isinstance(ref, str) else ref
    return {"namespace": namespace, "name": name}


def _datasets(refs: Any) -> Any:
    """A list of dataset documents; anything but a list or tuple (a malformed value a
    test sends on purpose) as it is."""
    return [dataset(d) for d in refs] if isinstance(refs, list | tuple) else refs


def facet(producer: str = PRODUCER, **fields: Any) -> dict[str, Any]:
    return {"_producer": producer, "_schemaURL": producer, **fields}


def run_event(
    event_type: str | None = "COMPLETE",
    run_id: str | None = None,
    *,
    job: str | dict[str, Any] = "etl",
    namespace: str = "ns",
    at: str = "2024-05-01T10:00:00Z",
    inputs: Iterable[DatasetRef] = (),
    outputs: Iterable[DatasetRef] = (),
    producer: str = PRODUCER,
    **extra: Any,
) -> dict[str, Any]:
    """A RunEvent of ``namespace``/``job`` (a fresh run unless ``run_id``; ``job`` as a
    dict is the whole member); ``extra`` replaces whole top-level members (``run``,
    ``eventTime`` …)."""
    body: dict[str, Any] = {
        "eventTime": at,
        "run": {"runId": run_id or str(uuid.uuid4())},
        "job": job if isinstance(job, dict) else {"namespace": namespace, "name": job},
        "inputs": _datasets(inputs),
        "outputs": _datasets(outputs),
        "producer": producer,
        "schemaURL": SCHEMA + "RunEvent",
    }
    if event_type is not None:
        body["eventType"] = event_type
    body.update(extra)
    return body
