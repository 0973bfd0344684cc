"""build service: data fingerprints of lake versions, program versions, transform leases

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from strata.store.types import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _ts(name: str) -> sa.Column[object]:
    return sa.Column(name, UTCDateTime(), nullable=False)


def upgrade() -> None:
    # Plain ALTER TABLE on both backends: a SQLite batch rebuild would drop the table's triggers.
    op.add_column("dataset_versions", sa.Column("data_fingerprint", sa.String(64), nullable=True))
    op.add_column("dataset_versions", sa.Column("row_hash", sa.String(64), nullable=True))
    op.create_table(
        "program_versions",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("job_name", sa.String(), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("declaration", _JSON, nullable=False),
        sa.Column("files", _JSON, nullable=False),
        sa.Column("entry", _JSON, nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("uuid", name="pk_program_versions"),
        sa.UniqueConstraint(
            "namespace",
            "job_name",
            "fingerprint",
            name="uq_program_versions_namespace_job_name_fingerprint",
        ),
        sa.UniqueConstraint(
            "namespace",
            "job_name",
            "ordinal",
            name="uq_program_versions_namespace_job_name_ordinal",
        ),
    )
    op.create_table(
        "build_leases",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("holder", sa.String(), nullable=False),
        _ts("expires_at"),
        sa.PrimaryKeyConstraint("name", name="pk_build_leases"),
    )


def downgrade() -> None:
    op.drop_table("build_leases")
    op.drop_table("program_versions")
    op.drop_column("dataset_versions", "row_hash")
    op.drop_column("dataset_versions", "data_fingerprint")
