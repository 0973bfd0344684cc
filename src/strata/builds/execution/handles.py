"""What a ``@transform`` function is given: input handles to read and output handles to
write, each bound to exact versions for the run.

An input's ``dataframe()`` is, in an incremental run, the rows appended in its read
range (``"added"``); ``"current"`` is the whole version the run reads and ``"previous"``
the whole version the last build read. In a whole run every mode reads the whole
version. An output's ``dataframe("previous")`` is the output before this run (empty in
a whole run, which replaces it); ``set_mode("replace")`` makes an incremental run
replace the output instead of appending to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from strata.builds.execution.incremental import Plan, ReadRange
from strata.builds.programs.discovery import Declared
from strata.errors import TransformError
from strata.lake.registry import Version
from strata.lake.service import Lake
from strata.lake.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

READ_MODES = ("added", "current", "previous")
WRITE_MODES = {"modify": "APPEND", "replace": "SNAPSHOT"}


class InputHandle:
    """A declared input of a ``@transform``: its exact version (and range), read on demand."""

    def __init__(
        self,
        lake: Lake,
        spark: SparkSession,
        version: Version,
        read: ReadRange,
        item: Declared,
        keys: Sequence[str] | None = None,
        rows: Sequence[Mapping[str, str]] | None = None,
    ) -> None:
        self._lake, self._spark, self.version = lake, spark, version
        self._read, self._item = read, item
        # A partition's run reads only the input partitions feeding it, or the rows.
        self._keys, self._rows = keys, rows
        self.name = version.dataset

    def dataframe(self, mode: str = "added") -> DataFrame:
        """The rows of ``mode``: ``added`` (the default), ``current`` or ``previous``."""
        if mode not in READ_MODES:
            raise TransformError(
                f"transform {self._item.fqn} ({self._item.where}) reads {self.name!r} in mode "
                f"{mode!r}; use one of {', '.join(READ_MODES)}",
                transform=self._item.fqn,
            )
        after, upto = self._read.after, self._read.upto
        if self._keys is not None:
            return self._lake.read_keys(self.name, upto, self._keys, spark=self._spark)
        if self._rows is not None:
            whole = self._lake.read(self.name, version=upto, spark=self._spark)
            return _rows_of(self._spark, whole, self._rows)
        if after is None or mode == "current":
            return self._lake.read(self.name, version=upto, spark=self._spark)
        if mode == "previous":
            return self._lake.read(self.name, version=after, spark=self._spark)
        return self._lake.read_added(self.name, after, upto, spark=self._spark)


def _rows_of(spark: SparkSession, frame: DataFrame, keys: Sequence[Mapping[str, str]]) -> DataFrame:
    """The rows of ``frame`` in the partitions ``keys`` (one or more, of the same
    columns), their values compared as a partition folder spells them."""
    from pyspark.sql.functions import col

    if len(keys) == 1:
        for name, value in keys[0].items():
            frame = frame.where(col(name).cast("string") == value)
        return frame
    names = list(keys[0])
    wanted = spark.createDataFrame(
        [tuple(k[n] for n in names) for k in keys], [f"_k{i}" for i in range(len(names))]
    )
    on = [col(n).cast("string") == wanted[f"_k{i}"] for i, n in enumerate(names)]
    return frame.join(wanted, on, "left_semi")


class OutputHandle:
    """A declared output of a ``@transform``: written once, committed with the others."""

    def __init__(
        self,
        lake: Lake,
        spark: SparkSession,
        item: Declared,
        txn: Transaction | None,  # None: the transform is planned, nothing is written
        name: str,
        allowed: Mapping[str, Version],
        plan: Plan,
        writes_in: tuple[Mapping[str, str] | None, frozenset[str] | None] = (None, None),
        on_write: Callable[[str, DataFrame], None] | None = None,
    ) -> None:
        self._lake, self._spark, self._item, self._txn, self.name = lake, spark, item, txn, name
        # A partition run's one key, or a batch of partition runs' keys.
        self._allowed, self._plan, (self._within, self._among) = allowed, plan, writes_in
        self._on_write = on_write  # told of the frame before it is written
        self.written = False

    def set_mode(self, mode: str) -> None:
        """``modify`` (append to the output) or ``replace`` it; before writing."""
        if mode not in WRITE_MODES:
            raise self._error(f"set_mode({mode!r}) takes one of {', '.join(WRITE_MODES)}")
        if self._item.transform.incremental is None:
            raise self._error(
                f"set_mode({mode!r}) on {self.name!r} is for @incremental transforms; this "
                "one replaces its outputs on every build"
            )
        if self.written:
            raise self._error(f"set_mode({mode!r}) on {self.name!r} after writing it; set it first")
        if self._plan.mode == "incremental" and self._txn is not None:
            exclusive = WRITE_MODES[mode] == "APPEND"
            self._txn.set_type(self.name, WRITE_MODES[mode], exclusive=exclusive)

    def dataframe(self, mode: str = "previous", schema: Any = None) -> DataFrame:
        """The output as it was before this run (``previous``): empty in a whole run, with
        the output's schema (or ``schema``, on the first build, where none is known)."""
        if mode != "previous":
            raise self._error(f"reads its output {self.name!r} in mode {mode!r}; use 'previous'")
        before = self._plan.previous.get(self.name)
        if before is not None:
            return self._lake.read(self.name, version=before, spark=self._spark)
        return self._empty(schema)

    def _empty(self, schema: Any) -> DataFrame:
        spark = self._spark
        if schema is not None:
            return spark.createDataFrame([], schema)
        known = self._lake.schema_of(self.name)
        if known is None:
            raise self._error(
                f"read dataframe('previous') of {self.name!r}, which has no version and so "
                "no schema yet; pass schema= (a StructType) for its first build"
            )
        from pyspark.sql.pandas.types import from_arrow_schema

        return spark.createDataFrame([], from_arrow_schema(known))

    def write_dataframe(self, df: Any) -> None:
        require_dataframe(self._item, df, f"write_dataframe for {self.name!r}")
        require_declared_files(self._lake, self._item, self._allowed, df)
        if self.written:
            raise self._error(f"wrote {self.name!r} twice; union the frames and write once")
        if self._on_write is not None:
            self._on_write(self.name, df)
        if self._txn is not None:
            self._txn.write(df, dataset=self.name, within=self._within, among=self._among)
        self.written = True

    def _error(self, what: str) -> TransformError:
        return TransformError(
            f"transform {self._item.fqn} ({self._item.where}) {what}", transform=self._item.fqn
        )


def require_dataframe(item: Declared, value: Any, what: str) -> None:
    kind = type(value)
    if not (kind.__module__.startswith("pyspark.") and kind.__name__ == "DataFrame"):
        raise TransformError(
            f"transform {item.fqn} ({item.where}): {what} got a {kind.__module__}."
            f"{kind.__qualname__}, not a Spark DataFrame; return the DataFrame to write",
            transform=item.fqn,
        )


def require_declared_files(
    lake: Lake, item: Declared, allowed: Mapping[str, Version], df: DataFrame
) -> None:
    lake.refuse_undeclared_files(df, f"transform {item.fqn} ({item.where})", allowed.values())
