"""The decorator API: ``@transform_df``, ``@transform``, ``Input`` and ``Output``.

It reads the way Foundry's transforms do::

    @transform_df(Output("metrics/hourly"), clicks=Input("raw/clicks"))
    def hourly(clicks):
        return clicks.groupBy("experiment").count()

A decorated function becomes a :class:`Transform`; calling it still calls the function,
so it can be tested by hand. Declarations are checked here, when the module is
imported, so a mistake names the function and its file and line.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from strata.builds.checks.check import Check, check_names
from strata.errors import PipelineError, StrataError
from strata.lake.names import validate_dataset_name

OUTPUT_TYPES = ("SNAPSHOT", "APPEND")
DF_OUTPUT = "output"  # the one output of a @transform_df, as the handles' key


PartitionMap = Callable[[dict[str, str]], Mapping[str, Any]]


@dataclass(frozen=True)
class Input:
    """A dataset a transform reads: its latest version, or ``version=N`` pinned.

    For a transform with partitioned outputs, ``partition_map`` maps each of this
    input's partition keys to the output partition it feeds (by default, the output's
    columns taken from the input's key: the shared keys). ``checks`` are preconditions:
    judged on what the run reads (an incremental run: the rows added since the last
    build), before the transform runs."""

    name: str
    version: int | None = None
    partition_map: PartitionMap | None = None
    checks: Sequence[Check] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", _checks_tuple(self.checks, self.name))


@dataclass(frozen=True)
class Output:
    """A dataset a transform writes, replaced on each build (or appended to); an
    ``@incremental`` transform's outputs take each build's mode (``type`` unset). With
    ``partition_by``, the transform builds it partition by partition. ``checks`` are
    postconditions: judged on what the run wrote, before it commits.

    ``partition_local`` says each output partition's rows depend only on the input
    partitions feeding it (the default when every partitioned input shares the output's
    keys; a ``partition_map`` input must declare it): the due partitions of a build then
    run as one Spark job, each still its own run."""

    name: str
    type: str | None = None
    partition_by: Sequence[str] | None = None
    checks: Sequence[Check] = ()
    partition_local: bool | None = None

    def __post_init__(self) -> None:
        if self.partition_by is not None and not isinstance(self.partition_by, str):
            object.__setattr__(self, "partition_by", tuple(self.partition_by))
        object.__setattr__(self, "checks", _checks_tuple(self.checks, self.name))

    @property
    def write_type(self) -> str:
        return self.type or "SNAPSHOT"


def _checks_tuple(checks: object, dataset: str) -> tuple[Check, ...]:
    if isinstance(checks, Check):
        return (checks,)
    if not isinstance(checks, Sequence) or isinstance(checks, str):
        raise PipelineError(
            f"checks of {dataset!r} must be a list of Check(...), got {checks!r}; write "
            "checks=[Check(E.not_null('id'), 'id is set')]"
        )
    return tuple(checks)


@dataclass(frozen=True)
class Incremental:
    """How an ``@incremental`` transform builds: ``semantic_version`` (when set) decides
    whether a program change rebuilds whole; ``snapshot_inputs`` are always read whole."""

    semantic_version: int | None = None
    snapshot_inputs: tuple[str, ...] = ()

    def declaration(self) -> dict[str, Any]:
        return {
            "semantic_version": self.semantic_version,
            "snapshot_inputs": sorted(self.snapshot_inputs),
        }


def where(func: Callable[..., Any]) -> str:
    """``file:line`` of a function, for messages."""
    code = getattr(func, "__code__", None)
    if code is None:
        return getattr(func, "__qualname__", repr(func))
    return f"{code.co_filename}:{code.co_firstlineno}"


class Transform:
    """A declared derivation: a function with named inputs and outputs."""

    def __init__(
        self,
        func: Callable[..., Any],
        inputs: Mapping[str, Input],
        outputs: Mapping[str, Output],
        *,
        kind: str,
        name: str | None = None,
        version: str | None = None,
        schedule: str | None = None,
    ) -> None:
        self.func = func
        self.inputs = dict(inputs)
        self.outputs = dict(outputs)
        self.kind = kind
        self.name = name
        self.version = version
        self.schedule = schedule  # a cron: its outputs are built on it (builds.schedules)
        self.incremental: Incremental | None = None
        # A declaration that loads but cannot be built (reported on this transform by
        # status and builds, while the rest of its pipeline is answered).
        self.broken: str | None = None
        _check_declaration(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        outs = ", ".join(o.name for o in self.outputs.values())
        return f"<Transform {self.name or self.func.__name__} -> {outs}>"

    @property
    def where(self) -> str:
        return where(self.func)

    @property
    def output_type(self) -> str:
        return next(iter(self.outputs.values())).write_type

    @property
    def checks(self) -> tuple[Check, ...]:
        """Every check it declares, on its inputs and its outputs."""
        declared: list[Input | Output] = [*self.inputs.values(), *self.outputs.values()]
        return tuple(c for d in declared for c in d.checks)

    @property
    def has_checks(self) -> bool:
        return bool(self.checks)

    @property
    def has_input_checks(self) -> bool:
        return any(i.checks for i in self.inputs.values())

    @property
    def partition_by(self) -> tuple[str, ...] | None:
        """The columns partitioning its outputs (all share them), or None."""
        by = next(iter(self.outputs.values())).partition_by
        return tuple(by) if by is not None else None

    @property
    def partition_local(self) -> bool:
        """Whether each output partition depends only on the input partitions feeding it:
        as declared, else true unless an input maps its partitions by a function."""
        declared = next(iter(self.outputs.values())).partition_local
        if declared is not None:
            return declared
        return all(i.partition_map is None for i in self.inputs.values())

    def declaration(self) -> dict[str, Any]:
        """What the program fingerprint covers besides the code."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "inputs": {k: _input_declaration(i) for k, i in self.inputs.items()},
            "outputs": {
                k: {"dataset": o.name, "type": o.write_type}
                | ({"partition_by": list(o.partition_by)} if o.partition_by else {})
                for k, o in self.outputs.items()
            },
        }
        if self.incremental is not None:
            out["incremental"] = self.incremental.declaration()
        return out


def _input_declaration(i: Input) -> dict[str, Any]:
    out: dict[str, Any] = {"dataset": i.name, "version": i.version}
    if i.partition_map is not None:
        # The mapping decides what each partition reads: a change to it is a new program.
        try:
            text = inspect.getsource(i.partition_map)
        except (OSError, TypeError):
            text = getattr(i.partition_map, "__qualname__", repr(i.partition_map))
        out["partition_map"] = text
    return out


def transform_df(
    output: Output,
    *,
    name: str | None = None,
    version: str | None = None,
    schedule: str | None = None,
    **inputs: Input,
) -> Callable[[Callable[..., Any]], Transform]:
    """A function of Spark DataFrames (one per input) that returns the output's DataFrame;
    ``schedule`` (a cron) builds it on that schedule under ``strata worker``."""
    if not isinstance(output, Output):
        raise PipelineError(
            f"@transform_df takes an Output(...) first, got {output!r}; write "
            "@transform_df(Output('name'), x=Input('raw'))"
        )

    def wrap(func: Callable[..., Any]) -> Transform:
        outputs = {DF_OUTPUT: output}
        return Transform(
            func, inputs, outputs, kind="df", name=name, version=version, schedule=schedule
        )

    return wrap


def transform(
    *,
    name: str | None = None,
    version: str | None = None,
    schedule: str | None = None,
    **params: Input | Output,
) -> Callable[[Callable[..., Any]], Transform]:
    """A function of input handles (``.dataframe()``) and output handles
    (``.write_dataframe(df)``); all its outputs commit together."""

    def wrap(func: Callable[..., Any]) -> Transform:
        inputs = {k: v for k, v in params.items() if isinstance(v, Input)}
        outputs = {k: v for k, v in params.items() if isinstance(v, Output)}
        odd = sorted(k for k in params if k not in inputs and k not in outputs)
        if odd:
            raise PipelineError(
                f"@transform on {func.__name__} ({where(func)}): {odd} must each be "
                "Input(...) or Output(...)"
            )
        return Transform(
            func, inputs, outputs, kind="handles", name=name, version=version, schedule=schedule
        )

    return wrap


def incremental(
    semantic_version: int | None = None, snapshot_inputs: Sequence[str] = ()
) -> Callable[[Transform], Transform]:
    """Build ``@transform``/``@transform_df`` incrementally: read the rows appended to its
    inputs since its last build and append to its outputs (Foundry's ``@incremental``).

    A build runs whole the first time, when ``semantic_version`` changes (without one:
    when the program changes), when an input not in ``snapshot_inputs`` was rewritten
    (SNAPSHOT, UPDATE, DELETE), when something else wrote an output, or with ``--full``.
    """

    def wrap(t: Transform) -> Transform:
        if not isinstance(t, Transform):
            raise PipelineError(
                f"@incremental() goes above @transform or @transform_df, got {t!r}; write "
                "@incremental() on the line above @transform_df(...)"
            )
        at = f"{t.func.__name__} ({t.where})"
        if semantic_version is not None and (
            isinstance(semantic_version, bool) or not isinstance(semantic_version, int)
        ):
            raise PipelineError(
                f"@incremental on {at}: semantic_version={semantic_version!r} must be an "
                "integer such as 1"
            )
        if isinstance(snapshot_inputs, str):
            raise PipelineError(
                f"@incremental on {at}: snapshot_inputs={snapshot_inputs!r} must be a list of "
                f"input parameter names, such as [{snapshot_inputs!r}]"
            )
        unknown = sorted(set(snapshot_inputs) - set(t.inputs))
        if unknown:
            raise PipelineError(
                f"@incremental on {at}: snapshot_inputs names {unknown}, not among its "
                f"inputs {sorted(t.inputs)}; list input parameter names"
            )
        if t.partition_by is not None:
            t.broken = (
                f"@incremental on {at}: its outputs are partitioned, and a partitioned "
                "transform already rebuilds only the partitions whose inputs changed; drop "
                "@incremental"
            )
            return t
        fixed = sorted(o.name for o in t.outputs.values() if o.type == "SNAPSHOT")
        if fixed:
            raise PipelineError(
                f"@incremental on {at}: {fixed} declared type='SNAPSHOT' cannot be appended "
                "to; leave type unset (each build appends, or replaces when it runs whole)"
            )
        t.incremental = Incremental(semantic_version, tuple(snapshot_inputs))
        return t

    return wrap


def _check_declaration(t: Transform) -> None:
    at = f"{t.func.__name__} ({t.where})"
    if not t.outputs:
        raise PipelineError(f"transform {at} declares no Output; add one")
    names = [i.name for i in t.inputs.values()] + [o.name for o in t.outputs.values()]
    for name in names:
        try:
            validate_dataset_name(name)
        except StrataError as exc:
            raise PipelineError(f"transform {at}: {exc.message}") from exc
    for inp in t.inputs.values():
        if inp.version is not None and (isinstance(inp.version, bool) or inp.version < 1):
            raise PipelineError(
                f"transform {at}: Input({inp.name!r}, version={inp.version!r}) must pin a "
                "version number of 1 or more"
            )
    for out in t.outputs.values():
        if out.type is not None and out.type not in OUTPUT_TYPES:
            raise PipelineError(
                f"transform {at}: Output({out.name!r}, type={out.type!r}) must be one of "
                f"{', '.join(OUTPUT_TYPES)}"
            )
    if len({o.write_type for o in t.outputs.values()}) > 1:
        raise PipelineError(
            f"transform {at}: its outputs commit in one transaction, so they must share one "
            "type; make them all SNAPSHOT or all APPEND"
        )
    _check_partitioning(t, at)
    declared: list[Input | Output] = [*t.inputs.values(), *t.outputs.values()]
    t.broken = check_names([(d.name, d.checks) for d in declared], at)
    if t.version is not None and (not isinstance(t.version, str) or not t.version):
        raise PipelineError(f"transform {at}: version= must be a non-empty string")
    _check_parameters(t, at)


def _check_partitioning(t: Transform, at: str) -> None:
    bys = {o.partition_by for o in t.outputs.values()}
    if len(bys) > 1:
        raise PipelineError(
            f"transform {at}: its outputs are built partition by partition together, so "
            f"they must share one partition_by; got {sorted(map(str, bys))}"
        )
    by = next(iter(bys))
    _check_partition_local(t, at, by)
    if by is not None:
        if isinstance(by, str) or not by or not all(isinstance(c, str) and c for c in by):
            raise PipelineError(
                f"transform {at}: partition_by={by!r} must be a list of column names, such "
                "as ['region', 'day']"
            )
        if t.output_type != "SNAPSHOT":
            raise PipelineError(
                f"transform {at}: a partitioned output is replaced partition by partition; "
                "drop type='APPEND'"
            )
    for inp in t.inputs.values():
        if inp.partition_map is None:
            continue
        if by is None:
            raise PipelineError(
                f"transform {at}: Input({inp.name!r}, partition_map=...) maps partitions, "
                "but no output is partitioned; add partition_by to the Output"
            )
        if not callable(inp.partition_map):
            raise PipelineError(
                f"transform {at}: Input({inp.name!r}) partition_map must be a function of "
                "the input's partition key (a dict) returning the output's key"
            )


def _check_partition_local(t: Transform, at: str, by: Sequence[str] | None) -> None:
    local = {o.partition_local for o in t.outputs.values()}
    for value in local:
        if value is not None and not isinstance(value, bool):
            raise PipelineError(f"transform {at}: partition_local={value!r} must be True or False")
    if len(local) > 1:
        raise PipelineError(
            f"transform {at}: its outputs' partitions are built together, so they must "
            "declare one partition_local; set it on every output or on none"
        )
    if by is None and local != {None}:
        raise PipelineError(
            f"transform {at}: partition_local is for partitioned outputs; add partition_by "
            "to the Output, or drop partition_local"
        )


def _check_parameters(t: Transform, at: str) -> None:
    wanted = set(t.inputs) if t.kind == "df" else set(t.inputs) | set(t.outputs)
    have, open_ended = _parameters(t.func)
    if open_ended:
        return
    if have != wanted:
        missing, extra = sorted(wanted - have), sorted(have - wanted)
        raise PipelineError(
            f"transform {at}: its parameters {sorted(have)} must match the declared "
            f"{'inputs' if t.kind == 'df' else 'inputs and outputs'} {sorted(wanted)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; not declared {extra}" if extra else "")
        )


def _parameters(func: Callable[..., Any]) -> tuple[set[str], bool]:
    """A function's parameter names, and whether it takes ``**kwargs``. Read from its
    code object when it has one: a factory may declare thousands of transforms."""
    code = getattr(func, "__code__", None)
    if code is None:
        params = inspect.signature(func).parameters
        return set(params), any(p.kind is p.VAR_KEYWORD for p in params.values())
    count = code.co_argcount + code.co_kwonlyargcount
    return set(code.co_varnames[:count]), bool(code.co_flags & inspect.CO_VARKEYWORDS)
