"""The dependency graph: datasets are nodes, each transform links its inputs to its outputs.

Raw datasets are leaves. A dataset has at most one producing transform, so the graph
of transforms and the graph of datasets are walked alike; walks are iterative, since a
generated chain may be deeper than Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise


@dataclass(frozen=True)
class Node:
    """One transform as the graph sees it."""

    key: str  # the transform's full name
    inputs: tuple[str, ...]  # dataset names, in declaration order
    outputs: tuple[str, ...]


@dataclass
class Graph:
    """Transforms, and which transform writes each dataset."""

    nodes: dict[str, Node]
    producer: dict[str, str] = field(default_factory=dict)
    _upstream: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, nodes: Iterable[Node]) -> Graph:
        graph = cls({n.key: n for n in nodes})
        for node in graph.nodes.values():
            for out in node.outputs:
                graph.producer.setdefault(out, node.key)
        return graph

    def upstream(self, key: str) -> list[str]:
        """The transforms that write ``key``'s inputs, once each, in input order."""
        found = self._upstream.get(key)
        if found is None:
            seen: dict[str, None] = {}
            for name in self.nodes[key].inputs:
                up = self.producer.get(name)
                if up is not None:
                    seen.setdefault(up, None)
            found = self._upstream[key] = list(seen)
        return found

    def downstream(self) -> dict[str, list[str]]:
        """For each transform, the transforms that read one of its outputs."""
        out: dict[str, list[str]] = {k: [] for k in self.nodes}
        for key in self.nodes:
            for up in self.upstream(key):
                out[up].append(key)
        return out

    def post_order(self, starts: Sequence[str]) -> list[str]:
        """``starts`` and everything upstream of them, each after its upstreams
        (depth first, in declaration order)."""
        done: dict[str, None] = {}
        for start in starts:
            if start in done:
                continue
            stack: list[tuple[str, int]] = [(start, 0)]
            on_path = {start}
            while stack:
                key, i = stack.pop()
                ups = self.upstream(key)
                while i < len(ups) and (ups[i] in done or ups[i] in on_path):
                    i += 1
                if i < len(ups):
                    stack.append((key, i + 1))
                    stack.append((ups[i], 0))
                    on_path.add(ups[i])
                else:
                    done[key] = None
                    on_path.discard(key)
        return list(done)

    @cached_property
    def everything(self) -> list[str]:
        """Every transform, each after its upstreams (the graph does not change once
        made: status walks it on every call)."""
        return self.post_order(list(self.nodes))

    def roots(self) -> list[str]:
        """Transforms none of whose outputs another transform reads."""
        read = {name for n in self.nodes.values() for name in n.inputs}
        return [k for k, n in self.nodes.items() if not any(o in read for o in n.outputs)]

    def dependents_of(self, dataset: str) -> list[str]:
        """Transforms that read ``dataset``."""
        return [k for k, n in self.nodes.items() if dataset in n.inputs]


def find_cycle(graph: Graph) -> list[str] | None:
    """A cycle of datasets (first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for start in graph.nodes:
        if state.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            key, i = stack.pop()
            if i == 0:
                state[key] = 1
                path.append(key)
            ups = graph.upstream(key)
            if i < len(ups):
                stack.append((key, i + 1))
                nxt = ups[i]
                if state.get(nxt) == 1:
                    return _cycle_datasets(graph, [*path[path.index(nxt) :], nxt])
                if not state.get(nxt):
                    stack.append((nxt, 0))
            else:
                state[key] = 2
                path.pop()
    return None


def _cycle_datasets(graph: Graph, keys: list[str]) -> list[str]:
    """Name a cycle of transforms (each reading the next's output) by datasets."""
    names: list[str] = []
    for reader, writer in pairwise(keys):
        written = set(graph.nodes[writer].outputs)
        names.append(next(i for i in graph.nodes[reader].inputs if i in written))
    return [*reversed(names), names[-1]] if names else []
