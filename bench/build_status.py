"""`strata status` of a generated graph of derived datasets with history, and a no-op
`strata build --all` over it.

Generates a pipeline module of ``--datasets`` transforms (one function registered that
many times by a factory; each reads one or two earlier datasets or one of 100 raw ones)
and a store where every derived dataset has ``--history`` built versions: each version a
lake commit (committed in groups of 500 datasets per transaction, written by pyarrow)
bound to a run by the same OpenLineage events a build emits (START and COMPLETE with the
program facet and exact input versions, ingested in batches). Then measures, in process:

* ``status``: ``BuildService.status()`` with the pipelines loaded (warm), repeated;
* ``load``: importing the pipeline module and fingerprinting its transforms (cold);

and, as a user runs it, the wall time of ``strata build --all --json`` with nothing out
of date (a fresh process: imports, discovery, status; no JVM may start).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import (
    analyze,
    backends,
    now_ms,
    open_lake,
    parser,
    print_table,
    scratch_dir,
    summary,
    user_env,
    write_json,
)

RAW = 100
GROUP = 500

PIPELINE = """
from strata import Input, Output, transform_df

RAW = {raw}


def inputs_of(i):
    if i < RAW * 2:
        return ["raw/r%d" % (i % RAW)]
    return ["gen/d%d" % (i - 1 - (i * 37) % 150), "gen/d%d" % (i // 2)]


def make(i):
    ins = {{"in%d" % k: Input(n) for k, n in enumerate(inputs_of(i))}}

    @transform_df(Output("gen/d%d" % i), **ins)
    def derive(**frames):
        return next(iter(frames.values()))

    return derive


for _i in range({n}):
    globals()["t%d" % _i] = make(_i)
"""


def write_pipeline(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gen.py"
    path.write_text(PIPELINE.format(raw=RAW, n=n))
    return path


def populate(lake: Any, service: Any, history: int) -> float:
    """Commit ``history`` built versions of every derived dataset; returns seconds."""
    import pyarrow as pa

    from strata.builds.execution import run_events as ev
    from strata.builds.programs.files import program_text
    from strata.ids import new_id
    from strata.lineage.record.apply import record_batch

    t0 = time.monotonic()
    table = pa.table({"x": [1, 2, 3]})
    for r in range(RAW):
        with lake.transaction(f"raw/r{r}", type="SNAPSHOT") as txn:
            txn.write(table)
    items = [
        service.pipelines.transforms[k]
        for k in service.pipelines.graph.post_order(service.pipelines.graph.roots())
    ]
    programs = {
        i.fqn: service.state.register_program(i.fqn, i.fingerprint, program_text(i)) for i in items
    }
    versions: dict[str, int] = {f"raw/r{r}": 1 for r in range(RAW)}
    for _ in range(history):
        for start in range(0, len(items), GROUP):
            group = items[start : start + GROUP]
            names = [i.output_names[0] for i in group]
            with lake.transaction(names, type="SNAPSHOT") as txn:
                for name in names:
                    txn.write(table, dataset=name)
            payloads = []
            for item, name in zip(group, names, strict=True):
                versions[name] = txn.versions[name].commit_id
                spec = ev.RunSpec(
                    new_id(),
                    ev.JobRef(lake.namespace, item.fqn),
                    None,
                    ev.program_facets(
                        item.fingerprint, programs[item.fqn].ordinal, item.fqn, "", "file:///gen.py"
                    ),
                )
                ins = [ev.DatasetAt(n, versions[n]) for n in item.input_names]
                out = [ev.DatasetAt(name, versions[name], rows=3)]
                payloads.append(ev.run_event("START", spec, namespace=lake.namespace, inputs=ins))
                payloads.append(
                    ev.run_event(
                        "COMPLETE", spec, namespace=lake.namespace, inputs=ins, outputs=out
                    )
                )
            results = record_batch(lake.engine, payloads)
            bad = [r for r in results if isinstance(r, Exception)]
            assert not bad, bad[:1]
    return time.monotonic() - t0


def measure(backend: str, n: int, history: int, rounds: int) -> dict[str, Any]:
    from strata.builds.service import BuildService
    from strata.settings import Settings

    with scratch_dir("status") as home, open_lake(backend, home) as lake:
        folder = home / "pipelines"
        write_pipeline(folder, n)
        settings = Settings(
            home=home, database_url=lake.settings.database_url, pipelines=(str(folder),)
        )
        t0 = now_ms()
        service = BuildService(settings, lake=lake)
        assert len(service.pipelines.transforms) == n
        load_ms = now_ms() - t0
        setup_s = populate(lake, service, history)
        if backend == "postgresql":
            # As autovacuum would after this many changes (a server may run without it):
            # without statistics the catalog's reads plan as if each table held one row.
            analyze(lake.engine)
        stale = [s for s in service.status().values() if s.stale]
        assert not stale, stale[:3]
        gc.collect()
        status_ms = []
        for _ in range(rounds):
            t0 = now_ms()
            service.status()
            status_ms.append(now_ms() - t0)
        cli_ms = noop_build_wall(settings, rounds=3)
    return {
        "backend": backend,
        "datasets": n,
        "history": history,
        "setup_s": round(setup_s, 1),
        "load_ms": round(load_ms, 1),
        "status_ms": summary(status_ms),
        "noop_build_wall_ms": summary(cli_ms),
    }


def noop_build_wall(settings: Any, rounds: int) -> list[float]:
    """Wall time of `strata build --all --json` in a fresh process; checks no JVM started."""
    env = user_env(
        STRATA_DATABASE_URL=settings.database_url,
        STRATA_LAKE_URI=settings.lake_uri,
        STRATA_PIPELINES=settings.pipelines[0],
    )
    out = []
    for r in range(rounds + 1):  # the first unmeasured: it writes the bytecode cache
        t0 = now_ms()
        done = subprocess.run(
            [sys.executable, "-m", "strata.cli", "build", "--all", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        if r:
            out.append(now_ms() - t0)
        report = json.loads(done.stdout)
        assert {t["outcome"] for t in report["transforms"]} == {"fresh"}
    return out


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--datasets", type=int, default=10_000)
    p.add_argument("--history", type=int, default=2)
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args()
    results = [measure(b, args.datasets, args.history, args.rounds) for b in backends(args.backend)]
    rows = [
        (
            r["backend"],
            r["datasets"],
            r["history"],
            r["status_ms"]["p50"],
            r["status_ms"]["p95"],
            r["load_ms"],
            r["noop_build_wall_ms"]["p50"],
            r["setup_s"],
        )
        for r in results
    ]
    print_table(
        "status of a generated graph (ms)",
        [
            "backend",
            "derived",
            "versions each",
            "status p50",
            "status p95",
            "load",
            "no-op build wall p50",
            "setup s",
        ],
        rows,
    )
    write_json("build_status", args.json, vars(args), results)


if __name__ == "__main__":
    main()
