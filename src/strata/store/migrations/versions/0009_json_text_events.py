"""raw lineage events kept as the JSON text they were stored as (``json``, not ``jsonb``),
queued and stored events compressed with lz4 where the server has it, and the un-hide
triggers of events and versions run once per statement over the rows it added

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_STATEMENT_TRIGGERS = [
    """
    CREATE OR REPLACE FUNCTION strata_unhide_from_event() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      -- Once per statement, over the rows it added: nothing hidden is the common case,
      -- and reading the payloads' names costs more than the rest of the insert, so
      -- they are read only when something is hidden.
      datasets_hidden boolean := EXISTS (SELECT 1 FROM datasets WHERE is_hidden);
      namespaces_hidden boolean := EXISTS (SELECT 1 FROM namespaces WHERE is_hidden);
      named_namespaces text[];
      named_names text[];
    BEGIN
      IF datasets_hidden OR namespaces_hidden THEN
        SELECT array_agg(x->>'namespace'), array_agg(x->>'name')
        INTO named_namespaces, named_names
        FROM added AS a, LATERAL (
          SELECT json_array_elements(a.payload->'inputs')
          WHERE json_typeof(a.payload->'inputs') = 'array'
          UNION ALL
          SELECT json_array_elements(a.payload->'outputs')
          WHERE json_typeof(a.payload->'outputs') = 'array'
          UNION ALL
          SELECT a.payload->'dataset' WHERE json_typeof(a.payload->'dataset') = 'object'
        ) AS named(x)
        WHERE json_typeof(x) = 'object';
      END IF;
      IF datasets_hidden THEN
        UPDATE datasets AS d SET is_hidden = false
        FROM unnest(named_namespaces, named_names) AS m(namespace, name)
        WHERE d.is_hidden AND d.namespace = m.namespace AND d.name = m.name;
      END IF;
      IF EXISTS (SELECT 1 FROM jobs WHERE is_hidden) THEN
        UPDATE jobs AS j SET is_hidden = false
        FROM added AS a
        WHERE j.is_hidden AND j.namespace = a.job_namespace
          AND (j.name = a.job_name OR j.uuid IN (
            SELECT job_uuid FROM job_aliases
            WHERE namespace = a.job_namespace AND name = a.job_name));
      END IF;
      IF namespaces_hidden THEN
        UPDATE namespaces SET is_hidden = false
        WHERE is_hidden AND (name IN (SELECT job_namespace FROM added)
                             OR name = ANY(named_namespaces));
      END IF;
      RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER trg_lineage_events_unhide AFTER INSERT ON lineage_events
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION strata_unhide_from_event()
    """,
    """
    CREATE OR REPLACE FUNCTION strata_unhide_from_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE datasets SET is_hidden = false
      WHERE is_hidden AND uuid IN (SELECT dataset_uuid FROM added);
      RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER trg_dataset_versions_unhide AFTER INSERT ON dataset_versions
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION strata_unhide_from_version()
    """,
]

_ROW_TRIGGERS = [
    "trg_lineage_events_unhide ON lineage_events",
    "trg_dataset_versions_unhide ON dataset_versions",
]
_COMPRESSED = ["lineage_events", "lineage_pending"]


def _has_lz4() -> bool:
    """Whether this server was built with lz4 (PostgreSQL 14 and later, most builds)."""
    return bool(
        op.get_bind()
        .execute(
            sa.text(
                "SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                "WHERE name = 'default_toast_compression'"
            )
        )
        .scalar()
    )


def _payload_as(
    old: sa.types.TypeEngine[object], new: sa.types.TypeEngine[object], cast: str
) -> None:
    op.alter_column(
        "lineage_events",
        "payload",
        existing_type=old,
        type_=new,
        existing_nullable=False,
        postgresql_using=f"payload::{cast}",
    )


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite keeps JSON as text already, and its triggers run per row only
    for trigger in _ROW_TRIGGERS:
        op.execute(f"DROP TRIGGER {trigger}")
    _payload_as(postgresql.JSONB(), postgresql.JSON(), "json")
    if _has_lz4():
        # An event is about 2.5 kB of JSON: over the 2 kB at which a row is compressed,
        # which with lz4 costs a fraction of what the default (pglz) does.
        for table in _COMPRESSED:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN payload SET COMPRESSION lz4")
    for sql in _STATEMENT_TRIGGERS:
        op.execute(sql)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for trigger in _ROW_TRIGGERS:
        op.execute(f"DROP TRIGGER {trigger}")
    if _has_lz4():
        for table in _COMPRESSED:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN payload SET COMPRESSION DEFAULT")
    _payload_as(postgresql.JSON(), postgresql.JSONB(), "jsonb")
    # The functions and row triggers as revisions 0007 (events) and 0005 (versions) made them.
    op.execute(context.script.get_revision("0007").module._UNHIDE_FROM_EVENT)
    made = context.script.get_revision("0005").module._TRIGGERS["postgresql"]
    op.execute(made[1])
    op.execute(made[2].replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    op.execute(made[3])
