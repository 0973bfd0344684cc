"""program_lineage and plan_lineage: the column lineage of programs and of plans

``strata status --columns`` plans a changed transform on its inputs without running it
and keeps the lineage it found in ``program_lineage``, so every status (the API's and
the pages' too) can say which columns the change touches. ``plan_lineage`` keeps the
lineage derived from each Spark plan by its signature, so a rebuild of the same plan
does not derive it again.

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from strata.store.types import UTCDateTime

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "program_lineage",
        sa.Column("namespace", sa.String(), primary_key=True),
        sa.Column("job_name", sa.String(), primary_key=True),
        sa.Column("fingerprint", sa.String(64), primary_key=True),
        sa.Column("outputs", _JSON, nullable=False),
        sa.Column("planned_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "plan_lineage",
        sa.Column("signature", sa.String(64), primary_key=True),
        sa.Column("derived", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("plan_lineage")
    op.drop_table("program_lineage")
