"""When a source's URL was said: ``sources.url_at``

A source keeps the URL of the latest event that names one. That was judged against
``updated_at``, which events naming the source without a URL widen too, so the URL kept
depended on the order events arrived in. ``url_at`` is the time of the event (or the
write) whose URL is kept; rows that have a URL take their ``updated_at``, the time the
old rule compared with.

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from strata.store.types import UTCDateTime

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sources", sa.Column("url_at", UTCDateTime(), nullable=True))
    op.execute("UPDATE sources SET url_at = updated_at WHERE connection_url IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("sources") as batch_op:
        batch_op.drop_column("url_at")
