"""fewer index entries per lineage write: no index on when an event was received (nothing
reads by it), and the indexes of mostly empty columns (a version's producer label, a
run's parent) hold only the rows that have a value

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# (index, table, columns): every lookup by these columns is by a value, which a partial
# index over the rows that have one answers.
_PARTIAL = [
    ("ix_dataset_versions_external", "dataset_versions", ["dataset_uuid", "external_version"]),
    ("ix_runs_parent", "runs", ["parent_run_uuid"]),
]


def upgrade() -> None:
    op.drop_index("ix_lineage_events_received", table_name="lineage_events")
    for name, table, columns in _PARTIAL:
        op.drop_index(name, table_name=table)
        has_value = sa.text(f"{columns[-1]} IS NOT NULL")
        op.create_index(name, table, columns, sqlite_where=has_value, postgresql_where=has_value)


def downgrade() -> None:
    for name, table, columns in _PARTIAL:
        op.drop_index(name, table_name=table)
        op.create_index(name, table, columns)
    op.create_index("ix_lineage_events_received", "lineage_events", ["received_at"])
