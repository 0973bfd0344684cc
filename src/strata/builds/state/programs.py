"""Program versions: each new fingerprint of a transform gets the next ordinal (1, 2, 3 …)
and keeps its declaration and source files, so any past build can be read and re-run.

A program version's uuid is the lineage job version's uuid (the job keyed by the name
its events use, the version by the fingerprint), so a run's ``job_version_uuid`` is the
program version that ran.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.selectable import NamedFromClause

from strata import ids
from strata.errors import StoreConflict
from strata.store import schema as s
from strata.store.bulk import chunks, insert_ignore, upsert
from strata.store.engine import write_tx

# Each try loses only to a racer that registered another fingerprint of the same
# transform in between: a handful of tries outlast any plausible burst.
_TRIES = 20


@dataclass(frozen=True)
class Program:
    """One stored program version."""

    uuid: str
    job_name: str
    fingerprint: str
    ordinal: int
    declaration: dict[str, Any]
    files: dict[str, str]
    entry: dict[str, Any]
    created_at: datetime

    @property
    def source(self) -> str:
        """The transform function's own source."""
        return str(self.entry.get("source", ""))

    def to_dict(self) -> dict[str, Any]:
        return {
            "transform": self.job_name,
            "ordinal": self.ordinal,
            "fingerprint": self.fingerprint,
            "declaration": self.declaration,
            "entry": self.entry,
            "files": self.files,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True)
class ProgramText:
    """What a program version stores besides its name and fingerprint."""

    declaration: dict[str, Any]
    files: dict[str, str]
    entry: dict[str, Any]


def program_uuid(namespace: str, job_name: str, fingerprint: str) -> str:
    return ids.job_version_uuid(ids.job_uuid(namespace, job_name), fingerprint)


def register(
    engine: Engine, namespace: str, job_name: str, fingerprint: str, text: ProgramText
) -> Program:
    """The stored program version ``fingerprint`` of ``job_name``, registered with the
    next ordinal if new.

    Two builders may register at once. Both insert plainly and the store's unique keys
    decide: the loser of the same fingerprint finds the winner's row on its next try, the
    loser of the same ordinal (another fingerprint) takes the next ordinal.
    """
    uuid = program_uuid(namespace, job_name, fingerprint)
    for _ in range(_TRIES):
        try:
            with write_tx(engine) as conn:
                found = by_uuid(conn, uuid)
                if found is not None:
                    return found
                row = {
                    "uuid": uuid,
                    "namespace": namespace,
                    "job_name": job_name,
                    "fingerprint": fingerprint,
                    "ordinal": _top_ordinal(conn, namespace, job_name) + 1,
                    "declaration": text.declaration,
                    "files": text.files,
                    "entry": text.entry,
                    "created_at": datetime.now(UTC),
                }
                conn.execute(s.program_versions.insert().values(row))
                return _program(row)
        except StoreConflict:
            continue
    raise StoreConflict(
        f"program version {fingerprint} of {job_name} lost {_TRIES} races for an ordinal "
        "to other builders; build again"
    )


def _top_ordinal(conn: Connection, namespace: str, job_name: str) -> int:
    pv = s.program_versions
    top = conn.execute(
        sa.select(sa.func.max(pv.c.ordinal)).where(
            pv.c.namespace == namespace, pv.c.job_name == job_name
        )
    ).scalar()
    return int(top or 0)


def by_uuid(conn: Connection, uuid: str) -> Program | None:
    row = conn.execute(sa.select(s.program_versions).where(s.program_versions.c.uuid == uuid))
    found = row.mappings().first()
    return _program(dict(found)) if found is not None else None


def _program(row: dict[str, Any]) -> Program:
    return Program(
        uuid=row["uuid"],
        job_name=row["job_name"],
        fingerprint=row["fingerprint"],
        ordinal=int(row["ordinal"]),
        declaration=dict(row["declaration"]),
        files=dict(row["files"]),
        entry=dict(row["entry"]),
        created_at=row["created_at"],
    )


def record_planned(
    engine: Engine,
    namespace: str,
    job_name: str,
    fingerprint: str,
    outputs: dict[str, dict[str, Any]],
) -> None:
    """Keep (replacing any earlier) the column lineage that program version's plan gives
    each output: ``{output: {"columns": [...], "fields": columnLineage fields}}``."""
    row = {
        "namespace": namespace,
        "job_name": job_name,
        "fingerprint": fingerprint,
        "outputs": outputs,
        "planned_at": datetime.now(UTC),
    }
    with write_tx(engine) as conn:
        stmt = upsert(conn, s.program_lineage, list(row), ["namespace", "job_name", "fingerprint"])
        conn.execute(stmt, row)


def planned(
    conn: Connection, namespace: str, programs: Collection[tuple[str, str]]
) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """``(transform, fingerprint) -> outputs`` of those of ``programs`` planned."""
    pl = s.program_lineage
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for chunk in chunks(sorted({job for job, _ in programs})):
        rows = conn.execute(
            sa.select(pl.c.job_name, pl.c.fingerprint, pl.c.outputs).where(
                pl.c.namespace == namespace, pl.c.job_name.in_(chunk)
            )
        )
        for row in rows:
            key = (str(row.job_name), str(row.fingerprint))
            if key in programs:
                out[key] = dict(row.outputs)
    return out


def plan_lineage(conn: Connection, signature: str) -> str | None:
    """The lineage derived from the plan of that signature, as JSON text."""
    pl = s.plan_lineage
    found = conn.execute(sa.select(pl.c.derived).where(pl.c.signature == signature)).scalar()
    return None if found is None else str(found)


def keep_plan_lineage(engine: Engine, signature: str, derived: str) -> None:
    """Keep what the plan of ``signature`` derived (the first writer's stays: the same
    plan derives the same lineage)."""
    row = {"signature": signature, "derived": derived, "created_at": datetime.now(UTC)}
    with write_tx(engine) as conn:
        insert_ignore(conn, s.plan_lineage, row, ["signature"])


def ordinals_of(conn: Connection, uuids: Collection[str]) -> dict[str, tuple[str, int]]:
    """``program version uuid -> (transform, ordinal)``."""
    if not uuids:
        return {}
    pv = s.program_versions
    rows = conn.execute(
        sa.select(pv.c.uuid, pv.c.job_name, pv.c.ordinal).where(pv.c.uuid.in_(sorted(uuids)))
    )
    return {x.uuid: (x.job_name, int(x.ordinal)) for x in rows}


def declared_semantic_versions(conn: Connection, uuids: Collection[str]) -> dict[str, int | None]:
    """``program version uuid -> the semantic_version its @incremental declared``
    (None where it declared none, or was not incremental)."""
    if not uuids:
        return {}
    pv = s.program_versions
    out: dict[str, int | None] = {}
    for batch in chunks(sorted(uuids)):
        for row in conn.execute(sa.select(pv.c.uuid, pv.c.declaration).where(pv.c.uuid.in_(batch))):
            inc = dict(row.declaration or {}).get("incremental") or {}
            out[str(row.uuid)] = inc.get("semantic_version")
    return out


def relation(name: str = "program_versions") -> NamedFromClause:
    """``program_versions`` under ``name``, to read in a statement that joins it to the
    catalog's other tables (an alias: it can be selected from, not written)."""
    return s.program_versions.alias(name)
