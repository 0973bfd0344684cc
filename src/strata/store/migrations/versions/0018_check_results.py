"""check results: what each data check of a build found, with the version (or the
failed run) it judged

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from strata.store.types import UTCDateTime

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "check_results",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("run_uuid", sa.String(36), nullable=False),
        sa.Column("job", sa.Text(), nullable=False),
        sa.Column("dataset_uuid", sa.String(36), sa.ForeignKey("datasets.uuid"), nullable=False),
        sa.Column("commit_id", sa.BigInteger(), nullable=True),
        sa.Column("side", sa.String(8), nullable=False),
        sa.Column("partition_key", sa.Text(), nullable=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("expectation", sa.Text(), nullable=False),
        sa.Column("on_error", sa.String(8), nullable=False),
        sa.Column("outcome", sa.String(8), nullable=False),
        sa.Column("observed", _JSON, nullable=False),
        sa.Column("failing", sa.BigInteger(), nullable=True),
        sa.Column("samples", _JSON, nullable=False),
        sa.Column("recorded_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "outcome IN ('passed','warned','failed')", name=op.f("ck_check_results_outcome")
        ),
    )
    op.create_index(
        "ix_check_results_dataset_uuid_commit_id", "check_results", ["dataset_uuid", "commit_id"]
    )
    op.create_index("ix_check_results_run_uuid", "check_results", ["run_uuid"])
    op.create_index("ix_check_results_job_id", "check_results", ["job", "id"])


def downgrade() -> None:
    op.drop_index("ix_check_results_job_id", table_name="check_results")
    op.drop_index("ix_check_results_run_uuid", table_name="check_results")
    op.drop_index("ix_check_results_dataset_uuid_commit_id", table_name="check_results")
    op.drop_table("check_results")
