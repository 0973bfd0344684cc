"""The provenance of one partition of a version, down to the raw partitions it came from.

A partition's content at version N is what the last version up to N that touched its key
wrote there, by the run that version records for the key. That run's facet names the
input partitions it read, at the input versions it read; each is traced the same way. An
input the run read whole is traced as a dataset (:func:`strata.builds.history.trace`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strata.builds.state import BuildState
from strata.builds.state.catalog import VersionEntry
from strata.errors import InvalidArgument, NotFound
from strata.lake import partitions as pkeys
from strata.lake.partition_index import touched_keys
from strata.lineage.record.facets import PARTITION_FACET


def partition_trace(
    state: BuildState,
    dataset: str,
    version: int | None,
    key: Mapping[str, list[str]],
    depth: int,
    whole: Any,
) -> dict[str, Any]:
    """The trace tree of partition ``key`` (one value for every column) of ``dataset`` at
    ``version`` (default: current); ``whole(dataset, version)`` traces an input read
    whole."""
    walk = _Walk(state, whole)
    walk.history(dataset)  # an unknown dataset is NotFound before its key is judged
    return walk.node(dataset, version, whole_key(state, dataset, key), depth)


def partition_runs(state: BuildState, dataset: str, version: int) -> dict[str, str | None]:
    """Each partition ``dataset`` holds at ``version``, with the run that wrote what it
    holds (None: written by one run of the whole dataset, or by hand)."""
    entries = [x for x in state.history(dataset)[0] if x.version <= version]
    out: dict[str, str | None] = {}
    for key in state.live_partitions(dataset, version):
        made = next((x for x in reversed(entries) if key in touched_keys(x.partitions)), None)
        out[key] = (made.partitions or {}).get("runs", {}).get(key) if made else None
    return out


def whole_key(state: BuildState, dataset: str, key: Mapping[str, list[str]]) -> str:
    """The key text of one partition named by every partition column of ``dataset``."""
    by = state.partition_by([dataset]).get(dataset)
    wanted = pkeys.check_filter(dataset, by, {c: vs[0] for c, vs in key.items()})
    assert by is not None
    if set(wanted) != set(by) or any(len(vs) > 1 for vs in key.values()):
        raise InvalidArgument(
            f"name one partition: every partition column of {dataset!r} "
            f"({', '.join(by)}) once, e.g. --partition "
            + ",".join(f"{c}={wanted.get(c, '…')}" for c in by),
            dataset=dataset,
        )
    return pkeys.key_text(by, wanted)


class _Walk:
    def __init__(self, state: BuildState, whole: Any) -> None:
        self.state, self.whole = state, whole
        self.histories: dict[str, list[VersionEntry]] = {}

    def history(self, dataset: str) -> list[VersionEntry]:
        if dataset not in self.histories:
            self.histories[dataset] = self.state.history(dataset)[0]
        return self.histories[dataset]

    def node(self, dataset: str, version: int | None, key: str, depth: int) -> dict[str, Any]:
        entries = self.history(dataset)
        at = version if version is not None else (entries[-1].version if entries else 0)
        made = next(
            (x for x in reversed(entries) if x.version <= at and key in touched_keys(x.partitions)),
            None,
        )
        if made is None:
            raise NotFound(
                f"{dataset!r} has no partition {key} at version {at}; see `strata versions "
                f"{dataset}`",
                dataset=dataset,
            )
        assert made.partitions is not None
        run = made.partitions.get("runs", {}).get(key)
        out: dict[str, Any] = {
            "dataset": dataset,
            "version": made.version,
            "partition": pkeys.parse_text(key),
            "removed": key in made.partitions.get("removed", []),
            "run": run,
            "state": None,
            "program": None,
            "inputs": [],
        }
        if run is None or depth <= 0:
            return out
        return self._expand(out, run, depth)

    def _expand(self, out: dict[str, Any], run: str, depth: int) -> dict[str, Any]:
        detail = self.state.run_details([run]).get(run)
        if detail is None:
            return out
        out["state"] = detail.state
        if detail.job_version is not None:
            found = self.state.ordinals_of([detail.job_version]).get(detail.job_version)
            if found is not None:
                out["program"] = {"transform": found[0], "ordinal": found[1]}
        read = dict(detail.facets.get(PARTITION_FACET, {}).get("read") or {})
        for name, at in sorted(self.state.run_inputs([run]).get(run, {}).items()):
            if name not in read:
                out["inputs"].append(self.whole(name, at))
                continue
            for k in read[name]:
                try:
                    out["inputs"].append(self.node(name, at, k, depth - 1))
                except NotFound:  # a partition the run was fed that held no rows then
                    continue
        return out
