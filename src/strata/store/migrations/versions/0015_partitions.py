"""partitions: a lake dataset's partition columns, each container's key, and what each
version did to which partition

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    # Plain ADD COLUMNs: batch mode would copy the tables on SQLite and drop triggers.
    op.add_column("datasets", sa.Column("partition_by", _JSON, nullable=True))
    op.add_column("dataset_versions", sa.Column("partitions", _JSON, nullable=True))
    op.add_column("dataset_files", sa.Column("partition_key", sa.Text(), nullable=True))
    op.create_index(
        "ix_dataset_files_partition", "dataset_files", ["dataset_uuid", "partition_key"]
    )


def downgrade() -> None:
    op.drop_index("ix_dataset_files_partition", table_name="dataset_files")
    op.execute("ALTER TABLE dataset_files DROP COLUMN partition_key")  # SQLite 3.35+
    op.execute("ALTER TABLE dataset_versions DROP COLUMN partitions")
    op.execute("ALTER TABLE datasets DROP COLUMN partition_by")
