"""Retention of lake data: policies select old versions, a pass marks them and, after a
grace period, purges them. A purged version keeps its row and catalog entry; only the
files no kept version reads are deleted."""
