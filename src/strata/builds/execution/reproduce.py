"""Reproduce a built version: its stored program, run again on its recorded input versions.

The program's stored source files are written to a scratch folder and imported from
there (not from the pipelines as they are now); the outputs go to a scratch transaction
that is aborted, never committed, and the data fingerprint of what was written is
compared with the one recorded for the version (for an APPEND version, with that of the
rows it added). An incremental version is run again on its recorded input ranges and
previous output version. Differences are counted by column and by row.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strata.builds.execution import incremental
from strata.builds.execution.execute import Partition, call_transform, write_type
from strata.builds.execution.incremental import Plan, ReadRange
from strata.builds.history import Entry, entry
from strata.builds.partitions.trace import partition_runs, whole_key
from strata.builds.programs.discovery import Declared, load_pipelines
from strata.builds.state import BuildState
from strata.builds.state.build_reads import BuildRead, InputRead
from strata.builds.state.programs import Program
from strata.errors import NotFound, PurgedVersion
from strata.lake import partitions as pkeys
from strata.lake.registry import Version
from strata.lake.rowhash import RowHash, fingerprint
from strata.lake.service import Lake, reads_limited_to
from strata.lake.transaction import Transaction
from strata.lineage.record.facets import PARTITION_FACET

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from strata.store.owners.runs.rows import Detail


@dataclass
class Reproduction:
    dataset: str
    version: int
    identical: bool
    recorded: str | None
    reproduced: str | None
    program: dict[str, Any]
    inputs: dict[str, int | None]
    differences: dict[str, Any] = field(default_factory=dict)
    mode: str = "full"  # how the version's run read its inputs
    read: dict[str, dict[str, int | None]] = field(default_factory=dict)
    compared: str = "version"  # "version", "added" (the rows it appended) or "partition"
    partition: dict[str, str] | None = None  # the one partition reproduced
    partitions: int | None = None  # how many partition runs were run again

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def reproduce(
    lake: Lake,
    start_spark: Callable[[], SparkSession],
    dataset: str,
    version: int | None,
    partition: Mapping[str, list[str]] | None = None,
) -> Reproduction:
    """Run the program that built ``dataset@version`` again and compare the rows.

    An incremental run is run again on the same input ranges and the same previous output
    version. A version that appended (an incremental run's, or an APPEND output's) is
    compared by the rows it added; any other, whole. A version built partition by
    partition is reproduced partition by partition, each by its own run's program and
    inputs (``partition``: that one only). Spark is started only once the version and
    its stored program are known to be reproducible, so a wrong name or version is
    refused at once.
    """
    state = BuildState(lake.engine, lake.namespace, lake.branch)
    built = entry(state, dataset, version)
    target = lake.version(dataset, version=built.version)
    if partition is not None or (target.partitions or {}).get("runs"):
        return reproduce_partitions(lake, state, start_spark, built, partition)
    appended = target.type == "APPEND"
    with _stored_program(built.program) as item:
        inputs = {
            p: lake.version(i.name, version=built.inputs.get(i.name))
            for p, i in item.inputs.items()
        }
        refuse_purged_inputs(built, inputs.values())
        plan = _recorded_plan(item, inputs, state.build_reads([built.run]).get(built.run))
        spark = start_spark()
        txn = lake.transaction(list(item.output_names), write_type(item, plan))
        readable = (*item.input_names, *item.output_names)
        try:
            with reads_limited_to(f"transform {item.fqn} ({item.where})", readable):
                call_transform(lake, spark, item, inputs, txn, plan)
            fingerprint = txn.pending_fingerprint(dataset)
            recorded = (
                lake.read_added(dataset, built.version - 1, built.version, spark)
                if (appended)
                else lake.read(dataset, version=built.version, spark=spark)
            )
            diff = _differences(recorded, txn.pending_frame(spark, dataset))
        finally:
            txn.abort()
    expected = _added_fingerprint(lake, target) if appended else built.data_fingerprint
    identical = fingerprint is not None and fingerprint == expected
    return Reproduction(
        dataset,
        built.version,
        identical,
        expected,
        fingerprint,
        _program_json(built.program),
        built.inputs,
        {} if identical else diff,
        plan.mode,
        plan.read_json(),
        "added" if appended else "version",
    )


def refuse_purged_inputs(built: Entry, inputs: Iterable[Version]) -> None:
    """Raise :class:`PurgedVersion` naming every recorded input retention purged: a
    version cannot be reproduced without the data it was built from."""
    gone = sorted((v for v in inputs if v.purged_at is not None), key=lambda v: v.dataset)
    if not gone:
        return
    named = ", ".join(
        f"{v.dataset}@{v.commit_id} (purged {v.purged_at:%Y-%m-%d} by policy {v.purged_by})"
        for v in gone
    )
    ref = f"{built.dataset}@{built.version}"
    raise PurgedVersion(
        f"{ref} cannot be reproduced: retention purged its input(s) {named}; its catalog "
        f"entry remains (strata trace {ref}); pin inputs with strata pin to keep them",
        dataset=built.dataset,
        version=built.version,
        purged_inputs=[f"{v.dataset}@{v.commit_id}" for v in gone],
    )


def reproduce_partitions(
    lake: Lake,
    state: BuildState,
    start_spark: Callable[[], SparkSession],
    built: Entry,
    partition: Mapping[str, list[str]] | None,
) -> Reproduction:
    """Run again the partition runs whose rows ``built`` holds (``partition``: the one
    named), each on its own recorded inputs and input partitions, by its own stored
    program, into one scratch transaction; compare the fingerprints of the whole version
    (they add up over partitions) or of the one partition."""
    dataset, version = built.dataset, built.version
    runs = partition_runs(state, dataset, version)
    keys = [whole_key(state, dataset, partition)] if partition is not None else sorted(runs)
    for key in keys:
        if runs.get(key) is None:
            raise NotFound(
                f"{dataset}@{version} holds no partition {key} written by a partition run "
                "(it was written whole, by hand, or not at all); reproduce the version "
                "without --partition",
                dataset=dataset,
                partition=key,
            )
    chosen = {k: str(runs[k]) for k in keys}
    details = state.run_details(chosen.values())
    inputs_of = state.run_inputs(chosen.values())
    read = {(name, n) for run in chosen.values() for name, n in inputs_of[run].items()}
    refuse_purged_inputs(
        built, [lake.version(name, n) for name, n in sorted(read) if n is not None]
    )
    by_program: dict[str, list[str]] = {}
    for key, run in chosen.items():
        by_program.setdefault(str(details[run].job_version), []).append(key)
    spark = start_spark()
    by = state.partition_by([dataset])[dataset]
    txn: Transaction | None = None
    try:
        for program_uuid, program_keys in by_program.items():
            program = state.program(program_uuid)
            assert program is not None
            with _stored_program(program) as item:
                if txn is None:  # every output of the transform, as its runs wrote them
                    scope = [pkeys.parse_text(k) for k in keys]
                    txn = lake.transaction(
                        list(item.output_names), "SNAPSHOT", partition_by=by, partitions=scope
                    )
                partitioned = set(state.partition_by(item.input_names))
                for key in program_keys:
                    run = chosen[key]
                    fed = (inputs_of[run], details[run], partitioned)
                    _run_partition(lake, spark, item, txn, key, fed)
        assert txn is not None
        where = pkeys.parse_text(keys[0]) if partition is not None else None
        if where is None:
            recorded, reproduced = built.data_fingerprint, txn.pending_fingerprint(dataset)
        else:
            recorded = lake.partition_fingerprints(dataset, version).get(keys[0])
            reproduced = txn.pending_partition_fingerprints(dataset).get(keys[0])
        kept = lake.read(dataset, version=version, partitions=where, spark=spark)
        diff = _differences(kept, txn.pending_frame(spark, dataset))
    finally:
        if txn is not None:
            txn.abort()
    identical = reproduced is not None and reproduced == recorded
    one = chosen[keys[0]] if partition is not None else built.run
    program = built.program if partition is None else state.program(str(details[one].job_version))
    assert program is not None
    return Reproduction(
        dataset,
        version,
        identical,
        recorded,
        reproduced,
        _program_json(program),
        built.inputs if partition is None else dict(inputs_of[one]),
        {} if identical else diff,
        compared="version" if partition is None else "partition",
        partition=where,
        partitions=len(keys),
    )


def _program_json(program: Program) -> dict[str, Any]:
    return {
        "transform": program.job_name,
        "ordinal": program.ordinal,
        "fingerprint": program.fingerprint,
    }


def _run_partition(
    lake: Lake,
    spark: SparkSession,
    item: Declared,
    txn: Transaction,
    key: str,
    fed: tuple[Mapping[str, int | None], Detail, set[str]],
) -> None:
    """One partition's run again: its input versions, the input partitions its facet
    names (a partitioned input it was fed nothing of reads no rows), the rest whole
    (filtered to the key where they have its columns, as the build did)."""
    versions, detail, partitioned = fed
    inputs = {p: lake.version(i.name, version=versions.get(i.name)) for p, i in item.inputs.items()}
    read = dict(detail.facets.get(PARTITION_FACET, {}).get("read") or {})
    where = pkeys.parse_text(key)
    names = [v.dataset for v in inputs.values()]
    sources = {name: list(read.get(name, [])) for name in names if name in partitioned}
    rows = {
        v.dataset: [where]
        for v in inputs.values()
        if v.dataset not in partitioned and set(where) <= {f["name"] for f in v.schema_fields}
    }
    readable = (*item.input_names, *item.output_names)
    with reads_limited_to(f"transform {item.fqn} ({item.where})", readable):
        plan = incremental.whole(item, inputs)
        call_transform(lake, spark, item, inputs, txn, plan, Partition(where, sources, rows))


def _recorded_plan(item: Declared, inputs: dict[str, Version], how: BuildRead | None) -> Plan:
    """The plan the version's run followed: its recorded ranges and previous outputs."""
    if how is None or how.mode != "incremental":
        return incremental.whole(item, inputs)
    read = how.read or {}
    unread = InputRead(None, None)
    reads = {
        p: ReadRange(
            v.dataset,
            read.get(v.dataset, unread).after,
            v.commit_id,
            read.get(v.dataset, unread).rows,
        )
        for p, v in inputs.items()
    }
    previous = {k: v for k, v in how.previous.items() if k in item.output_names}
    return Plan("incremental", reads, previous)


def _added_fingerprint(lake: Lake, version: Version) -> str | None:
    """The data fingerprint of the rows an APPEND version added (its parent's rows
    taken from its own); None where either is unknown."""
    parent = lake.version(version.dataset, version=version.commit_id - 1)
    if version.row_hash is None or parent.row_hash is None:
        return None
    try:
        added = RowHash.decode(version.row_hash).without(RowHash.decode(parent.row_hash))
    except ValueError:
        return None
    return fingerprint(version.schema_fields, added) if added is not None else None


@contextmanager
def _stored_program(program: Program) -> Iterator[Declared]:
    """The transform as stored with the program version, imported from a scratch folder."""
    saved_path, saved_modules = list(sys.path), dict(sys.modules)
    with tempfile.TemporaryDirectory(prefix="strata-reproduce-") as tmp:
        root = Path(tmp)
        for rel, text in program.files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        # The stored modules must win over the pipelines' current ones of the same names.
        for rel in program.files:
            sys.modules.pop(Path(rel).stem, None)
        sys.path.insert(0, str(root))
        try:
            # Older program versions kept no pipeline file: the function's module declared it.
            entry = program.entry.get("pipeline_file", program.entry["module"])
            loaded = load_pipelines([root / entry])
            item = loaded.transforms.get(program.job_name)
            if item is None:
                raise NotFound(
                    f"the stored program of {program.job_name} no longer declares it; it cannot "
                    "be run again",
                    transform=program.job_name,
                )
            yield item
        finally:
            sys.path[:] = saved_path
            for name in set(sys.modules) - set(saved_modules):
                del sys.modules[name]
            sys.modules.update(saved_modules)


def _differences(recorded: DataFrame, reproduced: DataFrame) -> dict[str, Any]:
    """Columns added, removed or retyped, and rows on one side only (by count)."""
    old = dict(recorded.dtypes)
    new = dict(reproduced.dtypes)
    common = [c for c in old if c in new and old[c] == new[c]]
    out: dict[str, Any] = {
        "columns_added": sorted(set(new) - set(old)),
        "columns_removed": sorted(set(old) - set(new)),
        "columns_changed": sorted(c for c in old if c in new and old[c] != new[c]),
    }
    if common:
        a, b = recorded.select(*common), reproduced.select(*common)
        out["rows_only_recorded"] = a.exceptAll(b).count()
        out["rows_only_reproduced"] = b.exceptAll(a).count()
    return out
