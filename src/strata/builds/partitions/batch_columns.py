"""The key columns a batch's output checks read back, a group of partitions at a time.

Each partition's checks count its keys from its own rows. Read one partition at a time,
a batch of a thousand small partitions spends most of its checks' time opening files:
the batch's partitions are read together, in the order the checks ask for them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from strata.builds.checks import key_counts

if TYPE_CHECKING:
    import pyarrow as pa

    from strata.lake.transaction import Transaction

_Stream = Iterator[tuple[str, "pa.Table | None"]]


class BatchColumns:
    """Columns of each partition of ``keys`` written to a transaction since ``mark``."""

    def __init__(self, txn: Transaction, mark: Mapping[str, int], keys: Sequence[str]) -> None:
        self._txn, self._mark, self._keys = txn, mark, list(keys)
        self._order = {k: i for i, k in enumerate(self._keys)}
        self._streams: dict[tuple[str, tuple[str, ...]], tuple[_Stream, list[int]]] = {}

    def read(self, dataset: str, columns: Sequence[str], key: str) -> pa.Table | None:
        """``columns`` of partition ``key`` of ``dataset``, as
        :meth:`Transaction.pending_columns` reads it (None when over
        :data:`key_counts.MAX_BYTES`). Asked in ``keys``' order, each group of
        partitions is read once; a key asked again or out of order is read alone."""
        wanted = (dataset, tuple(columns))
        if wanted not in self._streams:
            self._streams[wanted] = (self._stream(dataset, columns), [0])
        stream, at = self._streams[wanted]
        if self._order.get(key, -1) >= at[0]:
            for found, table in stream:
                at[0] = self._order[found] + 1
                if found == key:
                    return table
        limit, since = key_counts.MAX_BYTES, self._mark[dataset]
        return self._txn.pending_columns(
            dataset, columns, since=since, max_bytes=limit, partition=key
        )

    def _stream(self, dataset: str, columns: Sequence[str]) -> _Stream:
        return self._txn.pending_columns_by_partition(
            dataset, columns, self._keys, since=self._mark[dataset], max_bytes=key_counts.MAX_BYTES
        )
