"""Reading the standard facets Strata maps onto columns."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from strata.lineage.record.events import canonical_json
from strata.lineage.record.validate import parse_time


def get(facets: dict[str, Any], name: str) -> dict[str, Any]:
    value = facets.get(name)
    return value if isinstance(value, dict) else {}


PARTITION_FACET = "strata_partition"


def partition_key(facets: dict[str, Any]) -> str | None:
    """``region=JP/day=2026-11-01``: the key a Strata partition run's facet names, kept as
    the lake keeps keys (values without ``/``, ``=`` or NUL); None for any other run."""
    key = get(facets, PARTITION_FACET).get("key")
    if not isinstance(key, dict) or not key:
        return None
    parts = []
    for col, value in key.items():
        if not isinstance(value, str) or not value or not col:
            return None
        if any(c in s for s in (col, value) for c in ("/", "=", "\x00")):
            return None
        parts.append(f"{col}={value}")
    return "/".join(parts)


def text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def integer(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def schema_fields(facets: dict[str, Any]) -> list[dict[str, Any]] | None:
    fields = get(facets, "schema").get("fields")
    if not isinstance(fields, list):
        return None
    return [f for f in fields if isinstance(f, dict)]


def dataset_version_label(facets: dict[str, Any]) -> str | None:
    """The ``version`` facet's ``datasetVersion``, as text."""
    value = get(facets, "version").get("datasetVersion")
    if isinstance(value, bool) or value is None:
        return None
    return str(value) if isinstance(value, str | int) else None


def description(facets: dict[str, Any]) -> str | None:
    return text(get(facets, "documentation").get("description"))


def location(facets: dict[str, Any]) -> str | None:
    return text(get(facets, "sourceCodeLocation").get("url"))


def nominal_times(
    facets: dict[str, Any],
) -> tuple[datetime | None, datetime | None]:
    nominal = get(facets, "nominalTime")
    out: list[datetime | None] = []
    for key in ("nominalStartTime", "nominalEndTime"):
        value = nominal.get(key)
        path = f"$.run.facets.nominalTime.{key}"
        out.append(parse_time(value, path) if value is not None else None)
    return out[0], out[1]


def job_type(facets: dict[str, Any]) -> str:
    kind = text(get(facets, "jobType").get("processingType"))
    return "STREAM" if kind and kind.upper().startswith("STREAM") else "BATCH"


def symlinks(facets: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    out: dict[tuple[str, str], str | None] = {}
    for ident in get(facets, "symlinks").get("identifiers") or ():
        if (
            isinstance(ident, dict)
            and isinstance(ident.get("namespace"), str)
            and isinstance(ident.get("name"), str)
        ):
            out.setdefault((ident["namespace"], ident["name"]), text(ident.get("type")))
    return [(ns, name, kind) for (ns, name), kind in sorted(out.items())]


def data_source(facets: dict[str, Any]) -> tuple[str, str | None] | None:
    source = get(facets, "dataSource")
    name = text(source.get("name"))
    return (name, text(source.get("uri"))) if name else None


@dataclass(frozen=True)
class ColumnEdge:
    output_field: str
    input_namespace: str
    input_name: str
    input_field: str
    transformation_type: str | None
    transformation_description: str | None


def column_edges(facets: dict[str, Any]) -> list[ColumnEdge]:
    """Edges of a ``columnLineage`` facet, old and new shapes alike.

    The old shape puts ``transformationType``/``transformationDescription`` on
    the output field; the new one lists ``transformations`` per input field.
    Several transformations of one input field become one edge whose type is
    DIRECT when any is direct and whose description lists them all.
    """
    edges: dict[tuple[str, str, str, str], ColumnEdge] = {}
    fields = get(facets, "columnLineage").get("fields")
    if not isinstance(fields, dict):
        return []
    for out_field, spec in sorted(fields.items()):
        if not isinstance(spec, dict):
            continue
        for inp in spec.get("inputFields") or ():
            if not isinstance(inp, dict):
                continue
            ns, name, fld = inp.get("namespace"), inp.get("name"), inp.get("field")
            if not (isinstance(ns, str) and isinstance(name, str) and isinstance(fld, str)):
                continue
            kind, desc = _transformation(inp, spec)
            edges[(out_field, ns, name, fld)] = ColumnEdge(out_field, ns, name, fld, kind, desc)
    return list(edges.values())


def _transformation(inp: dict[str, Any], spec: dict[str, Any]) -> tuple[str | None, str | None]:
    items = [t for t in inp.get("transformations") or () if isinstance(t, dict)]
    if not items:
        return text(spec.get("transformationType")), text(spec.get("transformationDescription"))
    types = [text(t.get("type")) or "" for t in items]
    kind = "DIRECT" if "DIRECT" in types else (types[0] or None)
    parts = []
    for t in items:
        label = "/".join(p for p in (text(t.get("type")), text(t.get("subtype"))) if p)
        extra = text(t.get("description"))
        if t.get("masking") is True:
            extra = f"{extra}; masking" if extra else "masking"
        parts.append(f"{label} ({extra})" if extra else label)
    return kind, ", ".join(parts) or None


def job_fingerprint(
    inputs: list[tuple[str, str]], outputs: list[tuple[str, str]], job_facets: dict[str, Any]
) -> str:
    """sha256 of the job's io and program: the same program on the same data is one
    version, and a program that changed (its ``sourceCode``, its ``sql`` query, or where
    ``sourceCodeLocation`` says it is, with its version) is a new one.

    A producer that versions its own programs names the version in a ``strata_program``
    job facet (``fingerprint``, 64 hex digits); that fingerprint is the job version, so a
    build's program version and its lineage job version are one and the same.
    """
    declared = declared_fingerprint(job_facets)
    if declared is not None:
        return declared
    program = _program_facets(job_facets)
    doc: dict[str, Any] = {
        "inputs": sorted(inputs),
        "outputs": sorted(outputs),
        "location": program.get("sourceCodeLocation", {}),
        "sourceCode": program.get("sourceCode", {}),
    }
    if "sql" in program:  # only then: the versions of jobs without one keep their ids
        doc["sql"] = program["sql"]
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


#: The job facets that say what a job's program is, as its fingerprint reads them.
PROGRAM_SOURCES = ("sourceCode", "sql", "sourceCodeLocation")


def program_facets(job_facets: dict[str, Any]) -> list[str]:
    """Which job facets gave the job version its program (``[]``: its io alone)."""
    if declared_fingerprint(job_facets) is not None:
        return [PROGRAM_FACET]
    return list(_program_facets(job_facets))


def _program_facets(job_facets: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each program facet present, without its ``_producer``/``_schemaURL``; a ``sql``
    facet counts only with a query."""
    found = {}
    for name in PROGRAM_SOURCES:
        body = {k: v for k, v in get(job_facets, name).items() if not k.startswith("_")}
        if name == "sql" and not isinstance(body.get("query"), str):
            continue
        if body:
            found[name] = body
    return found


PROGRAM_FACET = "strata_program"
BUILD_FACET = "strata_build"  # run facet: how a transform run read its inputs
BRANCH_FACET = "strata_branch"  # run facet: the branch a run read and wrote (not main)


def declared_fingerprint(job_facets: dict[str, Any]) -> str | None:
    """The fingerprint a ``strata_program`` job facet declares, when it is well formed."""
    value = get(job_facets, PROGRAM_FACET).get("fingerprint")
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return value
    return None


def source_code(job_facets: dict[str, Any]) -> str | None:
    return text(get(job_facets, "sourceCode").get("sourceCode"))
