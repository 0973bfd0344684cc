"""Run counts kept once per statement on PostgreSQL

The lineage fold inserts hundreds of runs in one statement, and retention deletes as
many. A trigger per row ran a PL/pgSQL function and an upsert of the job's count for
each run. One trigger per statement now counts the statement's runs by job (from its
transition table) and changes each job's count once. A run moved to another job is
still counted by the trigger per row. SQLite keeps its triggers per row: they run no
procedural language and cost little.

Revision ID: 0030
Revises: 0029
"""

from __future__ import annotations

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

# Jobs in key order: two statements counting the same jobs lock their rows in one order.
_UP = [
    "DROP TRIGGER IF EXISTS trg_runs_count ON runs",
    """
    CREATE FUNCTION strata_job_runs_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO job_run_counts (job_uuid, run_count)
      SELECT job_uuid, COUNT(*) FROM added_runs GROUP BY job_uuid ORDER BY job_uuid
      ON CONFLICT (job_uuid)
      DO UPDATE SET run_count = job_run_counts.run_count + EXCLUDED.run_count;
      RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION strata_job_runs_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE job_run_counts c SET run_count = c.run_count - r.n
      FROM (SELECT job_uuid, COUNT(*) AS n FROM removed_runs GROUP BY job_uuid) r
      WHERE c.job_uuid = r.job_uuid;
      DELETE FROM job_run_counts c
      WHERE c.run_count <= 0 AND c.job_uuid IN (SELECT job_uuid FROM removed_runs);
      RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER trg_runs_count_added AFTER INSERT ON runs
    REFERENCING NEW TABLE AS added_runs
    FOR EACH STATEMENT EXECUTE FUNCTION strata_job_runs_added()
    """,
    """
    CREATE TRIGGER trg_runs_count_removed AFTER DELETE ON runs
    REFERENCING OLD TABLE AS removed_runs
    FOR EACH STATEMENT EXECUTE FUNCTION strata_job_runs_removed()
    """,
]

_DOWN = [
    "DROP TRIGGER IF EXISTS trg_runs_count_removed ON runs",
    "DROP TRIGGER IF EXISTS trg_runs_count_added ON runs",
    "DROP FUNCTION IF EXISTS strata_job_runs_removed()",
    "DROP FUNCTION IF EXISTS strata_job_runs_added()",
    """
    CREATE TRIGGER trg_runs_count AFTER INSERT OR DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION strata_job_run_counts()
    """,
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for sql in _UP:
            op.execute(sql)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for sql in _DOWN:
            op.execute(sql)
