"""build requests: builds asked for over HTTP, with their progress, readable from any
server of the store

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from strata.store.types import UTCDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "build_requests",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("dataset", sa.Text(), nullable=False),
        sa.Column("force", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("holder", sa.Text(), nullable=False),
        sa.Column("requested_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("ended_at", UTCDateTime(), nullable=True),
        sa.Column("progress", _JSON, nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("run_uuid", sa.String(36), nullable=True),
        sa.CheckConstraint(
            "state IN ('QUEUED','RUNNING','COMPLETED','FAILED','ABORTED')",
            name=op.f("ck_build_requests_state"),
        ),
    )
    op.create_index("ix_build_requests_requested", "build_requests", ["requested_at"])


def downgrade() -> None:
    op.drop_index("ix_build_requests_requested", table_name="build_requests")
    op.drop_table("build_requests")
