"""ix_dataset_versions_created: dataset versions by the time they were made, for what
changed between two times

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_dataset_versions_created", "dataset_versions", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_dataset_versions_created", table_name="dataset_versions")
