"""Partitioned transforms: which partitions feed which, their runs, their provenance."""
