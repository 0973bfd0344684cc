"""Shared helpers for the benchmark scripts: throwaway lakes, statistics, tables, JSON."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / ".out"
PG_ADMIN_URL = os.environ.get("STRATA_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


def parser(description: str, *, backend: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    if backend:
        p.add_argument(
            "--backend",
            choices=["sqlite", "postgresql", "both"],
            default="both",
            help="metadata store to measure (default: both, one after the other)",
        )
    p.add_argument(
        "--json",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help="also write the results as JSON (default path: bench/.out/<name>.json)",
    )
    p.add_argument("--seed", type=int, default=7, help="random seed for generated data")
    return p


def backends(choice: str) -> list[str]:
    return ["sqlite", "postgresql"] if choice == "both" else [choice]


@contextmanager
def pg_database() -> Iterator[str]:
    """A throwaway PostgreSQL database on the bench server; dropped afterwards."""
    import sqlalchemy as sa

    from strata.store.engine import create_engine

    admin = create_engine(PG_ADMIN_URL, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT")
    name = f"strata_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield (
            sa.engine.make_url(PG_ADMIN_URL)
            .set(database=name)
            .render_as_string(hide_password=False)
        )
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    base = Path(os.environ.get("STRATA_BENCH_TMP", tempfile.gettempdir()))
    path = Path(tempfile.mkdtemp(prefix=f"strata-bench-{prefix}-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def user_env(bytecode: bool = True, **extra: str) -> dict[str, str]:
    """This process's environment for a command run as on a user's machine: Python keeps
    its compiled modules (``bytecode``), so a command does not compile Strata's code again
    each time (some shells set PYTHONDONTWRITEBYTECODE); ``extra`` on top."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return {**env, **extra}


@contextmanager
def open_lake(backend: str, home: Path) -> Iterator[Any]:
    """A fresh lake under ``home`` on the given metadata store, migrated to head."""
    from strata.lake.service import connect
    from strata.settings import Settings
    from strata.store import migrate
    from strata.store.engine import create_engine

    if backend == "sqlite":
        lake = connect(Settings(home=home))
        try:
            yield lake
        finally:
            lake.engine.dispose()
        return
    with pg_database() as url:
        engine = create_engine(url)
        migrate.upgrade(engine)
        engine.dispose()
        lake = connect(Settings(home=home, database_url=url))
        try:
            yield lake
        finally:
            lake.engine.dispose()


def now_ms() -> float:
    return time.perf_counter() * 1000.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between ranks."""
    data = sorted(values)
    if not data:
        return float("nan")
    k = (len(data) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "min": min(values),
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "max": max(values),
        "mean": statistics.fmean(values),
    }


def alternate(
    ours: Callable[[int], float],
    theirs: Callable[[int], float],
    rounds: int,
    warmup: int,
    report: Callable[[int, float, float], None] | None = None,
) -> tuple[list[float], list[float]]:
    """Time two operations round by round, swapping which goes first each round.

    Each callable takes the round number and returns its own elapsed ms; the
    first ``warmup`` rounds are run but not kept.
    """
    import gc

    kept_ours: list[float] = []
    kept_theirs: list[float] = []
    for i in range(warmup + rounds):
        gc.collect()
        if i % 2 == 0:
            a, b = ours(i), theirs(i)
        else:
            b, a = theirs(i), ours(i)
        if report is not None:
            report(i, a, b)
        if i >= warmup:
            kept_ours.append(a)
            kept_theirs.append(b)
    return kept_ours, kept_theirs


def checkouts_alternating(
    against: str,
    rounds: int,
    command: Sequence[str],
    out_flag: str,
    report: Callable[[int, str, dict[str, Any]], None] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """``command`` (a bench that writes its JSON where ``out_flag`` says) run with this
    checkout's ``src`` and then ``against`` (another checkout's) on ``PYTHONPATH``, each in
    a fresh process, ``rounds`` times, swapping which goes first each round; each side's
    JSON documents ("now", "against"). ``report`` hears of each run as it ends."""
    import subprocess

    sides = {"now": str(HERE.parent / "src"), "against": against}
    docs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for r in range(rounds):
        for side in list(sides) if r % 2 == 0 else list(sides)[::-1]:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "out.json"
                env = {**os.environ, "PYTHONPATH": sides[side]}
                subprocess.run(
                    [*command, out_flag, str(out)], env=env, check=True, capture_output=True
                )
                docs[side].append(json.loads(out.read_text()))
            if report is not None:
                report(r, side, docs[side][-1])
    return docs


def interleaved_ops(
    ops: dict[str, Callable[[str], Any]], pair: tuple[str, str], names: tuple[str, str], rounds: int
) -> dict[str, Any]:
    """Each op timed on the two datasets of ``pair``, round by round (3 warm-up rounds),
    side by side as ``names``."""
    out = {}
    for name, op in ops.items():

        def timed(ds: str, op: Callable[[str], Any] = op) -> float:
            t0 = now_ms()
            op(ds)
            return now_ms() - t0

        ours, theirs = alternate(lambda _: timed(pair[0]), lambda _: timed(pair[1]), rounds, 3)
        out[name] = side_by_side(ours, theirs, names)
    return out


def print_side_by_side(title: str, names: tuple[str, str], reads: dict[str, Any]) -> None:
    """What :func:`interleaved_ops` measured, one row an op."""
    print_table(
        title,
        ["read", f"{names[0]} p50", f"{names[1]} p50", "ratio of medians", "median paired ratio"],
        [
            [
                k,
                v[names[0]]["p50"],
                v[names[1]]["p50"],
                v["ratio_of_medians"],
                v["median_paired_ratio"],
            ]
            for k, v in reads.items()
        ],
    )


def side_by_side(
    ours: Sequence[float], theirs: Sequence[float], names: tuple[str, str]
) -> dict[str, Any]:
    """Summaries of two interleaved series and their ratios (ours / theirs)."""
    a, b = summary(ours), summary(theirs)
    paired = sorted(x / y for x, y in zip(ours, theirs, strict=True))
    return {
        names[0]: a,
        names[1]: b,
        "ratio_of_medians": a["p50"] / b["p50"],
        "median_paired_ratio": paired[len(paired) // 2],
    }


def time_requests(
    client: Any, paths: dict[str, str], rounds: int, warm: int = 2
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """GET each of ``paths`` (label -> path) once per round, in order, on ``client`` (an
    ``httpx.Client``); ``warm`` untimed rounds first. Returns each label's times in ms and
    its last JSON body; a request that fails stops the run."""
    times: dict[str, list[float]] = {k: [] for k in paths}
    bodies: dict[str, Any] = {}
    for r in range(rounds + warm):
        for label, path in paths.items():
            t0 = time.perf_counter()
            answer = client.get(path)
            took = (time.perf_counter() - t0) * 1000
            answer.raise_for_status()
            if r >= warm:
                times[label].append(took)
            bodies[label] = answer.json()
    return times, bodies


def fmt(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3f}"
    return str(value)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print(f"\n{title}")
    line = "  ".join(
        h.rjust(w) if i else h.ljust(w)
        for i, (h, w) in enumerate(zip(headers, widths, strict=True))
    )
    print(line)
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    sys.stdout.flush()


def machine() -> dict[str, Any]:
    mem = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "mem_gib": mem,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds every live process has used so far, summed by kind: ``postgres``, the
    lineage ``fold`` processes, the ``server`` processes, this process (``bench``) and
    ``other``. Two readings' difference is what a stretch of work cost each kind."""
    tick = os.sysconf("SC_CLK_TCK")
    own = os.getpid()
    out = dict.fromkeys(("bench", "server", "fold", "postgres", "other"), 0.0)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:  # gone meanwhile
            continue
        # The command name may hold spaces and parentheses: the fields follow its last ')'.
        fields = stat[stat.rindex(b")") + 2 :].split()
        seconds = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        out[_kind(int(entry.name), own, cmd)] += seconds
    return out


def _kind(pid: int, own: int, cmd: bytes) -> str:
    if pid == own:
        return "bench"
    first = cmd.split(b"\0", 1)[0]
    if first.startswith(b"postgres") or first.endswith(b"/postgres"):
        return "postgres"
    if b"multiprocessing" in cmd:
        return "fold"
    if b"uvicorn" in cmd or b"strata" in cmd:
        return "server"
    return "other"


def write_json(name: str, target: str | None, args: dict[str, Any], results: Any) -> None:
    if target is None:
        return
    path = Path(target) if target else OUT_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": name,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "args": args,
        "results": results,
    }
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")


def ok(met: bool) -> str:
    return "met" if met else "NOT met"


def app_factory() -> Any:
    """The ASGI app for ``uvicorn --factory`` (settings from ``STRATA_*``), set up as
    ``strata serve`` sets it up."""
    from strata.api import create_app
    from strata.lineage.record.fold_process import freeze_startup_objects
    from strata.settings import Settings

    app = create_app(Settings.load())
    freeze_startup_objects()
    return app


@contextmanager
def uvicorn_app(factory: str, app_dir: Path, env: dict[str, str], log: Path) -> Iterator[int]:
    """``uvicorn --factory`` on a free 127.0.0.1 port (one worker, httptools, uvloop, no
    access log) until it answers ``GET /api/v1/namespaces``; yields the port."""
    import http.client
    import socket
    import subprocess

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    cmd = [
        sys.executable, "-m", "uvicorn", "--factory", factory, "--app-dir", str(app_dir),
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--http", "httptools",
        "--loop", "uvloop", "--no-access-log", "--log-level", "warning",
    ]  # fmt: skip
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"server exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/api/v1/namespaces")
                if conn.getresponse().status == 200:
                    conn.close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("server did not start within 60 s")
            time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def analyze(engine: Any) -> None:
    """Planner statistics (and on PostgreSQL the visibility map autovacuum would set)."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE")
        return
    with engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
