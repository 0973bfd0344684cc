"""Every table has one owner, and only its owner names it (``strata.store`` itself aside,
with its migrations): in code, in hand-written SQL, and by importing the schema at all.
Shared tables are owned in ``strata.store.owners``; a table one capability keeps to
itself (schedules, retention marks) is owned by that capability's state module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import strata
from strata.store import schema

SRC = Path(strata.__file__).parent
SCHEMA = "strata.store.schema"

#: Each owned table and the one module (or package of modules) that reads and writes it.
OWNERS = {
    "tags": "strata.store.owners.tags",
    "dataset_tags": "strata.store.owners.tags",
    "job_tags": "strata.store.owners.tags",
    "sources": "strata.store.owners.sources",
    "lineage_events": "strata.store.owners.events",
    "lineage_pending": "strata.store.owners.event_queue",
    "namespaces": "strata.store.owners.namespaces",
    "run_states": "strata.store.owners.runs",
    "run_input_facets": "strata.store.owners.runs",
    "runs": "strata.store.owners.runs",
    "run_inputs": "strata.store.owners.runs",
    "job_run_counts": "strata.store.owners.runs",
    "jobs": "strata.store.owners.jobs",
    "job_aliases": "strata.store.owners.jobs",
    "job_versions": "strata.store.owners.jobs",
    "job_version_io": "strata.store.owners.jobs",
    "dataset_symlinks": "strata.store.owners.datasets",
    "column_lineage": "strata.store.owners.datasets",
    "transactions": "strata.store.owners.datasets",
    "dataset_files": "strata.store.owners.datasets",
    "dataset_versions": "strata.store.owners.datasets",
    "datasets": "strata.store.owners.datasets",
    "branches": "strata.store.owners.branches",
    "branch_heads": "strata.store.owners.branches",
    # Tables the build shares with lower layers: the lake raises triggers, lineage
    # retention deletes check results, retention reads the partition catalog.
    "build_triggers": "strata.store.owners.triggers",
    "partition_builds": "strata.store.owners.partition_builds",
    "check_results": "strata.store.owners.check_results",
    # Tables of one capability, each read and written by that capability's state module.
    "build_requests": "strata.builds.state.requests",
    "build_leases": "strata.builds.state.leases",
    "schedules": "strata.builds.state.schedules",
    "schedule_firings": "strata.builds.state.schedules",
    "program_versions": "strata.builds.state.programs",
    "plan_lineage": "strata.builds.state.programs",
    "program_lineage": "strata.builds.state.programs",
    "partition_hashes": "strata.lake.partition_hashes",
    "transaction_files": "strata.lake.commit",
    "pending_deletes": "strata.retention.pending",
    "retention_marks": "strata.retention.state",
    "retention_passes": "strata.retention.state",
    "version_pins": "strata.retention.state",
}


def _name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _tables_named(path: Path) -> set[str]:
    """The schema names a module uses: ``schema.x`` through any alias of the schema
    module, and names imported from it."""
    tree = ast.parse(path.read_text("utf-8"))
    aliases: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == SCHEMA:
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "strata.store":
            aliases.update(a.asname or a.name for a in node.names if a.name == "schema")
        elif isinstance(node, ast.Import):
            aliases.update(a.asname or a.name for a in node.names if a.name == SCHEMA)
    for node in ast.walk(tree):
        is_name = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        if is_name and node.value.id in aliases:  # type: ignore[attr-defined]
            names.add(node.attr)  # type: ignore[attr-defined]
    return names


def _modules() -> dict[str, set[str]]:
    """Every module outside ``strata.store`` (owners included) and the tables it names."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        name = _name(path)
        if name.startswith("strata.store.") and not name.startswith("strata.store.owners."):
            continue
        found[name] = _tables_named(path)
    return found


def _owns(module: str, table: str) -> bool:
    owner = OWNERS.get(table)
    return owner is not None and (module == owner or module.startswith(owner + "."))


def test_owned_tables_are_named_by_their_owner_alone() -> None:
    bad = sorted(
        f"{module} names {table} (owned by {OWNERS[table]})"
        for module, tables in _modules().items()
        for table in tables
        if table in OWNERS and not _owns(module, table)
    )
    assert not bad, bad


def test_each_owner_names_its_tables() -> None:
    """The check above would pass on anything if it saw no names."""
    modules = _modules()
    for table in OWNERS:
        assert any(table in modules[m] for m in modules if _owns(m, table)), table


_SQL_NAMING = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(\w+)")


def _tables_in_sql(path: Path) -> set[str]:
    """Tables a module's SQL text names (``FROM runs r``, ``JOIN run_inputs ri`` …)."""
    tree = ast.parse(path.read_text("utf-8"))
    return {
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for name in _SQL_NAMING.findall(node.value)
    }


#: Hand-written statements of one owner that read another family's table, each kept as
#: text for a join order the planners would not choose from the composed form (see the
#: comments beside them). They read only; every write stays with the table's owner.
SQL_TEXT_READS = {
    ("strata.store.owners.runs.inputs", "dataset_versions"),
}


def test_sql_text_names_owned_tables_in_their_owner_alone() -> None:
    """Hand-written SQL counts too: a table named in a string is named all the same."""
    bad = sorted(
        f"{_name(path)}'s SQL names {table} (owned by {OWNERS[table]})"
        for path in SRC.rglob("*.py")
        if not _name(path).startswith("strata.store.migrations")
        for table in _tables_in_sql(path)
        if table in OWNERS
        and not _owns(_name(path), table)
        and (_name(path), table) not in SQL_TEXT_READS
    )
    assert not bad, bad


def test_sql_text_reads_across_families_only_read() -> None:
    """The statements let through above are reads: no write names the foreign table."""
    writes = re.compile(r"\b(?:INTO|UPDATE|DELETE\s+FROM)\s+(\w+)")
    for module, table in SQL_TEXT_READS:
        path = SRC.parent.joinpath(*module.split(".")).with_suffix(".py")
        assert table in _tables_in_sql(path), f"{module} no longer names {table}: unlist it"
        text = path.read_text("utf-8")
        assert table not in writes.findall(text), f"{module} writes {table}"


def _imports_schema(path: Path) -> bool:
    tree = ast.parse(path.read_text("utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == SCHEMA:
            return True
        from_store = isinstance(node, ast.ImportFrom) and node.module == "strata.store"
        if from_store and any(a.name == "schema" for a in node.names):  # type: ignore[attr-defined]
            return True
        if isinstance(node, ast.Import) and any(a.name == SCHEMA for a in node.names):
            return True
    return False


def test_every_table_has_an_owner() -> None:
    assert sorted(set(schema.metadata.tables) - set(OWNERS)) == []
    assert sorted(set(OWNERS) - set(schema.metadata.tables)) == [], "unlist dropped tables"


def test_only_owners_import_the_schema() -> None:
    """Outside ``strata.store`` itself, a module that imports the schema owns a table."""
    owners = set(OWNERS.values())
    bad = sorted(
        _name(path)
        for path in SRC.rglob("*.py")
        if not _name(path).startswith("strata.store.")
        or _name(path).startswith("strata.store.owners.")
        if _imports_schema(path)
        and not any(_name(path) == o or _name(path).startswith(o + ".") for o in owners)
    )
    assert not bad, bad
