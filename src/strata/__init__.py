"""Strata: a history-preserving data pipeline for PySpark with a lineage server.

The names below load on first use, so that ``import strata`` (which every ``strata``
command and every submodule import begins with) costs nothing until one is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from strata.builds.checks import expectations
    from strata.builds.checks.check import Check
    from strata.builds.programs.transforms import (
        Input,
        Output,
        Transform,
        incremental,
        transform,
        transform_df,
    )
    from strata.lake.service import Lake, connect

_TRANSFORMS = "strata.builds.programs.transforms"
# name -> (module, attribute or None for the module itself)
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "Check": ("strata.builds.checks.check", "Check"),
    "Input": (_TRANSFORMS, "Input"),
    "Lake": ("strata.lake.service", "Lake"),
    "Output": (_TRANSFORMS, "Output"),
    "Transform": (_TRANSFORMS, "Transform"),
    "connect": ("strata.lake.service", "connect"),
    "expectations": ("strata.builds.checks.expectations", None),
    "incremental": (_TRANSFORMS, "incremental"),
    "transform": (_TRANSFORMS, "transform"),
    "transform_df": (_TRANSFORMS, "transform_df"),
}

__all__ = [
    "Check",
    "Input",
    "Lake",
    "Output",
    "Transform",
    "connect",
    "expectations",
    "incremental",
    "transform",
    "transform_df",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    found = _EXPORTS.get(name)
    if found is None:
        raise AttributeError(f"module 'strata' has no attribute {name!r}")
    module = importlib.import_module(found[0])
    value = module if found[1] is None else getattr(module, found[1])
    globals()[name] = value  # once: later reads are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
