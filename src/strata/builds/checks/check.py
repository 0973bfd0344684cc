"""Data checks: ``Check(expectation, name, on_error)`` on an ``Input`` (a precondition)
or an ``Output`` (a postcondition), and what judging one found.

A check's name is unique in its transform and names it across history. ``on_error``
is ``"FAIL"`` (the default: a failed check aborts the run, nothing commits) or
``"WARN"`` (the data commits and the result is recorded).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from strata.builds.checks.expectations import Expectation
from strata.errors import PipelineError

ON_ERROR = ("FAIL", "WARN")
SAMPLE_ROWS = 5  # bad rows kept with a failed result, to show what went wrong


def _caller() -> str:
    """``file:line`` of the code that declared the check."""
    frame = sys._getframe(3)  # _caller <- __post_init__ <- __init__ <- the declaration
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


@dataclass(frozen=True, eq=False)
class Check:
    """One expectation a dataset must meet, named, and what to do when it does not."""

    expectation: Expectation
    name: str
    on_error: str = "FAIL"
    where: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.where:
            object.__setattr__(self, "where", _caller())
        at = f"Check({self.name!r}) ({self.where})"
        if not isinstance(self.expectation, Expectation):
            raise PipelineError(
                f"{at} takes an expectation first, got {self.expectation!r}; write "
                "Check(E.not_null('id'), 'id is set')"
            )
        if not isinstance(self.name, str) or not self.name.strip():
            raise PipelineError(f"{at}: its name must be a non-empty string")
        if self.on_error not in ON_ERROR:
            raise PipelineError(
                f"{at}: on_error={self.on_error!r} must be one of {', '.join(ON_ERROR)}"
            )

    def describe(self) -> str:
        return self.expectation.describe()


def check_names(declared: Sequence[tuple[str, Sequence[Check]]], at: str) -> str | None:
    """Why the checks of a transform (``declared``: by dataset) cannot be told apart by
    name, if they cannot; a value that is no check raises."""
    seen: dict[str, str] = {}
    for dataset, checks in declared:
        for c in checks:
            if not isinstance(c, Check):
                raise PipelineError(
                    f"transform {at}: checks of {dataset!r} must be Check(...) values, got {c!r}"
                )
            if c.name in seen:
                return (
                    f"transform {at}: check name {c.name!r} ({c.where}) is already used on "
                    f"{seen[c.name]!r}; give each check of a transform its own name"
                )
            seen[c.name] = dataset
    return None


@dataclass(frozen=True)
class CheckResult:
    """What judging one check found, on one dataset (one partition of it, if partitioned)."""

    name: str
    dataset: str
    side: str  # "input" (a precondition) or "output" (a postcondition)
    expectation: str
    assertion: str
    column: str | None
    on_error: str
    passed: bool
    observed: Mapping[str, Any]
    failing: int | None
    samples: Sequence[Mapping[str, Any]] = ()
    partition: str | None = None  # the partition key text, for a partition's run

    @property
    def outcome(self) -> str:
        """``passed``, ``warned`` (failed, committed anyway) or ``failed``."""
        if self.passed:
            return "passed"
        return "warned" if self.on_error == "WARN" else "failed"

    @property
    def blocks(self) -> bool:
        return self.outcome == "failed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "dataset": self.dataset,
            "side": self.side,
            "expectation": self.expectation,
            "on_error": self.on_error,
            "outcome": self.outcome,
            "observed": dict(self.observed),
            "failing": self.failing,
            "samples": [dict(s) for s in self.samples],
            "partition": self.partition,
        }

    def sentence(self) -> str:
        """One line: the check, the expectation, what failed, a sample."""
        where = f" [{self.partition}]" if self.partition else ""
        head = f"check {self.name!r} ({self.expectation}) on {self.dataset}{where}"
        if self.passed:
            return f"{head} passed"
        count = f"{self.failing:,} failing" if self.failing is not None else "failed"
        what = _observed_words(self.observed)
        sample = f"; e.g. {_sample_words(self.samples[0])}" if self.samples else ""
        return f"{head} {'warned' if self.on_error == 'WARN' else 'failed'}: {count}{what}{sample}"

    def assertion_facet(self) -> dict[str, Any]:
        """This result as one assertion of OpenLineage's ``dataQualityAssertions`` facet."""
        out: dict[str, Any] = {
            "assertion": self.assertion,
            "success": self.passed,
            "name": self.name,
            "description": self.expectation,
            "severity": "warn" if self.on_error == "WARN" else "error",
            "actual": _observed_words(self.observed).lstrip(" (").rstrip(")") or "ok",
        }
        if self.column is not None:
            out["column"] = self.column
        if self.failing is not None:
            out["failures"] = self.failing
        return out


def _observed_words(observed: Mapping[str, Any]) -> str:
    parts = [f"{k.replace('_', ' ')} {v}" for k, v in observed.items() if k != "failing"]
    return f" ({', '.join(parts)})" if parts else ""


def _sample_words(row: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in list(row.items())[:6]) + "}"


def failure_message(results: Sequence[CheckResult], transform: str) -> str:
    """The error of a run its failed checks stopped."""
    failed = [r for r in results if r.blocks]
    head = failed[0].sentence()
    more = f" (and {len(failed) - 1} more failed checks)" if len(failed) > 1 else ""
    return f"transform {transform}: {head}{more}; nothing was committed"
