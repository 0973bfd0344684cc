"""versions record runs: a lake commit made by a run names that run on its version row

Before this, the row's ``run_uuid`` stayed NULL until the run's closing event was
folded, and readers took the transaction's run instead. The rows committed before it
are given their transaction's run here.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        UPDATE dataset_versions SET run_uuid = (
            SELECT t.run_uuid FROM transactions t WHERE t.uuid = dataset_versions.transaction_uuid
        )
        WHERE run_uuid IS NULL AND commit_id IS NOT NULL AND transaction_uuid IS NOT NULL
        """
    )


def downgrade() -> None:
    pass  # the runs stay recorded: the readers before this revision read them as well
