"""The lake's file system: any URI pyarrow (for reads and Arrow writes) and Spark can use.

``file://`` is what the tests use; ``hdfs://`` and ``s3a://``/``s3://`` go
through the same code (pyarrow speaks ``s3://`` where Spark speaks ``s3a://``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from strata.errors import LakeError

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from strata.lake.rowhash import RowHash


_DELETE_TRIES = 5


@dataclass(frozen=True)
class FileEntry:
    """One container: its path relative to the lake root, size and row count."""

    path: str
    bytes: int
    rows: int
    partition: str | None = None  # the key text, where the dataset is partitioned
    # What this container adds to its partition's row hash, where the write could hash
    # by partition: a write's first container of a partition carries all that partition's
    # rows of the write, the others nothing (a write's containers of one partition are
    # only ever kept or dropped together).
    row_hash: RowHash | None = None
    archive: str | None = None  # the archive root it was moved to; None: in the lake


class Storage:
    """Paths under one lake root, on whatever file system its URI names."""

    def __init__(self, lake_uri: str, archive: bool = False) -> None:
        self.uri = lake_uri.rstrip("/")
        self.archive = archive  # an archive root: its errors say where to fix it
        self._fs: pafs.FileSystem | None = None
        self._root = ""

    @property
    def fs(self) -> pafs.FileSystem:
        if self._fs is None:
            import pyarrow.fs as pafs

            arrow_uri = "s3://" + self.uri[6:] if self.uri.startswith("s3a://") else self.uri
            try:
                self._fs, self._root = pafs.FileSystem.from_uri(arrow_uri)
            except (ValueError, OSError) as exc:
                fix = (
                    "fix the uri of its [[archive]] policy in strata.toml"
                    if self.archive
                    else "set STRATA_LAKE_URI to a URI such as file:///data/lake, hdfs://… or "
                    "s3a://…"
                )
                raise LakeError(
                    f"cannot open {'archive' if self.archive else 'lake'} URI {self.uri!r}: "
                    f"{exc}; {fix}",
                    lake_uri=self.uri,
                ) from exc
        return self._fs

    def local(self, rel: str) -> str:
        """The path pyarrow's file system uses for ``rel``."""
        _ = self.fs
        return f"{self._root.rstrip('/')}/{rel}" if rel else self._root

    def relative(self, uri: str) -> str | None:
        """``uri`` (as Spark or pyarrow spells it) relative to the lake root; None when it
        is outside the lake."""
        path, root = _comparable(uri), _comparable(self.uri).rstrip("/") + "/"
        return path[len(root) :] if path.startswith(root) else None

    def spark_uri(self, rel: str) -> str:
        """The URI Spark uses for ``rel``."""
        return f"{self.uri}/{rel}"

    def make_dir(self, rel: str) -> None:
        try:
            self.fs.create_dir(self.local(rel), recursive=True)
        except OSError as exc:
            raise LakeError(
                f"cannot write to the lake at {self.spark_uri(rel)!r}: {exc}; make it writable "
                "or set STRATA_LAKE_URI to a writable location",
                lake_uri=self.uri,
            ) from exc

    def delete_dir(self, rel: str) -> bool:
        """Remove a folder and everything in it; False when it was not there."""
        import pyarrow.fs as pafs

        path = self.local(rel)
        if self.fs.get_file_info(path).type == pafs.FileType.NotFound:
            return False
        for _ in range(_DELETE_TRIES):
            try:
                self.fs.delete_dir(path)
                return True
            except FileNotFoundError:
                # Something else removed an entry meanwhile (a cancelled Spark job cleans
                # its own temporary folder): what is left is tried again.
                if self.fs.get_file_info(path).type == pafs.FileType.NotFound:
                    return True
        self.fs.delete_dir(path)
        return True

    def delete_file(self, rel: str) -> bool:
        """Remove one container; False when it was not there."""
        try:
            self.fs.delete_file(self.local(rel))
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise LakeError(
                f"cannot delete {self.spark_uri(rel)} from the lake ({exc}); let this "
                "process delete files there, then run `strata retention` again to finish",
                path=rel,
            ) from exc
        return True

    def discard(self, folder: str, paths: list[str]) -> None:
        """Delete fresh containers under ``folder``, with any writer folder they sit in."""
        import pyarrow.fs as pafs

        tops = {p[len(folder) + 1 :].split("/")[0] for p in paths if p.startswith(folder + "/")}
        for top in sorted(tops):
            path = self.local(f"{folder}/{top}")
            kind = self.fs.get_file_info(path).type
            if kind == pafs.FileType.Directory:
                self.fs.delete_dir(path)
            elif kind == pafs.FileType.File:
                self.fs.delete_file(path)

    def list_dir(self, rel: str) -> list[pafs.FileInfo]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.local(rel), allow_not_found=True)
        return list(self.fs.get_file_info(selector))

    def parquet_files(self, rel: str) -> list[str]:
        """Data files below ``rel`` (recursively), relative to the root, sorted.

        Writers' markers (``_SUCCESS``, ``.crc`` and other hidden files) are skipped;
        partition folders (``_region=JP``) are not.
        """
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.local(rel), recursive=True, allow_not_found=True)
        prefix = self.local("").rstrip("/") + "/"
        out = []
        for info in self.fs.get_file_info(selector):
            if info.type != pafs.FileType.File:
                continue
            parts = info.path[len(prefix) :].split("/")
            # Spark's rule: hidden unless a partition folder (`_region=JP` holds "=").
            hidden = any(p.startswith(".") or (p[:1] == "_" and "=" not in p) for p in parts)
            if hidden or not parts[-1].endswith(".parquet"):
                continue
            out.append("/".join(parts))
        return sorted(out)


def _comparable(uri: str) -> str:
    """A URI with ``file:`` spellings made one (``file:/x``, ``file:///x`` and ``/x``)."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path)
    return uri
