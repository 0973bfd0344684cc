"""Expectations: what a check asks of a dataset's rows, declared without Spark.

Read it the way Foundry's data expectations read::

    from strata import Check, expectations as E

    Output("clean/orders", checks=[
        Check(E.primary_key("order_id"), "order id is a key"),
        Check(E.col("amount").gte(0), "no negative amounts", on_error="WARN"),
        Check(E.row_count().gt(0), "not empty"),
    ])

Each expectation is one of four shapes, so that all the checks of an output are judged
in one pass over its rows (:mod:`strata.builds.checks.judging`):

- a **row rule** every row meets (``not_null``, ``col(c).gt``, ``sql``, ``all``/``any``
  of row rules); a row where the rule is NULL (a comparison with a NULL value) is not
  judged, as in SQL's CHECK constraints: add ``not_null`` to refuse NULLs;
- a **row count** bound (``row_count().gt(n)``);
- a **key** rule (``primary_key``, ``unique``, ``group_by(c).is_unique()``) or a bound
  on each group's row count (``group_by(c).count().lte(n)``);
- a **schema** rule (``schema().contains({...})``, ``schema().equals({...})``), judged
  on the columns alone.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from strata.errors import PipelineError

# The comparison operators, by name: how each is said and how Python evaluates it.
_OPS: dict[str, tuple[str, Callable[[Any, Any], bool]]] = {
    "gt": (">", operator.gt),
    "gte": (">=", operator.ge),
    "lt": ("<", operator.lt),
    "lte": ("<=", operator.le),
    "equals": ("=", operator.eq),
}
NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")
ORDERED = (*NUMERIC, "date", "timestamp", "timestamp_ntz", "string")


class Expectation:
    """What a check asks; the four shapes below are its only kinds."""

    #: OpenLineage's classification of the test (``not_null``, ``unique``, …).
    assertion: str = "custom"

    def describe(self) -> str:
        raise NotImplementedError

    def columns(self) -> tuple[str, ...]:
        """The columns it reads (checked against the data's schema before it runs)."""
        return ()

    def problem(self, types: Mapping[str, str]) -> str | None:
        """Why it cannot apply to columns of ``types`` (name -> Spark simple type)."""
        missing = [c for c in self.columns() if c not in types]
        if missing:
            return f"names column {missing[0]!r}, not among {sorted(types)}"
        return None

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True, eq=False)
class RowRule(Expectation):
    """A condition every row meets; ``build`` makes the Spark column lazily."""

    text: str
    reads: tuple[str, ...]
    build: Callable[[], Any]
    assertion: str = "custom"
    types: tuple[str, ...] | None = None  # the column types it applies to (None: any)
    parts: tuple[RowRule, ...] = ()  # an all/any of row rules: the rules it joins

    def describe(self) -> str:
        return self.text

    def columns(self) -> tuple[str, ...]:
        return self.reads

    def problem(self, types: Mapping[str, str]) -> str | None:
        found = super().problem(types)
        if found is None and self.parts:
            return next((p for x in self.parts if (p := x.problem(types)) is not None), None)
        if found is not None or self.types is None:
            return found
        for c in self.reads:
            kind = types[c].split("(")[0]
            if kind not in self.types:
                return f"{self.text} cannot apply to column {c!r} of type {types[c]}"
        return None


@dataclass(frozen=True, eq=False)
class RowCount(Expectation):
    """A bound on the number of rows."""

    op: str
    value: int
    assertion: str = "row_count"

    def describe(self) -> str:
        return f"row count {_OPS[self.op][0]} {self.value:,}"

    def holds(self, rows: int) -> bool:
        return _OPS[self.op][1](rows, self.value)


@dataclass(frozen=True, eq=False)
class KeyRule(Expectation):
    """No two rows share ``keys``; with ``not_null``, no key column is NULL either. With
    ``op`` set, instead: each group of ``keys`` has a row count ``op`` ``value``."""

    keys: tuple[str, ...]
    not_null: bool = False
    op: str | None = None
    value: int = 0
    assertion: str = "unique"

    def describe(self) -> str:
        cols = ", ".join(self.keys)
        if self.op is not None:
            return f"each group of ({cols}) has row count {_OPS[self.op][0]} {self.value:,}"
        return f"primary key ({cols})" if self.not_null else f"unique ({cols})"

    def columns(self) -> tuple[str, ...]:
        return self.keys

    def holds(self, count: Any) -> Any:
        """Whether ``count`` (an int, or a Spark column of counts) meets the bound."""
        assert self.op is not None
        return _OPS[self.op][1](count, self.value)


@dataclass(frozen=True, eq=False)
class SchemaRule(Expectation):
    """The columns (name -> Spark simple type) the data has, at least or exactly."""

    wanted: Mapping[str, str]
    exact: bool
    assertion: str = "schema"

    def describe(self) -> str:
        cols = ", ".join(f"{k}: {v}" for k, v in self.wanted.items())
        return f"schema {'equals' if self.exact else 'contains'} {{{cols}}}"

    def differences(self, types: Mapping[str, str]) -> dict[str, Any]:
        """What differs; empty when the rule holds."""
        out: dict[str, Any] = {}
        missing = [c for c in self.wanted if c not in types]
        wrong = {
            c: {"expected": t, "actual": types[c]}
            for c, t in self.wanted.items()
            if c in types and types[c] != t
        }
        extra = [c for c in types if c not in self.wanted] if self.exact else []
        for key, value in (("missing", missing), ("mismatched", wrong), ("extra", extra)):
            if value:
                out[key] = value
        return out

    def problem(self, types: Mapping[str, str]) -> str | None:
        return None  # a column it names that is missing is what it reports, not a mistake


@dataclass(frozen=True, eq=False)
class Combined(Expectation):
    """``all`` (every part holds) or ``any`` (one part holds) of mixed shapes."""

    parts: tuple[Expectation, ...]
    every: bool
    assertion: str = "custom"

    def describe(self) -> str:
        word = "all" if self.every else "any"
        return f"{word}({', '.join(p.describe() for p in self.parts)})"

    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for p in self.parts for c in p.columns()))

    def problem(self, types: Mapping[str, str]) -> str | None:
        return next((p for x in self.parts if (p := x.problem(types)) is not None), None)


def _functions() -> Any:
    from pyspark.sql import functions

    return functions


def _literal(value: Any, where: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | str | date | datetime):
        raise PipelineError(
            f"{where}: {value!r} is not a number, string, date or datetime; compare with one"
        )
    return value


def _types_for(value: Any) -> tuple[str, ...]:
    if isinstance(value, int | float):
        return NUMERIC
    if isinstance(value, datetime):
        return ("timestamp", "timestamp_ntz")
    if isinstance(value, date):
        return ("date", "timestamp", "timestamp_ntz")
    return ("string",)


def _require_column(name: Any, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise PipelineError(f"{what} takes column names, got {name!r}; write e.g. {what}('id')")
    return name


class Column:
    """``col(c)``: a condition on one column's values."""

    def __init__(self, name: str) -> None:
        self.name = _require_column(name, "E.col")

    def _compare(self, op: str, value: Any) -> RowRule:
        value = _literal(value, f"E.col({self.name!r}).{op}")
        symbol, _ = _OPS[op]
        name = self.name

        def build() -> Any:  # Spark columns take Python's comparison operators
            return _OPS[op][1](_functions().col(name), value)

        return RowRule(f"{name} {symbol} {value!r}", (name,), build, "range", _types_for(value))

    def gt(self, value: Any) -> RowRule:
        return self._compare("gt", value)

    def gte(self, value: Any) -> RowRule:
        return self._compare("gte", value)

    def lt(self, value: Any) -> RowRule:
        return self._compare("lt", value)

    def lte(self, value: Any) -> RowRule:
        return self._compare("lte", value)

    def equals(self, value: Any) -> RowRule:
        return self._compare("equals", value)

    def between(self, low: Any, high: Any) -> RowRule:
        """``low <= c <= high``."""
        where = f"E.col({self.name!r}).between"
        low, high = _literal(low, where), _literal(high, where)
        name = self.name
        return RowRule(
            f"{low!r} <= {name} <= {high!r}",
            (name,),
            lambda: _functions().col(name).between(low, high),
            "range",
            _types_for(low),
        )

    def is_in(self, *values: Any) -> RowRule:
        if len(values) == 1 and isinstance(values[0], list | tuple | set | frozenset):
            values = tuple(values[0])
        if not values:
            raise PipelineError(f"E.col({self.name!r}).is_in() needs at least one value")
        for v in values:
            _literal(v, f"E.col({self.name!r}).is_in")
        name, kept = self.name, tuple(values)
        return RowRule(
            f"{name} in {list(kept)!r}",
            (name,),
            lambda: _functions().col(name).isin(*kept),
            "accepted_values",
        )

    def matches(self, regex: str) -> RowRule:
        """The whole value matches the Java regular expression ``regex``."""
        import re

        if not isinstance(regex, str):
            raise PipelineError(f"E.col({self.name!r}).matches takes a regex string")
        try:
            re.compile(regex)
        except re.error as exc:
            raise PipelineError(
                f"E.col({self.name!r}).matches({regex!r}): not a regular expression ({exc})"
            ) from exc
        name = self.name
        anchored = f"^(?:{regex})$"
        return RowRule(
            f"{name} matches {regex!r}",
            (name,),
            lambda: _functions().col(name).rlike(anchored),
            "matches",
            ("string",),
        )


class _Counted:
    """``.gt(n)`` and its friends on a count; ``make(op, n)`` builds the expectation."""

    def __init__(self, what: str, make: Callable[[str, int], Expectation]) -> None:
        self._what, self._make = what, make

    def _bound(self, op: str, n: Any) -> Any:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise PipelineError(f"{self._what}.{op}({n!r}) takes a whole number of rows")
        return self._make(op, n)

    def gt(self, n: int) -> Any:
        return self._bound("gt", n)

    def gte(self, n: int) -> Any:
        return self._bound("gte", n)

    def lt(self, n: int) -> Any:
        return self._bound("lt", n)

    def lte(self, n: int) -> Any:
        return self._bound("lte", n)

    def equals(self, n: int) -> Any:
        return self._bound("equals", n)


class _Group:
    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys

    def is_unique(self) -> KeyRule:
        """No two rows share the group's key (rows with a NULL in it are not judged)."""
        return KeyRule(self.keys)

    def count(self) -> _Counted:
        """A bound on each group's row count: ``group_by("day").count().lte(24)``."""
        keys = self.keys

        def make(op: str, n: int) -> KeyRule:
            return KeyRule(keys, op=op, value=n, assertion="group_count")

        return _Counted("E.group_by(...).count()", make)


class _Schema:
    def _rule(self, wanted: Any, exact: bool) -> SchemaRule:
        if not isinstance(wanted, Mapping) or not wanted:
            raise PipelineError(
                "E.schema() takes a dict of column name to type, such as "
                "{'order_id': 'bigint', 'amount': 'double'}"
            )
        for k, v in wanted.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise PipelineError(f"E.schema(): {k!r}: {v!r} must map a name to a type name")
        return SchemaRule(dict(wanted), exact)

    def contains(self, wanted: Mapping[str, str]) -> SchemaRule:
        return self._rule(wanted, exact=False)

    def equals(self, wanted: Mapping[str, str]) -> SchemaRule:
        return self._rule(wanted, exact=True)


def _keys(cols: Sequence[Any], what: str) -> tuple[str, ...]:
    if not cols:
        raise PipelineError(f"{what}() needs at least one column; write e.g. {what}('id')")
    return tuple(_require_column(c, what) for c in cols)


def primary_key(*cols: str) -> KeyRule:
    """Every row has a key (no NULL in ``cols``) and no two rows share it."""
    return KeyRule(_keys(cols, "E.primary_key"), not_null=True, assertion="primary_key")


def unique(*cols: str) -> KeyRule:
    """No two rows share ``cols`` (rows with a NULL in them are not judged)."""
    return KeyRule(_keys(cols, "E.unique"))


def not_null(col: str) -> RowRule:
    name = _require_column(col, "E.not_null")
    return RowRule(
        f"{name} is not null", (name,), lambda: _functions().col(name).isNotNull(), "not_null"
    )


def col(name: str) -> Column:
    return Column(name)


def row_count() -> _Counted:
    return _Counted("E.row_count()", RowCount)


def group_by(*cols: str) -> _Group:
    return _Group(_keys(cols, "E.group_by"))


def schema() -> _Schema:
    return _Schema()


def sql(condition: str) -> RowRule:
    """A Spark SQL boolean expression every row meets: ``E.sql("amount >= 0")``."""
    if not isinstance(condition, str) or not condition.strip():
        raise PipelineError("E.sql() takes a Spark SQL condition such as 'amount >= 0'")
    return RowRule(condition, (), lambda: _functions().expr(condition), "custom_sql")


def _combine(parts: Sequence[Any], every: bool) -> Expectation:
    word = "all" if every else "any"
    if not parts or not builtins.all(isinstance(p, Expectation) for p in parts):
        raise PipelineError(f"E.{word}() takes expectations, such as E.{word}(E.not_null('id'))")
    if builtins.all(isinstance(p, RowRule) for p in parts):
        rules: list[RowRule] = list(parts)

        def build() -> Any:
            f = _functions()
            cols = [f.coalesce(r.build(), f.lit(True)) for r in rules]
            out = cols[0]
            for c in cols[1:]:
                out = (out & c) if every else (out | c)
            return out

        text = f"{word}({', '.join(r.text for r in rules)})"
        reads = tuple(dict.fromkeys(c for r in rules for c in r.reads))
        return RowRule(text, reads, build, "custom", parts=tuple(rules))
    return Combined(tuple(parts), every)


def all(*parts: Expectation) -> Expectation:
    return _combine(parts, every=True)


def any(*parts: Expectation) -> Expectation:
    return _combine(parts, every=False)


__all__ = [
    "Expectation",
    "all",
    "any",
    "col",
    "group_by",
    "not_null",
    "primary_key",
    "row_count",
    "schema",
    "sql",
    "unique",
]
