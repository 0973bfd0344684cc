"""Judging checks: every check of one dataset in at most one pass over its rows.

Row rules become counts of failing rows, row counts one count, and key rules a count
per key. What a build wrote was already seen once, by its write: the row measures are
observed in that pass (:func:`row_measures`), and the key columns, read back from the
written Parquet files, are counted on this process (:mod:`strata.builds.checks.key_counts`):
an integer key written in rising order is proved unique by streaming it, any other key
is read whole and counted.
Otherwise one Spark aggregation judges all: ``GROUPING SETS`` (the empty set for the
totals, one per key), then a small one over the groups. Samples of bad rows are read
only for a check that failed. An incremental output is judged whole after its append;
its keys in the cheap form: the appended rows among themselves, then against the keys
already there (a semi-join on the key columns, not a rescan of every column).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from functools import cached_property, partial, reduce
from typing import TYPE_CHECKING, Any

from strata.builds.checks import key_counts
from strata.builds.checks.check import SAMPLE_ROWS, Check, CheckResult
from strata.builds.checks.expectations import (
    Combined,
    Expectation,
    KeyRule,
    RowCount,
    RowRule,
    SchemaRule,
)
from strata.errors import CheckDeclarationError
from strata.lake.frames import is_plan_error

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

# The row measures' names: all rows, and the rows failing any rule (a write observes them).
ROWS, ANY_FAILING = "_s_rows", "_s_any"


@dataclass(frozen=True)
class Target:
    """The rows a dataset's checks judge: ``frame``, made by ``read`` when first needed
    (judged from what the write observed, a written output may need none); for an
    incremental append, the whole output after it and the ``appended`` rows alone
    (keys' cheap form)."""

    dataset: str
    side: str
    read: Callable[[], DataFrame]
    appended: DataFrame | None = None
    previous: DataFrame | None = None
    partition: str | None = None
    where: str = ""  # the transform, for messages
    # The row measures (:func:`row_measures`) observed while ``frame`` was written.
    seen: Mapping[str, int] | None = None
    # ``frame``'s columns as an Arrow table on this process; None when too big.
    columns: Callable[[Sequence[str]], pa.Table | None] | None = None
    # One of ``frame``'s columns as bounded Arrow arrays, in the order written.
    column_arrays: Callable[[str], Generator[pa.Array[Any], None, None]] | None = None
    # ``frame``'s column types (Spark's simple strings), when known without it.
    types: Mapping[str, str] | None = None
    # Every figure judging needs, found by a pass over many targets' rows at once
    # (:func:`measure_by_group`): judging then reads nothing unless a check failed.
    measured: Mapping[str, Any] | None = None

    @cached_property
    def frame(self) -> DataFrame:
        return self.read()


@dataclass(frozen=True)
class _Found:
    passed: bool
    observed: dict[str, Any]
    failing: int | None


def judge(target: Target, checks: Sequence[Check]) -> list[CheckResult]:
    """Every check of ``target``, in order."""
    if not checks:
        return []
    types = target.types
    if types is None:
        types = {f.name: f.dataType.simpleString() for f in target.frame.schema.fields}
    for c in checks:
        problem = c.expectation.problem(types)
        if problem is not None:
            raise _bad(c, target, problem)
    leaves = [leaf for c in checks for leaf in _leaves(c.expectation)]
    found = _measure(target, leaves, types, checks)
    results = []
    for c in checks:
        outcome = _outcome(c.expectation, found)
        samples = _samples(target, c.expectation, found) if not outcome.passed else []
        results.append(_result(c, target, outcome, samples))
    return results


def _result(
    c: Check, target: Target, found: _Found, samples: Sequence[Any] = (), on_error: str = ""
) -> CheckResult:
    return CheckResult(
        c.name,
        target.dataset,
        target.side,
        c.describe(),
        c.expectation.assertion,
        _column(c.expectation),
        on_error or c.on_error,
        found.passed,
        found.observed,
        found.failing,
        samples,
        target.partition,
    )


def declaration_failure(
    exc: CheckDeclarationError, target: Target, checks: Sequence[Check]
) -> CheckResult:
    """The failed result a check that cannot apply leaves in history (it always blocks)."""
    c = next((c for c in checks if c.name == exc.details.get("check")), checks[0])
    return _result(c, target, _Found(False, {"error": exc.message}, None), on_error="FAIL")


def _bad(c: Check, target: Target, problem: str) -> CheckDeclarationError:
    return CheckDeclarationError(
        f"check {c.name!r} ({c.where}) on {target.dataset}: {problem}; fix the check",
        check=c.name,
        dataset=target.dataset,
    )


def _leaves(e: Expectation) -> list[Expectation]:
    if isinstance(e, Combined):
        return [leaf for p in e.parts for leaf in _leaves(p)]
    return [e]


def _column(e: Expectation) -> str | None:
    cols = e.columns()
    return cols[0] if len(cols) == 1 and not isinstance(e, SchemaRule) else None


def _outcome(e: Expectation, found: Mapping[int, _Found]) -> _Found:
    if isinstance(e, Combined):
        parts = [_outcome(p, found) for p in e.parts]
        passed = all(p.passed for p in parts) if e.every else any(p.passed for p in parts)
        failing = sum(p.failing or 0 for p in parts if not p.passed)
        return _Found(passed, {"parts_failed": sum(not p.passed for p in parts)}, failing)
    return found[id(e)]


def _measure(
    target: Target, leaves: Sequence[Expectation], types: Mapping[str, str], checks: Sequence[Check]
) -> dict[int, _Found]:
    """Each leaf's finding, by ``id``: one aggregation pass (two for an incremental
    append's keys: the appended rows, and their keys against the previous ones)."""
    found: dict[int, _Found] = {}
    for e in leaves:
        if isinstance(e, SchemaRule):
            diff = e.differences(types)
            found[id(e)] = _Found(not diff, diff, None)
    keys = [e for e in leaves if isinstance(e, KeyRule) and e.op is None]
    cheap = target.appended is not None and target.previous is not None
    rest = [e for e in leaves if not isinstance(e, SchemaRule) and not (cheap and e in keys)]
    try:
        found |= _aggregate(target, rest)
        if cheap and keys:
            assert target.appended is not None and target.previous is not None
            appended = target.appended
            found |= _aggregate(Target(target.dataset, target.side, lambda: appended), keys)
            for e in keys:
                found[id(e)] = _against_previous(e, found[id(e)], target)
    except CheckDeclarationError:
        raise
    except Exception as exc:
        if not is_plan_error(exc):
            raise
        first = str(exc).strip().splitlines()[0].split(" SQLSTATE")[0]
        raise _bad(_first_sql(checks), target, f"Spark cannot judge it: {first}") from exc
    return found


def _first_sql(checks: Sequence[Check]) -> Check:
    for c in checks:
        if any(isinstance(x, RowRule) and not x.reads for x in _leaves(c.expectation)):
            return c
    return checks[0]


def _failing_rows(rule: RowRule) -> Column:
    from pyspark.sql import functions as sf

    return ~sf.coalesce(rule.build(), sf.lit(True))


def row_measures(checks: Sequence[Check]) -> dict[str, Column]:
    """What a writer observes in its own pass so that judging ``checks`` reads nothing
    when they hold: the rows, and the rows failing any row rule or with a NULL key
    (:attr:`Target.seen`). One count for all rules costs the write one aggregate, not
    one per rule; each rule's own count is taken only when some row failed."""
    return _made_once(checks, _row_measures)


def _row_measures(checks: Sequence[Check]) -> dict[str, Column]:
    from pyspark.sql import functions as sf

    leaves = [leaf for c in checks for leaf in _leaves(c.expectation)]
    per_row = _failing_tests(leaves)
    out = {ROWS: sf.count(sf.lit(1))}
    if per_row:
        tests = [make() for make in per_row.values()]
        out[ANY_FAILING] = sf.count_if(reduce(operator.or_, tests))
    return out


# A transform's checks are the same objects from build to build, and their Spark
# columns (unresolved expressions, each made by several calls into the JVM) fit any
# frame of that Spark context: each list's columns are made once per context.
_MADE: dict[tuple[int, ...], tuple[Sequence[Check], object, dict[str, Column]]] = {}


def _made_once(
    checks: Sequence[Check], make: Callable[[Sequence[Check]], dict[str, Column]]
) -> dict[str, Column]:
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    key = tuple(id(c) for c in checks)
    held = _MADE.get(key)
    if held is not None and held[1] is context and all(map(operator.is_, held[0], checks)):
        return dict(held[2])
    if len(_MADE) > 1024:  # pipelines reloaded many times: forget the old ones
        _MADE.clear()
    made = make(checks)
    _MADE[key] = (tuple(checks), context, made)
    return dict(made)


def _per_row(leaves: Sequence[Expectation]) -> dict[str, Callable[[], Column]]:
    """Each row measure's name and how to make its Spark column (each call into the JVM
    costs: a measure the write observed is never built again)."""

    per_row: dict[str, Callable[[], Column]] = {ROWS: _count_rows}
    for name, test in _failing_tests(leaves).items():
        per_row[name] = partial(_count_where, test)
    return per_row


def _count_rows() -> Column:
    from pyspark.sql import functions as sf

    return sf.count(sf.lit(1))


def _failing_tests(leaves: Sequence[Expectation]) -> dict[str, Callable[[], Column]]:
    """Each row test whose count judges a rule (a failing row, a NULL key), by name."""
    rules = [e for e in leaves if isinstance(e, RowRule)]
    keyed = [e for e in leaves if isinstance(e, KeyRule)]
    tests: dict[str, Callable[[], Column]] = {}
    for i, r in enumerate(rules):
        tests[f"_s_r{i}"] = partial(_failing_rows, r)
    for i, k in enumerate(keyed):
        if k.not_null:
            tests[f"_s_n{i}"] = partial(_any_null, k.keys)
    return tests


def _count_where(test: Callable[[], Column]) -> Column:
    """How many rows meet ``test`` (never NULL here): one call into the JVM, not five."""
    from pyspark.sql import functions as sf

    return sf.count_if(test())


def _aggregate(target: Target, leaves: Sequence[Expectation]) -> dict[int, _Found]:
    """Row rules, row counts and key rules of ``target``: from what its write observed
    and its key columns counted on this process when it can, else in one Spark pass."""
    if not leaves:
        return {}
    rules = [e for e in leaves if isinstance(e, RowRule)]
    keyed = [e for e in leaves if isinstance(e, KeyRule)]
    row = dict(target.measured) if target.measured is not None else _figures(target, leaves)
    rows = int(row[ROWS] or 0)
    out: dict[int, _Found] = {}
    for i, r in enumerate(rules):
        bad = int(row[f"_s_r{i}"] or 0)
        out[id(r)] = _Found(bad == 0, {"rows": rows}, bad)
    for e in leaves:
        if isinstance(e, RowCount):
            out[id(e)] = _Found(e.holds(rows), {"rows": rows}, None)
    for i, k in enumerate(keyed):
        out[id(k)] = _key_found(k, i, row, rows)
    return out


def _figures(target: Target, leaves: Sequence[Expectation]) -> dict[str, Any]:
    """The figures (as :func:`_grouped` names them) of ``leaves`` on ``target``."""
    keyed = [e for e in leaves if isinstance(e, KeyRule)]
    per_row = _per_row(leaves)
    once = _each_once(target, keyed)
    keys = _key_columns(target, keyed) if once is None else None
    if keyed and once is None and keys is None:
        return _grouped(target.frame, keyed, {n: build() for n, build in per_row.items()})
    row = _totals(target, per_row)
    if once is not None:
        row |= _counted_once(once, keyed)
    elif keys is not None:
        row |= _counted(keys, keyed)
    return row


def _totals(target: Target, per_row: Mapping[str, Callable[[], Column]]) -> dict[str, Any]:
    """The row measures: from what the write observed when no row failed, else from
    one pass."""
    seen = target.seen or {}
    nothing_failed = per_row.keys() == {ROWS} or seen.get(ANY_FAILING) == 0
    if ROWS in seen and nothing_failed:
        return {n: seen[ROWS] if n == ROWS else 0 for n in per_row}
    totals = target.frame.agg(*[build().alias(n) for n, build in per_row.items()]).collect()[0]
    return dict(totals.asDict())


def _each_once(target: Target, keyed: Sequence[KeyRule]) -> int | None:
    """The row count, when every key rule is on one integer column written in rising
    order, so that each key appears once: proved by streaming that column, never
    holding it (see :func:`key_counts.each_once`)."""
    keys = {k.keys for k in keyed}
    if len(keys) != 1 or target.column_arrays is None:
        return None
    (columns,) = keys
    types = target.types or {}
    if len(columns) != 1 or types.get(columns[0]) not in _INTEGERS:
        return None
    with closing(target.column_arrays(columns[0])) as arrays:
        return key_counts.each_once(arrays)


_INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint"})


def _counted_once(rows: int, keyed: Sequence[KeyRule]) -> dict[str, Any]:
    """The key rules' figures (as :func:`_grouped` names them) when each of ``rows``
    rows has a key of its own: no duplicate, and every group holds one row."""
    out: dict[str, Any] = {}
    for i, k in enumerate(keyed):
        if k.op is None:
            out[f"_s_dk{i}"], out[f"_s_dr{i}"] = 0, 0
        else:
            out[f"_s_gb{i}"] = 0 if bool(k.holds(1)) else rows
            out[f"_s_gn{i}"] = rows
    return out


def _key_columns(target: Target, keyed: Sequence[KeyRule]) -> pa.Table | None:
    """The key columns on this process, when they can be counted here."""
    if not keyed or target.columns is None:
        return None
    cols = list(dict.fromkeys(c for k in keyed for c in k.keys))
    table = target.columns(cols)
    if table is None or not key_counts.supported([f.type for f in table.schema]):
        return None
    return table


def _counted(table: pa.Table, keyed: Sequence[KeyRule]) -> dict[str, Any]:
    """The key rules' figures (as :func:`_grouped` names them), counted on this process."""
    out: dict[str, Any] = {}
    for i, k in enumerate(keyed):
        sizes = key_counts.group_sizes(table, k.keys, skip_nulls=k.op is None)
        if k.op is None:
            repeated = sizes[sizes > 1]
            out[f"_s_dk{i}"], out[f"_s_dr{i}"] = len(repeated), int(repeated.sum())
        else:
            out[f"_s_gb{i}"] = int((~k.holds(sizes)).sum())
            out[f"_s_gn{i}"] = len(sizes)
    return out


def _any_null(cols: Sequence[str]) -> Column:
    from pyspark.sql import functions as sf

    test = sf.col(cols[0]).isNull()
    for c in cols[1:]:
        test = test | sf.col(c).isNull()
    return test


def measure_by_group(
    frame: DataFrame, group: str, checks: Sequence[Check]
) -> tuple[dict[Any, dict[str, Any]], dict[str, Any]]:
    """Every figure judging ``checks`` needs (:attr:`Target.measured`), for each value of
    ``frame``'s column ``group``, in one Spark pass; and the figures of a group with no
    rows. Rules the types refuse are not measured (judging refuses them first)."""
    types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    fit = [c for c in checks if c.expectation.problem(types) is None]
    leaves = [e for c in fit for e in _leaves(c.expectation) if not isinstance(e, SchemaRule)]
    keyed = [e for e in leaves if isinstance(e, KeyRule)]
    per_row = {n: build() for n, build in _per_row(leaves).items()}
    if keyed:
        figures = _grouped_by(frame, keyed, per_row, by=(group,))
    else:
        figures = frame.groupBy(group).agg(*[c.alias(n) for n, c in per_row.items()])
    by_group = {r[group]: r.asDict() for r in figures.collect()}
    empty = {n: 0 for n in figures.columns if n != group}
    return by_group, empty


def _grouped(
    frame: DataFrame, keyed: Sequence[KeyRule], per_row: Mapping[str, Column]
) -> dict[str, Any]:
    """Totals and per-key counts from one scan (:func:`_grouped_by`)."""
    return dict(_grouped_by(frame, keyed, per_row).collect()[0].asDict())


def _grouped_by(
    frame: DataFrame,
    keyed: Sequence[KeyRule],
    per_row: Mapping[str, Column],
    by: Sequence[str] = (),
) -> DataFrame:
    """Totals and per-key counts, for each value of ``by`` (one row without it), from
    one scan: ``GROUPING SETS ((), keys…)`` (with one key, a plain grouping by it: the
    totals are the sums of its groups), then one aggregation over the groups."""
    from pyspark.sql import functions as sf

    sets = list(dict.fromkeys(k.keys for k in keyed))
    cols = list(dict.fromkeys(c for s in sets for c in s if c not in by))
    every = [*by, *cols]

    def gid(chosen: Sequence[str]) -> int:  # Spark's grouping_id: 1 bits for absent columns
        kept = (*by, *chosen)
        return sum(1 << (len(every) - 1 - i) for i, c in enumerate(every) if c not in kept)

    measures = [c.alias(n) for n, c in per_row.items()]
    if len(sets) == 1:  # no Expand: every row is shuffled once, not once per set
        groups = frame.groupBy(*every).agg(*measures)

        def within(chosen: Sequence[str]) -> Column:
            return sf.lit(True)

        everything = sf.lit(True)
    else:
        groups = frame.groupingSets([list(by), *[[*by, *s] for s in sets]], *every).agg(
            sf.grouping_id().alias("_gid"), *measures
        )

        def within(chosen: Sequence[str]) -> Column:
            return sf.col("_gid") == gid(chosen)

        everything = within(())
    over = [sf.sum(sf.when(everything, sf.col(n))).alias(n) for n in per_row]
    for i, k in enumerate(keyed):
        mine = within(k.keys)
        if k.op is None:
            dup = mine & ~_any_null(k.keys) & (sf.col(ROWS) > 1)
            over.append(sf.count(sf.when(dup, 1)).alias(f"_s_dk{i}"))
            over.append(sf.sum(sf.when(dup, sf.col(ROWS))).alias(f"_s_dr{i}"))
        else:
            bad = mine & ~_holds(k, sf.col(ROWS))
            over.append(sf.count(sf.when(bad, 1)).alias(f"_s_gb{i}"))
            over.append(sf.count(sf.when(mine, 1)).alias(f"_s_gn{i}"))
    return groups.groupBy(*by).agg(*over)


def _holds(k: KeyRule, count: Column) -> Column:
    holds: Column = k.holds(count)
    return holds


def _key_found(k: KeyRule, i: int, row: Mapping[str, Any], rows: int) -> _Found:
    if k.op is not None:
        bad, groups = int(row[f"_s_gb{i}"] or 0), int(row[f"_s_gn{i}"] or 0)
        return _Found(bad == 0, {"groups": groups, "groups_failing": bad}, bad)
    dup_keys, dup_rows = int(row[f"_s_dk{i}"] or 0), int(row[f"_s_dr{i}"] or 0)
    nulls = int(row.get(f"_s_n{i}") or 0) if k.not_null else 0
    observed: dict[str, Any] = {"rows": rows, "duplicate_keys": dup_keys}
    if k.not_null:
        observed["null_keys"] = nulls
    failing = dup_rows + nulls
    return _Found(failing == 0, observed, failing)


def _against_previous(k: KeyRule, appended: _Found, target: Target) -> _Found:
    """An incremental append's key rule: also no appended key already in the output."""
    assert target.appended is not None and target.previous is not None
    cols = list(k.keys)
    fresh = target.appended.select(*cols).where(~_any_null(cols)).distinct()
    clash = fresh.join(target.previous.select(*cols).distinct(), cols, "left_semi").count()
    observed = {**appended.observed, "keys_already_present": clash}
    failing = (appended.failing or 0) + clash
    return _Found(failing == 0, observed, failing)


def _samples(target: Target, e: Expectation, found: Mapping[int, _Found]) -> list[dict[str, Any]]:
    """A few rows (or keys) that broke ``e``; read only when it failed."""
    from pyspark.sql import functions as sf

    frame = target.frame
    if isinstance(e, Combined):
        for p in e.parts:
            if not _outcome(p, found).passed:
                return _samples(target, p, found)
        return []
    if isinstance(e, RowRule):
        picked = frame.where(_failing_rows(e)).limit(SAMPLE_ROWS)
    elif isinstance(e, KeyRule):
        source = target.appended if target.appended is not None and e.op is None else frame
        counts = source.groupBy(*e.keys).agg(sf.count(sf.lit(1)).alias("rows"))
        if e.op is None:
            bad = (sf.col("rows") > 1) & ~_any_null(e.keys)
            if e.not_null:
                bad = bad | _any_null(e.keys)
        else:
            bad = ~_holds(e, sf.col("rows"))
        picked = counts.where(bad).limit(SAMPLE_ROWS)
    else:
        return []
    return [{k: _plain(v) for k, v in r.asDict().items()} for r in picked.collect()]


def _plain(value: Any) -> Any:
    """A sample value as JSON holds it."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return str(value)
