"""Workers and schedules per branch: the branch of each build trigger, and of each
schedule and firing

A commit on a branch raises a trigger for that branch's workers (``build_triggers.
branch_id``, "main" for every trigger so far). A schedule names the branch it builds, so
its registration and firings are kept per branch: the same name may fire on two branches.

Revision ID: 0028
Revises: 0027
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def _branch_column() -> sa.Column[str]:
    return sa.Column("branch", sa.Text(), nullable=False, server_default="main")


def upgrade() -> None:
    op.add_column(
        "build_triggers",
        sa.Column("branch_id", sa.String(36), nullable=False, server_default="main"),
    )
    with op.batch_alter_table("schedules") as batch:
        batch.add_column(_branch_column())
        batch.drop_constraint("pk_schedules", type_="primary")
        batch.create_primary_key("pk_schedules", ["branch", "name"])
    with op.batch_alter_table("schedule_firings") as batch:
        batch.add_column(_branch_column())
        batch.drop_constraint("pk_schedule_firings", type_="primary")
        batch.create_primary_key("pk_schedule_firings", ["branch", "schedule", "due_at"])


def downgrade() -> None:
    op.execute("DELETE FROM schedule_firings WHERE branch <> 'main'")
    op.execute("DELETE FROM schedules WHERE branch <> 'main'")
    with op.batch_alter_table("schedule_firings") as batch:
        batch.drop_constraint("pk_schedule_firings", type_="primary")
        batch.create_primary_key("pk_schedule_firings", ["schedule", "due_at"])
        batch.drop_column("branch")
    with op.batch_alter_table("schedules") as batch:
        batch.drop_constraint("pk_schedules", type_="primary")
        batch.create_primary_key("pk_schedules", ["name"])
        batch.drop_column("branch")
    op.execute("DELETE FROM build_triggers WHERE branch_id <> 'main'")
    with op.batch_alter_table("build_triggers") as batch:
        batch.drop_column("branch_id")
