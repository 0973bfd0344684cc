"""Ingest while lineage retention runs: the ingest benchmark's batches, once alone, once
while a pass deletes a backlog of old runs, and once alone again.

A fresh store gets ``--old-runs`` runs (START and COMPLETE, inputs and outputs, as
``lineage_ingest.py`` makes them) dated 2024, sent through the server. Then three phases
of ``--events`` new events each (dated now, on jobs of their own so each phase's run
counts are exact), sent by ``lineage_ingest.drive`` in batches of ``--batch``: alone,
while ``strata retention --lineage`` (90 days) deletes the old runs in this process, and
alone again. Each phase must read back whole (nothing lost); the figure is the visible
events/s during the pass against the mean of the two phases alone.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from _common import backends, parser, print_table, write_json
from lineage_ingest import _expected, drive, make_runs, servers, store

OLD = datetime(2024, 1, 1, tzinfo=UTC)


def phase(ports: list[int], runs: list[list[bytes]], jobs: int, batch: int) -> dict[str, Any]:
    result = drive(ports, runs, 8, batch, jobs, 120.0)
    assert result["errors"] == 0, result["first_errors"]
    assert result["visibility_check"]["complete"], result["visibility_check"]
    return result


def run(backend: str, old_runs: int, events: int, batch: int) -> dict[str, Any]:
    from strata.lineage.record import prune
    from strata.store.engine import create_engine

    with store(backend) as (url, home), servers(url, home, 1) as ports:
        old = make_runs(old_runs, 200, 500, 1, "old", OLD)
        jobs = set(_expected(old))
        print(f"[{backend}] sending {2 * old_runs:,} old events ...", flush=True)
        phase(ports, old, len(jobs), 100)
        out: dict[str, Any] = {"backend": backend, "old_runs": old_runs}
        clock = datetime.now(UTC) - timedelta(days=1)
        for name in ("alone", "during the pass", "alone again"):
            runs = make_runs(events // 2, 200, 500, len(out), name.replace(" ", "_"), clock)
            clock += timedelta(seconds=len(runs) + 60)
            jobs |= set(_expected(runs))
            engine = create_engine(url)
            pruned: dict[str, Any] = {}
            worker = threading.Thread(target=_timed_pass, args=(prune, engine, pruned), daemon=True)
            if name == "during the pass":
                worker.start()
                time.sleep(0.2)  # the pass is under way when the load starts
            out[name] = phase(ports, runs, len(jobs), batch)
            if worker.is_alive() or pruned:
                worker.join()
                out["pass"] = pruned
            engine.dispose()
        base = (
            out["alone"]["visible_events_per_s"] + out["alone again"]["visible_events_per_s"]
        ) / 2
        out["ratio"] = out["during the pass"]["visible_events_per_s"] / base
        return out


def _timed_pass(prune: Any, engine: Any, into: dict[str, Any]) -> None:
    t0 = time.perf_counter()
    done = prune.expire(engine, datetime.now(UTC) - timedelta(days=90))
    into.update(done.to_dict(), seconds=time.perf_counter() - t0)


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--old-runs", type=int, default=20_000, help="old runs to delete")
    p.add_argument("--events", type=int, default=6_000, help="new events a phase")
    p.add_argument("--batch", type=int, default=100, help="events a request")
    a = p.parse_args()
    results = [run(b, a.old_runs, a.events, a.batch) for b in backends(a.backend)]
    for r in results:
        print_table(
            f"[{r['backend']}] ingest of batches of {a.batch}, visible events/s",
            ["phase", "events/s", "lost"],
            [
                [k, r[k]["visible_events_per_s"], r[k]["errors"]]
                for k in ("alone", "during the pass", "alone again")
            ]
            + [["during / alone (mean of both)", r["ratio"], ""]],
        )
        ps = r["pass"]
        print(
            f"[{r['backend']}] the pass: {ps['runs']:,} runs, {ps['events']:,} events, "
            f"{ps['versions']:,} versions deleted in {ps['batches']} batches, {ps['seconds']:.1f} s"
        )
    write_json("lineage_retention", a.json, vars(a), results)


if __name__ == "__main__":
    main()
