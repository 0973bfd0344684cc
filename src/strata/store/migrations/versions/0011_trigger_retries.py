"""trigger retries: a trigger whose build failed for a reason that can pass waits and is
tried again

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from strata.store.types import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE on both backends: a SQLite batch rebuild would drop the table's triggers.
    op.add_column(
        "build_triggers",
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column("build_triggers", sa.Column("retry_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("build_triggers") as batch:
        batch.drop_column("retry_at")
        batch.drop_column("attempts")
