"""Strata: a history-preserving data pipeline for PySpark with a lineage server."""

from __future__ import annotations

from strata.lake.service import Lake, connect

__all__ = ["Lake", "connect"]
__version__ = "0.1.0"
