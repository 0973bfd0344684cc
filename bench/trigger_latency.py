"""Trigger latency: from a raw commit to a `strata worker` starting the dependent
transform.

A `strata worker` runs in a process of its own over a one-transform pipeline. Each round
appends to the raw dataset and waits until the transform's run for that commit has
completed; the latency is the run's start time (its START event) minus the commit time,
both as the store recorded them.
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

RUN_OF_COMMIT = """
SELECT r.started_at FROM runs r
JOIN run_inputs ri ON ri.run_uuid = r.uuid
JOIN dataset_versions dv ON dv.uuid = ri.dataset_version_uuid
JOIN jobs j ON j.uuid = r.job_uuid
WHERE j.name = 'feed.copy' AND dv.uuid = :v AND r.state = 'COMPLETED'
"""


def measure(backend: str, rounds: int, poll: float) -> dict[str, Any]:
    import pyarrow as pa
    import sqlalchemy as sa

    with scratch_dir("trigger") as home, open_lake(backend, home) as lake:
        folder = home / "pipelines"
        folder.mkdir()
        (folder / "feed.py").write_text(PIPELINE)
        env = dict(os.environ)
        env.update(
            STRATA_DATABASE_URL=lake.settings.database_url,
            STRATA_LAKE_URI=lake.settings.lake_uri,
            STRATA_PIPELINES=str(folder),
        )
        worker = subprocess.Popen(
            [sys.executable, "-m", "strata.cli", "worker", "--poll", str(poll), "--json"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        latencies: list[float] = []
        try:
            for r in range(rounds + 1):
                with lake.transaction("raw/feed", type="APPEND") as txn:
                    txn.write(pa.table({"x": [r]}))
                version = txn.versions["raw/feed"]
                started = _wait_for_run(lake, sa.text(RUN_OF_COMMIT), version.uuid)
                if r:  # the first round also pays for the worker's Spark start
                    latencies.append((started - version.committed_at).total_seconds())
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    return {"backend": backend, "poll_s": poll, "latency_s": summary(latencies)}


def _wait_for_run(lake: Any, query: Any, version_uuid: str) -> Any:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with lake.engine.connect() as conn:
            found = conn.execute(query, {"v": version_uuid}).scalar()
        if found is not None:
            # SQLite hands the time back as the text it stored.
            when = datetime.fromisoformat(found) if isinstance(found, str) else found
            return when if when.tzinfo else when.replace(tzinfo=UTC)
        time.sleep(0.05)
    raise TimeoutError("the worker did not build the commit within 300 s")


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--poll", type=float, default=0.2)
    args = p.parse_args()
    results = [measure(b, args.rounds, args.poll) for b in backends(args.backend)]
    print_table(
        "commit to dependent transform start (s)",
        ["backend", "poll", "p50", "p90", "max"],
        [
            (
                r["backend"],
                r["poll_s"],
                r["latency_s"]["p50"],
                r["latency_s"]["p90"],
                r["latency_s"]["max"],
            )
            for r in results
        ],
    )
    write_json("trigger_latency", args.json, vars(args), results)


if __name__ == "__main__":
    main()
