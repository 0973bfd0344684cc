"""The producer URN on the events the REST API's writes make.

:mod:`~strata.lineage.record.marquez_writes` stamps it on the events it builds; the read side
(:mod:`~strata.lineage.query.run_args`) recognises a run created by ``POST .../runs`` by it.
"""

from __future__ import annotations

PRODUCER = "https://github.com/strata/strata/lineage/writes"
