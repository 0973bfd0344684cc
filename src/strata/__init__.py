"""Strata: a history-preserving data pipeline for PySpark with a lineage server."""

from __future__ import annotations

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
