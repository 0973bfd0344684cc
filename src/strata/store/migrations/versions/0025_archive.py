"""The archive tier: where each file lives, and deletions listed on either tier

``dataset_files.archive_uri`` names the archive a file was moved to (null: it is in the
lake), at the same path under that root. ``pending_deletes`` replaces
``retention_pending``: a file listed for deletion names the root it is deleted from
(``''``: the lake), since a purge or a move deletes from either tier. ``retention_passes``
gains ``kind`` (retention, archive, restore, lineage) so one table records every pass,
and ``details``: a pass's own counts (a lineage pass's runs, events and versions).
``ix_runs_job_version`` finds a job version's runs for lineage retention.

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from strata.store.types import JSONType, UTCDateTime

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("dataset_files", sa.Column("archive_uri", sa.Text(), nullable=True))
    op.add_column(
        "retention_passes",
        sa.Column("kind", sa.String(16), nullable=False, server_default="retention"),
    )
    op.add_column("retention_passes", sa.Column("details", JSONType, nullable=True))
    op.create_index("ix_runs_job_version", "runs", ["job_version_uuid"])
    op.create_table(
        "pending_deletes",
        sa.Column("root", sa.Text(), primary_key=True),
        sa.Column("path", sa.String(400), primary_key=True),
        sa.Column("listed_at", UTCDateTime(), nullable=False),
    )
    op.execute(
        "INSERT INTO pending_deletes (root, path, listed_at) "
        "SELECT '', path, listed_at FROM retention_pending"
    )
    op.drop_table("retention_pending")


def downgrade() -> None:
    op.drop_index("ix_runs_job_version", table_name="runs")
    op.create_table(
        "retention_pending",
        sa.Column("path", sa.String(400), primary_key=True),
        sa.Column("listed_at", UTCDateTime(), nullable=False),
    )
    op.execute(
        "INSERT INTO retention_pending (path, listed_at) "
        "SELECT path, listed_at FROM pending_deletes WHERE root = ''"
    )
    op.drop_table("pending_deletes")
    with op.batch_alter_table("retention_passes") as batch:
        batch.drop_column("details")
        batch.drop_column("kind")
    with op.batch_alter_table("dataset_files") as batch:
        batch.drop_column("archive_uri")
