"""Foreign datasets in ``strata status``: how long finding the datasets of jobs Strata
does not build, whose newest program has not caught up, takes in a large lineage store.

The store is the lineage graph benchmark's (100,000 jobs, 200,000 datasets, one completed
run per job, bulk-loaded). Then ``--lagging`` jobs get a newer job version (a changed
query) whose run FAILED, so their outputs are out of date. Each round calls
``jobs.programs_moved_on`` (what ``status`` adds) and checks it finds exactly the
lagging jobs' outputs.
"""

from __future__ import annotations

import random
import time
import uuid
from datetime import timedelta
from typing import Any

from _common import backends, parser, print_table, summary, write_json
from lineage_graph import populate
from runs_list import open_store


def make_lagging(engine: Any, count: int, seed: int) -> set[str]:
    """``count`` jobs with a newer version whose only run failed; their outputs' names."""
    import sqlalchemy as sa

    from strata.store import schema as s
    from strata.store.engine import write_tx

    rng = random.Random(seed)
    with write_tx(engine) as conn:
        jobs = conn.execute(sa.select(s.jobs.c.uuid, s.jobs.c.created_at)).all()
        chosen = rng.sample(jobs, count)
        for job_uuid, at in chosen:
            later = at + timedelta(days=1)
            version = str(uuid.uuid4())
            run = str(uuid.uuid4())
            conn.execute(
                s.job_versions.insert().values(
                    uuid=version,
                    job_uuid=job_uuid,
                    version="f" * 64,
                    created_at=later,
                    updated_at=later,
                    latest_run_uuid=run,
                    program_facets=["sql"],
                )
            )
            conn.execute(
                s.runs.insert().values(
                    uuid=run,
                    job_uuid=job_uuid,
                    job_version_uuid=version,
                    state="FAILED",
                    created_at=later,
                    updated_at=later,
                    started_at=later,
                    ended_at=later,
                )
            )
            conn.execute(
                s.jobs.update()
                .where(s.jobs.c.uuid == job_uuid)
                .values(current_version_uuid=version)
            )
        outputs = conn.execute(
            sa.select(s.datasets.c.name)
            .join(s.job_version_io, s.job_version_io.c.dataset_uuid == s.datasets.c.uuid)
            .where(
                s.job_version_io.c.job_uuid.in_([j for j, _ in chosen]),
                s.job_version_io.c.io_type == "OUTPUT",
            )
        )
        return {str(n) for n in outputs.scalars()}


def run(
    backend: str, jobs: int, datasets: int, lagging: int, rounds: int, seed: int
) -> dict[str, Any]:
    from strata.lineage.query import jobs as job_reads

    with open_store(backend) as (engine, _url):
        populate(engine, jobs, datasets, seed)
        expected = make_lagging(engine, lagging, seed) if lagging else set()
        times = []
        for _ in range(rounds):
            with engine.connect() as conn:
                t0 = time.perf_counter()
                found = job_reads.programs_moved_on(conn, "strata")
                times.append((time.perf_counter() - t0) * 1000)
            assert {m.name for m in found} == expected, (len(found), len(expected))
    return {
        "backend": backend,
        "jobs": jobs,
        "lagging": lagging,
        "found": len(expected),
        "ms": summary(times),
    }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--datasets", type=int, default=200_000)
    p.add_argument("--lagging", type=int, default=100)
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args()
    results = [
        run(b, args.jobs, args.datasets, args.lagging, args.rounds, args.seed)
        for b in backends(args.backend)
    ]
    print_table(
        "foreign datasets behind their job's program (ms per status)",
        ["backend", "jobs", "lagging jobs", "datasets found", "p50", "p95"],
        [
            (r["backend"], r["jobs"], r["lagging"], r["found"], r["ms"]["p50"], r["ms"]["p95"])
            for r in results
        ],
    )
    write_json("foreign_status", args.json, vars(args), results)


if __name__ == "__main__":
    main()
