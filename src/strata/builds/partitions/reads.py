"""What partition runs read: one run's input partitions and rows, or a batch's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from strata.builds.execution.execute import Partition
from strata.builds.partitions.planning import Layout
from strata.builds.programs.discovery import Declared
from strata.lake import partitions as pkeys
from strata.lake.registry import Version


def filtered(v: Version, layout: Layout) -> bool:
    """Whether input ``v`` is read whole but filtered to the partitions' keys: it is not
    partitioned, and has the key's columns."""
    return v.dataset in layout.whole and set(layout.by) <= {f["name"] for f in v.schema_fields}


def filtered_inputs(inputs: Mapping[str, Version], layout: Layout) -> list[str]:
    """The inputs :func:`filtered` to the partitions' keys."""
    return [v.dataset for v in inputs.values() if filtered(v, layout)]


def partition_of(
    item: Declared, inputs: Mapping[str, Version], layout: Layout, key: str
) -> Partition:
    """What the run of partition ``key`` (text) alone reads and writes."""
    sources = {name: sorted(ks) for name, ks in layout.sources.get(key, {}).items()}
    for name in item.input_names:
        if name not in layout.whole:
            sources.setdefault(name, [])  # no partition feeds this one: reads no rows
    where = pkeys.parse_text(key)
    return Partition(where, sources, {name: [where] for name in filtered_inputs(inputs, layout)})


def batch_of(
    item: Declared, inputs: Mapping[str, Version], layout: Layout, keys: Sequence[str]
) -> Partition:
    """What the runs of ``keys`` read and write together: every input partition feeding
    any of them, and the rows of any of their keys."""
    fed: dict[str, set[str]] = {
        name: set() for name in item.input_names if name not in layout.whole
    }
    for key in keys:
        for name, ks in layout.sources.get(key, {}).items():
            fed.setdefault(name, set()).update(ks)
    wheres = [pkeys.parse_text(k) for k in keys]
    rows = {name: wheres for name in filtered_inputs(inputs, layout)}
    return Partition(None, {n: sorted(ks) for n, ks in fed.items()}, rows, frozenset(keys))
