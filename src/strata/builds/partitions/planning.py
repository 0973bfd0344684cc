"""Which input partitions feed which output partition, and which output partitions are
out of date: a partitioned transform's plan, from declarations and the catalog alone.

Each partition key of a partitioned input maps to one output partition: by the output's
columns taken from the input's key (the shared keys), or by the input's
``partition_map``. An input that is not partitioned feeds every output partition. An
output partition is out of date when it was never built, its program changed, one of
the input partitions that feed it changed (added, replaced, appended to or removed)
after the input version it was built from, an unpartitioned input moved, or an upstream
partition feeding it is itself out of date.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from strata.builds.programs.discovery import Declared
from strata.builds.staleness.causes import Cause, CauseKind
from strata.builds.state import BuildState
from strata.builds.state.catalog import Current
from strata.errors import InvalidArgument, TransformError
from strata.lake import partitions as pkeys
from strata.store.owners.partition_builds import PartitionBuild


@dataclass
class Layout:
    """How one partitioned transform's partitions connect."""

    by: tuple[str, ...]
    # output key -> input dataset -> the input keys that feed it
    sources: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # inputs that are not partitioned: read whole, or (those with the key's columns) their
    # rows of the partition
    whole: tuple[str, ...] = ()


def _map_key(item: Declared, param: str, by: Sequence[str], key: str) -> str:
    """The output partition an input partition feeds, checked."""
    inp = item.inputs[param]
    values = pkeys.parse_text(key)
    if inp.partition_map is None:
        lacking = [c for c in by if c not in values]
        if lacking:
            raise TransformError(
                f"transform {item.fqn} ({item.where}): input {inp.name!r} is partitioned by "
                f"{list(values)}, which lacks the output's {lacking}; declare "
                f"Input({inp.name!r}, partition_map=fn) mapping its keys to the output's",
                transform=item.fqn,
            )
        return pkeys.key_text(by, values)
    try:
        got = inp.partition_map(dict(values))
    except Exception as exc:
        raise TransformError(
            f"transform {item.fqn} ({item.where}): partition_map of {inp.name!r} raised "
            f"{type(exc).__name__}: {exc} on partition {key}",
            transform=item.fqn,
        ) from exc
    if not isinstance(got, Mapping) or set(got) != set(by):
        keys = sorted(got) if isinstance(got, Mapping) else type(got).__name__
        raise TransformError(
            f"transform {item.fqn} ({item.where}): partition_map of {inp.name!r} returned "
            f"{keys} for partition {key}; it must return a dict of exactly the output's "
            f"partition columns {list(by)}",
            transform=item.fqn,
        )
    try:
        text = {c: pkeys.check_value(item.fqn, c, pkeys.value_text(got[c])) for c in by}
    except InvalidArgument as exc:
        raise TransformError(
            f"transform {item.fqn} ({item.where}): partition_map of {inp.name!r} returned "
            f"{dict(got)!r} for partition {key}: {exc.message}",
            transform=item.fqn,
        ) from exc
    return pkeys.key_text(by, text)


def layout(
    item: Declared, input_by: Mapping[str, Sequence[str]], input_keys: Mapping[str, Sequence[str]]
) -> Layout:
    """The plan's map: ``input_by`` names the partitioned inputs, ``input_keys`` their keys
    (any held now or before: a removed input partition still feeds its output's)."""
    by = item.partition_by
    assert by is not None
    out = Layout(by)
    whole: list[str] = []
    for param, inp in item.inputs.items():
        if inp.name not in input_by:
            if inp.partition_map is not None:
                raise TransformError(
                    f"transform {item.fqn} ({item.where}): Input({inp.name!r}) has a "
                    "partition_map, but the dataset is not partitioned",
                    transform=item.fqn,
                )
            whole.append(inp.name)
            continue
        # The shared keys, in the output's order: each input key is its output key.
        same = inp.partition_map is None and tuple(input_by[inp.name]) == tuple(by)
        for key in input_keys.get(inp.name, ()):
            _feed(out.sources, key if same else _map_key(item, param, by, key), inp.name, key)
    out.whole = tuple(dict.fromkeys(whole))
    return out


def _feed(sources: dict[str, dict[str, list[str]]], target: str, name: str, key: str) -> None:
    """Record that input ``name``'s partition ``key`` feeds output partition ``target``
    (no empty dict or list made per call: a layout takes 100,000 of them)."""
    fed = sources.get(target)
    if fed is None:
        sources[target] = {name: [key]}
        return
    keys = fed.get(name)
    if keys is None:
        fed[name] = [key]
    else:
        keys.append(key)


@dataclass(frozen=True)
class PartitionStatus:
    """One output partition's state."""

    key: str
    causes: list[Cause]

    @property
    def stale(self) -> bool:
        return bool(self.causes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": pkeys.parse_text(self.key),
            "stale": self.stale,
            "causes": [c.to_dict() for c in self.causes],
        }


@dataclass(frozen=True)
class Inputs:
    """What the inputs are now: each one's version, and each partitioned input's keys
    with the version that last changed them."""

    versions: Mapping[str, int]
    changed: Mapping[str, Mapping[str, int]]
    stale_upstream: Mapping[str, set[str] | bool] = field(default_factory=dict)


def partition_status(
    item: Declared,
    dataset: str,
    plan: Layout,
    built: Mapping[str, PartitionBuild],
    now: Inputs,
) -> list[PartitionStatus]:
    """Every output partition (fed now, or built before), with its causes."""
    judge = _Judge(item, dataset, plan, now)
    return [PartitionStatus(key, judge.causes(key, built.get(key))) for key in _keys(plan, built)]


def _keys(plan: Layout, built: Mapping[str, PartitionBuild]) -> list[str]:
    """The keys fed now or built before, in order. They are read grouped by key, so
    mostly in order already: sorting such a list is about one pass, where a set's order
    needs a whole sort (100 ms for 100,000 keys)."""
    keys = list(plan.sources)
    keys.extend(built.keys() - plan.sources.keys())
    keys.sort()
    return keys


_NO_SOURCES: dict[str, list[str]] = {}


class _Judge:
    """The causes of one output's partitions. What each input is now is looked up once,
    not once per partition: an output may have 100,000."""

    def __init__(self, item: Declared, dataset: str, plan: Layout, now: Inputs) -> None:
        self.dataset, self.fingerprint, self.sources = dataset, item.fingerprint, plan.sources
        self.inputs = [
            (name, name in plan.whole, now.changed.get(name, {}), now.stale_upstream.get(name))
            for name in item.input_names
        ]
        self.versions = now.versions

    def causes(self, key: str, record: PartitionBuild | None) -> list[Cause]:
        dataset = self.dataset
        if record is None:
            return [Cause(dataset, CauseKind.NEVER_BUILT, partition=pkeys.parse_text(key))]
        causes = []
        detail: dict[str, Any]
        if record.program != self.fingerprint:
            detail = {
                "old": {"fingerprint": record.program},
                "new": {"fingerprint": self.fingerprint},
            }
            causes.append(Cause(dataset, CauseKind.PROGRAM_CHANGED, detail=detail))
        reads, sources = record.inputs, self.sources.get(key, _NO_SOURCES)
        for name, whole, changed, upstream in self.inputs:
            read = reads.get(name)
            if read is None:
                causes.append(Cause(dataset, CauseKind.INPUT_ADDED, name))
                continue
            if whole:
                if self.versions.get(name, read) != read:
                    detail = {"built_from": read, "current": self.versions[name], "pinned": False}
                    causes.append(Cause(dataset, CauseKind.INPUT_NEWER, name, detail))
                if upstream is True:
                    causes.append(Cause(dataset, CauseKind.UPSTREAM_STALE, name))
                continue
            feeding = sources.get(name, ())
            for k in feeding:
                if changed.get(k, 0) > read:
                    detail = {"partition": pkeys.parse_text(k), "built_from": read}
                    detail["current"] = changed[k]
                    causes.append(Cause(dataset, CauseKind.INPUT_PARTITION_NEWER, name, detail))
            if upstream is True or (isinstance(upstream, set) and upstream.intersection(feeding)):
                causes.append(Cause(dataset, CauseKind.UPSTREAM_STALE, name))
        if not causes:
            return causes
        where = pkeys.parse_text(key)  # most partitions are fresh: their keys stay text
        return [replace(c, partition=where) for c in causes]


def select(keys: Sequence[str], wanted: Sequence[Mapping[str, str]] | None) -> list[str]:
    """Those of ``keys`` within any of ``wanted`` (each a key whose values may be ranges
    ``a..b``, compared as text: ISO dates and hours order as text); all when None."""
    if wanted is None:
        return list(keys)
    return [k for k in keys if any(_within(pkeys.parse_text(k), w) for w in wanted)]


def _within(key: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    for col, value in wanted.items():
        low, dots, high = value.partition("..")
        have = key.get(col)
        if have is None:
            return False
        if dots and not ((not low or low <= have) and (not high or have <= high)):
            return False
        if not dots and have != value:
            return False
    return True


@dataclass(frozen=True)
class PartitionFacts:
    """What the catalog says about partitioned transforms' inputs and outputs."""

    by: Mapping[str, Sequence[str]] = field(default_factory=dict)  # partitioned datasets
    changes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # key -> version
    records: Mapping[str, Mapping[str, PartitionBuild]] = field(default_factory=dict)


def partitioned(items: Iterable[Declared]) -> list[Declared]:
    return [i for i in items if i.partition_by is not None]


def by_partition(item: Declared, facts: PartitionFacts) -> bool:
    """Whether ``item`` builds partition by partition: its outputs are partitioned and
    some input is (else one run writes the whole output, laid out by partition)."""
    return item.partition_by is not None and any(n in facts.by for n in item.input_names)


def declared_partitioning(items: Iterable[Declared]) -> dict[str, Sequence[str]]:
    """Each output of a partitioned transform, with the columns it is partitioned by."""
    return {
        name: by
        for item in items
        if (by := item.partition_by) is not None
        for name in item.output_names
    }


def gather(
    state: BuildState,
    items: Iterable[Declared],
    current: Mapping[str, Current],
    declared: Mapping[str, Sequence[str]] | None = None,
) -> PartitionFacts:
    """The facts :func:`assess_item` needs for those of ``items`` that are partitioned:
    a few queries per partitioned transform, none for the rest. ``declared`` (dataset ->
    the partition_by its transform declares) covers inputs not built yet."""
    chosen = partitioned(items)
    if not chosen:
        return PartitionFacts()
    names = {n for i in chosen for n in i.input_names}
    by = {n: d for n, d in (declared or {}).items() if n in names}
    by.update(state.partition_by(names))
    versions = {n: current[n].commit_id for n in by if n in current}
    records = {o: state.partition_records(o) for i in chosen for o in i.output_names}
    changes = state.partition_changes(versions, _oldest_reads(chosen, records))
    return PartitionFacts(by, changes, records)


def _oldest_reads(
    items: Iterable[Declared], records: Mapping[str, Mapping[str, PartitionBuild]]
) -> dict[str, int]:
    """Each input's oldest version a build record read: :class:`_Judge` compares a key's
    change only with versions records read, so below this floor it needs no exact one."""
    out: dict[str, int] = {}
    for item in items:
        seen: set[int] = set()  # records mostly share one mapping (read, never changed)
        for name in item.output_names:
            for record in records.get(name, {}).values():
                if id(record.inputs) in seen:
                    continue
                seen.add(id(record.inputs))
                for n, version in record.inputs.items():
                    if n in item.input_names:
                        out[n] = min(out.get(n, version), version)
    return out


def assess_item(
    item: Declared,
    current: Mapping[str, Current],
    facts: PartitionFacts,
    stale_upstream: Mapping[str, set[str] | bool] | None = None,
) -> tuple[Layout, dict[str, list[PartitionStatus]]]:
    """A partitioned transform's map and each output's partitions with their causes.

    An upstream partition that is out of date and not yet built (new input there) feeds
    the output partition it will map to, so that one shows as out of date too."""
    keys = {}
    for name in (n for n in item.input_names if n in facts.by):
        held = list(facts.changes.get(name, {}))
        pending = (stale_upstream or {}).get(name)
        extra = sorted(pending - set(held)) if isinstance(pending, set) else []
        keys[name] = held + extra
    plan = layout(item, facts.by, keys)
    versions = {n: c.commit_id for n, c in current.items() if n in item.input_names}
    now = Inputs(versions, facts.changes, stale_upstream or {})
    return plan, {
        o: partition_status(item, o, plan, facts.records.get(o, {}), now) for o in item.output_names
    }
