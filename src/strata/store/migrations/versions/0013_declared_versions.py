"""declared versions: a DatasetEvent (and a dataset PUT) makes a version of its dataset

``dataset_versions.declared`` marks them: they have no run and no commit, like the
stand-ins a run's input binds to before its dataset has a version, but unlike those they
are candidates for the current version and are never dropped. DatasetEvents stored
before this revision made no version; those sent from now on do.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN on both backends: batch mode would copy the table on SQLite and
    # drop its triggers (trg_dataset_versions_unhide) with it.
    op.add_column(
        "dataset_versions",
        sa.Column("declared", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.execute("ALTER TABLE dataset_versions DROP COLUMN declared")  # SQLite 3.35 and later
