"""cheaper lineage event inserts: the queue keeps JSON text, the un-hide trigger reads
the payload only when something is hidden

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_UNHIDE_FROM_EVENT = """
CREATE OR REPLACE FUNCTION strata_unhide_from_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  -- Nothing hidden is the common case, and reading the payload's names costs more
  -- than the rest of the insert: they are read only when something is hidden.
  datasets_hidden boolean := EXISTS (SELECT 1 FROM datasets WHERE is_hidden);
  namespaces_hidden boolean := EXISTS (SELECT 1 FROM namespaces WHERE is_hidden);
  named jsonb;
BEGIN
  IF datasets_hidden OR namespaces_hidden THEN
    named := CASE WHEN jsonb_typeof(NEW.payload->'inputs') = 'array'
                  THEN NEW.payload->'inputs' ELSE '[]'::jsonb END
          || CASE WHEN jsonb_typeof(NEW.payload->'outputs') = 'array'
                  THEN NEW.payload->'outputs' ELSE '[]'::jsonb END
          || CASE WHEN jsonb_typeof(NEW.payload->'dataset') = 'object'
                  THEN jsonb_build_array(NEW.payload->'dataset') ELSE '[]'::jsonb END;
  END IF;
  IF datasets_hidden THEN
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
  IF namespaces_hidden THEN
    UPDATE namespaces SET is_hidden = false
    WHERE is_hidden AND (name = NEW.job_namespace OR name IN (
      SELECT x->>'namespace' FROM jsonb_array_elements(named) AS x
      WHERE jsonb_typeof(x) = 'object'));
  END IF;
  RETURN NULL;
END $$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_UNHIDE_FROM_EVENT)
    with op.batch_alter_table("lineage_pending") as batch_op:
        batch_op.alter_column(
            "payload",
            existing_type=sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
            type_=sa.Text(),
            existing_nullable=False,
            postgresql_using="payload::text",
        )


def downgrade() -> None:
    with op.batch_alter_table("lineage_pending") as batch_op:
        batch_op.alter_column(
            "payload",
            existing_type=sa.Text(),
            type_=sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
            existing_nullable=False,
            postgresql_using="payload::jsonb",
        )
    if op.get_bind().dialect.name == "postgresql":
        # The function as revision 0005 made it.
        created = context.script.get_revision("0005").module._TRIGGERS["postgresql"][0]
        op.execute(created.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
