"""Build tests: a project with the shop pipeline in a folder of its own, a lake on the
test's store, and an HTTP server collecting what is sent to it as an OpenLineage
server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from build_support import SHOP, Project, project_of

from strata.lake.service import Lake
from strata.settings import Settings


@pytest.fixture
def project(settings: Settings, tmp_path: Path) -> Iterator[Project]:
    with project_of(settings, tmp_path, SHOP) as p:
        yield p


@pytest.fixture
def lake(settings: Settings) -> Iterator[Lake]:
    lk = Lake(settings)
    yield lk
    lk.engine.dispose()


class _Collector(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append({"path": self.path, "event": json.loads(body)})
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def collector() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    _Collector.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", _Collector.received
    server.shutdown()
