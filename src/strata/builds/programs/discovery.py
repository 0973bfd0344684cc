"""Finding transforms: pipeline modules imported afresh, their transforms named and checked.

A pipeline is a module: a ``.py`` file named in ``pipelines`` (``strata.toml``) or
``--pipeline``, or each such file directly in a named folder (files starting with ``_``
are helpers, not pipelines). The pipeline is the parent job of its transforms, whose
full names are ``pipeline.transform``. A transform's name is its ``name=``, else the
module attribute it is bound to, so one function registered twice by a factory gives
two transforms.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType

from strata.builds.programs.fingerprint import (
    ProgramCode,
    Stamps,
    is_library_file,
    program_code,
    program_fingerprint,
)
from strata.builds.programs.graph import Graph, Node, find_cycle
from strata.builds.programs.transforms import Input, Output, Transform
from strata.errors import PipelineError

_SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


@dataclass(frozen=True)
class Declared:
    """A transform as loaded: where it lives, its full name and its program version."""

    transform: Transform
    pipeline: str
    name: str
    root: Path
    code: ProgramCode
    fingerprint: str
    pipeline_file: Path

    @cached_property
    def fqn(self) -> str:
        return f"{self.pipeline}.{self.name}"

    @property
    def inputs(self) -> dict[str, Input]:
        return self.transform.inputs

    @property
    def outputs(self) -> dict[str, Output]:
        return self.transform.outputs

    @cached_property
    def input_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i.name for i in self.inputs.values()))

    @cached_property
    def unique_inputs(self) -> tuple[Input, ...]:
        """One declared input per dataset (the last, where two parameters read one)."""
        return tuple(dict((i.name, i) for i in self.inputs.values()).values())

    @cached_property
    def output_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.outputs.values())

    @cached_property
    def partition_by(self) -> tuple[str, ...] | None:
        """The columns partitioning its outputs, or None; read once, as a status of
        thousands of transforms asks each several times."""
        return self.transform.partition_by

    @cached_property
    def check_names(self) -> frozenset[str]:
        """The names of every check it declares, on its inputs and outputs."""
        return frozenset(c.name for c in self.transform.checks)

    @property
    def where(self) -> str:
        return f"{self.root / self.code.module_path}:{self.code.line}"


@dataclass(frozen=True)
class Pipelines:
    """Every loaded transform, by full name, and the graph they make."""

    transforms: dict[str, Declared]
    graph: Graph
    pipelines: tuple[str, ...]

    def producer(self, dataset: str) -> Declared | None:
        key = self.graph.producer.get(dataset)
        return self.transforms[key] if key is not None else None


def load_pipelines(paths: Sequence[str | Path]) -> Pipelines:
    """Import the pipelines at ``paths`` and check their transforms as one graph."""
    if not paths:
        raise PipelineError(
            'no pipelines are configured; set pipelines = ["pipelines"] in strata.toml or '
            "pass --pipeline PATH"
        )
    modules: list[tuple[Path, ModuleType]] = []
    for root, files in _modules(paths):
        _forget(root)
        for file in files:
            if any(m.__name__ == file.stem for _, m in modules):
                raise PipelineError(
                    f"two pipelines are named {file.stem!r} ({file}); pipeline names come from "
                    "file names and must differ"
                )
            modules.append((root, _import(root, file)))
    found: dict[str, Declared] = {}
    for item in _declared(modules):
        if item.fqn in found:
            raise PipelineError(
                f"transform {item.fqn} is declared twice ({found[item.fqn].where} and "
                f"{item.where}); give one a different name="
            )
        found[item.fqn] = item
    return Pipelines(found, _checked_graph(found), tuple(m.__name__ for _, m in modules))


def source_stamp(paths: Sequence[str | Path]) -> tuple[tuple[str, int, int], ...]:
    """Every Python file under the pipelines' folders with its mtime and size: equal
    stamps mean the pipelines would import as before (libraries aside)."""
    out: list[tuple[str, int, int]] = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        root = path if path.is_dir() else path.parent
        for file in sorted(root.rglob("*.py")):
            try:
                st = file.stat()
            except OSError:  # removed while listed: the next stamp tells
                continue
            out.append((str(file), st.st_mtime_ns, st.st_size))
        out.append((str(path), int(path.exists()), 0))
    return tuple(out)


def _modules(paths: Sequence[str | Path]) -> list[tuple[Path, list[Path]]]:
    out: list[tuple[Path, list[Path]]] = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if path.is_dir():
            out.append((path, sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))))
        elif path.is_file() and path.suffix == ".py":
            out.append((path.parent, [path]))
        else:
            raise PipelineError(
                f"pipeline path {str(raw)!r} is not a .py file or a folder; fix `pipelines` in "
                "strata.toml or --pipeline"
            )
    return out


def _forget(root: Path) -> None:
    """Drop modules loaded from ``root`` (they may have been edited since) and other
    folders' modules named like one of ``root``'s, which would shadow it on import; put
    ``root`` first on the import path, so its helpers import from it and not from another
    checkout of the same code loaded before (a branch's)."""
    local = {p.stem for p in root.glob("*.py")} | {
        p.parent.name for p in root.glob("*/__init__.py")
    }
    inside = str(root) + os.sep
    folders: dict[str, str] = {}
    for name, mod in list(sys.modules.items()):
        origin = getattr(mod, "__file__", None)
        if not origin:
            continue
        file = _resolved_file(origin, folders)
        namesake = name.partition(".")[0] in local and not is_library_file(Path(file))
        if namesake or file.startswith(inside):
            del sys.modules[name]
    if sys.path[:1] != [str(root)]:
        if str(root) in sys.path:
            sys.path.remove(str(root))
        sys.path.insert(0, str(root))


def _resolved_file(origin: str, folders: dict[str, str]) -> str:
    """``os.path.realpath(origin)``, each folder resolved once: a process's thousand
    modules live in a few hundred folders, and resolving walks every part of the path."""
    if os.path.islink(origin):
        return os.path.realpath(origin)
    folder, name = os.path.split(origin)
    real = folders.get(folder)
    if real is None:
        real = folders[folder] = os.path.realpath(folder)
    return os.path.join(real, name)


def _import(root: Path, file: Path) -> ModuleType:
    """Import ``file`` (once: another pipeline of the root may have imported it)."""
    known = sys.modules.get(file.stem)
    if known is not None and Path(getattr(known, "__file__", "") or "").resolve() == file:
        return known
    spec = importlib.util.spec_from_file_location(file.stem, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[file.stem] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[file.stem]
        raise PipelineError(
            f"pipeline {file.stem} has a syntax error at {exc.filename}:{exc.lineno}: {exc.msg}; "
            "fix the file",
            file=str(exc.filename),
            line=exc.lineno,
        ) from exc
    except PipelineError:  # a declaration mistake, already named with its place
        del sys.modules[file.stem]
        raise
    except Exception as exc:
        del sys.modules[file.stem]
        raise PipelineError(
            f"pipeline {file.stem} failed to import at {_origin(exc, root)}: "
            f"{type(exc).__name__}: {exc}; fix the module",
            file=str(file),
        ) from exc
    return module


def _origin(exc: BaseException, root: Path) -> str:
    """The deepest frame of the traceback inside the pipeline folder."""
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).is_relative_to(root)
    ]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else str(root)


def _declared(modules: list[tuple[Path, ModuleType]]) -> list[Declared]:
    """Each transform once, in the pipeline that declares it.

    A transform bound in several pipeline modules (one imports it from another) belongs
    to the module its function's code names, else the binding is ambiguous.
    """
    bound: dict[int, list[tuple[Path, ModuleType, str, Transform]]] = {}
    for root, module in modules:
        for attr, value in vars(module).items():
            if isinstance(value, Transform):
                bound.setdefault(id(value), []).append((root, module, attr, value))
    out: list[Declared] = []
    files: dict[str, Path] = {}
    stamps: Stamps = {}  # each file's state looked at once per load
    for places in bound.values():
        owners = places
        if len(places) > 1:
            owners = [p for p in places if p[1].__name__ == places[0][3].func.__module__]
            if len(owners) != 1:
                where = ", ".join(p[1].__name__ for p in places)
                raise PipelineError(
                    f"transform {places[0][3]!r} ({places[0][3].where}) is bound in pipelines "
                    f"{where}; bind it in one of them only"
                )
        root, module, attr, value = owners[0]
        file = files.get(module.__name__)
        if file is None:  # resolved: imported from a resolved path; once per module
            file = files[module.__name__] = Path(str(module.__file__))
        out.append(_declare(value, module.__name__, file, attr, root, stamps))
    return out


def _declare(
    value: Transform, module: str, file: Path, attr: str, root: Path, stamps: Stamps
) -> Declared:
    name = value.name or attr
    if not _SIMPLE_NAME.match(name):
        raise PipelineError(
            f"transform name {name!r} ({value.where}) must be letters, digits, _ or -; "
            "pass name=..."
        )
    code = program_code(value.func, root, stamps)
    fingerprint = program_fingerprint(code.code_hash, value.declaration(), value.version)
    return Declared(value, module, name, root, code, fingerprint, file)


def _checked_graph(found: dict[str, Declared]) -> Graph:
    writers: dict[str, Declared] = {}
    for item in found.values():
        for out in item.output_names:
            if out in writers:
                raise PipelineError(
                    f"dataset {out!r} is written by two transforms, {writers[out].fqn} "
                    f"({writers[out].where}) and {item.fqn} ({item.where}); a dataset has one "
                    "producer",
                    dataset=out,
                )
            writers[out] = item
        reads_own = set(item.input_names) & set(item.output_names)
        if reads_own:
            raise PipelineError(
                f"transform {item.fqn} ({item.where}) reads its own output {sorted(reads_own)}; "
                "a dataset cannot be built from itself",
            )
    graph = Graph.of(Node(k, d.input_names, d.output_names) for k, d in found.items())
    cycle = find_cycle(graph)
    if cycle:
        raise PipelineError(
            f"the transforms form a cycle: {' -> '.join(cycle)}; break it by removing one input",
            cycle=cycle,
        )
    return graph
