"""Strata: a history-preserving data pipeline for PySpark with a lineage server."""

from __future__ import annotations

from strata.builds.transforms import (
    Input,
    Output,
    Transform,
    incremental,
    transform,
    transform_df,
)
from strata.lake.service import Lake, connect

__all__ = [
    "Input",
    "Lake",
    "Output",
    "Transform",
    "connect",
    "incremental",
    "transform",
    "transform_df",
]
__version__ = "0.1.0"
