"""`strata trace`, `impact`, `show-program` and `reproduce`: following a version (or a
column) back to the raw data, its program, and running that program again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from strata.cli.common import reported, settings_from
from strata.cli.options import BranchOpt, JsonOpt, OnePartition, Ref, service_from
from strata.cli.output import emit_json, emit_table, err_console
from strata.cli.process import start_spark_ahead

if TYPE_CHECKING:
    from strata.builds.history import Entry

ColumnOpt = Annotated[
    str | None,
    typer.Option(
        "--column", "-c", help="Trace one column down to the raw fields it was derived from."
    ),
]


def trace(
    ctx: typer.Context,
    ref: Ref,
    partition: OnePartition = None,
    column: ColumnOpt = None,
    indirect: Annotated[
        bool,
        typer.Option(
            "--indirect",
            help="With --column: also the fields that filtered, joined, grouped or ordered it.",
        ),
    ] = False,
    json: JsonOpt = False,
    branch: BranchOpt = None,
) -> None:
    """The provenance tree of a version down to raw datasets, with exact versions (without
    @VERSION, the current one: on --branch, the branch's)."""
    from strata.lake.names import parse_ref
    from strata.lake.partitions import parse_alternatives

    with reported():
        name, version = parse_ref(ref)
        wanted = parse_alternatives(partition) if partition is not None else None
        service = service_from(ctx, [], branch)
        tree = service.trace(name, version, wanted, column=column, indirect=indirect)
        if json:
            emit_json(tree)
        elif column is not None:
            print_column_trace(tree)
        else:
            print_trace(tree)


def impact(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="DATASET.COLUMN, such as clean/clicks.user.")],
    direct: Annotated[
        bool,
        typer.Option("--direct", help="Only the fields whose values are computed from it."),
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Every field of the current versions derived from a column, directly or not."""
    from strata.builds.columns.trace import parse_column_ref

    with reported():
        dataset, column = parse_column_ref(ref)
        found = service_from(ctx, []).impact(dataset, column, direct=direct)
        if json:
            emit_json(found)
            return
        rows = [
            [_field_name(d), d["hops"], _field_name(d["from"]), d["kind"], d["transformation"]]
            for d in found["dependents"]
        ]
        total, n_direct = found["total"], found["direct"]
        emit_table(
            f"{total} fields derived from {_field_name(found)}: {n_direct} directly, "
            f"{total - n_direct} indirectly (filtered, joined, grouped or ordered by it)"
            + ("; the direct ones:" if direct else ""),
            ["field", "hops", "from", "kind", "how"],
            rows,
        )


def print_column_trace(tree: dict[str, Any]) -> None:
    """A column's derivation as a tree, down to raw fields."""
    from rich.tree import Tree

    from strata.cli.output import console

    def grow(node: dict[str, Any], into: Any) -> Any:
        for child in node["inputs"]:
            how = (
                f"  [dim]← {escape(child['transformation'])}[/]"
                if child.get("transformation")
                else ""
            )
            again = " [dim](repeated, see above)[/]" if child.get("repeated") else ""
            grow(child, into.add(f"{_field_label(child)}{how}{again}"))
        return into

    console.print(grow(tree, Tree(_field_label(tree))))
    raw = ", ".join(_field_name(f) for f in tree["raw"])
    console.print(f"raw fields: {escape(raw)}" if raw else "no recorded inputs", soft_wrap=True)


def _field_name(field: dict[str, Any]) -> str:
    """``dataset@version.column``."""
    at = f"@{field['version']}" if field["version"] is not None else ""
    return f"{field['dataset']}{at}.{field['column']}"


def _field_label(field: dict[str, Any]) -> str:
    kind = f" [dim]{escape(field['type'])}[/]" if field.get("type") else ""
    return f"[bold]{escape(_field_name(field))}[/]{kind}"


def print_trace(tree: dict[str, Any]) -> None:
    """A version's provenance as a tree, down to raw datasets."""
    from rich.tree import Tree

    from strata.cli.output import console

    console.print(_tree(tree, Tree(_label(tree))))


def _label(node: dict[str, Any]) -> str:
    program = node["program"]
    made = f" ← {program['transform']} v{program['ordinal']}" if program else " (raw)"
    state = f" run {node['run'][:13]} {node['state']}" if node["run"] else ""
    how = " incremental" if node.get("mode") == "incremental" else ""
    read = node.get("read")
    # An input read as a range: the rows versions from+1 … to added.
    ref = f"({read['from']}, {read['to']}]" if read else f"@{node['version']}"
    # A version met again (a diamond): its inputs were shown where it first appeared.
    again = " [dim](repeated, see above)[/]" if node.get("repeated") else ""
    if node.get("purged"):  # its history is all here; its data is gone
        gone = node["purged"]
        again += f" [yellow]purged {gone['at'][:10]} by {escape(gone['policy'])}[/]"
    where = node.get("partition")
    part = escape(f"[{', '.join(f'{k}={v}' for k, v in where.items())}]") if where else ""
    return f"[bold]{escape(node['dataset'])}{part}{ref}[/]{made}{how}{state}{again}"


def _tree(node: dict[str, Any], into: Any) -> Any:
    for child in node["inputs"]:
        branch = into.add(_label(child))
        for earlier in child.get("also_read", ()):
            _tree(earlier, branch.add(_label(earlier)))
        if child.get("also_read"):
            branch = branch.add(_label({**child, "read": None}))
        _tree(child, branch)
    return into


def show_program(
    ctx: typer.Context,
    ref: Ref,
    diff: Annotated[
        int | None,
        typer.Option(help="Show the change from the program of version M of the dataset."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """The stored source files of the program version that built a dataset version."""
    from strata.builds.programs.files import files_diff
    from strata.lake.names import parse_ref

    with reported():
        name, version = parse_ref(ref)
        service = service_from(ctx, [])
        built = service.program(name, version)
        p = built.program
        changes = None if diff is None else files_diff(service.program(name, diff).program, p)
        if json:
            extra = {} if changes is None else {"diff_from": diff, "diff": changes}
            emit_json({"dataset": name, "version": built.version, **p.to_dict(), **extra})
            return
        _print_program(name, built, diff, changes)


def _print_program(
    name: str, built: Entry, diff: int | None, changes: dict[str, str] | None
) -> None:
    from rich.markup import escape
    from rich.rule import Rule
    from rich.syntax import Syntax

    from strata.cli.output import console

    p = built.program
    console.print(
        f"[bold]{escape(name)}@{built.version}[/] was built by {escape(p.job_name)} "
        f"v{p.ordinal} ({p.fingerprint[:12]}), run {built.run}, from "
        + escape(", ".join(f"{k}@{v}" for k, v in built.inputs.items())),
        highlight=False,
    )
    if changes is not None:
        if not changes:
            console.print(f"no stored file differs from the program of {escape(name)}@{diff}")
        for path, text in changes.items():
            console.print(Rule(escape(path), align="left"))
            console.print(Syntax(text, "diff", line_numbers=False))
        return
    for path, text in sorted(p.files.items()):
        console.print(Rule(escape(path), align="left"))
        console.print(Syntax(text, "python", line_numbers=True))


def reproduce(
    ctx: typer.Context,
    ref: Ref,
    partition: OnePartition = None,
    json: JsonOpt = False,
    branch: BranchOpt = None,
) -> None:
    """Run a version's stored program on its recorded inputs; compare the rows. A version
    built partition by partition is run again partition by partition. Without @VERSION,
    the current one (on --branch, the branch's)."""
    from strata.lake.names import parse_ref
    from strata.lake.partitions import parse_alternatives

    with reported():
        name, version = parse_ref(ref)
        wanted = parse_alternatives(partition) if partition is not None else None
        start_spark_ahead(settings_from(ctx, branch))
        result = service_from(ctx, [], branch).reproduce(name, version, wanted)
        if json:
            emit_json(result.to_dict())
        else:
            verdict = "[green]identical[/]" if result.identical else "[red]different[/]"
            what = f"{name}@{result.version}"
            if result.partition is not None:
                what += "[" + ", ".join(f"{k}={v}" for k, v in result.partition.items()) + "]"
            elif result.partitions:
                what += f" ({result.partitions} partition runs)"
            err_console.print(
                f"{escape(what)}: {verdict} (recorded {str(result.recorded)[:12]}, "
                f"reproduced {str(result.reproduced)[:12]})"
            )
            for k, v in result.differences.items():
                if v:
                    err_console.print(f"  {k.replace('_', ' ')}: {v}")
    if not result.identical:
        raise typer.Exit(1)
