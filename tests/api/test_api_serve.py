"""`strata serve` as an operator meets it: bodies refused before they are read, a store
outage answered 503 and healed alone, and nothing acknowledged lost to SIGKILL or SIGTERM."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from serve_process import Served, event, free_port
from strata.store import migrate
from strata.store.engine import create_engine

MiB = 1024 * 1024


def _store_env(db_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        "STRATA_DATABASE_URL": db_url,
        "STRATA_HOME": str(tmp_path / ".strata"),
        "STRATA_LAKE_URI": (tmp_path / "lake").as_uri(),
    }


# --- bodies -------------------------------------------------------------------------------


def _send_body(port: int, headers: dict[str, str], size: int, *, chunked: bool, path: str) -> int:
    """PUT ``size`` bytes to ``path`` (as chunks, or with a Content-Length) while reading
    the answer; its status. The sender stops when the server closes the connection."""
    sock = socket.create_connection(("127.0.0.1", port))
    head = [f"PUT {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}")
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())

    def send() -> None:
        block = b"[" + b" " * (MiB - 1)
        frame = f"{len(block):x}\r\n".encode() + block + b"\r\n" if chunked else block
        try:
            for _ in range(size // MiB):
                sock.sendall(frame)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed: what it did not read is not sent

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    sock.settimeout(120)
    status_line = b""
    while b"\r\n" not in status_line:
        got = sock.recv(4096)
        if not got:
            break
        status_line += got
    sock.close()
    sender.join(60)
    return int(status_line.split()[1])


def test_bodies_are_refused_before_they_are_read(tmp_path: Path) -> None:
    env = {
        **_store_env(f"sqlite:///{tmp_path / 'meta.db'}", tmp_path),
        "STRATA_READ_TOKENS": "reader",
        "STRATA_WRITE_TOKENS": "writer",
    }
    path = "/api/v1/namespaces/x"
    with Served(tmp_path, env) as server:
        before = server.peak_rss_mib()
        for chunked in (True, False):
            assert _send_body(server.port, {}, 256 * MiB, chunked=chunked, path=path) == 401
            read = {"Authorization": "Bearer reader"}
            assert _send_body(server.port, read, 256 * MiB, chunked=chunked, path=path) == 403
        unread = server.peak_rss_mib() - before
        # 1 GiB was offered without a write token; none of it was held.
        assert unread < 32, f"the server's peak memory grew {unread:.0f} MiB"
        write = {"Authorization": "Bearer writer"}
        for chunked in (False, True):
            assert _send_body(server.port, write, 100 * MiB, chunked=chunked, path=path) == 413
        r = httpx.put(f"{server.url}/namespaces/x", json={"ownerName": "me"}, headers=write)
        assert r.status_code == 200, r.text
        server.stop()


# --- a store outage -----------------------------------------------------------------------


def _pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    assert found, "PostgreSQL's server binaries are not installed"
    return found[-1].parent


class PrivatePostgres:
    """A PostgreSQL server of this test's own, which it may stop and start again."""

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.data = root / "pgdata"
        self.root = root
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            shutil.chown(root, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def _run(self, tool: str, *args: str) -> None:
        command = [str(_pg_bin() / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
        log = str(self.root / "pg.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")


@pytest.fixture
def private_pg() -> Iterator[PrivatePostgres]:
    # Not under tmp_path: pytest's folders are closed to the postgres user.
    root = Path(tempfile.mkdtemp(prefix="strata-pg-"))
    pg = PrivatePostgres(root)
    pg.start()
    engine = create_engine(pg.url)
    migrate.upgrade(engine)
    engine.dispose()
    try:
        yield pg
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # stopped already
            pg.stop()
        shutil.rmtree(root, ignore_errors=True)


# What the server offers the pages is in its settings: it answers while the store is out.
STORELESS = "/api/v1/strata/server"


def _requests(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """Every GET of the API, with its path and required query filled in, plus a write."""
    run_id = str(uuid.uuid4())
    query = {"q": "x", "nodeId": "dataset:x:x", "runId": run_id, "period": "DAY"}
    out: list[tuple[str, str, dict[str, Any]]] = []
    for template, item in doc["paths"].items():
        if "get" not in item or not template.startswith("/api/"):
            continue
        path = template.replace("{id}", run_id)
        for name in ("namespace", "dataset", "job", "version", "source", "tag", "field", "column"):
            path = path.replace("{" + name + "}", "x")
        params = {
            p["name"]: query[p["name"]]
            for p in item["get"].get("parameters", [])
            if p.get("required") and p["in"] == "query"
        }
        out.append(("GET", path, {"params": params}))
    out.append(("POST", "/api/v1/lineage", {"json": event(run_id)}))
    out.append(("PUT", "/api/v1/namespaces/x", {"json": {"ownerName": "me"}}))
    return out


def test_a_store_outage_is_503_everywhere_and_heals_alone(
    private_pg: PrivatePostgres, tmp_path: Path
) -> None:
    (tmp_path / "pipes").mkdir()
    (tmp_path / "pipes" / "nothing.py").write_text('"""No transforms."""\n')
    env = {**_store_env(private_pg.url, tmp_path), "STRATA_PIPELINES": str(tmp_path / "pipes")}
    with Served(tmp_path, env) as server:
        base = f"http://127.0.0.1:{server.port}"
        doc = httpx.get(f"{base}/openapi.json").json()
        calls = _requests(doc)
        assert len(calls) > 30
        with httpx.Client(base_url=base, timeout=30) as client:
            private_pg.stop()
            for method, path, kw in calls:
                r = client.request(method, path, **kw)
                if path == STORELESS:
                    assert r.status_code == 200 and r.json()["builds"] is True, r.text
                    continue
                assert r.status_code == 503, f"{method} {path}: {r.status_code} {r.text}"
                body = r.json()
                assert body.get("code") == "store_error" or body.get("status") == "unavailable"
            private_pg.start()
            deadline = time.monotonic() + 60
            while client.get("/api/v1/health").status_code != 200:
                assert time.monotonic() < deadline, "the server did not recover"
                time.sleep(0.5)
            for method, path, kw in calls:
                r = client.request(method, path, **kw)
                assert r.status_code < 500, f"{method} {path}: {r.status_code} {r.text}"
        server.stop()


# --- durability ---------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _gone(pids: list[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{p}").exists() and "Z" not in _state(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_signal_during_ingest_loses_nothing_acknowledged(
    db_url: str, tmp_path: Path, sig: int
) -> None:
    env = _store_env(db_url, tmp_path)
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def produce(url: str) -> None:
        with httpx.Client(timeout=30) as client:
            while not stop.is_set():
                run_id = str(uuid.uuid4())
                try:
                    r = client.post(f"{url}/lineage", json=event(run_id))
                except httpx.TransportError:
                    return  # the server is gone
                if r.status_code == 201:
                    with lock:
                        acknowledged.append(run_id)

    with Served(tmp_path, env) as server:
        fold = _children(server.proc.pid)
        producers = [threading.Thread(target=produce, args=(server.url,)) for _ in range(4)]
        for p in producers:
            p.start()
        time.sleep(1.5)
        took = server.stop(sig)
        stop.set()
        for p in producers:
            p.join(60)
        if sig == signal.SIGTERM:
            assert took < 15, f"SIGTERM took {took:.1f} s"
            assert "Application shutdown complete" in server.log.read_text()
        assert fold and _gone(fold, 15), "the fold process outlived its server"
    assert len(acknowledged) > 20
    with Served(tmp_path, env) as again, httpx.Client(timeout=30) as client:
        missing = [
            r for r in acknowledged if client.get(f"{again.url}/jobs/runs/{r}").status_code != 200
        ]
        assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged events lost"
        again.stop()


# --- builds a killed server left ------------------------------------------------------------


def test_serve_ends_the_builds_a_killed_server_left_on_its_sqlite_store(tmp_path: Path) -> None:
    from strata.builds.state import BuildState
    from strata.builds.state.requests import BuildRequest

    url = f"sqlite:///{tmp_path / 'meta.db'}"
    engine = create_engine(url)
    migrate.upgrade(engine)
    left = BuildRequest(
        id=str(uuid.uuid4()),
        dataset="metrics/daily",
        force=False,
        state="RUNNING",
        holder="server-that-was-killed",
        requested_at=datetime.now(UTC),
        started_at=datetime.now(UTC),
        ended_at=None,
        progress={"planned": ["p.daily"], "running": ["p.daily"], "transforms": []},
        error=None,
        run=None,
    )
    BuildState(engine, "strata").add_build_request(left)
    engine.dispose()
    with Served(tmp_path, _store_env(url, tmp_path)) as server:
        build = httpx.get(f"{server.url}/strata/builds/{left.id}").json()
        assert (build["state"], build["error"]) == ("ABORTED", "the server running it died")
        assert build["planned"] == ["p.daily"] and build["endedAt"] is not None
        server.stop()


_SLOW_PIPELINE = """
import time

from strata import Input, Output, transform_df


@transform_df(Output("slow/out"), src=Input("raw/src"))
def slow(src):
    time.sleep(600)
    return src
"""


def test_a_build_over_http_on_a_killed_postgresql_server_ends_aborted(
    tmp_path: Path, pg_databases: Any
) -> None:
    """``strata serve`` on PostgreSQL, SIGKILLed while it runs a build asked for over
    HTTP: another server of the store reads the build RUNNING until the killed server's
    lease runs out, then ABORTED, "the server running it stopped"."""
    import pyarrow as pa

    from strata.lake.service import Lake
    from strata.settings import Settings

    url = str(pg_databases.new())
    engine = create_engine(url)
    migrate.upgrade(engine)
    env = {**_store_env(url, tmp_path), "STRATA_BUILD_LEASE_SECONDS": "4"}
    store = Settings.load(
        database_url=url, home=tmp_path / ".strata", lake_uri=env["STRATA_LAKE_URI"]
    )
    lake = Lake(store, engine)
    with lake.transaction("raw/src", type="SNAPSHOT") as txn:
        txn.write(pa.table({"id": [1, 2]}))
    pipelines = tmp_path / "pipelines"
    pipelines.mkdir()
    (pipelines / "p.py").write_text(_SLOW_PIPELINE)
    env["STRATA_PIPELINES"] = str(pipelines)
    engine.dispose()

    with Served(tmp_path, env) as first:
        posted = httpx.post(f"{first.url}/strata/builds", json={"dataset": "slow/out"}, timeout=30)
        assert posted.status_code == 202, posted.text
        build_url = f"{first.url}/strata/builds/{posted.json()['id']}"
        deadline = time.monotonic() + 120
        while httpx.get(build_url, timeout=30).json()["running"] != ["p.slow"]:
            assert time.monotonic() < deadline, httpx.get(build_url, timeout=30).text
            time.sleep(0.5)
        first.stop(signal.SIGKILL)
    with Served(tmp_path, env) as second:
        build_url = f"{second.url}/strata/builds/{posted.json()['id']}"
        seen = httpx.get(build_url, timeout=30).json()
        killed_at = time.monotonic()
        states = [seen["state"]]
        while seen["state"] == "RUNNING" and time.monotonic() - killed_at < 30:
            time.sleep(0.5)
            seen = httpx.get(build_url, timeout=30).json()
            states.append(seen["state"])
        assert (seen["state"], seen["error"]) == ("ABORTED", "the server running it stopped")
        assert set(states) <= {"RUNNING", "ABORTED"}, states
        listed = httpx.get(f"{second.url}/strata/builds", timeout=30).json()["builds"]
        assert [b["state"] for b in listed] == ["ABORTED"]
        second.stop()
