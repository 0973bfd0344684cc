"""Progress of long work on stderr: live only on a terminal, plain lines or nothing elsewhere.

Scripts and ``--json`` read stdout; a pipe or file on stderr gets no spinners, carriage
returns or escape codes.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from strata.builds.staleness.causes import Outcome

if TYPE_CHECKING:
    from strata.builds.execution.builder import Step
    from strata.builds.state.leases import Taken

MARKS = {
    Outcome.BUILT: "[green]✓[/]",
    Outcome.FRESH: "[dim]=[/]",
    Outcome.FAILED: "[red]✗[/]",
    Outcome.SKIPPED: "[yellow]-[/]",
}


def _spinner(console: Console) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


_PLAN_NAMES = 5


class BuildProgress:
    """Hears a build (the builder's Reporter) and draws it: one line per transform.

    On a terminal each running transform has a spinner with its elapsed time, and a
    line when it starts and when it finishes; elsewhere only the finished lines, plain.
    ``events`` keeps what was heard, in order.
    """

    def __init__(self, console: Console, json_events: TextIO | None = None) -> None:
        self.console = console
        self.json_events = json_events
        self.live = console.is_terminal
        # Bounded: a worker hears builds for as long as it runs.
        self.events: deque[tuple[str, str]] = deque(maxlen=10_000)
        self.total = 0
        self.done = 0
        self._progress = _spinner(console) if self.live else None
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> BuildProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def planned(self, keys: Sequence[str]) -> None:
        """The plan's line comes at once, before Spark starts for the first run."""
        self.events.append(("planned", ",".join(keys)))
        self.total, self.done = len(keys), 0
        shown = ", ".join(keys[:_PLAN_NAMES]) + (", …" if len(keys) > _PLAN_NAMES else "")
        count = f"{len(keys)} transform{'s' if len(keys) != 1 else ''}"
        self.console.print(
            f"[0/{len(keys)}] {escape(count)} to visit: {escape(shown)}", highlight=False
        )

    def started(self, key: str) -> None:
        self.events.append(("started", key))
        if self._progress is not None:
            self._progress.console.print(f"[dim]▸ {escape(key)} started[/]", highlight=False)
            self._tasks[key] = self._progress.add_task(escape(key))

    def waiting(self, key: str, taken: Taken) -> None:
        """Said at once, on a terminal or not: a build that waits out a dead builder's
        lease must not look hung. With ``--json``, one JSON line on stderr."""
        self.events.append(("waiting", key))
        if self.json_events is not None:
            line = {"event": "waiting", "transform": key, **taken.to_dict()}
            print(json.dumps(line), file=self.json_events, flush=True)
            return
        self.console.print(f"{escape(taken.describe())}", highlight=False)

    def finished(self, step: Step) -> None:
        self.events.append(("finished", step.transform))
        self.done += 1
        task = self._tasks.pop(step.transform, None)
        if self._progress is not None and task is not None:
            self._progress.remove_task(task)
        if not self.console.quiet:  # rich renders for a quiet console too, then drops it
            self.console.print(self.line(step), highlight=False)

    def line(self, step: Step) -> str:
        """``[2/5] ✓ daily.metrics built 120 rows in 3.1s``, the reason's first line after."""
        mark = MARKS.get(step.outcome, "·")
        took = f" in {step.seconds:.1f}s" if step.outcome.ran else ""
        rows = f" {step.rows} rows" if step.outcome is Outcome.BUILT else ""
        why = f" ({escape(first_line(step.reason))})" if step.reason else ""
        name = escape(step.transform)
        return f"[{self.done}/{self.total}] {mark} {name} {step.outcome.value}{rows}{took}{why}"


def first_line(text: str) -> str:
    """A multi-line message (a Spark analysis error and its plan) cut to its first line."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.rstrip(";")


@contextmanager
def phases(console: Console, first: str) -> Iterator[Callable[[str], None]]:
    """A spinner naming the current phase of one piece of work, on a terminal only.

    Yields ``enter(phase)``; each finished phase leaves a line with its time.
    """
    if not console.is_terminal:
        yield lambda phase: None
        return
    progress = _spinner(console)
    current, since = first, time.perf_counter()
    task = progress.add_task(f"{first} …")

    def done() -> None:
        took = time.perf_counter() - since
        progress.console.print(f"[dim]{escape(current)} {took:.1f}s[/]", highlight=False)

    def enter(phase: str) -> None:
        nonlocal current, since
        done()
        current, since = phase, time.perf_counter()
        progress.update(task, description=f"{escape(phase)} …")

    with progress:
        yield enter
        done()
