"""The key columns a batch's output checks read back, a group of partitions at a time.

Each partition's checks count its keys from its own rows. Read one partition at a time,
a batch of a thousand small partitions spends most of its checks' time opening files:
the batch's partitions are read together, in the order the checks ask for them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from strata.builds.checks import key_counts

if TYPE_CHECKING:
    import pyarrow as pa

    from strata.lake.transaction import Transaction


@dataclass
class _Stream:
    """One output's columns, partition by partition, and the index in the batch's keys
    of the next partition it yields."""

    tables: Iterator[tuple[str, pa.Table | None]]
    next: int = 0


class BatchColumns:
    """Columns of each partition of ``keys`` written to a transaction since ``mark``."""

    def __init__(self, txn: Transaction, mark: Mapping[str, int], keys: Sequence[str]) -> None:
        self._txn, self._mark, self._keys = txn, mark, list(keys)
        self._order = {k: i for i, k in enumerate(self._keys)}
        self._streams: dict[tuple[str, tuple[str, ...]], _Stream] = {}

    def read(self, dataset: str, columns: Sequence[str], key: str) -> pa.Table | None:
        """``columns`` of partition ``key`` of ``dataset``, as
        :meth:`Transaction.pending_columns` reads it (None when over
        :data:`key_counts.MAX_BYTES`). Asked in ``keys``' order, each group of
        partitions is read once; a key asked again or out of order is read alone."""
        limit, since = key_counts.MAX_BYTES, self._mark[dataset]
        wanted = (dataset, tuple(columns))
        if wanted not in self._streams:
            tables = self._txn.pending_columns_by_partition(
                dataset, columns, self._keys, since=since, max_bytes=limit
            )
            self._streams[wanted] = _Stream(tables)
        stream = self._streams[wanted]
        if self._order.get(key, -1) >= stream.next:
            for found, table in stream.tables:
                stream.next = self._order[found] + 1
                if found == key:
                    return table
        return self._txn.pending_columns(
            dataset, columns, since=since, max_bytes=limit, partition=key
        )
