"""Tags: their names, and the tags on datasets, on datasets' fields and on jobs.

The only module that reads or writes ``tags``, ``dataset_tags`` and ``job_tags``. A tag
is created when first used on a dataset or a job (Marquez wants tags created first;
creating them on first use is friendlier).
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import bulk
from strata.store.schema import dataset_tags, job_tags, tags


@dataclass(frozen=True)
class Tag:
    name: str
    description: str | None


# --- reads ------------------------------------------------------------------------------


def page(conn: Connection, limit: int, offset: int) -> tuple[list[Tag], int]:
    """A page of tags in name order, and how many there are."""
    rows = conn.execute(
        sa.select(tags.c.name, tags.c.description).order_by(tags.c.name).limit(limit).offset(offset)
    ).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(tags)).scalar_one()
    return [Tag(r.name, r.description) for r in rows], int(total)


def get(conn: Connection, name: str) -> Tag | None:
    row = conn.execute(
        sa.select(tags.c.name, tags.c.description).where(tags.c.name == name)
    ).first()
    return Tag(row.name, row.description) if row is not None else None


def of_datasets(conn: Connection, uuids: Collection[str]) -> dict[str, dict[str, list[str]]]:
    """Each tagged dataset's tags: dataset uuid -> field name ('' for the dataset
    itself) -> tag names."""
    out: dict[str, dict[str, list[str]]] = {}
    for uuid, field_name, tag in _rows(conn, _dataset_tags_by_ids, uuids):
        out.setdefault(uuid, {}).setdefault(field_name, []).append(tag)
    return out


def of_jobs(conn: Connection, uuids: Collection[str]) -> dict[str, list[str]]:
    """Each tagged job's tag names, by job uuid."""
    out: dict[str, list[str]] = {}
    for uuid, tag in _rows(conn, _job_tags_by_ids, uuids):
        out.setdefault(uuid, []).append(tag)
    return out


def dataset_tagged(dataset_uuid: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """Whether the dataset ``dataset_uuid`` names carries a tag (for a query's columns)."""
    return sa.exists().where(dataset_tags.c.dataset_uuid == dataset_uuid)


def job_tagged(job_uuid: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """Whether the job ``job_uuid`` names carries a tag (for a query's columns)."""
    return sa.exists().where(job_tags.c.job_uuid == job_uuid)


@functools.cache
def _dataset_tags_by_ids(dialect: str) -> sa.Select[Any]:
    t = dataset_tags
    return sa.select(t.c.dataset_uuid, t.c.field_name, t.c.tag_name).where(
        bulk.one_of(dialect, t.c.dataset_uuid, "ids")
    )


@functools.cache
def _job_tags_by_ids(dialect: str) -> sa.Select[Any]:
    t = job_tags
    return sa.select(t.c.job_uuid, t.c.tag_name).where(bulk.one_of(dialect, t.c.job_uuid, "ids"))


def _rows(conn: Connection, select: Any, ids: Collection[str]) -> list[Any]:
    return bulk.rows_by_ids(conn, select(conn.dialect.name), ids) if ids else []


# --- writes -----------------------------------------------------------------------------


def upsert(conn: Connection, name: str, description: str | None, now: datetime) -> None:
    """Create the tag ``name`` or set its description."""
    values = {"description": description, "updated_at": now}
    if not bulk.insert_ignore(conn, tags, {"name": name, "created_at": now, **values}, ["name"]):
        conn.execute(tags.update().where(tags.c.name == name).values(**values))


def tag_dataset(conn: Connection, dataset_uuid: str, tag: str, field: str, now: datetime) -> None:
    """Tag a dataset, or with ``field`` one of its fields (the tag made if new)."""
    _ensure(conn, tag, now)
    values = {"dataset_uuid": dataset_uuid, "tag_name": tag, "field_name": field}
    bulk.insert_ignore(
        conn, dataset_tags, {**values, "tagged_at": now}, ["dataset_uuid", "tag_name", "field_name"]
    )


def untag_dataset(conn: Connection, dataset_uuid: str, tag: str, field: str) -> None:
    t = dataset_tags
    conn.execute(
        t.delete().where(
            t.c.dataset_uuid == dataset_uuid, t.c.tag_name == tag, t.c.field_name == field
        )
    )


def tag_job(conn: Connection, job_uuid: str, tag: str, now: datetime) -> None:
    """Tag a job (the tag made if new)."""
    _ensure(conn, tag, now)
    bulk.insert_ignore(
        conn,
        job_tags,
        {"job_uuid": job_uuid, "tag_name": tag, "tagged_at": now},
        ["job_uuid", "tag_name"],
    )


def untag_job(conn: Connection, job_uuid: str, tag: str) -> None:
    conn.execute(
        job_tags.delete().where(job_tags.c.job_uuid == job_uuid, job_tags.c.tag_name == tag)
    )


def _ensure(conn: Connection, name: str, now: datetime) -> None:
    bulk.insert_ignore(conn, tags, {"name": name, "created_at": now, "updated_at": now}, ["name"])
