"""schedules: when each schedule was first seen, and every firing a worker took

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from strata.store.types import UTCDateTime

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("name", sa.Text(), primary_key=True),
        sa.Column("registered_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "schedule_firings",
        sa.Column("schedule", sa.Text(), primary_key=True),
        sa.Column("due_at", UTCDateTime(), primary_key=True),
        sa.Column("holder", sa.Text(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("ended_at", UTCDateTime(), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=True),
        sa.Column("run_uuid", sa.String(36), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("schedule_firings")
    op.drop_table("schedules")
