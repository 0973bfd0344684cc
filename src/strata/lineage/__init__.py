"""OpenLineage ingest (write path) and lineage queries (read path)."""
