"""partitions: a lake dataset's partition columns, each container's key, what each
version did to which partition, and the build catalog of partitioned outputs

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from strata.store.types import UTCDateTime

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
    op.add_column("runs", sa.Column("partition_key", sa.Text(), nullable=True))
    op.create_index(
        "ix_runs_job_partition",
        "runs",
        ["job_uuid", "partition_key"],
        sqlite_where=sa.text("partition_key IS NOT NULL"),
        postgresql_where=sa.text("partition_key IS NOT NULL"),
    )
    op.create_table(
        "partition_builds",
        sa.Column("dataset_uuid", sa.String(36), sa.ForeignKey("datasets.uuid"), primary_key=True),
        sa.Column("partition_key", sa.Text(), primary_key=True),
        sa.Column("commit_id", sa.BigInteger(), nullable=False),
        sa.Column("run_uuid", sa.String(36), nullable=False),
        sa.Column("program", sa.String(64), nullable=False),
        sa.Column("inputs", _JSON, nullable=False),
        sa.Column("built_at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("partition_builds")
    op.drop_index("ix_runs_job_partition", table_name="runs")
    op.execute("ALTER TABLE runs DROP COLUMN partition_key")
    op.drop_index("ix_dataset_files_partition", table_name="dataset_files")
    op.execute("ALTER TABLE dataset_files DROP COLUMN partition_key")  # SQLite 3.35+
    op.execute("ALTER TABLE dataset_versions DROP COLUMN partitions")
    op.execute("ALTER TABLE datasets DROP COLUMN partition_by")
