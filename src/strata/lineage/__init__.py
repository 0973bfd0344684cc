"""Recording lineage (:mod:`.record`, the write path: validated, queued, folded) and
lineage queries (:mod:`.query`, the read path).

The two never import each other; what both need (:mod:`.keys`, :mod:`.producer`) sits here.
"""
