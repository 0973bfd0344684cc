"""A validated OpenLineage event as plain dataclasses."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from strata import ids
from strata.errors import InvalidEvent
from strata.limits import MAX_JSON_DEPTH
from strata.lineage.parents import parent_facet
from strata.lineage.record.validate import (
    EventKind,
    check_uuid,
    parse_time,
    validate,
)
from strata.store import jsoncodec
from strata.store.jsoncodec import JsonText

TERMINAL = {"COMPLETE": "COMPLETED", "FAIL": "FAILED", "ABORT": "ABORTED"}
ACTIVE = frozenset({"START", "RUNNING", "OTHER"})


@dataclass(frozen=True)
class DatasetRef:
    namespace: str
    name: str
    facets: dict[str, Any] = field(default_factory=dict)
    io_facets: dict[str, Any] = field(default_factory=dict)  # inputFacets / outputFacets

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)


@dataclass(frozen=True)
class ParentRef:
    run_id: str
    namespace: str
    name: str


@dataclass(frozen=True)
class Event:
    kind: EventKind
    payload: dict[str, Any]
    payload_hash: str
    event_time: datetime
    event_type: str | None
    producer: str
    run_id: str | None = None
    run_facets: dict[str, Any] = field(default_factory=dict)
    job_namespace: str | None = None
    job_name: str | None = None
    job_facets: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[DatasetRef, ...] = ()
    outputs: tuple[DatasetRef, ...] = ()
    dataset: DatasetRef | None = None
    parent: ParentRef | None = None
    # The payload as JSON text when known (its canonical form, or as stored), so storing
    # it does not serialise it again.
    text: str | None = field(default=None, compare=False, repr=False)

    def stored_payload(self) -> Any:
        """The payload for a JSON column: its text when known, else the document."""
        return JsonText(self.text) if self.text is not None else self.payload

    def json_text(self) -> str:
        """The payload as JSON text: as stored or hashed when known, else canonical."""
        return self.text if self.text is not None else canonical_json(self.payload)

    @property
    def is_terminal(self) -> bool:
        return self.event_type in TERMINAL

    def fold_key(self) -> tuple[datetime, int, str]:
        """Fold order: event time, then terminal after non-terminal, then content."""
        return (self.event_time, 1 if self.is_terminal else 0, self.payload_hash)

    def stamp(self) -> list[str]:
        """Order-comparable ``[time, hash]`` for latest-wins merges."""
        return [iso(self.event_time), self.payload_hash]


def iso(t: datetime) -> str:
    """Fixed-width UTC text, so string order is time order."""
    # isoformat pads the year to four digits (strftime's %Y does not on every platform)
    # and costs a fifth of strftime; the fold stamps every event with it.
    return t.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def canonical_json(payload: Any) -> str:
    return jsoncodec.canonical(payload)


def strict_json(payload: dict[str, Any]) -> str:
    """The canonical text of an event that every store can hold; InvalidEvent naming the
    first value no store can (see :func:`strata.store.jsoncodec.strict_problem`)."""
    try:
        return jsoncodec.strict_canonical(payload, MAX_JSON_DEPTH)
    except jsoncodec.NotStrict as exc:
        raise InvalidEvent(f"the event is not strict JSON: {exc}", path=exc.path) from None


def payload_hash(payload: Any) -> str:
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def _facets(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _dataset(raw: dict[str, Any], io_key: str | None) -> DatasetRef:
    return DatasetRef(
        namespace=raw["namespace"],
        name=raw["name"],
        facets=_facets(raw.get("facets")),
        io_facets=_facets(raw.get(io_key)) if io_key else {},
    )


def parse_event(
    payload: dict[str, Any],
    *,
    check: bool = True,
    digest: str | None = None,
    text: str | None = None,
) -> Event:
    """Validate (unless ``check`` is False, for stored events) and parse ``payload``.

    ``digest`` is a stored event's known payload hash, which saves hashing it again;
    ``text`` its JSON text as stored, which saves serialising it again.
    """
    if digest is None or check:
        if not isinstance(payload, dict):
            text = None
        else:
            text = strict_json(payload) if check else canonical_json(payload)
        kind = validate(payload, text) if check else _kind(payload)
        assert text is not None
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    else:
        kind = _kind(payload)
    common: dict[str, Any] = {
        "kind": kind,
        "payload": payload,
        "text": text,
        "payload_hash": digest,
        "event_time": parse_time(payload["eventTime"], "$.eventTime"),
        "event_type": payload.get("eventType") if kind == "RunEvent" else None,
        "producer": payload.get("producer", ""),
    }
    if kind == "DatasetEvent":
        return Event(**common, dataset=_dataset(payload["dataset"], None))
    job = payload["job"]
    common.update(
        job_namespace=job["namespace"],
        job_name=job["name"],
        job_facets=_facets(job.get("facets")),
        inputs=tuple(_dataset(d, "inputFacets") for d in payload.get("inputs") or ()),
        outputs=tuple(_dataset(d, "outputFacets") for d in payload.get("outputs") or ()),
    )
    if kind == "JobEvent":
        return Event(**common)
    run = payload["run"]
    run_facets = _facets(run.get("facets"))
    return Event(
        **common,
        run_id=check_uuid(run["runId"], "$.run.runId"),
        run_facets=run_facets,
        parent=_parent(parent_facet(run_facets), job["name"]),
    )


def _parent(facet: Any, job_name: str) -> ParentRef | None:
    """The parent a (checked) parent facet names. Older Airflow integrations named the
    task itself as the parent job (``dag.task``): the parent is then its DAG, the name
    up to the last dot, as Marquez reads it."""
    if not isinstance(facet, dict):
        return None
    namespace, named = facet["job"]["namespace"], facet["job"]["name"]
    run_uuid = ids.parent_run_uuid(namespace, named, facet["run"]["runId"])
    if named != job_name:
        return ParentRef(run_uuid, namespace, named)
    if "." not in named:
        return None  # a job is not its own parent
    return ParentRef(run_uuid, namespace, named.rsplit(".", 1)[0])


def _kind(payload: dict[str, Any]) -> EventKind:
    if "run" in payload:
        return "RunEvent"
    if "dataset" in payload and "job" not in payload:
        return "DatasetEvent"
    return "JobEvent"
