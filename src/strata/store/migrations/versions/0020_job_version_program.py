"""job_versions.program_facets: which job facets gave a job version its program; and
ix_runs_unfinished: the runs not completed, by job (the jobs whose newest program has not
caught up)

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from strata.store.types import JSONType

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("job_versions", sa.Column("program_facets", JSONType, nullable=True))
    unfinished = sa.text("state <> 'COMPLETED'")
    op.create_index(
        "ix_runs_unfinished",
        "runs",
        ["job_uuid"],
        sqlite_where=unfinished,
        postgresql_where=unfinished,
    )


def downgrade() -> None:
    op.drop_index("ix_runs_unfinished", table_name="runs")
    with op.batch_alter_table("job_versions") as batch:
        batch.drop_column("program_facets")
