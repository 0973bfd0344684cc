"""Column lineage of builds: derived from Spark plans, cached per plan, traced, and
compared across program versions."""
