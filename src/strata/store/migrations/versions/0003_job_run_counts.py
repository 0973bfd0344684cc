"""runs per job, kept by triggers

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_TRIGGERS = {
    "postgresql": [
        """
        CREATE FUNCTION strata_job_run_counts() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP <> 'INSERT' THEN
            UPDATE job_run_counts SET run_count = run_count - 1 WHERE job_uuid = OLD.job_uuid;
            DELETE FROM job_run_counts WHERE job_uuid = OLD.job_uuid AND run_count <= 0;
          END IF;
          IF TG_OP <> 'DELETE' THEN
            INSERT INTO job_run_counts (job_uuid, run_count) VALUES (NEW.job_uuid, 1)
            ON CONFLICT (job_uuid) DO UPDATE SET run_count = job_run_counts.run_count + 1;
          END IF;
          RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER trg_runs_count AFTER INSERT OR DELETE ON runs
        FOR EACH ROW EXECUTE FUNCTION strata_job_run_counts()
        """,
        """
        CREATE TRIGGER trg_runs_count_move AFTER UPDATE OF job_uuid ON runs
        FOR EACH ROW WHEN (OLD.job_uuid IS DISTINCT FROM NEW.job_uuid)
        EXECUTE FUNCTION strata_job_run_counts()
        """,
    ],
    "sqlite": [
        """
        CREATE TRIGGER trg_runs_count AFTER INSERT ON runs BEGIN
          INSERT INTO job_run_counts (job_uuid, run_count) VALUES (NEW.job_uuid, 1)
          ON CONFLICT (job_uuid) DO UPDATE SET run_count = run_count + 1;
        END
        """,
        """
        CREATE TRIGGER trg_runs_count_delete AFTER DELETE ON runs BEGIN
          UPDATE job_run_counts SET run_count = run_count - 1 WHERE job_uuid = OLD.job_uuid;
          DELETE FROM job_run_counts WHERE job_uuid = OLD.job_uuid AND run_count <= 0;
        END
        """,
        """
        CREATE TRIGGER trg_runs_count_move AFTER UPDATE OF job_uuid ON runs
        WHEN OLD.job_uuid IS NOT NEW.job_uuid BEGIN
          UPDATE job_run_counts SET run_count = run_count - 1 WHERE job_uuid = OLD.job_uuid;
          DELETE FROM job_run_counts WHERE job_uuid = OLD.job_uuid AND run_count <= 0;
          INSERT INTO job_run_counts (job_uuid, run_count) VALUES (NEW.job_uuid, 1)
          ON CONFLICT (job_uuid) DO UPDATE SET run_count = run_count + 1;
        END
        """,
    ],
}

_DROP = {
    "postgresql": [
        "DROP TRIGGER IF EXISTS trg_runs_count_move ON runs",
        "DROP TRIGGER IF EXISTS trg_runs_count ON runs",
        "DROP FUNCTION IF EXISTS strata_job_run_counts()",
    ],
    "sqlite": [
        "DROP TRIGGER IF EXISTS trg_runs_count_move",
        "DROP TRIGGER IF EXISTS trg_runs_count_delete",
        "DROP TRIGGER IF EXISTS trg_runs_count",
    ],
}


def upgrade() -> None:
    op.create_table(
        "job_run_counts",
        sa.Column("job_uuid", sa.String(length=36), nullable=False),
        sa.Column("run_count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("job_uuid", name=op.f("pk_job_run_counts")),
    )
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":  # no run may land between the backfill and the triggers
        op.execute("LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE")
    op.execute(
        "INSERT INTO job_run_counts (job_uuid, run_count) "
        "SELECT job_uuid, COUNT(*) FROM runs GROUP BY job_uuid"
    )
    for sql in _TRIGGERS[dialect]:
        op.execute(sql)


def downgrade() -> None:
    for sql in _DROP[op.get_bind().dialect.name]:
        op.execute(sql)
    op.drop_table("job_run_counts")
