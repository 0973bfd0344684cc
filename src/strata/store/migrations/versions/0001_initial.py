"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-21 09:10:06.726498
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import strata.store.types

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "lineage_events",
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("run_uuid", sa.String(length=36), nullable=True),
        sa.Column("event_type", sa.String(length=16), nullable=True),
        sa.Column("event_time", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("received_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("producer", sa.Text(), nullable=True),
        sa.Column("job_namespace", sa.String(), nullable=True),
        sa.Column("job_name", sa.String(), nullable=True),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("payload_hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_lineage_events")),
        sa.UniqueConstraint("payload_hash", name=op.f("uq_lineage_events_payload_hash")),
    )
    with op.batch_alter_table("lineage_events", schema=None) as batch_op:
        batch_op.create_index("ix_lineage_events_received", ["received_at"], unique=False)
        batch_op.create_index(
            "ix_lineage_events_run_time", ["run_uuid", "event_time"], unique=False
        )
        batch_op.create_index("ix_lineage_events_time", ["event_time"], unique=False)

    op.create_table(
        "namespaces",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("owner", sa.String(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("is_hidden", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_namespaces")),
    )
    op.create_table(
        "sources",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("type", sa.String(), nullable=False),
        sa.Column("connection_url", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_sources")),
    )
    op.create_table(
        "tags",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_tags")),
    )
    op.create_table(
        "datasets",
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("type", sa.String(), server_default="DB_TABLE", nullable=False),
        sa.Column("source_name", sa.String(), nullable=True),
        sa.Column("physical_name", sa.String(), nullable=True),
        sa.Column("is_lake", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("current_version_uuid", sa.String(length=36), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["namespace"], ["namespaces.name"], name=op.f("fk_datasets_namespace_namespaces")
        ),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_datasets")),
        sa.UniqueConstraint("namespace", "name", name=op.f("uq_datasets_namespace_name")),
    )
    op.create_table(
        "jobs",
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("simple_name", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("parent_job_uuid", sa.String(length=36), nullable=True),
        sa.Column("parent_key", sa.String(length=36), server_default="", nullable=False),
        sa.Column("type", sa.String(), server_default="BATCH", nullable=False),
        sa.Column("current_version_uuid", sa.String(length=36), nullable=True),
        sa.Column("location", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["namespace"], ["namespaces.name"], name=op.f("fk_jobs_namespace_namespaces")
        ),
        sa.ForeignKeyConstraint(
            ["parent_job_uuid"], ["jobs.uuid"], name=op.f("fk_jobs_parent_job_uuid_jobs")
        ),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_jobs")),
        sa.UniqueConstraint(
            "namespace",
            "simple_name",
            "parent_key",
            name=op.f("uq_jobs_namespace_simple_name_parent_key"),
        ),
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index("ix_jobs_namespace_name", ["namespace", "name"], unique=False)
        batch_op.create_index("ix_jobs_parent", ["parent_job_uuid"], unique=False)

    op.create_table(
        "build_triggers",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("dataset_uuid", sa.String(length=36), nullable=False),
        sa.Column("commit_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("claimed_by", sa.String(), nullable=True),
        sa.Column("done_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"],
            ["datasets.uuid"],
            name=op.f("fk_build_triggers_dataset_uuid_datasets"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_build_triggers")),
    )
    with op.batch_alter_table("build_triggers", schema=None) as batch_op:
        batch_op.create_index("ix_build_triggers_pending", ["done_at", "claimed_at"], unique=False)

    op.create_table(
        "dataset_files",
        sa.Column("dataset_uuid", sa.String(length=36), nullable=False),
        sa.Column("path", sa.String(length=400), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("rows", sa.BigInteger(), nullable=False),
        sa.Column("added_commit_id", sa.BigInteger(), nullable=False),
        sa.Column("removed_commit_id", sa.BigInteger(), nullable=True),
        sa.Column("purged_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"], ["datasets.uuid"], name=op.f("fk_dataset_files_dataset_uuid_datasets")
        ),
        sa.PrimaryKeyConstraint("dataset_uuid", "path", name=op.f("pk_dataset_files")),
    )
    with op.batch_alter_table("dataset_files", schema=None) as batch_op:
        batch_op.create_index(
            "ix_dataset_files_added", ["dataset_uuid", "added_commit_id"], unique=False
        )
        batch_op.create_index(
            "ix_dataset_files_removed", ["dataset_uuid", "removed_commit_id"], unique=False
        )

    op.create_table(
        "dataset_symlinks",
        sa.Column("dataset_uuid", sa.String(length=36), nullable=False),
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("type", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"],
            ["datasets.uuid"],
            name=op.f("fk_dataset_symlinks_dataset_uuid_datasets"),
        ),
        sa.PrimaryKeyConstraint(
            "dataset_uuid", "namespace", "name", name=op.f("pk_dataset_symlinks")
        ),
    )
    with op.batch_alter_table("dataset_symlinks", schema=None) as batch_op:
        batch_op.create_index("ix_dataset_symlinks_name", ["namespace", "name"], unique=False)

    op.create_table(
        "dataset_tags",
        sa.Column("dataset_uuid", sa.String(length=36), nullable=False),
        sa.Column("tag_name", sa.String(), nullable=False),
        sa.Column("field_name", sa.String(), server_default="", nullable=False),
        sa.Column("tagged_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"], ["datasets.uuid"], name=op.f("fk_dataset_tags_dataset_uuid_datasets")
        ),
        sa.ForeignKeyConstraint(
            ["tag_name"], ["tags.name"], name=op.f("fk_dataset_tags_tag_name_tags")
        ),
        sa.PrimaryKeyConstraint(
            "dataset_uuid", "tag_name", "field_name", name=op.f("pk_dataset_tags")
        ),
    )
    op.create_table(
        "dataset_versions",
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("dataset_uuid", sa.String(length=36), nullable=False),
        sa.Column("commit_id", sa.BigInteger(), nullable=True),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("run_uuid", sa.String(length=36), nullable=True),
        sa.Column("transaction_uuid", sa.String(length=36), nullable=True),
        sa.Column(
            "schema_fields",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        sa.Column("row_count", sa.BigInteger(), nullable=True),
        sa.Column("byte_count", sa.BigInteger(), nullable=True),
        sa.Column("file_count", sa.BigInteger(), nullable=True),
        sa.Column("lifecycle_state", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"],
            ["datasets.uuid"],
            name=op.f("fk_dataset_versions_dataset_uuid_datasets"),
        ),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_dataset_versions")),
        sa.UniqueConstraint(
            "dataset_uuid", "commit_id", name=op.f("uq_dataset_versions_dataset_uuid_commit_id")
        ),
    )
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_dataset_versions_dataset_created", ["dataset_uuid", "created_at"], unique=False
        )
        batch_op.create_index("ix_dataset_versions_run", ["run_uuid"], unique=False)

    op.create_table(
        "job_aliases",
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("job_uuid", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_uuid"], ["jobs.uuid"], name=op.f("fk_job_aliases_job_uuid_jobs")
        ),
        sa.PrimaryKeyConstraint("namespace", "name", "job_uuid", name=op.f("pk_job_aliases")),
    )
    op.create_table(
        "job_tags",
        sa.Column("job_uuid", sa.String(length=36), nullable=False),
        sa.Column("tag_name", sa.String(), nullable=False),
        sa.Column("tagged_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_uuid"], ["jobs.uuid"], name=op.f("fk_job_tags_job_uuid_jobs")
        ),
        sa.ForeignKeyConstraint(
            ["tag_name"], ["tags.name"], name=op.f("fk_job_tags_tag_name_tags")
        ),
        sa.PrimaryKeyConstraint("job_uuid", "tag_name", name=op.f("pk_job_tags")),
    )
    op.create_table(
        "job_versions",
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("job_uuid", sa.String(length=36), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("source_code", sa.Text(), nullable=True),
        sa.Column("location", sa.Text(), nullable=True),
        sa.Column(
            "inputs",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "outputs",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("latest_run_uuid", sa.String(length=36), nullable=True),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_uuid"], ["jobs.uuid"], name=op.f("fk_job_versions_job_uuid_jobs")
        ),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_job_versions")),
        sa.UniqueConstraint("job_uuid", "version", name=op.f("uq_job_versions_job_uuid_version")),
    )
    op.create_table(
        "transactions",
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("group_uuid", sa.String(length=36), nullable=False),
        sa.Column("dataset_uuid", sa.String(length=36), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("started_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("committed_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("ended_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("commit_id", sa.BigInteger(), nullable=True),
        sa.Column("base_commit_id", sa.BigInteger(), nullable=False),
        sa.Column("run_uuid", sa.String(length=36), nullable=True),
        sa.Column("path", sa.String(length=200), nullable=False),
        sa.Column("cleaned_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "state IN ('OPEN','COMMITTED','ABORTED')", name=op.f("ck_transactions_state")
        ),
        sa.CheckConstraint(
            "type IN ('SNAPSHOT','APPEND','UPDATE','DELETE')", name=op.f("ck_transactions_type")
        ),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"], ["datasets.uuid"], name=op.f("fk_transactions_dataset_uuid_datasets")
        ),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_transactions")),
    )
    with op.batch_alter_table("transactions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_transactions_dataset_commit", ["dataset_uuid", "commit_id"], unique=False
        )
        batch_op.create_index("ix_transactions_group", ["group_uuid"], unique=False)
        batch_op.create_index(
            "ix_transactions_state_started", ["state", "started_at"], unique=False
        )

    op.create_table(
        "column_lineage",
        sa.Column("dataset_version_uuid", sa.String(length=36), nullable=False),
        sa.Column("output_field", sa.String(), nullable=False),
        sa.Column("input_dataset_uuid", sa.String(length=36), nullable=False),
        sa.Column("input_field", sa.String(), nullable=False),
        sa.Column("transformation_type", sa.String(), nullable=True),
        sa.Column("transformation_description", sa.Text(), nullable=True),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_version_uuid"],
            ["dataset_versions.uuid"],
            name=op.f("fk_column_lineage_dataset_version_uuid_dataset_versions"),
        ),
        sa.ForeignKeyConstraint(
            ["input_dataset_uuid"],
            ["datasets.uuid"],
            name=op.f("fk_column_lineage_input_dataset_uuid_datasets"),
        ),
        sa.PrimaryKeyConstraint(
            "dataset_version_uuid",
            "output_field",
            "input_dataset_uuid",
            "input_field",
            name=op.f("pk_column_lineage"),
        ),
    )
    with op.batch_alter_table("column_lineage", schema=None) as batch_op:
        batch_op.create_index(
            "ix_column_lineage_input", ["input_dataset_uuid", "input_field"], unique=False
        )

    op.create_table(
        "job_version_io",
        sa.Column("job_version_uuid", sa.String(length=36), nullable=False),
        sa.Column("dataset_uuid", sa.String(length=36), nullable=False),
        sa.Column("io_type", sa.String(length=8), nullable=False),
        sa.Column("job_uuid", sa.String(length=36), nullable=False),
        sa.CheckConstraint("io_type IN ('INPUT','OUTPUT')", name=op.f("ck_job_version_io_io_type")),
        sa.ForeignKeyConstraint(
            ["dataset_uuid"],
            ["datasets.uuid"],
            name=op.f("fk_job_version_io_dataset_uuid_datasets"),
        ),
        sa.ForeignKeyConstraint(
            ["job_uuid"], ["jobs.uuid"], name=op.f("fk_job_version_io_job_uuid_jobs")
        ),
        sa.ForeignKeyConstraint(
            ["job_version_uuid"],
            ["job_versions.uuid"],
            name=op.f("fk_job_version_io_job_version_uuid_job_versions"),
        ),
        sa.PrimaryKeyConstraint(
            "job_version_uuid", "dataset_uuid", "io_type", name=op.f("pk_job_version_io")
        ),
    )
    with op.batch_alter_table("job_version_io", schema=None) as batch_op:
        batch_op.create_index(
            "ix_job_version_io_dataset", ["dataset_uuid", "io_type"], unique=False
        )
        batch_op.create_index("ix_job_version_io_job", ["job_uuid", "io_type"], unique=False)

    op.create_table(
        "runs",
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("job_uuid", sa.String(length=36), nullable=False),
        sa.Column("job_version_uuid", sa.String(length=36), nullable=True),
        sa.Column("parent_run_uuid", sa.String(length=36), nullable=True),
        sa.Column("state", sa.String(length=16), server_default="NEW", nullable=False),
        sa.Column(
            "nominal_start_time", strata.store.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("nominal_end_time", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("started_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("ended_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("transitioned_at", strata.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "error",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.CheckConstraint(
            "state IN ('NEW','RUNNING','COMPLETED','FAILED','ABORTED')", name=op.f("ck_runs_state")
        ),
        sa.ForeignKeyConstraint(["job_uuid"], ["jobs.uuid"], name=op.f("fk_runs_job_uuid_jobs")),
        sa.ForeignKeyConstraint(
            ["job_version_uuid"],
            ["job_versions.uuid"],
            name=op.f("fk_runs_job_version_uuid_job_versions"),
        ),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_job_created", ["job_uuid", "created_at"], unique=False)
        batch_op.create_index("ix_runs_parent", ["parent_run_uuid"], unique=False)

    op.create_table(
        "transaction_files",
        sa.Column("txn_uuid", sa.String(length=36), nullable=False),
        sa.Column("path", sa.String(length=400), nullable=False),
        sa.Column("op", sa.String(length=8), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("rows", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("op IN ('ADD','REMOVE')", name=op.f("ck_transaction_files_op")),
        sa.ForeignKeyConstraint(
            ["txn_uuid"],
            ["transactions.uuid"],
            name=op.f("fk_transaction_files_txn_uuid_transactions"),
        ),
        sa.PrimaryKeyConstraint("txn_uuid", "path", "op", name=op.f("pk_transaction_files")),
    )
    op.create_table(
        "run_inputs",
        sa.Column("run_uuid", sa.String(length=36), nullable=False),
        sa.Column("dataset_version_uuid", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_version_uuid"],
            ["dataset_versions.uuid"],
            name=op.f("fk_run_inputs_dataset_version_uuid_dataset_versions"),
        ),
        sa.ForeignKeyConstraint(
            ["run_uuid"], ["runs.uuid"], name=op.f("fk_run_inputs_run_uuid_runs")
        ),
        sa.PrimaryKeyConstraint("run_uuid", "dataset_version_uuid", name=op.f("pk_run_inputs")),
    )
    with op.batch_alter_table("run_inputs", schema=None) as batch_op:
        batch_op.create_index("ix_run_inputs_version", ["dataset_version_uuid"], unique=False)

    op.create_table(
        "run_states",
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("run_uuid", sa.String(length=36), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("transitioned_at", strata.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("event_uuid", sa.String(length=36), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_uuid"], ["runs.uuid"], name=op.f("fk_run_states_run_uuid_runs")
        ),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_run_states")),
    )
    with op.batch_alter_table("run_states", schema=None) as batch_op:
        batch_op.create_index(
            "ix_run_states_run_time", ["run_uuid", "transitioned_at"], unique=False
        )


def downgrade() -> None:

    with op.batch_alter_table("run_states", schema=None) as batch_op:
        batch_op.drop_index("ix_run_states_run_time")

    op.drop_table("run_states")
    with op.batch_alter_table("run_inputs", schema=None) as batch_op:
        batch_op.drop_index("ix_run_inputs_version")

    op.drop_table("run_inputs")
    op.drop_table("transaction_files")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_parent")
        batch_op.drop_index("ix_runs_job_created")

    op.drop_table("runs")
    with op.batch_alter_table("job_version_io", schema=None) as batch_op:
        batch_op.drop_index("ix_job_version_io_job")
        batch_op.drop_index("ix_job_version_io_dataset")

    op.drop_table("job_version_io")
    with op.batch_alter_table("column_lineage", schema=None) as batch_op:
        batch_op.drop_index("ix_column_lineage_input")

    op.drop_table("column_lineage")
    with op.batch_alter_table("transactions", schema=None) as batch_op:
        batch_op.drop_index("ix_transactions_state_started")
        batch_op.drop_index("ix_transactions_group")
        batch_op.drop_index("ix_transactions_dataset_commit")

    op.drop_table("transactions")
    op.drop_table("job_versions")
    op.drop_table("job_tags")
    op.drop_table("job_aliases")
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.drop_index("ix_dataset_versions_run")
        batch_op.drop_index("ix_dataset_versions_dataset_created")

    op.drop_table("dataset_versions")
    op.drop_table("dataset_tags")
    with op.batch_alter_table("dataset_symlinks", schema=None) as batch_op:
        batch_op.drop_index("ix_dataset_symlinks_name")

    op.drop_table("dataset_symlinks")
    with op.batch_alter_table("dataset_files", schema=None) as batch_op:
        batch_op.drop_index("ix_dataset_files_removed")
        batch_op.drop_index("ix_dataset_files_added")

    op.drop_table("dataset_files")
    with op.batch_alter_table("build_triggers", schema=None) as batch_op:
        batch_op.drop_index("ix_build_triggers_pending")

    op.drop_table("build_triggers")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_jobs_parent")
        batch_op.drop_index("ix_jobs_namespace_name")

    op.drop_table("jobs")
    op.drop_table("datasets")
    op.drop_table("tags")
    op.drop_table("sources")
    op.drop_table("namespaces")
    with op.batch_alter_table("lineage_events", schema=None) as batch_op:
        batch_op.drop_index("ix_lineage_events_time")
        batch_op.drop_index("ix_lineage_events_run_time")
        batch_op.drop_index("ix_lineage_events_received")

    op.drop_table("lineage_events")
