"""A firing's hold: ``schedule_firings.expires_at``

A worker holds the firing it builds and renews that hold while the build runs, as it
does a transform's lease. A firing whose hold lapsed (its worker was killed, or lost its
machine) ends ABORTED; before, it read as running for good. Firings running at the
upgrade hold until their start: a worker still building one records its outcome over
the ABORTED when it ends.

Revision ID: 0029
Revises: 0028
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from strata.store.types import UTCDateTime

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("schedule_firings", sa.Column("expires_at", UTCDateTime(), nullable=True))
    op.execute("UPDATE schedule_firings SET expires_at = started_at WHERE ended_at IS NULL")


def downgrade() -> None:
    with op.batch_alter_table("schedule_firings") as batch_op:
        batch_op.drop_column("expires_at")
