"""The demo's steps, in the order a data engineer meets them: hours arrive and are built
incrementally, a day is built, nothing to do, a program changes, late data arrives, a
transform breaks and is fixed, a check stops a bad batch, withdrawing it (an upstream
rewrite) makes a build whole, every version can be traced and read again, a retention
policy purges old versions' data while their history stays, an archive policy moves old
raw files to cheaper storage, and a change tried on a branch is compared and merged."""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from strata import ids
from strata.builds.staleness.causes import CauseKind, Outcome
from strata.cli.build_commands import causes_line, how_it_ran
from strata.cli.demo.example import DAILY, HOURLY, DemoState
from strata.cli.output import console, emit_table
from strata.cli.trace_commands import print_trace
from strata.errors import InvalidArgument, StrataError

if TYPE_CHECKING:
    import pyarrow as pa

    from strata.builds.execution.builder import BuildReport
    from strata.builds.service import BuildService
    from strata.lake.service import Lake

RESULT = "metrics/experiment_cumulative"
REGIONAL = "regions/daily"
RETAINED = "metrics/*_daily"  # the demo's retention policy
ARCHIVED = "raw/*"  # the demo's archive policy
# The change the demo tries on a branch: the lift as a log ratio.
LOG_LIFT = (
    'F.round((F.col("b") / F.col("a") - 1) * 100, 2).alias("lift_pct")',
    'F.round(F.log(F.col("b") / F.col("a")) * 100, 2).alias("lift_pct")',
)


@dataclass
class Story:
    """One telling of the demo over one store, lake and copy of the pipelines."""

    lake: Lake
    service: BuildService
    pipelines: Path
    data: ModuleType
    state: DemoState
    count: int = 0

    def chapter(self, title: str) -> None:
        self.count += 1
        console.print()
        console.rule(f"[bold]{self.count}. {title}", align="left")

    def say(self, text: str) -> None:
        console.print(text, highlight=False)

    def say_plain(self, text: str) -> None:
        """``text`` as written: brackets (``[[retention]]``) are not markup."""
        console.print(escape(text), highlight=False)

    # -- 1-2: hours and a day -------------------------------------------------------

    def hours(self, count: int) -> None:
        """Ingest ``count`` hours of clicks for the three regions, with an hourly build
        after each."""
        self.chapter(f"{count} hours of clicks from US, UK and JP, an hourly build after each")
        rows: list[Sequence[Any]] = []
        with _progress() as progress:
            task = progress.add_task("hours", total=count)
            for _ in range(count):
                hour = self.state.hour()
                progress.update(task, description=f"{hour:%H:%M}Z: ingest raw/clicks")
                batch = self.data.batch(hour, self.state.seed, self.state.hour("first_hour"))
                version = self.append_clicks(batch)
                progress.update(task, description=f"{hour:%H:%M}Z: hourly build")
                report = self.build(HOURLY)
                rows.append(_hour_row(hour, batch, version, report))
                self.state.advance()
                progress.advance(task)
        emit_table(
            "each hour: a raw APPEND, then `strata build metrics/experiment_hourly`",
            ["hour (UTC)", "events", "late", "raw/clicks", "clean_clicks read", "ran", "build"],
            rows,
        )
        self.say(
            "The hourly transforms are @incremental: after the first build, each reads only "
            "the clicks appended since the last one."
        )

    def day(self) -> None:
        """Build the daily pipeline and show the experiments' results."""
        self.chapter("the daily build: customer days, experiment days, results so far")
        self.say("Days end at local midnight: the UK's day of the 23rd closed at 00:00Z.")
        outcomes(self.build(DAILY))
        self.show_result()

    def show_result(self, version: int | None = None) -> None:
        table = self.lake.read_arrow(RESULT, version=version)
        got = self.lake.version(RESULT, version)
        emit_table(
            f"{RESULT}@{got.commit_id}: bucket B against A",
            ["experiment", "days", "customers A / B", "clicks per customer A / B", "lift"],
            [
                (
                    r["experiment_id"],
                    r["active_days"],
                    f"{r['customers_a']:,} / {r['customers_b']:,}",
                    f"{r['clicks_per_customer_a']:.2f} / {r['clicks_per_customer_b']:.2f}",
                    f"{r['lift_pct']:+.1f} %",
                )
                for r in table.sort_by("experiment_id").to_pylist()
            ],
        )

    # -- 3-4: nothing to do, then a program change ----------------------------------

    def no_op(self) -> None:
        """A build of everything with nothing out of date runs nothing."""
        self.chapter("build everything again: nothing is out of date")
        t0 = time.perf_counter()
        report = self.service.build(everything=True)
        ran = [s.transform for s in report.steps if s.outcome is not Outcome.FRESH]
        took = time.perf_counter() - t0
        if ran:
            raise StrataError(f"a build with nothing out of date ran {', '.join(ran)}")
        self.say(
            f"[green]✓[/] {len(report.steps)} transforms checked, none ran ({took:.2f} s): "
            "every output's inputs and program are what it was built from."
        )

    def program_change(self) -> None:
        """Edit one transform: status names exactly what is out of date, and why; the
        build rebuilds exactly those."""
        self.chapter("a new program version: clicks on /home no longer count")
        self.edit(
            "hourly.py",
            'F.count("*").alias("clicks")',
            'F.count(F.when(F.col("page") != "/home", 1)).alias("clicks")',
        )
        self.say(
            'hourly.py, customer_hourly: [red]F.count("*")[/] → '
            '[green]F.count(F.when(F.col("page") != "/home", 1))[/]'
        )
        self.service.reload()
        self.service.plan_columns()  # so status says which columns the change touches
        stale = self.stale()
        self.say_columns_touched("metrics/customer_hourly")
        report = self.build(stale)
        built = {o for s in report.steps if s.outcome is Outcome.BUILT for o in s.outputs}
        outcomes(report)
        if built != set(stale):
            raise StrataError(f"status named {sorted(stale)} but the build ran {sorted(built)}")
        self.say(f"[green]✓[/] rebuilt exactly the {len(built)} datasets `strata status` named.")

    def say_columns_touched(self, dataset: str) -> None:
        """Which columns of ``dataset`` the program change touches, as planned."""
        for cause in self.service.dataset_status(dataset).causes:
            columns = cause.detail.get("columns")
            if cause.kind is CauseKind.PROGRAM_CHANGED and columns:
                changed = ", ".join(columns["changed"] + columns["added"]) or "none"
                self.say(
                    f"planned on its inputs before any build: the change touches {dataset}'s "
                    f"columns {changed}; {len(columns['unchanged'])} others keep their lineage"
                )

    def stale(self, service: BuildService | None = None, options: str = "") -> list[str]:
        """Print the out-of-date datasets with their causes (as ``service``, default the
        demo's, sees them); return their names."""
        service = service or self.service
        service.reload()
        status = service.status()
        stale = [s for s in status.values() if s.stale]
        fresh = sum(1 for s in status.values() if not s.stale)
        emit_table(
            f"`strata status{options}`: {len(stale)} out of date, {fresh} fresh",
            ["dataset", "transform", "version", "why"],
            [
                (s.name, s.transform, s.version, "; ".join(c.describe() for c in s.causes))
                for s in stale
            ],
        )
        return [s.name for s in stale]

    # -- 5-6: late data through the worker; a failure and its fix -------------------

    def late_data(self) -> None:
        """Late clicks for the first hour flow down the graph through ``worker --once``."""
        self.chapter("late clicks for the first hour, carried down by `strata worker --once`")
        from strata.builds.workers.worker import run_worker

        before = self.lake.version(RESULT).commit_id
        self.state.runs += 1
        self.state.save()
        first = self.state.hour("first_hour")
        late = self.data.late_events(first, self.state.seed, f"replay{self.state.runs}")
        version = self.append_clicks(late)
        self.say(f"APPEND of {late.num_rows:,} late events → raw/clicks@{version}")
        t0 = time.perf_counter()
        with _progress() as progress:
            progress.add_task("worker --once: draining the commit triggers", total=None)
            report = run_worker(self.service, once=True)
        ran = [
            t
            for b in report.builds
            for t in b.get("transforms", [])
            if t["outcome"] == Outcome.BUILT
        ]
        after = self.lake.version(RESULT).commit_id
        self.say(
            f"the worker took {report.triggers} commit triggers and ran "
            f"{len(ran)} transforms in {time.perf_counter() - t0:.1f} s: "
            + ", ".join(sorted({t["transform"] for t in ran}))
        )
        if after == before:
            raise StrataError(f"the late clicks did not reach {RESULT} (still @{before})")
        self.say(f"[green]✓[/] {RESULT}: @{before} → @{after}, with no build asked for.")

    def failure(self) -> None:
        """A broken transform fails; its outputs keep their versions, what reads them is
        skipped; the fix builds them."""
        self.chapter("a broken transform: current versions stay, downstream is skipped")
        hour = self.state.hour()
        version = self.append_clicks(
            self.data.batch(hour, self.state.seed, self.state.hour("first_hour"))
        )
        self.state.advance()
        self.say(f"one more hour ({hour:%H:%M}Z) → raw/clicks@{version}")
        original = self.edit("daily.py", 'F.sum("sessions")', 'F.sum("session")')
        self.say('daily.py, customer_daily: a typo, [red]F.sum("session")[/]')
        held = {d: self.lake.version(d).commit_id for d in (*DAILY, "metrics/customer_daily")}
        report = self.build(check=False)
        outcomes(report)
        moved = {d: v for d, v in held.items() if self.lake.version(d).commit_id != v}
        if not report.failed or moved:
            raise StrataError(f"the broken build should fail and move nothing; moved {moved}")
        self.say(
            "[green]✓[/] current versions untouched: "
            + ", ".join(f"{d}@{v}" for d, v in sorted(held.items()))
        )
        (self.pipelines / "daily.py").write_text(original)
        self.say("the typo fixed:")
        outcomes(self.build())

    # -- 7: a bad batch stopped by a check -------------------------------------------

    def bad_batch(self) -> None:
        """A batch whose clicks lost their customer: clean_clicks's check stops it before
        anything commits, and status says which check and why."""
        self.chapter("a bad batch: a data check stops it before it is committed")
        import pyarrow as pa

        hour = self.state.hour()
        batch = self.data.batch(hour, self.state.seed, self.state.hour("first_hour"))
        lost = max(1, batch.num_rows // 20)
        ids = batch.column("customer_id").to_pylist()
        broken = [None] * lost + ids[lost:]
        column = batch.schema.get_field_index("customer_id")
        bad = batch.set_column(column, "customer_id", pa.array(broken, pa.string()))
        version = self.append_clicks(bad)  # the hour is sent again once this is withdrawn
        self.say(
            f"a collector lost the customer of {lost:,} clicks at {hour:%H:%M}Z → "
            f"raw/clicks@{version}"
        )
        held = self.lake.version("clean/clicks").commit_id
        report = self.build(HOURLY, check=False)
        outcomes(report)
        failed = next((s for s in report.steps if s.transform == "hourly.clean_clicks"), None)
        moved = self.lake.version("clean/clicks").commit_id != held
        if failed is None or failed.outcome is not Outcome.FAILED or moved:
            raise StrataError("the check on raw/clicks should stop clean_clicks; nothing commits")
        stale = self.service.dataset_status("clean/clicks")
        why = next(c for c in stale.causes if c.kind.value == "check_failed")
        self.say(f"`strata status clean/clicks`: {escape(why.describe())}")
        self.say(
            f"[green]✓[/] clean/clicks stays @{held}; `strata checks clean/clicks` lists "
            "what each check found, with sample rows."
        )

    # -- 8: an upstream rewrite -----------------------------------------------------

    def rewrite(self) -> None:
        """A DELETE upstream: incremental transforms cannot add it up, so they run whole,
        and status says why before the build."""
        self.chapter("an upstream rewrite: a bad batch withdrawn, the next build runs whole")
        last = self.lake.version("raw/clicks")
        before = {f.path for f in self.lake.files("raw/clicks", version=last.commit_id - 1)}
        added = [f.path for f in self.lake.files("raw/clicks") if f.path not in before]
        with self.lake.transaction("raw/clicks", type="DELETE") as txn:
            txn.remove(*added)
        version = txn.versions["raw/clicks"]
        self.say(
            f"DELETE of raw/clicks@{last.commit_id}'s {len(added)} file(s) → "
            f"raw/clicks@{version.commit_id} ({version.row_count:,} rows)"
        )
        self.stale()
        report = self.build()
        outcomes(report)
        clean = next(s for s in report.steps if s.transform == "hourly.clean_clicks")
        if clean.mode != "full":
            raise StrataError(f"hourly.clean_clicks should run whole after a DELETE: {clean.mode}")
        self.say(
            "[green]✓[/] the rewrite made the incremental transforms run whole, as status said."
        )

    # -- 9: history, trace, time travel ---------------------------------------------

    def provenance(self) -> None:
        """The result's versions, one traced down to raw clicks, and a past version read."""
        self.chapter(f"history and trace of {RESULT}, and a read of the past")
        history = self.service.history(RESULT)
        emit_table(
            f"`strata history {RESULT}`",
            ["version", "committed (UTC)", "run", "program", "built from"],
            [
                (
                    v["version"],
                    v["committed_at"][11:19],
                    f"{v['run'][:13]} {v['state']}",
                    f"v{v['program']['ordinal']}",
                    ", ".join(f"{k}@{n}" for k, n in v["inputs"].items()),
                )
                for v in history["versions"]
            ],
        )
        # The version built before the rewrite: the hourly versions under it read ranges.
        traced = history["versions"][-2 if len(history["versions"]) > 1 else -1]["version"]
        self.say(
            f"`strata trace {RESULT}@{traced}` (before the rewrite: an incremental version "
            "shows the range it read, `(from, to]`):"
        )
        print_trace(self.service.trace(RESULT, traced))
        first = history["versions"][0]
        self.say(f"as of {first['committed_at']} (version {first['version']}) it read:")
        self.show_result(first["version"])

    # -- 10: partitions ---------------------------------------------------------------

    def partitions(self) -> None:
        """The regional pipeline builds partition by partition; late JP clicks rebuild
        JP's hour and JP's day, and nothing of the UK's or the US's."""
        self.chapter("partitions: one job, a run per region and hour; late JP clicks")
        source = Path(str(self.data.__file__)).parent / "regional" / "regions.py"
        (self.pipelines / "regions.py").write_text(source.read_text())
        self.say(
            "regions.py joins the pipelines: regions/hourly (by region and hour, from "
            "raw/clicks, itself partitioned by region and hour) and regions/daily (by region "
            "and local day: each UTC hour mapped to its region's day)."
        )
        outcomes(self.build([REGIONAL]))
        hour = self.state.hour("first_hour") + timedelta(hours=1)
        import pyarrow as pa
        import pyarrow.compute as pc

        # A tenth of the hour's JP clicks, replayed from a JP collector.
        replay = self.data.late_events(hour, self.state.seed, f"jp{self.state.runs}", share=1.0)
        jp = replay.filter(pc.equal(replay.column("region"), pa.scalar("JP")))
        late = jp.slice(0, max(1, jp.num_rows // 10))
        version = self.append_clicks(late)
        self.say(
            f"APPEND of {late.num_rows:,} late JP clicks for {hour:%H:%M}Z → raw/clicks@{version}"
        )
        for name in ("regions/hourly", REGIONAL):
            found = self.service.dataset_status(name)
            stale = [p for p in found.partitions or () if p.stale]
            emit_table(
                f"`strata status {name}`: {len(stale)} of {len(found.partitions or ())} "
                "partitions out of date",
                ["partition", "why"],
                [(p.key, escape("; ".join(c.describe() for c in p.causes))) for p in stale],
            )
        self.say(
            "`strata build --all`: the hourly pipeline reads the new rows (incremental), the "
            "regional one rebuilds the JP partitions they fall in:"
        )
        report = self.build()
        ran = {
            s.transform: sorted(p.key for p in s.partitions or () if p.outcome is Outcome.BUILT)
            for s in report.steps
            if s.partitions is not None
        }
        outcomes(report)
        others = [k for keys in ran.values() for k in keys if not k.startswith("region=JP/")]
        one_each = all(len(ran.get(t, [])) == 1 for t in ("regions.hourly", "regions.daily"))
        if not one_each or others:
            raise StrataError(f"late JP clicks should rebuild one JP hour and day: {ran}")
        self.say(
            f"[green]✓[/] rebuilt {ran['regions.hourly'][0]} and {ran['regions.daily'][0]} "
            "only; the UK's and the US's partitions stayed fresh."
        )
        self.partition_runs()

    def partition_runs(self) -> None:
        """One job per transform in the lineage graph, with every region's runs."""
        from strata.store.engine import read_tx
        from strata.store.owners.runs.rows import latest_partition_runs

        rows = []
        with read_tx(self.lake.engine) as conn:
            for job in ("regions.hourly", "regions.daily"):
                latest = latest_partition_runs(conn, ids.job_uuid(self.lake.namespace, job))
                per = Counter(x.partition.split("/")[0].removeprefix("region=") for x in latest)
                rows.append((job, ", ".join(f"{r} {n}" for r, n in sorted(per.items()))))
        emit_table(
            "one job each in the lineage graph; partitions by region (each with its latest run)",
            ["job", "partitions"],
            rows,
        )

    # -- 11: retention ---------------------------------------------------------------

    def retention(self) -> None:
        """A policy purges the data of old daily versions; their history stays, and a
        version a current version was built from stays whole."""
        from strata.cli.retention_commands import print_report
        from strata.errors import PurgedVersion
        from strata.retention.policies import Policy
        from strata.retention.service import Retention

        self.chapter("retention: old versions' data goes, their history stays")
        policy = Policy(RETAINED, (RETAINED,), keep_versions=2, grace_seconds=0)
        self.say_plain(
            f'as `[[retention]] datasets = ["{RETAINED}"], keep_versions = 2, grace = "0s"` '
            "in strata.toml would, `strata retention` purges all but the newest two versions "
            "of each daily metric, except those a current version was built from:"
        )
        report = Retention(self.lake, [policy]).run(trigger="demo")
        print_report(report)
        purged = [t for t in report.touched if t.action == "purged"]
        if not purged:
            return
        ref = f"{purged[0].dataset}@{purged[0].version}"
        try:
            self.lake.read_arrow(purged[0].dataset, version=purged[0].version)
        except PurgedVersion as exc:
            self.say(f"`strata read {ref}`: {escape(exc.message)}")
        else:
            raise StrataError(f"{ref} was purged but still reads")
        self.say(
            f"[green]✓[/] `strata history {purged[0].dataset}` still lists every version, "
            "each purged one with its run, program and inputs."
        )

    # -- 12: the archive tier --------------------------------------------------------

    def archive(self) -> None:
        """A policy moves the files of old raw versions to an archive root; they read
        as before."""
        from strata.cli.retention_commands import print_archive
        from strata.retention.archive import Archive
        from strata.retention.archive_policies import ArchivePolicy

        self.chapter("archive: old versions' files move to cheaper storage, reads stay the same")
        root = (Path(self.lake.settings.home) / "archive").as_uri()
        policy = ArchivePolicy(ARCHIVED, (ARCHIVED,), 0.0, root)
        self.say_plain(
            f'as `[[archive]] datasets = ["{ARCHIVED}"], older_than = "0s", uri = "{root}"` '
            "in strata.toml would, `strata archive` moves the files only older versions read "
            "(copied, verified, recorded, then deleted from the lake):"
        )
        report = Archive(self.lake, [policy]).run(trigger="demo")
        print_archive(report)
        if not report.moved:
            return
        moved = report.moved[0]
        table = self.lake.read_arrow(moved.dataset, version=moved.first_version)
        self.say(
            f"[green]✓[/] `strata read {moved.dataset}@{moved.first_version}` reads its "
            f"{table.num_rows:,} rows from the archive; `strata history {moved.dataset}` "
            f"marks it archived, and `strata restore {moved.dataset}@{moved.first_version}` "
            "would bring it back."
        )

    # -- 13: a branch ------------------------------------------------------------------

    def branch(self) -> None:
        """Try a change on a branch with real data: build it there, compare with main,
        merge; main is then fresh with the new program."""
        from strata.builds.service import BuildService
        from strata.lake import branches
        from strata.lake.merge import merge

        self.chapter("a branch: try a change on real data, compare with main, merge")
        name = f"try/log-lift-{self.state.runs}"
        branches.create(self.lake.engine, name)
        checkout = self.pipelines.parent / "branch-checkout"
        shutil.rmtree(checkout, ignore_errors=True)
        shutil.copytree(self.pipelines, checkout)
        self.edit("daily.py", *LOG_LIFT, folder=checkout)
        self.say(
            f"`strata branch create {name}`, and in the branch's checkout of the code, "
            "experiment_cumulative: [red](b / a - 1) * 100[/] → [green]log(b / a) * 100[/]"
        )
        dev = BuildService(self.service.settings, [str(checkout)], self.lake.on_branch(name))
        stale = self.stale(dev, f" --branch {name}")
        outcomes(dev.build(stale))
        if [s.name for s in self.service.status().values() if s.stale]:
            raise StrataError("a build on a branch put main out of date")
        ours, theirs = self.lake.read_arrow(RESULT), dev.lake.read_arrow(RESULT)
        emit_table(
            f"{RESULT}: lift on main (v{self.lake.version(RESULT).commit_id}) and on {name} "
            f"(v{dev.lake.version(RESULT).commit_id})",
            ["experiment", "main: (b / a - 1) %", f"{name}: log(b / a) %"],
            [
                (m["experiment_id"], f"{m['lift_pct']:+.2f}", f"{b['lift_pct']:+.2f}")
                for m, b in zip(_by_experiment(ours), _by_experiment(theirs), strict=True)
            ],
        )
        merged = merge(self.lake.engine, name)
        forwarded = ", ".join(f"{s.dataset}@{s.branch_version}" for s in merged.merged)
        self.say(f"`strata merge {name}`: fast-forwarded {forwarded}; no data copied")
        self.edit("daily.py", *LOG_LIFT)  # the code is merged too
        self.service.reload()
        left = [s.name for s in self.service.status().values() if s.stale]
        if left:
            raise StrataError(f"after the merge, main still has out of date: {', '.join(left)}")
        branches.delete(self.lake.engine, name)
        self.say(
            f"[green]✓[/] main reads {RESULT}@{self.lake.version(RESULT).commit_id}, built on "
            f"{name}; with the code merged too, nothing on main is out of date."
        )

    # -- helpers -------------------------------------------------------------------

    def append_clicks(self, batch: pa.Table) -> int:
        """APPEND clicks to raw/clicks, partitioned by region and event hour (UTC)."""
        import pyarrow.compute as pc

        hours = pc.strftime(batch.column("event_time"), format="%Y-%m-%dT%H")
        try:
            txn = self.lake.transaction("raw/clicks", "APPEND", partition_by=["region", "hour"])
        except InvalidArgument as exc:
            raise StrataError(
                "this store's raw/clicks was written by an earlier demo, before it was "
                "partitioned; run `strata demo --fresh`"
            ) from exc
        with txn:
            txn.write(batch.append_column("hour", hours))
        return txn.versions["raw/clicks"].commit_id

    def build(self, datasets: Sequence[str] = (), *, check: bool = True) -> BuildReport:
        """Build ``datasets`` (none: everything) with the pipelines as they are now."""
        self.service.reload()
        report = self.service.build(datasets, everything=not datasets)
        if check and report.failed:
            outcomes(report)
            raise StrataError(f"the build of {', '.join(datasets) or 'everything'} failed")
        return report

    def edit(self, file: str, old: str, new: str, folder: Path | None = None) -> str:
        """Replace ``old`` with ``new`` in a pipeline file (of ``folder``, default the
        demo's pipelines); return the text before."""
        path = (folder or self.pipelines) / file
        text = path.read_text()
        if old not in text:
            raise StrataError(f"{path} no longer holds {old!r}; run `strata demo --fresh`")
        path.write_text(text.replace(old, new, 1))
        return text


def _by_experiment(table: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.sort_by("experiment_id").to_pylist()
    return rows


def outcomes(report: BuildReport) -> None:
    """A build's transforms that did something, one line each; the fresh ones counted."""
    rows = []
    for step in report.steps:
        if step.outcome is Outcome.FRESH:
            continue
        outputs = ", ".join(f"{k}@{v}" if v is not None else k for k, v in step.outputs.items())
        why = step.reason.splitlines()[0][:160] if step.reason else causes_line(step)
        mark = _MARKS.get(step.outcome, step.outcome.value) + how_it_ran(step)
        rows.append((step.transform, mark, outputs, escape(why)))
    fresh = sum(1 for s in report.steps if s.outcome is Outcome.FRESH)
    title = f"build {report.state.lower()}: {len(rows)} ran or stopped, {fresh} fresh"
    emit_table(title, ["transform", "outcome", "output", "why"], rows)


_MARKS = {
    Outcome.BUILT: "[green]built[/]",
    Outcome.FAILED: "[red]failed[/]",
    Outcome.SKIPPED: "[yellow]skipped[/]",
}


def _hour_row(hour: datetime, batch: pa.Table, version: int, report: BuildReport) -> list[Any]:
    late = len([t for t in batch.column("event_time").to_pylist() if t and t < hour])
    built = [s for s in report.steps if s.outcome is Outcome.BUILT]
    seconds = sum(s.seconds for s in built)
    return [
        f"{hour:%Y-%m-%d %H:%M}",
        f"{batch.num_rows:,}",
        f"{late:,}",
        f"@{version}",
        _read(report, "hourly.clean_clicks", "raw/clicks"),
        f"{len(built)} of {len(report.steps)}",
        f"{seconds:.1f} s",
    ]


def _read(report: BuildReport, transform: str, dataset: str) -> str:
    """What one transform of a build read of one input: ``(from, to]`` or ``whole``."""
    step = next((s for s in report.steps if s.transform == transform), None)
    read = step.read.get(dataset) if step is not None else None
    if not read:
        return "-"
    rows = f"{read['rows']:,} rows" if read.get("rows") is not None else ""
    span = f"whole @{read['to']}" if read["from"] is None else f"({read['from']}, {read['to']}]"
    return f"{span} {rows}".strip()


@contextmanager
def _progress() -> Iterator[Progress]:
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        yield progress
