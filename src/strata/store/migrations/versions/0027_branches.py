"""Branches: ``branches``, ``branch_heads``, and the branch of each version and file row

A version belongs to one branch (``dataset_versions.branch_id``, "main" for every version
made so far) and a fast-forward merge records when it moved (``merged_at``). Each branch
that writes a dataset keeps its own interval rows in ``dataset_files``, so the branch is
part of their key. ``main`` is the root branch every store starts with.

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from strata.store.types import UTCDateTime

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

LIVE = sa.text("deleted_at IS NULL")


def upgrade() -> None:
    branches = op.create_table(
        "branches",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column(
            "parent_id",
            sa.String(36),
            sa.ForeignKey("branches.id", name="fk_branches_parent_id_branches"),
            nullable=True,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_branches"),
    )
    op.create_index(
        "ix_branches_name",
        "branches",
        ["name"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )
    assert branches is not None
    op.bulk_insert(
        branches,
        [{"id": "main", "name": "main", "parent_id": None, "created_at": datetime.now(UTC)}],
    )
    op.create_table(
        "branch_heads",
        sa.Column("branch_id", sa.String(36), nullable=False),
        sa.Column("dataset_uuid", sa.String(36), nullable=False),
        sa.Column("version_uuid", sa.String(36), nullable=False),
        sa.Column("fork_version_uuid", sa.String(36), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["branch_id"], ["branches.id"], name="fk_branch_heads_branch_id_branches"
        ),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"], ["datasets.uuid"], name="fk_branch_heads_dataset_uuid_datasets"
        ),
        sa.PrimaryKeyConstraint("branch_id", "dataset_uuid", name="pk_branch_heads"),
    )
    op.add_column(
        "dataset_versions",
        sa.Column("branch_id", sa.String(36), nullable=False, server_default="main"),
    )
    op.add_column("dataset_versions", sa.Column("merged_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("dataset_files") as batch:
        batch.add_column(
            sa.Column("branch_id", sa.String(36), nullable=False, server_default="main")
        )
        batch.drop_constraint("pk_dataset_files", type_="primary")
        batch.create_primary_key("pk_dataset_files", ["dataset_uuid", "branch_id", "path"])


def downgrade() -> None:
    op.execute("DELETE FROM dataset_files WHERE branch_id <> 'main'")
    with op.batch_alter_table("dataset_files") as batch:
        batch.drop_constraint("pk_dataset_files", type_="primary")
        batch.create_primary_key("pk_dataset_files", ["dataset_uuid", "path"])
        batch.drop_column("branch_id")
    with op.batch_alter_table("dataset_versions") as batch:
        batch.drop_column("merged_at")
        batch.drop_column("branch_id")
    op.drop_table("branch_heads")
    op.drop_index("ix_branches_name", table_name="branches")
    op.drop_table("branches")
