"""The one relational model: lake, lineage and build catalog share these tables.

Conventions: ids are UUIDv7 strings (``uuid``); times are aware UTC
(:class:`~strata.store.types.UTCDateTime`); JSON columns hold spec-shaped
documents (facets, schema fields). Every lookup the API makes has an index.

Lake datasets and lineage datasets are the same ``datasets`` rows
(``is_lake`` tells them apart). A lake commit is a ``dataset_versions`` row
with a gap-free ``commit_id``; which containers make up each version is the
interval index ``dataset_files`` (file live for ``added_commit_id <= N <
removed_commit_id``), so any version resolves with one indexed query and no
replay of the ``transaction_files`` delta log.
"""

from __future__ import annotations

import sqlalchemy as sa

from strata.store.types import JSONTextType, JSONType, serial_col, ts_col, uuid_col

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

Name = sa.String  # unbounded on PostgreSQL; names are validated before they get here
# Partial indexes on soft-delete flags: empty while nothing is hidden, so "is anything
# hidden?" is one index probe.
HIDDEN = sa.text("is_hidden")

namespaces = sa.Table(
    "namespaces",
    metadata,
    sa.Column("name", Name(), primary_key=True),
    sa.Column("owner", Name(), nullable=True),
    sa.Column("description", sa.Text(), nullable=True),
    sa.Column("is_hidden", sa.Boolean(), nullable=False, server_default=sa.false()),
    ts_col("created_at", nullable=False),
    ts_col("updated_at", nullable=False),
    sa.Index("ix_namespaces_hidden", "is_hidden", sqlite_where=HIDDEN, postgresql_where=HIDDEN),
)

sources = sa.Table(
    "sources",
    metadata,
    sa.Column("name", Name(), primary_key=True),
    sa.Column("type", Name(), nullable=False),
    sa.Column("connection_url", sa.Text(), nullable=True),
    sa.Column("description", sa.Text(), nullable=True),
    ts_col("created_at", nullable=False),
    ts_col("updated_at", nullable=False),
    # When the kept URL was said: an event naming the source without a URL widens
    # updated_at but must not change which URL is the latest.
    ts_col("url_at", nullable=True),
)

datasets = sa.Table(
    "datasets",
    metadata,
    uuid_col("uuid", primary_key=True),
    sa.Column("namespace", Name(), sa.ForeignKey("namespaces.name"), nullable=False),
    sa.Column("name", Name(), nullable=False),
    sa.Column("type", Name(), nullable=False, server_default="DB_TABLE"),
    sa.Column("source_name", Name(), nullable=True),
    sa.Column("physical_name", Name(), nullable=True),
    sa.Column("is_lake", sa.Boolean(), nullable=False, server_default=sa.false()),
    uuid_col("current_version_uuid", nullable=True),
    sa.Column("description", sa.Text(), nullable=True),
    sa.Column("facets", JSONType, nullable=True),
    ts_col("created_at", nullable=False),
    ts_col("updated_at", nullable=False),
    ts_col("deleted_at", nullable=True),
    # Lineage ingest bookkeeping: which event each merged facet came from.
    sa.Column("fold_state", JSONType, nullable=True),
    # Soft-deleted by the API (Marquez's DELETE); a later event naming it clears the flag.
    sa.Column("is_hidden", sa.Boolean(), nullable=False, server_default=sa.false()),
    # Lake datasets: the columns that partition it, in key order (null: not partitioned).
    sa.Column("partition_by", JSONType, nullable=True),
    sa.UniqueConstraint("namespace", "name"),
    sa.Index("ix_datasets_hidden", "is_hidden", sqlite_where=HIDDEN, postgresql_where=HIDDEN),
)

dataset_versions = sa.Table(
    "dataset_versions",
    metadata,
    uuid_col("uuid", primary_key=True),
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), nullable=False),
    # Gap-free per dataset for lake commits; the put-if-absent of a commit.
    sa.Column("commit_id", sa.BigInteger(), nullable=True),
    ts_col("created_at", nullable=False),
    uuid_col("run_uuid", nullable=True),
    uuid_col("transaction_uuid", nullable=True),
    sa.Column("schema_fields", JSONType, nullable=True),
    sa.Column("facets", JSONType, nullable=True),
    sa.Column("content_hash", sa.String(64), nullable=True),
    sa.Column("row_count", sa.BigInteger(), nullable=True),
    sa.Column("byte_count", sa.BigInteger(), nullable=True),
    sa.Column("file_count", sa.BigInteger(), nullable=True),
    sa.Column("lifecycle_state", Name(), nullable=True),
    # The producer's own version label (OpenLineage `version` facet).
    sa.Column("external_version", Name(), nullable=True),
    # Lake commits: a hash of the version's rows alone (not their files or order), and the
    # order-independent row-hash sum it is made from, carried forward by APPENDs.
    sa.Column("data_fingerprint", sa.String(64), nullable=True),
    sa.Column("row_hash", sa.String(64), nullable=True),
    # Made by a DatasetEvent or a dataset PUT (no run, no commit): a candidate for the
    # dataset's current version, never dropped as an unbound stand-in is.
    sa.Column("declared", sa.Boolean(), nullable=False, server_default=sa.false()),
    # Lake commits of a partitioned dataset: the key texts it added, appended to,
    # replaced and removed ({"added": [...], ...}).
    sa.Column("partitions", JSONType, nullable=True),
    # Retention purged the version (strata.retention): its row and catalog entry stay,
    # its files that no kept version reads are gone. ``purged_by`` names the policy.
    ts_col("purged_at", nullable=True),
    sa.Column("purged_by", sa.Text(), nullable=True),
    # The branch the version belongs to (``branches.id``; "main" for main). A fast-forward
    # merge moves it to the target branch and records when (``merged_at``): reads of the
    # target as of an earlier time do not see it.
    sa.Column("branch_id", sa.String(36), nullable=False, server_default="main"),
    ts_col("merged_at", nullable=True),
    sa.UniqueConstraint("dataset_uuid", "commit_id"),
    sa.Index(
        "ix_dataset_versions_external",
        "dataset_uuid",
        "external_version",
        sqlite_where=sa.text("external_version IS NOT NULL"),
        postgresql_where=sa.text("external_version IS NOT NULL"),
    ),
    sa.Index("ix_dataset_versions_dataset_created", "dataset_uuid", "created_at", "uuid"),
    sa.Index("ix_dataset_versions_created", "created_at"),
    sa.Index("ix_dataset_versions_run", "run_uuid"),
)

transactions = sa.Table(
    "transactions",
    metadata,
    uuid_col("uuid", primary_key=True),
    # All datasets of one multi-dataset transaction share a group: all commit or none.
    uuid_col("group_uuid", nullable=False),
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), nullable=False),
    sa.Column("type", sa.String(16), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    ts_col("started_at", nullable=False),
    ts_col("committed_at", nullable=True),
    ts_col("ended_at", nullable=True),
    sa.Column("commit_id", sa.BigInteger(), nullable=True),
    sa.Column("base_commit_id", sa.BigInteger(), nullable=False),
    uuid_col("run_uuid", nullable=True),
    # Container folder relative to the lake root: built from ids, never from names.
    sa.Column("path", sa.String(200), nullable=False),
    ts_col("cleaned_at", nullable=True),
    sa.CheckConstraint("type IN ('SNAPSHOT','APPEND','UPDATE','DELETE')", name="type"),
    sa.CheckConstraint("state IN ('OPEN','COMMITTED','ABORTED')", name="state"),
    sa.Index("ix_transactions_state_started", "state", "started_at"),
    sa.Index("ix_transactions_dataset_commit", "dataset_uuid", "commit_id"),
    sa.Index("ix_transactions_group", "group_uuid"),
)

transaction_files = sa.Table(
    "transaction_files",
    metadata,
    uuid_col("txn_uuid", sa.ForeignKey("transactions.uuid"), primary_key=True),
    sa.Column("path", sa.String(400), primary_key=True),
    sa.Column("op", sa.String(8), primary_key=True),
    sa.Column("bytes", sa.BigInteger(), nullable=False),
    sa.Column("rows", sa.BigInteger(), nullable=False),
    sa.CheckConstraint("op IN ('ADD','REMOVE')", name="op"),
)

dataset_files = sa.Table(
    "dataset_files",
    metadata,
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), nullable=False),
    # The branch whose versions this row serves: each branch that writes a dataset keeps
    # its own interval rows (a copy of the rows it started from, never of the files).
    sa.Column("branch_id", sa.String(36), nullable=False, server_default="main"),
    sa.Column("path", sa.String(400), nullable=False),
    sa.Column("bytes", sa.BigInteger(), nullable=False),
    sa.Column("rows", sa.BigInteger(), nullable=False),
    sa.Column("added_commit_id", sa.BigInteger(), nullable=False),
    sa.Column("removed_commit_id", sa.BigInteger(), nullable=True),
    ts_col("purged_at", nullable=True),
    # The archive root the file was moved to, at the same path (null: in the lake).
    sa.Column("archive_uri", sa.Text(), nullable=True),
    # The container's partition key text (`region=JP/day=2026-11-01`); null: unpartitioned.
    sa.Column("partition_key", sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint("dataset_uuid", "branch_id", "path"),
    sa.Index("ix_dataset_files_added", "dataset_uuid", "added_commit_id"),
    sa.Index("ix_dataset_files_partition", "dataset_uuid", "partition_key"),
    sa.Index("ix_dataset_files_removed", "dataset_uuid", "removed_commit_id"),
)

# Branches (strata.lake.branches): a name with a parent to fall back to ("main", the
# root, has none). A deleted branch keeps its row (its versions name it) and frees its
# name. ``branch_heads`` holds, per branch and dataset it wrote, its current version and
# the version it forked from (the parent's current then): a merge fast-forwards only
# while the target still holds that fork point.
LIVE_BRANCH = sa.text("deleted_at IS NULL")
branches = sa.Table(
    "branches",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", Name(), nullable=False),
    sa.Column("parent_id", sa.String(36), sa.ForeignKey("branches.id"), nullable=True),
    ts_col("created_at", nullable=False),
    ts_col("deleted_at", nullable=True),
    sa.Index(
        "ix_branches_name",
        "name",
        unique=True,
        sqlite_where=LIVE_BRANCH,
        postgresql_where=LIVE_BRANCH,
    ),
)

branch_heads = sa.Table(
    "branch_heads",
    metadata,
    sa.Column("branch_id", sa.String(36), sa.ForeignKey("branches.id"), primary_key=True),
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), primary_key=True),
    uuid_col("version_uuid", nullable=False),
    uuid_col("fork_version_uuid", nullable=True),
    ts_col("updated_at", nullable=False),
)

jobs = sa.Table(
    "jobs",
    metadata,
    uuid_col("uuid", primary_key=True),
    sa.Column("namespace", Name(), sa.ForeignKey("namespaces.name"), nullable=False),
    sa.Column("simple_name", Name(), nullable=False),
    sa.Column("name", Name(), nullable=False),  # FQN: parent chain joined by dots
    uuid_col("parent_job_uuid", sa.ForeignKey("jobs.uuid"), nullable=True),
    # '' when there is no parent, so (namespace, simple_name, parent) is truly unique.
    sa.Column("parent_key", sa.String(36), nullable=False, server_default=""),
    sa.Column("type", Name(), nullable=False, server_default="BATCH"),
    uuid_col("current_version_uuid", nullable=True),
    sa.Column("location", sa.Text(), nullable=True),
    sa.Column("description", sa.Text(), nullable=True),
    sa.Column("facets", JSONType, nullable=True),
    ts_col("created_at", nullable=False),
    ts_col("updated_at", nullable=False),
    # Lineage ingest bookkeeping: raw event name, parent and facet provenance.
    sa.Column("fold_state", JSONType, nullable=True),
    # Soft-deleted by the API; a later event for the job clears the flag.
    sa.Column("is_hidden", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.UniqueConstraint("namespace", "simple_name", "parent_key"),
    sa.Index("ix_jobs_namespace_name", "namespace", "name"),
    sa.Index("ix_jobs_parent", "parent_job_uuid"),
    sa.Index("ix_jobs_hidden", "is_hidden", sqlite_where=HIDDEN, postgresql_where=HIDDEN),
)

job_aliases = sa.Table(
    "job_aliases",
    metadata,
    sa.Column("namespace", Name(), primary_key=True),
    sa.Column("name", Name(), primary_key=True),
    uuid_col("job_uuid", sa.ForeignKey("jobs.uuid"), primary_key=True),
)

job_versions = sa.Table(
    "job_versions",
    metadata,
    uuid_col("uuid", primary_key=True),
    uuid_col("job_uuid", sa.ForeignKey("jobs.uuid"), nullable=False),
    sa.Column("version", sa.String(64), nullable=False),
    sa.Column("source_code", sa.Text(), nullable=True),
    sa.Column("location", sa.Text(), nullable=True),
    sa.Column("inputs", JSONType, nullable=True),
    sa.Column("outputs", JSONType, nullable=True),
    uuid_col("latest_run_uuid", nullable=True),
    ts_col("created_at", nullable=False),
    ts_col("updated_at", nullable=False),
    # The job facets whose program the fingerprint took, e.g. ["sql"]; [] for io alone.
    sa.Column("program_facets", JSONType, nullable=True),
    sa.UniqueConstraint("job_uuid", "version"),
)

job_version_io = sa.Table(
    "job_version_io",
    metadata,
    uuid_col("job_version_uuid", sa.ForeignKey("job_versions.uuid"), primary_key=True),
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), primary_key=True),
    sa.Column("io_type", sa.String(8), primary_key=True),
    uuid_col("job_uuid", sa.ForeignKey("jobs.uuid"), nullable=False),
    sa.CheckConstraint("io_type IN ('INPUT','OUTPUT')", name="io_type"),
    sa.Index("ix_job_version_io_dataset", "dataset_uuid", "io_type"),
    sa.Index("ix_job_version_io_job", "job_uuid", "io_type"),
)

runs = sa.Table(
    "runs",
    metadata,
    uuid_col("uuid", primary_key=True),
    uuid_col("job_uuid", sa.ForeignKey("jobs.uuid"), nullable=False),
    uuid_col("job_version_uuid", sa.ForeignKey("job_versions.uuid"), nullable=True),
    uuid_col("parent_run_uuid", nullable=True),
    sa.Column("state", sa.String(16), nullable=False, server_default="NEW"),
    ts_col("nominal_start_time", nullable=True),
    ts_col("nominal_end_time", nullable=True),
    ts_col("started_at", nullable=True),
    ts_col("ended_at", nullable=True),
    ts_col("transitioned_at", nullable=True),
    ts_col("created_at", nullable=False),
    ts_col("updated_at", nullable=False),
    sa.Column("facets", JSONType, nullable=True),
    sa.Column("error", JSONType, nullable=True),
    # The inputFacets and outputFacets the run's events sent, by dataset (migration 0014):
    # {"inputs": [[namespace, name, facets], ...], "outputs": [...]}.
    sa.Column("io_facets", JSONType, nullable=True),
    sa.CheckConstraint("state IN ('NEW','RUNNING','COMPLETED','FAILED','ABORTED')", name="state"),
    # A partitioned transform's run: the key its ``strata_partition`` facet names.
    sa.Column("partition_key", sa.Text(), nullable=True),
    sa.Index("ix_runs_job_created", "job_uuid", "created_at", "uuid"),
    sa.Index(
        "ix_runs_job_partition",
        "job_uuid",
        "partition_key",
        sqlite_where=sa.text("partition_key IS NOT NULL"),
        postgresql_where=sa.text("partition_key IS NOT NULL"),
    ),
    sa.Index("ix_runs_created", "created_at"),
    # A job version's runs, for lineage retention's refresh of the versions it pruned.
    sa.Index("ix_runs_job_version", "job_version_uuid"),
    # Runs not completed are few: where a job's newest program has not caught up.
    sa.Index(
        "ix_runs_unfinished",
        "job_uuid",
        sqlite_where=sa.text("state <> 'COMPLETED'"),
        postgresql_where=sa.text("state <> 'COMPLETED'"),
    ),
    sa.Index(
        "ix_runs_parent",
        "parent_run_uuid",
        sqlite_where=sa.text("parent_run_uuid IS NOT NULL"),
        postgresql_where=sa.text("parent_run_uuid IS NOT NULL"),
    ),
)

# Runs per job, kept by triggers on ``runs`` (migration 0003 owns them) so a job's run list
# can report its total without counting hundreds of thousands of index entries per
# request. A job with no runs has no row. SQLite drops a table's triggers with the table:
# a migration that rebuilds ``runs`` in batch mode must create them again.
job_run_counts = sa.Table(
    "job_run_counts",
    metadata,
    uuid_col("job_uuid", primary_key=True),
    sa.Column("run_count", sa.BigInteger(), nullable=False),
)


run_states = sa.Table(
    "run_states",
    metadata,
    uuid_col("uuid", primary_key=True),
    uuid_col("run_uuid", sa.ForeignKey("runs.uuid"), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    ts_col("transitioned_at", nullable=False),
    uuid_col("event_uuid", nullable=True),
    sa.Index("ix_run_states_run_time", "run_uuid", "transitioned_at"),
)

run_inputs = sa.Table(
    "run_inputs",
    metadata,
    uuid_col("run_uuid", sa.ForeignKey("runs.uuid"), primary_key=True),
    uuid_col("dataset_version_uuid", sa.ForeignKey("dataset_versions.uuid"), primary_key=True),
    sa.Index("ix_run_inputs_version", "dataset_version_uuid"),
)

# The inputFacets a run sent about an input (dbt's or Great Expectations'
# ``dataQualityAssertions`` …), filed under the version it was bound to (migration 0022):
# a version's readers' facets are read without visiting every reader. Rewritten with the
# run's bindings; ``sent_at`` is the run's latest event.
run_input_facets = sa.Table(
    "run_input_facets",
    metadata,
    uuid_col("run_uuid", sa.ForeignKey("runs.uuid"), primary_key=True),
    uuid_col("dataset_version_uuid", sa.ForeignKey("dataset_versions.uuid"), primary_key=True),
    sa.Column("facets", JSONType, nullable=False),
    ts_col("sent_at", nullable=False),
    sa.Index("ix_run_input_facets_version", "dataset_version_uuid", "sent_at"),
)

lineage_events = sa.Table(
    "lineage_events",
    metadata,
    uuid_col("uuid", primary_key=True),
    uuid_col("run_uuid", nullable=True),
    sa.Column("event_type", sa.String(16), nullable=True),
    ts_col("event_time", nullable=False),
    ts_col("received_at", nullable=False),
    sa.Column("producer", sa.Text(), nullable=True),
    sa.Column("job_namespace", Name(), nullable=True),
    sa.Column("job_name", Name(), nullable=True),
    sa.Column("payload", JSONTextType, nullable=False),
    sa.Column("payload_hash", sa.String(64), nullable=False, unique=True),
    sa.Index("ix_lineage_events_time", "event_time"),
    sa.Index("ix_lineage_events_run_time", "run_uuid", "event_time"),
)

# The server's queue of acknowledged events not yet folded into the model (see
# strata.lineage.record.writer): stored, valid, and waiting for the fold to store them in
# ``lineage_events`` and apply them. A row leaves when its event is folded; one the fold
# refuses stays with its ``error`` and is not tried again. On SQLite the queue lives in a
# file of its own beside the store, so storing never waits for the fold's write lock.
lineage_pending = sa.Table(
    "lineage_pending",
    metadata,
    serial_col("seq"),
    sa.Column("payload_hash", sa.String(64), nullable=False, unique=True),
    # The event's JSON text, as hashed: only the fold reads it, and it stores the text as
    # it is (as JSONB on PostgreSQL it would be parsed on the way in and printed on the way
    # out, for nothing).
    sa.Column("payload", sa.Text(), nullable=False),
    ts_col("received_at", nullable=False),
    sa.Column("error", sa.Text(), nullable=True),
)

tags = sa.Table(
    "tags",
    metadata,
    sa.Column("name", Name(), primary_key=True),
    sa.Column("description", sa.Text(), nullable=True),
    ts_col("created_at", nullable=False),
    ts_col("updated_at", nullable=False),
)

dataset_tags = sa.Table(
    "dataset_tags",
    metadata,
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), primary_key=True),
    sa.Column("tag_name", Name(), sa.ForeignKey("tags.name"), primary_key=True),
    # '' tags the dataset itself; a field name tags that field.
    sa.Column("field_name", Name(), primary_key=True, server_default=""),
    ts_col("tagged_at", nullable=False),
)

job_tags = sa.Table(
    "job_tags",
    metadata,
    uuid_col("job_uuid", sa.ForeignKey("jobs.uuid"), primary_key=True),
    sa.Column("tag_name", Name(), sa.ForeignKey("tags.name"), primary_key=True),
    ts_col("tagged_at", nullable=False),
)

dataset_symlinks = sa.Table(
    "dataset_symlinks",
    metadata,
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), primary_key=True),
    sa.Column("namespace", Name(), primary_key=True),
    sa.Column("name", Name(), primary_key=True),
    sa.Column("type", Name(), nullable=True),
    sa.Index("ix_dataset_symlinks_name", "namespace", "name"),
)

column_lineage = sa.Table(
    "column_lineage",
    metadata,
    uuid_col("dataset_version_uuid", sa.ForeignKey("dataset_versions.uuid"), primary_key=True),
    sa.Column("output_field", Name(), primary_key=True),
    uuid_col("input_dataset_uuid", sa.ForeignKey("datasets.uuid"), primary_key=True),
    sa.Column("input_field", Name(), primary_key=True),
    sa.Column("transformation_type", Name(), nullable=True),
    sa.Column("transformation_description", sa.Text(), nullable=True),
    ts_col("created_at", nullable=False),
    sa.Index("ix_column_lineage_input", "input_dataset_uuid", "input_field"),
)

build_triggers = sa.Table(
    "build_triggers",
    metadata,
    serial_col("id"),
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), nullable=False),
    sa.Column("commit_id", sa.BigInteger(), nullable=False),
    ts_col("created_at", nullable=False),
    ts_col("claimed_at", nullable=True),
    sa.Column("claimed_by", Name(), nullable=True),
    ts_col("done_at", nullable=True),
    sa.Column("error", sa.Text(), nullable=True),
    # A build that failed for a reason that can pass leaves its trigger pending: how often
    # it was tried, and not before when it is tried again.
    sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    ts_col("retry_at", nullable=True),
    # The branch whose commit raised it: only that branch's workers take it.
    sa.Column("branch_id", sa.String(36), nullable=False, server_default="main"),
    sa.Index("ix_build_triggers_pending", "done_at", "claimed_at"),
)

# Program versions of transforms: the job version's fingerprint with its per-transform
# ordinal, the declaration it was built with and the source files needed to run it again.
# ``uuid`` is the lineage job version's uuid, so a run's ``job_version_uuid`` finds it.
program_versions = sa.Table(
    "program_versions",
    metadata,
    uuid_col("uuid", primary_key=True),
    sa.Column("namespace", Name(), nullable=False),
    sa.Column("job_name", Name(), nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("ordinal", sa.Integer(), nullable=False),
    sa.Column("declaration", JSONType, nullable=False),
    sa.Column("files", JSONType, nullable=False),
    sa.Column("entry", JSONType, nullable=False),
    ts_col("created_at", nullable=False),
    sa.UniqueConstraint("namespace", "job_name", "fingerprint"),
    sa.UniqueConstraint("namespace", "job_name", "ordinal"),
)

# The column lineage a program version's plan gives each output, planned on the inputs of
# the day without running it (``strata status --columns``): status compares it with the
# lineage of the version the older program built, to say which columns a change touches.
program_lineage = sa.Table(
    "program_lineage",
    metadata,
    sa.Column("namespace", Name(), primary_key=True),
    sa.Column("job_name", Name(), primary_key=True),
    sa.Column("fingerprint", sa.String(64), primary_key=True),
    # {output: {"columns": [names], "fields": columnLineage fields}}
    sa.Column("outputs", JSONType, nullable=False),
    ts_col("planned_at", nullable=False),
)

# Column lineage derived from a Spark plan, by the plan's signature (its tree with ids
# renumbered, files aside): a rebuild of an unchanged program on inputs of unchanged
# schemas finds it here instead of deriving it again.
plan_lineage = sa.Table(
    "plan_lineage",
    metadata,
    sa.Column("signature", sa.String(64), primary_key=True),
    sa.Column("derived", sa.Text(), nullable=False),
    ts_col("created_at", nullable=False),
)

# One holder at a time per transform: a build (CLI or worker) leases the transform's job
# before it runs it and renews the lease while it works; an expired lease is free.
build_leases = sa.Table(
    "build_leases",
    metadata,
    sa.Column("name", Name(), primary_key=True),
    sa.Column("holder", Name(), nullable=False),
    ts_col("expires_at", nullable=False),
)

# The build catalog of a partitioned output, one row per partition: the version and run
# that last built it, the program, and the version of each input that run read.
partition_builds = sa.Table(
    "partition_builds",
    metadata,
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), primary_key=True),
    sa.Column("partition_key", sa.Text(), primary_key=True),
    sa.Column("commit_id", sa.BigInteger(), nullable=False),
    uuid_col("run_uuid", nullable=False),
    sa.Column("program", sa.String(64), nullable=False),
    sa.Column("inputs", JSONType, nullable=False),
    ts_col("built_at", nullable=False),
)

# Each partition's rows as of every commit that touched it: their row hash (null when
# unknown: files of it removed one by one, or a write that could not hash by partition,
# or the partition removed), and ``data_commit_id``, the commit whose rows it still holds
# (earlier than ``commit_id`` when a rewrite left its rows as they were). Sums of these
# are the version's row hash; ``data_commit_id`` is what per-partition early cutoff reads.
partition_hashes = sa.Table(
    "partition_hashes",
    metadata,
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), primary_key=True),
    sa.Column("partition_key", sa.Text(), primary_key=True),
    sa.Column("commit_id", sa.BigInteger(), primary_key=True),
    sa.Column("row_hash", sa.String(64), nullable=True),
    sa.Column("data_commit_id", sa.BigInteger(), nullable=False),
)

# What each data check of a build found (``outcome``: passed, warned or failed), on the
# dataset version it judged: an input's version read, or the output version committed
# (``commit_id`` null: the run failed and committed nothing). ``job`` is the transform.
check_results = sa.Table(
    "check_results",
    metadata,
    serial_col("id"),
    uuid_col("run_uuid", nullable=False),
    sa.Column("job", sa.Text(), nullable=False),
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), nullable=False),
    sa.Column("commit_id", sa.BigInteger(), nullable=True),
    sa.Column("side", sa.String(8), nullable=False),
    sa.Column("partition_key", sa.Text(), nullable=True),
    sa.Column("name", sa.Text(), nullable=False),
    sa.Column("expectation", sa.Text(), nullable=False),
    sa.Column("on_error", sa.String(8), nullable=False),
    sa.Column("outcome", sa.String(8), nullable=False),
    sa.Column("observed", JSONType, nullable=False),
    sa.Column("failing", sa.BigInteger(), nullable=True),
    sa.Column("samples", JSONType, nullable=False),
    ts_col("recorded_at", nullable=False),
    sa.CheckConstraint("outcome IN ('passed','warned','failed')", name="outcome"),
    sa.Index("ix_check_results_dataset_uuid_commit_id", "dataset_uuid", "commit_id"),
    sa.Index("ix_check_results_run_uuid", "run_uuid"),
    sa.Index("ix_check_results_job_id", "job", "id"),
)

# Retention (strata.retention, migration 0024): the versions a policy selected, waiting
# out their grace; versions pinned against every policy; files a purge listed for
# deletion, until they are gone (a pass killed between the two is finished by the
# next); and each pass.
retention_marks = sa.Table(
    "retention_marks",
    metadata,
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), primary_key=True),
    sa.Column("commit_id", sa.BigInteger(), primary_key=True),
    sa.Column("policy", sa.Text(), nullable=False),
    ts_col("marked_at", nullable=False),
    sa.Column("bytes", sa.BigInteger(), nullable=False),
)

version_pins = sa.Table(
    "version_pins",
    metadata,
    uuid_col("dataset_uuid", sa.ForeignKey("datasets.uuid"), primary_key=True),
    sa.Column("commit_id", sa.BigInteger(), primary_key=True),
    ts_col("pinned_at", nullable=False),
    sa.Column("note", sa.Text(), nullable=True),
)

# Files to delete once the SQL transaction that listed them has committed (a purge, or
# the source copy of an archive move or a restore); root '' is the lake.
pending_deletes = sa.Table(
    "pending_deletes",
    metadata,
    sa.Column("root", sa.Text(), primary_key=True),
    sa.Column("path", sa.String(400), primary_key=True),
    ts_col("listed_at", nullable=False),
)

retention_passes = sa.Table(
    "retention_passes",
    metadata,
    serial_col("id"),
    ts_col("started_at", nullable=False),
    ts_col("ended_at", nullable=False),
    sa.Column("marked", sa.BigInteger(), nullable=False),
    sa.Column("unmarked", sa.BigInteger(), nullable=False),
    sa.Column("purged", sa.BigInteger(), nullable=False),
    sa.Column("files", sa.BigInteger(), nullable=False),
    sa.Column("bytes", sa.BigInteger(), nullable=False),
    sa.Column("trigger", sa.String(16), nullable=False),
    # retention | archive | restore | lineage
    sa.Column("kind", sa.String(16), nullable=False, server_default="retention"),
    # A pass's own counts: a lineage pass's runs, events and versions deleted.
    sa.Column("details", JSONType, nullable=True),
    sa.Index("ix_retention_passes_ended_at", "ended_at"),
)

# Schedules (strata.builds.workers.schedules): when a worker first saw each (firings missed before
# that are not caught up), and each firing taken. A firing's key is its schedule and due
# time: the worker whose insert lands takes it, so no firing is built twice.
# A schedule builds on the branch it names; the same name may fire on two branches.
schedules = sa.Table(
    "schedules",
    metadata,
    sa.Column("branch", sa.Text(), primary_key=True, server_default="main"),
    sa.Column("name", sa.Text(), primary_key=True),
    ts_col("registered_at", nullable=False),
)

schedule_firings = sa.Table(
    "schedule_firings",
    metadata,
    sa.Column("branch", sa.Text(), primary_key=True, server_default="main"),
    sa.Column("schedule", sa.Text(), primary_key=True),
    ts_col("due_at", primary_key=True),
    sa.Column("holder", sa.Text(), nullable=False),
    ts_col("started_at", nullable=False),
    ts_col("ended_at", nullable=True),
    sa.Column("outcome", sa.String(16), nullable=True),
    uuid_col("run_uuid", nullable=True),
    sa.Column("error", sa.Text(), nullable=True),
    # While it runs: when its worker's hold lapses unless renewed (a worker killed
    # mid-build renews it no more); None once ended.
    ts_col("expires_at", nullable=True),
)

# Builds asked for over HTTP (``POST /api/v1/strata/builds``) and their progress: the
# server that took one (``holder``) runs it and writes what it has done into ``progress``
# (planned, running and finished transforms), so any server of the store can answer.
build_requests = sa.Table(
    "build_requests",
    metadata,
    uuid_col("uuid", primary_key=True),
    sa.Column("dataset", sa.Text(), nullable=False),
    sa.Column("force", sa.Boolean(), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("holder", sa.Text(), nullable=False),
    ts_col("requested_at", nullable=False),
    ts_col("started_at", nullable=True),
    ts_col("ended_at", nullable=True),
    sa.Column("progress", JSONType, nullable=False),
    sa.Column("error", sa.Text(), nullable=True),
    uuid_col("run_uuid", nullable=True),
    sa.CheckConstraint(
        "state IN ('QUEUED','RUNNING','COMPLETED','FAILED','ABORTED')", name="state"
    ),
    sa.Index("ix_build_requests_requested", "requested_at"),
)

# Soft delete (``is_hidden`` on datasets, jobs, namespaces) is undone the way Marquez undoes
# it: a later event naming the row, a new dataset version (lake commits included), or a PUT
# of the namespace. Triggers do it so every write path is covered without each knowing.
