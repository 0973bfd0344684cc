"""Alembic environment: always run on a connection handed in by strata.store.migrate."""

from __future__ import annotations

from alembic import context

from strata.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only through strata.store.migrate
    raise RuntimeError("run migrations through `strata init` (strata.store.migrate)")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
