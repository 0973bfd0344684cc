"""indexes for lineage ingest: runs by start time, ties broken by uuid

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Latest-first lookups order by (time, uuid); with uuid in the index they stop at
    # the first row instead of sorting every row of the dataset or job.
    op.drop_index("ix_dataset_versions_dataset_created", table_name="dataset_versions")
    op.create_index(
        "ix_dataset_versions_dataset_created",
        "dataset_versions",
        ["dataset_uuid", "created_at", "uuid"],
    )
    op.drop_index("ix_runs_job_created", table_name="runs")
    op.create_index("ix_runs_job_created", "runs", ["job_uuid", "created_at", "uuid"])
    # Consumers that started after a producer: with in-order delivery, the last few runs.
    op.create_index("ix_runs_created", "runs", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_runs_created", table_name="runs")
    op.drop_index("ix_runs_job_created", table_name="runs")
    op.create_index("ix_runs_job_created", "runs", ["job_uuid", "created_at"])
    op.drop_index("ix_dataset_versions_dataset_created", table_name="dataset_versions")
    op.create_index(
        "ix_dataset_versions_dataset_created", "dataset_versions", ["dataset_uuid", "created_at"]
    )
