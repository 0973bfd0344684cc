"""partition hashes: each partition's row hash as of every commit that touched it, and
the commit whose rows it still holds (per-partition fingerprints and early cutoff)

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "partition_hashes",
        sa.Column("dataset_uuid", sa.String(36), sa.ForeignKey("datasets.uuid"), primary_key=True),
        sa.Column("partition_key", sa.Text(), primary_key=True),
        sa.Column("commit_id", sa.BigInteger(), primary_key=True),
        sa.Column("row_hash", sa.String(64), nullable=True),
        sa.Column("data_commit_id", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("partition_hashes")
