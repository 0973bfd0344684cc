"""Program versions: each new fingerprint of a transform gets the next ordinal (1, 2, 3 …)
and its declaration and source files are kept, so any past build can be read and re-run.

A program version's uuid is the lineage job version's uuid (the job keyed by the name
its events use, the version by the fingerprint), so a run's ``job_version_uuid`` is the
program version that ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.builds.discovery import Declared
from strata.builds.pipeline_files import imported_files
from strata.errors import NotFound
from strata.lineage import keys
from strata.store import schema as s
from strata.store.engine import write_tx
from strata.store.upsert import insert_ignore


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


def program_uuid(namespace: str, job_name: str, fingerprint: str) -> str:
    return keys.job_version_uuid(keys.job_uuid(namespace, job_name), fingerprint)


def register(engine: Engine, namespace: str, item: Declared) -> Program:
    """The stored program version of ``item``, registered with the next ordinal if new."""
    uuid = program_uuid(namespace, item.fqn, item.fingerprint)
    entry = {
        "pipeline": item.pipeline,
        "transform": item.name,
        "module": item.code.module_path,
        "line": item.code.line,
        "source": item.code.source,
        "pipeline_file": item.pipeline_file.relative_to(item.root.resolve()).as_posix(),
    }
    files = {**imported_files(item.pipeline_file, item.root), **item.code.files}
    pv = s.program_versions
    for _ in range(20):  # a concurrent builder may take the same ordinal first: try the next
        with write_tx(engine) as conn:
            found = by_uuid(conn, uuid)
            if found is not None:
                return found
            top = conn.execute(
                sa.select(sa.func.max(pv.c.ordinal)).where(
                    pv.c.namespace == namespace, pv.c.job_name == item.fqn
                )
            ).scalar()
            row = {
                "uuid": uuid,
                "namespace": namespace,
                "job_name": item.fqn,
                "fingerprint": item.fingerprint,
                "ordinal": int(top or 0) + 1,
                "declaration": item.transform.declaration(),
                "files": files,
                "entry": entry,
                "created_at": datetime.now(UTC),
            }
            # Any conflict: this uuid (taken by a racer, found on the next try) or the
            # ordinal (taken by another fingerprint's racer, so take the next one).
            if insert_ignore(conn, pv, row, None):
                return _program(row)
    raise NotFound(f"could not register program version {item.fingerprint} of {item.fqn}")


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


def files_diff(old: Program, new: Program) -> dict[str, str]:
    """A unified diff per stored file that differs between two program versions (a
    file only one of them stores is diffed against nothing)."""
    import difflib

    out: dict[str, str] = {}
    for path in sorted(set(old.files) | set(new.files)):
        before, after = old.files.get(path), new.files.get(path)
        if before == after:
            continue
        lines = difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            (after or "").splitlines(keepends=True),
            fromfile=f"{path} (v{old.ordinal})" if before is not None else "/dev/null",
            tofile=f"{path} (v{new.ordinal})" if after is not None else "/dev/null",
        )
        out[path] = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return out
