"""Malformed rows in local text sources (CSV, JSON lines), by the file's physical line.

Spark's readers either repair such rows silently or fail without saying where, so an
ingest reads local files once in Python first. The CSV dialect follows Spark's
defaults (``,``, ``"``, backslash escapes, doubled quotes), and blank lines are skipped
as Spark skips them.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlparse

from strata.lake.schemas import column_name_problem

SHOWN = 5  # malformed rows named in full; the rest are counted
_HADOOP_ONLY = frozenset((".deflate", ".lz4", ".snappy", ".zst", ".zstd"))


KeyPath = tuple[str, ...]  # a key within a JSON value: ("attrs", "colour")


@dataclass(frozen=True)
class Malformed:
    """One bad row: where it starts and what is wrong."""

    file: str
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{self.file} line {self.line}: {self.problem}"


@dataclass
class SourceCheck:
    """What reading the source files found."""

    checked: bool  # False when the source is not local text we can read
    files: int = 0
    count: int = 0  # malformed rows in all
    first: list[Malformed] = field(default_factory=list)
    multiline: bool = False  # a quoted CSV value spans lines: Spark must read whole files
    refused: list[str] = field(default_factory=list)  # no ingest can use these files
    keys: set[str] = field(default_factory=set)  # every JSON object's keys, in all
    nested: set[KeyPath] = field(default_factory=set)  # and the keys within its values

    def add(self, bad: Malformed) -> None:
        self.count += 1
        if len(self.first) < SHOWN:
            self.first.append(bad)


def check_source(path: str, fmt: str) -> SourceCheck:
    """Every malformed row of a local CSV or JSON-lines file or folder."""
    files = local_files(path)
    if fmt not in ("csv", "json") or files is None:
        return SourceCheck(checked=False)
    result = SourceCheck(checked=True, files=len(files))
    for file in files:
        with _open_text(file, fmt) as text:
            if fmt == "csv":
                _check_csv(str(file), text, result)
            else:
                _check_json(str(file), text, result)
    if fmt == "json":
        _check_key_names(path, result)
    return result


def _check_key_names(path: str, result: SourceCheck) -> None:
    """Keys that make no column: an empty one, or two alike but for case (one column to
    Spark, which resolves names ignoring case)."""
    alike: dict[str, list[str]] = {}
    for key in result.keys:
        alike.setdefault(key.casefold(), []).append(key)
    if any(not k.strip() for k in result.keys):
        result.refused.append(f"{path} has a key with no name")
    for keys in alike.values():
        if len(keys) > 1:
            result.refused.append(
                f"{path}'s keys {sorted(keys)} differ only in case (Spark reads them as one)"
            )


def local_files(path: str) -> list[Path] | None:
    """The files Spark would read at ``path``, or None when it is not a local path."""
    if "://" in path:
        parsed = urlparse(path)
        if parsed.scheme != "file":
            return None
        path = unquote(parsed.path)
    root = Path(path)
    if root.is_file():
        return None if root.suffix in _HADOOP_ONLY else [root]
    if not root.is_dir():
        return None
    files = sorted(p for p in _visible(root) if p.is_file())
    # Compressed with a codec Python does not read: Spark alone checks these.
    return None if any(p.suffix in _HADOOP_ONLY for p in files) else files


def _open_text(file: Path, fmt: str) -> IO[str]:
    # csv wants newline="" to see quoted line breaks; JSON lines want universal ones.
    newline = "" if fmt == "csv" else None
    if file.suffix == ".gz":
        return gzip.open(file, "rt", encoding="utf-8", newline=newline)
    if file.suffix == ".bz2":
        return bz2.open(file, "rt", encoding="utf-8", newline=newline)
    return file.open(encoding="utf-8", newline=newline)


def _visible(folder: Path) -> Iterator[Path]:
    # Spark skips names starting with "_" or "." (_SUCCESS, .crc files), folders too.
    for entry in folder.iterdir():
        if entry.name.startswith(("_", ".")):
            continue
        if entry.is_dir():
            yield from _visible(entry)
        else:
            yield entry


def _check_csv(name: str, text: IO[str], result: SourceCheck) -> None:
    reader = csv.reader(text, escapechar="\\", doublequote=True, strict=True)
    width: int | None = None
    ends = 0  # physical line the previous record ended on
    seen = False
    while True:
        try:
            row = next(reader)
        except StopIteration:
            if not seen:
                result.refused.append(f"{name} is empty (no header, no rows)")
            return
        except (csv.Error, UnicodeDecodeError) as exc:
            result.add(Malformed(name, ends + 1, f"cannot be parsed ({exc})"))
            return
        start, ends = ends + 1, reader.line_num
        if ends > start:
            result.multiline = True
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        seen = True
        if any("\x00" in value for value in row):
            # Python's reader takes NUL bytes (3.11+); a header of them is no column name.
            result.refused.append(f"{name} line {start} has NUL bytes: it is not a text CSV file")
            return
        if width is None:
            width = len(row)
            problem = column_name_problem(row)
            if problem is not None:
                result.refused.append(f"{name}'s header: {problem}")
                return
        elif len(row) != width:
            result.add(Malformed(name, start, f"{len(row)} fields, the header has {width}"))


def _check_json(name: str, text: IO[str], result: SourceCheck) -> None:
    number = 0
    seen = False
    try:
        # Opened with universal newlines: Spark too ends a JSON line at \n, \r or \r\n.
        for number, line in enumerate(text, start=1):
            if not line.strip():
                continue
            seen = True
            problem = _json_problem(line.rstrip("\n"), result)
            if problem is not None:
                result.add(Malformed(name, number, problem))
    except UnicodeDecodeError as exc:
        result.add(Malformed(name, number + 1, f"is not UTF-8 text ({exc.reason})"))
        return
    if not seen:
        result.refused.append(f"{name} is empty (no rows)")


def _json_problem(line: str, result: SourceCheck) -> str | None:
    """What is wrong with one JSON line; its objects' keys are added to ``result``."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg} at column {exc.colno})"
    if isinstance(value, dict):
        _add_keys(value, result)
        return None
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        for row in value:  # Spark reads a top-level array of objects as rows
            _add_keys(row, result)
        return None
    return f"a JSON {type(value).__name__}, not an object"


def _add_keys(row: dict[str, object], result: SourceCheck) -> None:
    result.keys.update(row)
    for key, value in row.items():
        if isinstance(value, dict | list):
            _add_nested(value, (key,), result.nested)


def _add_nested(value: object, path: KeyPath, found: set[KeyPath]) -> None:
    """The keys of the objects within ``value``: an array's objects are one struct's
    rows, as Spark reads them, so their keys share the array's path."""
    if isinstance(value, dict):
        for key, inner in value.items():
            found.add((*path, key))
            if isinstance(inner, dict | list):
                _add_nested(inner, (*path, key), found)
    elif isinstance(value, list):
        for inner in value:
            if isinstance(inner, dict | list):
                _add_nested(inner, path, found)
