"""OpenLineage ingest (:mod:`.ingest`, the write path) and lineage queries (:mod:`.query`).

The two never import each other; what both need (:mod:`.keys`, :mod:`.producer`) sits here.
"""
