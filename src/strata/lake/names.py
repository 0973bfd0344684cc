"""Dataset name rules. Names are labels only: containers live under ids, never names."""

from __future__ import annotations

import functools
import unicodedata

from strata.errors import InvalidArgument, InvalidName
from strata.limits import MAX_NAME_BYTES


def validate_dataset_name(name: object) -> str:
    """Return ``name`` if it is a valid dataset name, else raise :class:`InvalidName`."""
    if not isinstance(name, str):
        raise InvalidName(
            f"dataset name must be a string, got {type(name).__name__} {name!r}", name=repr(name)
        )
    problem = _problem(name)
    if problem:
        raise InvalidName(
            f"invalid dataset name {name[:200]!r}: {problem}; use slash-separated words "
            "like 'raw/clicks'",
            name=name[:200],
        )
    return name


@functools.lru_cache(maxsize=65536)  # a pipeline names each dataset several times
def _problem(name: str) -> str | None:
    if not name.strip():
        return "it is empty"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"it is {len(name.encode('utf-8'))} bytes long, the limit is {MAX_NAME_BYTES}"
    if name != name.strip():
        return "it starts or ends with white space"
    if name.startswith("/") or name.endswith("/"):
        return "it starts or ends with a slash"
    if ".." in name:
        return "it contains '..'"
    if "//" in name:
        return "it contains an empty part ('//')"
    if name.isascii() and name.isprintable():
        return None  # no ASCII character is Cf, Zl or Zp; the Cc ones are unprintable
    for ch in name:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            return f"it contains the control character U+{ord(ch):04X}"
    return None


def parse_ref(text: str) -> tuple[str, int | None]:
    """``DATASET`` or ``DATASET@VERSION``."""
    name, at, version = text.rpartition("@")
    if not at:
        return text, None
    if not version.isdigit() or int(version) < 1:
        raise InvalidArgument(
            f"{text!r} names version {version!r}; write DATASET@N with a commit number such as "
            f"{name}@3",
            value=text,
        )
    return name, int(version)


def parse_version_ref(text: str) -> tuple[str, int]:
    """``DATASET@N``: a ref that must name one version."""
    name, version = parse_ref(text)
    if version is None or not name:
        raise InvalidArgument(
            f"{text!r} names no version; write DATASET@N, such as raw/clicks@3", value=text
        )
    return name, version
