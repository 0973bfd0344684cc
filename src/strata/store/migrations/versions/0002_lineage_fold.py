"""lineage fold bookkeeping

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("datasets", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fold_state", _JSON, nullable=True))
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fold_state", _JSON, nullable=True))
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("external_version", sa.String(), nullable=True))
        batch_op.create_index(
            "ix_dataset_versions_external", ["dataset_uuid", "external_version"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.drop_index("ix_dataset_versions_external")
        batch_op.drop_column("external_version")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("fold_state")
    with op.batch_alter_table("datasets", schema=None) as batch_op:
        batch_op.drop_column("fold_state")
