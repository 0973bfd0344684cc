"""The server under test as Marquez's integration tests use it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import marquez_client

from http_client import HTTP

# The origin of Marquez's web UI, served by its own proxy, which the server allows.
MARQUEZ_WEB_ORIGIN = "http://localhost:3000"


@dataclass
class Marquez:
    """A running server as Marquez's tests use it: ``client`` is marquez-python's."""

    root: str
    client: marquez_client.MarquezClient

    @property
    def api(self) -> str:
        return f"{self.root}/api/v1"

    def send(self, *events: dict[str, Any]) -> None:
        """POST each event to the OpenLineage endpoint, in order; each must be taken."""
        for event in events:
            answer = HTTP.post(f"{self.api}/lineage", json=event)
            assert answer.status_code == 201, answer.text

    def get(self, path: str, **params: Any) -> Any:
        answer = HTTP.get(f"{self.api}{path}", params=params)
        assert answer.status_code == 200, f"{path}: {answer.status_code} {answer.text}"
        return answer.json()

    def status(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return HTTP.request(method, f"{self.api}{path}", json=body)
