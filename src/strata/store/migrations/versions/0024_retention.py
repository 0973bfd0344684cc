"""Retention of lake data: marks, pins, passes, and the purged state of a version

``strata retention`` marks the versions its policies select (``retention_marks``) and,
after a grace period, purges them: the version row stays with ``purged_at`` and
``purged_by`` (the policy), and the files no kept version reads are deleted. A file to
delete is listed in ``retention_pending`` in the same SQL transaction that purges its
version, and unlisted once it is gone, so a pass killed between the two is finished by
the next. ``version_pins`` keeps a version from any policy; ``retention_passes`` records
each pass.

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from strata.store.types import UTCDateTime

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("dataset_versions", sa.Column("purged_at", UTCDateTime(), nullable=True))
    op.add_column("dataset_versions", sa.Column("purged_by", sa.Text(), nullable=True))
    op.create_table(
        "retention_marks",
        sa.Column("dataset_uuid", sa.String(36), primary_key=True),
        sa.Column("commit_id", sa.BigInteger(), primary_key=True),
        sa.Column("policy", sa.Text(), nullable=False),
        sa.Column("marked_at", UTCDateTime(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"], ["datasets.uuid"], name="fk_retention_marks_dataset_uuid_datasets"
        ),
    )
    op.create_table(
        "version_pins",
        sa.Column("dataset_uuid", sa.String(36), primary_key=True),
        sa.Column("commit_id", sa.BigInteger(), primary_key=True),
        sa.Column("pinned_at", UTCDateTime(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"], ["datasets.uuid"], name="fk_version_pins_dataset_uuid_datasets"
        ),
    )
    op.create_table(
        "retention_pending",
        sa.Column("path", sa.String(400), primary_key=True),
        sa.Column("listed_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "retention_passes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("ended_at", UTCDateTime(), nullable=False),
        sa.Column("marked", sa.BigInteger(), nullable=False),
        sa.Column("unmarked", sa.BigInteger(), nullable=False),
        sa.Column("purged", sa.BigInteger(), nullable=False),
        sa.Column("files", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
    )
    op.create_index("ix_retention_passes_ended_at", "retention_passes", ["ended_at"])


def downgrade() -> None:
    op.drop_index("ix_retention_passes_ended_at", table_name="retention_passes")
    op.drop_table("retention_passes")
    op.drop_table("retention_pending")
    op.drop_table("version_pins")
    op.drop_table("retention_marks")
    with op.batch_alter_table("dataset_versions") as batch:
        batch.drop_column("purged_by")
        batch.drop_column("purged_at")
