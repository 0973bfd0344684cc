"""Schedule latency: from a schedule's due time to a `strata worker` taking the firing.

Two `strata worker` processes share one store and a schedule that is due every few
seconds (a six-field cron with seconds) and force-builds a one-transform pipeline. Each
firing is taken by exactly one worker; the latency is the firing's start minus its due
time, as the store recorded them (target: p50 <= 1 s). The figures also count the
builds under each firing, which must be exactly one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

from _common import backends, open_lake, parser, print_table, scratch_dir, summary, write_json

PIPELINE = """
from strata import Input, Output, transform_df


@transform_df(Output("derived/copy"), raw=Input("raw/feed"))
def copy(raw):
    return raw
"""

FIRINGS = """
SELECT due_at, started_at, outcome, run_uuid FROM schedule_firings
WHERE schedule = 'often' AND ended_at IS NOT NULL ORDER BY due_at
"""
# The transform's runs under a firing's build run (a child, or a child's child).
RUNS_UNDER = """
SELECT count(*) FROM runs r JOIN jobs j ON j.uuid = r.job_uuid
LEFT JOIN runs pr ON pr.uuid = r.parent_run_uuid
WHERE j.name = 'feed.copy' AND r.state = 'COMPLETED'
AND (r.parent_run_uuid = :run OR pr.parent_run_uuid = :run)
"""


def measure(backend: str, firings: int, every: int, poll: float) -> dict[str, Any]:
    import pyarrow as pa
    import sqlalchemy as sa

    with scratch_dir("schedule") as home, open_lake(backend, home) as lake:
        folder = home / "pipelines"
        folder.mkdir()
        (folder / "feed.py").write_text(PIPELINE)
        config = home / "strata.toml"
        config.write_text(
            f'[[schedule]]\nname = "often"\ncron = "* * * * * */{every}"\n'
            'build = ["derived/copy"]\nforce = true\n'
        )
        with lake.transaction("raw/feed", type="SNAPSHOT") as txn:
            txn.write(pa.table({"x": [1, 2, 3]}))
        env = dict(os.environ)
        env.update(
            STRATA_DATABASE_URL=lake.settings.database_url,
            STRATA_LAKE_URI=lake.settings.lake_uri,
            STRATA_PIPELINES=str(folder),
            STRATA_CONFIG=str(config),
        )
        command = [sys.executable, "-m", "strata.cli", "worker", "--poll", str(poll)]
        workers = [
            subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(2)
        ]
        try:
            rows = _wait_for_firings(lake, sa.text(FIRINGS), firings + 1)
            with lake.engine.connect() as conn:
                builds = [conn.execute(sa.text(RUNS_UNDER), {"run": r[3]}).scalar() for r in rows]
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(timeout=60)
    # The first firing also pays for the workers' Spark start.
    late = [(_when(r[1]) - _when(r[0])).total_seconds() for r in rows[1:]]
    return {
        "backend": backend,
        "every_s": every,
        "firings": len(late),
        "outcomes": sorted({r[2] for r in rows}),
        "builds_per_firing": sorted(set(builds)),
        "latency_s": summary(late),
    }


def _wait_for_firings(lake: Any, query: Any, wanted: int) -> list[Any]:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        with lake.engine.connect() as conn:
            rows = conn.execute(query).all()
        if len(rows) >= wanted:
            return rows[:wanted]
        time.sleep(0.2)
    raise TimeoutError(f"the workers did not finish {wanted} firings within 600 s")


def _when(value: Any) -> datetime:
    # SQLite hands the time back as the text it stored.
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--firings", type=int, default=20)
    p.add_argument("--every", type=int, default=3, help="seconds between due times")
    p.add_argument("--poll", type=float, default=0.2)
    args = p.parse_args()
    results = [measure(b, args.firings, args.every, args.poll) for b in backends(args.backend)]
    print_table(
        "due time to firing start, two workers (s)",
        ["backend", "firings", "builds per firing", "p50", "p90", "max"],
        [
            (
                r["backend"],
                r["firings"],
                ",".join(str(b) for b in r["builds_per_firing"]),
                r["latency_s"]["p50"],
                r["latency_s"]["p90"],
                r["latency_s"]["max"],
            )
            for r in results
        ],
    )
    write_json("schedule_latency", args.json, vars(args), results)


if __name__ == "__main__":
    main()
