"""What a program version keeps of a transform (its declaration, its entry point and the
source files it imports), and the diff between two program versions."""

from __future__ import annotations

from strata.builds.programs.discovery import Declared
from strata.builds.programs.pipeline_files import imported_files
from strata.builds.state.programs import Program, ProgramText


def program_text(item: Declared) -> ProgramText:
    """The declaration, entry point and source files of ``item`` as stored."""
    entry = {
        "pipeline": item.pipeline,
        "transform": item.name,
        "module": item.code.module_path,
        "line": item.code.line,
        "source": item.code.source,
        "pipeline_file": item.pipeline_file.relative_to(item.root.resolve()).as_posix(),
    }
    files = {**imported_files(item.pipeline_file, item.root), **item.code.files}
    return ProgramText(item.transform.declaration(), files, entry)


def files_diff(old: Program, new: Program) -> dict[str, str]:
    """A unified diff per stored file that differs between two program versions (a
    file only one of them stores is diffed against nothing)."""
    import difflib

    out: dict[str, str] = {}
    for path in sorted(set(old.files) | set(new.files)):
        before, after = old.files.get(path), new.files.get(path)
        if before == after:
            continue
        lines = difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            (after or "").splitlines(keepends=True),
            fromfile=f"{path} (v{old.ordinal})" if before is not None else "/dev/null",
            tofile=f"{path} (v{new.ordinal})" if after is not None else "/dev/null",
        )
        out[path] = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return out
