"""run_input_facets: the inputFacets each run sent about an input, by the version it read

A dataset version's ``facets`` include its readers' input facets, as in Marquez; this
table answers them without visiting every reader of a version (a source read by 700,000
runs). Filled from ``runs.io_facets`` and ``run_inputs`` for the runs folded before it.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from strata.store.types import UTCDateTime

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_BATCH = 1000


def upgrade() -> None:
    table = op.create_table(
        "run_input_facets",
        sa.Column("run_uuid", sa.String(36), sa.ForeignKey("runs.uuid"), primary_key=True),
        sa.Column(
            "dataset_version_uuid",
            sa.String(36),
            sa.ForeignKey("dataset_versions.uuid"),
            primary_key=True,
        ),
        sa.Column("facets", _JSON, nullable=False),
        sa.Column("sent_at", UTCDateTime(), nullable=False),
    )
    op.create_index(
        "ix_run_input_facets_version", "run_input_facets", ["dataset_version_uuid", "sent_at"]
    )
    _fill(op.get_bind(), table)


def _fill(conn: sa.Connection, table: sa.Table) -> None:
    """A row per input binding of a run whose events sent inputFacets for that dataset."""
    meta = sa.MetaData()
    runs = sa.Table("runs", meta, autoload_with=conn)
    ri = sa.Table("run_inputs", meta, autoload_with=conn)
    dv = sa.Table("dataset_versions", meta, autoload_with=conn)
    d = sa.Table("datasets", meta, autoload_with=conn)
    rows = conn.execute(
        sa.select(
            runs.c.uuid, runs.c.io_facets, runs.c.updated_at, dv.c.uuid, d.c.namespace, d.c.name
        )
        .join(ri, ri.c.run_uuid == runs.c.uuid)
        .join(dv, dv.c.uuid == ri.c.dataset_version_uuid)
        .join(d, d.c.uuid == dv.c.dataset_uuid)
        .where(runs.c.io_facets.is_not(None))
    ).all()
    batch: list[dict[str, Any]] = []
    for row in rows:
        run, io_facets, version = row[0], row[1], row[3]
        sent_at = row[2] if row[2].tzinfo else row[2].replace(tzinfo=UTC)  # SQLite: naive UTC
        facets = _sent_about(io_facets, (str(row[4]), str(row[5])))
        if facets:
            batch.append(
                {
                    "run_uuid": run,
                    "dataset_version_uuid": version,
                    "facets": facets,
                    "sent_at": sent_at,
                }
            )
        if len(batch) >= _BATCH:
            conn.execute(table.insert(), batch)
            batch = []
    if batch:
        conn.execute(table.insert(), batch)


def _sent_about(io_facets: Any, dataset: tuple[str, str]) -> dict[str, Any] | None:
    if not isinstance(io_facets, dict):
        return None
    for ns, n, facets in io_facets.get("inputs") or ():
        if (ns, n) == dataset and isinstance(facets, dict) and facets:
            return facets
    return None


def downgrade() -> None:
    op.drop_index("ix_run_input_facets_version", table_name="run_input_facets")
    op.drop_table("run_input_facets")
