"""HTTP API: Marquez-compatible ``/api/v1`` plus Strata routes under ``/api/v1/strata``."""

from __future__ import annotations

from strata.api.app import create_app

__all__ = ["create_app"]
