"""Reproduce a built version: its stored program, run again on its recorded input versions.

The program's stored source files are written to a scratch folder and imported from
there (not from the pipelines as they are now); the outputs go to a scratch transaction
that is aborted, never committed, and the data fingerprint of what was written is
compared with the one recorded for the version. Differences are counted by column and
by row.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strata.builds.discovery import Declared, load_pipelines
from strata.builds.execute import call_transform
from strata.builds.history import Entry, entry
from strata.builds.state import BuildState
from strata.errors import InvalidArgument, NotFound
from strata.lake.service import Lake, reads_limited_to

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


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

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def reproduce(
    lake: Lake, start_spark: Callable[[], SparkSession], dataset: str, version: int | None
) -> Reproduction:
    """Run the program that built ``dataset@version`` again and compare the rows.

    Spark is started only once the version and its stored program are known to be
    reproducible, so a wrong name or version is refused at once.
    """
    built = entry(BuildState(lake.engine, lake.namespace), dataset, version)
    with _stored_program(built) as item:
        spark = start_spark()
        inputs = {
            p: lake.version(i.name, version=built.inputs.get(i.name))
            for p, i in item.inputs.items()
        }
        txn = lake.transaction(list(item.output_names), "SNAPSHOT")
        try:
            with reads_limited_to(f"transform {item.fqn} ({item.where})", item.input_names):
                call_transform(lake, spark, item, inputs, txn)
            fingerprint = txn.pending_fingerprint(dataset)
            diff = _differences(
                lake.read(dataset, version=built.version, spark=spark),
                txn.pending_frame(spark, dataset),
            )
        finally:
            txn.abort()
    identical = fingerprint is not None and fingerprint == built.data_fingerprint
    return Reproduction(
        dataset,
        built.version,
        identical,
        built.data_fingerprint,
        fingerprint,
        {
            "transform": built.program.job_name,
            "ordinal": built.program.ordinal,
            "fingerprint": built.program.fingerprint,
        },
        built.inputs,
        {} if identical else diff,
    )


@contextmanager
def _stored_program(built: Entry) -> Iterator[Declared]:
    """The transform as stored with the program version, imported from a scratch folder."""
    program = built.program
    if any(o["type"] != "SNAPSHOT" for o in program.declaration.get("outputs", {}).values()):
        raise InvalidArgument(
            f"{built.dataset}@{built.version} was appended to; reproduce compares whole "
            "versions, so only SNAPSHOT outputs can be reproduced",
            dataset=built.dataset,
        )
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
