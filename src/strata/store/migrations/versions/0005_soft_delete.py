"""soft delete of datasets and jobs, undone by later events

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_TRIGGERS = {
    "postgresql": [
        """
        CREATE FUNCTION strata_unhide_from_event() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          named jsonb := CASE WHEN jsonb_typeof(NEW.payload->'inputs') = 'array'
                              THEN NEW.payload->'inputs' ELSE '[]'::jsonb END
                      || CASE WHEN jsonb_typeof(NEW.payload->'outputs') = 'array'
                              THEN NEW.payload->'outputs' ELSE '[]'::jsonb END
                      || CASE WHEN jsonb_typeof(NEW.payload->'dataset') = 'object'
                              THEN jsonb_build_array(NEW.payload->'dataset') ELSE '[]'::jsonb END;
        BEGIN
          IF EXISTS (SELECT 1 FROM datasets WHERE is_hidden) THEN
            UPDATE datasets AS d SET is_hidden = false
            FROM (SELECT x->>'namespace' AS namespace, x->>'name' AS name
                  FROM jsonb_array_elements(named) AS x
                  WHERE jsonb_typeof(x) = 'object') AS m
            WHERE d.is_hidden AND d.namespace = m.namespace AND d.name = m.name;
          END IF;
          IF NEW.job_namespace IS NOT NULL AND EXISTS (SELECT 1 FROM jobs WHERE is_hidden) THEN
            UPDATE jobs SET is_hidden = false
            WHERE is_hidden AND namespace = NEW.job_namespace
              AND (name = NEW.job_name OR uuid IN (
                SELECT job_uuid FROM job_aliases
                WHERE namespace = NEW.job_namespace AND name = NEW.job_name));
          END IF;
          IF EXISTS (SELECT 1 FROM namespaces WHERE is_hidden) THEN
            UPDATE namespaces SET is_hidden = false
            WHERE is_hidden AND (name = NEW.job_namespace OR name IN (
              SELECT x->>'namespace' FROM jsonb_array_elements(named) AS x
              WHERE jsonb_typeof(x) = 'object'));
          END IF;
          RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER trg_lineage_events_unhide AFTER INSERT ON lineage_events
        FOR EACH ROW EXECUTE FUNCTION strata_unhide_from_event()
        """,
        """
        CREATE FUNCTION strata_unhide_from_version() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          UPDATE datasets SET is_hidden = false WHERE uuid = NEW.dataset_uuid AND is_hidden;
          RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER trg_dataset_versions_unhide AFTER INSERT ON dataset_versions
        FOR EACH ROW EXECUTE FUNCTION strata_unhide_from_version()
        """,
        """
        CREATE FUNCTION strata_unhide_namespace() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          UPDATE namespaces SET is_hidden = false WHERE name = NEW.name;
          RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER trg_namespaces_unhide AFTER UPDATE OF owner, description ON namespaces
        FOR EACH ROW WHEN (NEW.is_hidden) EXECUTE FUNCTION strata_unhide_namespace()
        """,
    ],
    "sqlite": [
        """
        CREATE TRIGGER trg_lineage_events_unhide_datasets AFTER INSERT ON lineage_events
        WHEN EXISTS (SELECT 1 FROM datasets WHERE is_hidden) BEGIN
          UPDATE datasets SET is_hidden = 0
          WHERE is_hidden AND (namespace, name) IN (
            SELECT json_extract(value, '$.namespace'), json_extract(value, '$.name')
            FROM json_each(NEW.payload, '$.inputs') WHERE type = 'object'
            UNION ALL
            SELECT json_extract(value, '$.namespace'), json_extract(value, '$.name')
            FROM json_each(NEW.payload, '$.outputs') WHERE type = 'object'
            UNION ALL
            SELECT json_extract(NEW.payload, '$.dataset.namespace'),
                   json_extract(NEW.payload, '$.dataset.name'));
        END
        """,
        """
        CREATE TRIGGER trg_lineage_events_unhide_jobs AFTER INSERT ON lineage_events
        WHEN NEW.job_namespace IS NOT NULL AND EXISTS (SELECT 1 FROM jobs WHERE is_hidden) BEGIN
          UPDATE jobs SET is_hidden = 0
          WHERE is_hidden AND namespace = NEW.job_namespace
            AND (name = NEW.job_name OR uuid IN (
              SELECT job_uuid FROM job_aliases
              WHERE namespace = NEW.job_namespace AND name = NEW.job_name));
        END
        """,
        """
        CREATE TRIGGER trg_lineage_events_unhide_namespaces AFTER INSERT ON lineage_events
        WHEN EXISTS (SELECT 1 FROM namespaces WHERE is_hidden) BEGIN
          UPDATE namespaces SET is_hidden = 0
          WHERE is_hidden AND (name = NEW.job_namespace OR name IN (
            SELECT json_extract(value, '$.namespace')
            FROM json_each(NEW.payload, '$.inputs') WHERE type = 'object'
            UNION ALL
            SELECT json_extract(value, '$.namespace')
            FROM json_each(NEW.payload, '$.outputs') WHERE type = 'object'
            UNION ALL
            SELECT json_extract(NEW.payload, '$.dataset.namespace')));
        END
        """,
        """
        CREATE TRIGGER trg_dataset_versions_unhide AFTER INSERT ON dataset_versions
        WHEN EXISTS (SELECT 1 FROM datasets WHERE uuid = NEW.dataset_uuid AND is_hidden) BEGIN
          UPDATE datasets SET is_hidden = 0 WHERE uuid = NEW.dataset_uuid;
        END
        """,
        """
        CREATE TRIGGER trg_namespaces_unhide AFTER UPDATE OF owner, description ON namespaces
        WHEN NEW.is_hidden BEGIN
          UPDATE namespaces SET is_hidden = 0 WHERE name = NEW.name;
        END
        """,
    ],
}

_DROP = {
    "postgresql": [
        "DROP TRIGGER IF EXISTS trg_namespaces_unhide ON namespaces",
        "DROP FUNCTION IF EXISTS strata_unhide_namespace()",
        "DROP TRIGGER IF EXISTS trg_dataset_versions_unhide ON dataset_versions",
        "DROP FUNCTION IF EXISTS strata_unhide_from_version()",
        "DROP TRIGGER IF EXISTS trg_lineage_events_unhide ON lineage_events",
        "DROP FUNCTION IF EXISTS strata_unhide_from_event()",
    ],
    "sqlite": [
        "DROP TRIGGER IF EXISTS trg_namespaces_unhide",
        "DROP TRIGGER IF EXISTS trg_dataset_versions_unhide",
        "DROP TRIGGER IF EXISTS trg_lineage_events_unhide_namespaces",
        "DROP TRIGGER IF EXISTS trg_lineage_events_unhide_jobs",
        "DROP TRIGGER IF EXISTS trg_lineage_events_unhide_datasets",
    ],
}

_HIDDEN = sa.text("is_hidden")


def upgrade() -> None:
    for table in ("datasets", "jobs"):
        op.add_column(
            table,
            sa.Column("is_hidden", sa.Boolean(), server_default=sa.false(), nullable=False),
        )
    # Partial indexes: empty while nothing is hidden, so the triggers' "anything hidden?"
    # probe costs one index lookup per event.
    for table in ("datasets", "jobs", "namespaces"):
        op.create_index(
            f"ix_{table}_hidden",
            table,
            ["is_hidden"],
            sqlite_where=_HIDDEN,
            postgresql_where=_HIDDEN,
        )
    for sql in _TRIGGERS[op.get_bind().dialect.name]:
        op.execute(sql)


def downgrade() -> None:
    for sql in _DROP[op.get_bind().dialect.name]:
        op.execute(sql)
    for table in ("namespaces", "jobs", "datasets"):
        op.drop_index(f"ix_{table}_hidden", table_name=table)
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.drop_column("is_hidden")
    with op.batch_alter_table("datasets") as batch_op:
        batch_op.drop_column("is_hidden")
