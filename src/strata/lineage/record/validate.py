"""Validate an OpenLineage event against the pinned 2-0-2 core schema.

Decisions:

- The event is classified first (RunEvent: ``run`` and ``job``; DatasetEvent:
  ``dataset``; JobEvent: ``job`` without ``run``) and then checked against
  that one definition, so an error names the real problem rather than the
  three ``oneOf`` branches.
- ``schemaURL`` is not required: Marquez accepts events without it and
  producers in the wild omit it. ``eventType`` is optional, as in the spec.
- ``runId`` must be a UUID. Marquez maps other strings to a name-based UUID,
  which silently merges unrelated runs that share an id such as ``run_id``;
  a clear refusal naming ``$.run.runId`` is safer for a history-preserving
  store. The parent facet's ``run.runId`` may be any non-empty string, as
  older Airflow integrations sent the DAG run's id there: it is mapped as
  Marquez maps it (:func:`strata.ids.parent_run_uuid`), by namespace, DAG and id.
- The parent facet is ``parent``, or ``parentRun``, the key older Airflow
  integrations used (:func:`strata.lineage.parents.parent_facet`).
- Times are parsed leniently: a zone-less time is UTC and digits beyond
  microseconds are dropped (see :func:`parse_time`).
- A hand-written check of the pinned schema's structure accepts the common
  case in microseconds; jsonschema (milliseconds per event) runs only when
  that check is unsure, and always produces the error message. The quick
  check may reject what the schema allows, never the reverse.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from strata.errors import InvalidEvent
from strata.limits import MAX_NAME_BYTES, name_problem
from strata.lineage.parents import parent_facet
from strata.times import Zoneless, aware

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

EventKind = Literal["RunEvent", "DatasetEvent", "JobEvent"]

_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$"
)


@cache
def _schema() -> dict[str, Any]:
    text = (
        resources.files("strata.lineage.record.spec")
        .joinpath("OpenLineage.json")
        .read_text("utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    base = schema["$defs"]["BaseEvent"]
    base["required"] = [r for r in base["required"] if r != "schemaURL"]
    return schema


@cache
def _validator(kind: EventKind) -> Draft202012Validator:
    # Imported here: jsonschema (and what it loads) is only needed when the quick check
    # is unsure, which a process that emits only its own events never is.
    from jsonschema import Draft202012Validator

    schema = copy.deepcopy(_schema())
    schema.pop("oneOf", None)
    schema["$ref"] = f"#/$defs/{kind}"
    return Draft202012Validator(schema)


def json_path(parts: Any) -> str:
    """``$.run.runId`` style path from a jsonschema path deque."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def classify(payload: Any) -> EventKind:
    """Which of the three event kinds ``payload`` is; InvalidEvent if none."""
    if not isinstance(payload, dict):
        raise InvalidEvent(
            f"an OpenLineage event must be a JSON object, got {type(payload).__name__}",
            path="$",
        )
    if "run" in payload:
        return "RunEvent"
    if "dataset" in payload and "job" not in payload:
        return "DatasetEvent"
    if "job" in payload:
        return "JobEvent"
    raise InvalidEvent(
        "an OpenLineage event needs `run` and `job` (RunEvent), `dataset` (DatasetEvent) "
        "or `job` (JobEvent); none was found at $",
        path="$",
    )


_EVENT_TYPES = frozenset({"START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"})


def _facets_ok(value: Any, deletable: bool) -> bool:
    """``value`` is a map of BaseFacets (``_deleted`` boolean when ``deletable``)."""
    if not isinstance(value, dict):
        return False
    for facet in value.values():
        if not (
            isinstance(facet, dict)
            and isinstance(facet.get("_producer"), str)
            and isinstance(facet.get("_schemaURL"), str)
        ):
            return False
        if deletable and "_deleted" in facet and not isinstance(facet["_deleted"], bool):
            return False
    return True


def _dataset_ok(value: Any, io_key: str | None) -> bool:
    if not (
        isinstance(value, dict)
        and isinstance(value.get("namespace"), str)
        and isinstance(value.get("name"), str)
    ):
        return False
    if "facets" in value and not _facets_ok(value["facets"], True):
        return False
    return io_key is None or io_key not in value or _facets_ok(value[io_key], False)


def _datasets_ok(payload: dict[str, Any]) -> bool:
    for key, io_key in (("inputs", "inputFacets"), ("outputs", "outputFacets")):
        if key in payload:
            items = payload[key]
            if not isinstance(items, list) or not all(_dataset_ok(d, io_key) for d in items):
                return False
    return True


def _quick_valid(payload: dict[str, Any], kind: EventKind) -> bool:
    """True only if the pinned schema accepts ``payload`` as ``kind``."""
    if not (isinstance(payload.get("eventTime"), str) and isinstance(payload.get("producer"), str)):
        return False
    if "schemaURL" in payload and not isinstance(payload["schemaURL"], str):
        return False
    if kind == "DatasetEvent":
        return "run" not in payload and _dataset_ok(payload.get("dataset"), None)
    job = payload.get("job")
    if not (
        isinstance(job, dict)
        and isinstance(job.get("namespace"), str)
        and isinstance(job.get("name"), str)
        and ("facets" not in job or _facets_ok(job["facets"], True))
        and _datasets_ok(payload)
    ):
        return False
    if kind == "JobEvent":
        return "run" not in payload
    run = payload.get("run")
    event_type = payload.get("eventType", "START")
    if not isinstance(event_type, str) or event_type not in _EVENT_TYPES:
        return False
    return (
        isinstance(run, dict)
        and isinstance(run.get("runId"), str)
        and ("facets" not in run or _facets_ok(run["facets"], False))
    )


def validate(payload: Any, canonical: str | None = None) -> EventKind:
    """Check ``payload`` against the schema and Strata's extra rules; returns its kind.

    ``canonical`` is the payload's JSON text when the caller has it: JSON escapes
    NUL, so its absence there spares walking the whole document.
    """
    kind = classify(payload)
    errors = [] if _quick_valid(payload, kind) else list(_validator(kind).iter_errors(payload))
    if errors:
        from jsonschema.exceptions import best_match

        err = best_match(errors)
        path = json_path(err.absolute_path)
        raise InvalidEvent(f"invalid {kind} at {path}: {err.message}", path=path, kind=kind)
    if canonical is None or "\\u0000" in canonical:
        _check_text(payload, "$")
    parse_time(payload["eventTime"], "$.eventTime")
    _check_names(payload)
    _check_schema_fields(payload)
    if kind == "RunEvent":
        check_uuid(payload["run"]["runId"], "$.run.runId")
        parent = parent_facet(payload["run"].get("facets") or {})
        if parent is not None:
            check_parent(parent)
    return kind


def _check_names(payload: dict[str, Any]) -> None:
    """Every namespace and name fits the store's limit, so what is listed can be read."""
    _check_ref("$.job", payload.get("job"))
    _check_ref("$.dataset", payload.get("dataset"))
    for key in ("inputs", "outputs"):
        for i, ref in enumerate(payload.get(key) or ()):
            _check_ref((key, i), ref)
    facets = (payload.get("run") or {}).get("facets")
    parent = parent_facet(facets) if isinstance(facets, dict) else None
    if isinstance(parent, dict):
        _check_ref("$.run.facets.parent.job", parent.get("job"))


def _check_schema_fields(payload: dict[str, Any]) -> None:
    """Each field of a dataset's ``schema`` facet has a name (the facet's schema requires
    one; Marquez answers 422 without): a field without one could be neither listed nor
    tagged."""
    refs: list[tuple[str, Any]] = [("$.dataset", payload.get("dataset"))]
    for key in ("inputs", "outputs"):
        refs += [(f"$.{key}[{i}]", ref) for i, ref in enumerate(payload.get(key) or ())]
    for where, ref in refs:
        facets = ref.get("facets") if isinstance(ref, dict) else None
        schema = facets.get("schema") if isinstance(facets, dict) else None
        fields = schema.get("fields") if isinstance(schema, dict) else None
        for i, f in enumerate(fields if isinstance(fields, list) else ()):
            if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not f["name"]:
                path = f"{where}.facets.schema.fields[{i}].name"
                raise InvalidEvent(
                    f"{path} is required: a schema field needs a non-empty name", path=path
                )


def _check_ref(where: str | tuple[str, int], ref: Any) -> None:
    if not isinstance(ref, dict):
        return
    for field in ("namespace", "name"):
        value = ref.get(field)
        # At most 4 bytes a character: a short name needs no encoding to measure.
        if isinstance(value, str) and (not value or len(value) > _SHORT):
            path = where if isinstance(where, str) else f"$.{where[0]}[{where[1]}]"
            _check_name(f"{path}.{field}", value)


_SHORT = MAX_NAME_BYTES // 4


def _check_name(path: str, value: str) -> None:
    problem = name_problem(path, value)
    if problem is not None:
        raise InvalidEvent(problem, path=path, limit=MAX_NAME_BYTES)


def check_uuid(value: Any, path: str) -> str:
    """The canonical lower-case form of a UUID string; InvalidEvent otherwise."""
    try:
        if not isinstance(value, str):
            raise ValueError
        return str(uuid.UUID(value))
    except ValueError:
        raise InvalidEvent(
            f"{path} must be a UUID, got {value!r}; OpenLineage run ids are UUIDs "
            "(use a UUIDv7 for new runs)",
            path=path,
            value=value,
        ) from None


def check_parent(parent: Any) -> None:
    path = "$.run.facets.parent"
    if not isinstance(parent, dict):
        raise InvalidEvent(f"{path} must be an object", path=path)
    run = parent.get("run")
    job = parent.get("job")
    if not isinstance(run, dict) or "runId" not in run:
        raise InvalidEvent(f"{path}.run.runId is required", path=f"{path}.run.runId")
    run_id = run["runId"]
    if not isinstance(run_id, str) or not run_id.strip():
        raise InvalidEvent(
            f"{path}.run.runId must be a UUID (or an older Airflow integration's DAG run id), "
            f"got {run_id!r}",
            path=f"{path}.run.runId",
            value=run_id,
        )
    if not isinstance(job, dict):
        raise InvalidEvent(f"{path}.job is required", path=f"{path}.job")
    for key in ("namespace", "name"):
        if not isinstance(job.get(key), str) or not job[key]:
            raise InvalidEvent(
                f"{path}.job.{key} must be a non-empty string", path=f"{path}.job.{key}"
            )


def parse_time(value: Any, path: str) -> datetime:
    """An aware UTC datetime from an ISO-8601 string.

    Zone-less times are taken as UTC; fractions beyond microseconds are
    truncated (nanosecond producers such as Java clients send nine digits).
    """
    m = _TIME.match(value.strip()) if isinstance(value, str) else None
    if m is None:
        raise InvalidEvent(
            f"{path} must be an ISO-8601 date-time such as 2024-01-31T12:00:00Z, got {value!r}",
            path=path,
            value=value,
        )
    year, month, day, hour, minute, second, frac, zone = m.groups()
    micros = int((frac or "0")[:6].ljust(6, "0"))
    try:
        tz = _zone(zone) if zone else None
        parsed = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micros, tz
        )
        return aware(parsed, Zoneless.UTC).astimezone(UTC)
    except ValueError as exc:
        raise InvalidEvent(
            f"{path} is not a valid date-time ({exc}): {value!r}", path=path, value=value
        ) from exc
    except OverflowError:  # the offset carries it past year 9999 or before year 1
        raise InvalidEvent(
            f"{path} falls outside years 1 to 9999 once in UTC: {value!r}", path=path, value=value
        ) from None


def _zone(zone: str) -> timezone:
    """The zone of an ISO-8601 suffix (``Z``, ``+05``, ``-0330``, ``+05:30``); ValueError
    for offsets of 24 hours or more, or minutes past 59."""
    if zone in ("Z", "z"):
        return UTC
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(f"offset {zone} is not within ±23:59")
    offset = timedelta(hours=hours, minutes=minutes)
    return timezone(-offset if zone[0] == "-" else offset)


def _check_text(value: Any, path: str) -> None:
    """Refuse NUL characters: PostgreSQL cannot store them in text or JSONB."""
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidEvent(f"{path} contains a NUL character; remove it", path=path)
    elif isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                raise InvalidEvent(f"a key in {path} contains a NUL character", path=path)
            _check_text(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_text(item, f"{path}[{i}]")
