"""run io facets: the input and output facets each run sent for its datasets

``runs.io_facets`` holds them as the run's fold merges them (``inputFacets`` such as
dbt's ``dataQualityAssertions``, ``outputFacets`` such as ``outputStatistics``), for the
``facets`` of the run's ``inputDatasetVersions`` and ``outputDatasetVersions``. Runs
folded before this revision show none until their next event.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN: batch mode would copy ``runs`` on SQLite and drop its triggers.
    op.add_column(
        "runs",
        sa.Column(
            "io_facets", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=True
        ),
    )


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN io_facets")  # SQLite 3.35 and later
