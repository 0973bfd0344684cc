"""Files between the lake and its archives: a copy that is verified before anything
records it, and deletions that happen only where the catalog no longer reads the file.

A move is copy, verify, record, delete. The copy lands under a hidden name and is
renamed into place, so a reader never sees half a file; the verify reads it back (size
and SHA-256 against the source); the record (one SQL transaction) names the new place
and lists the old copy for deletion; the delete comes last. Killed at any step, every
file stays readable from the place the catalog names.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from strata.errors import LakeError
from strata.lake.service import Lake
from strata.lake.storage import Storage
from strata.retention import pending as pend
from strata.retention.pending import Pending
from strata.store.engine import read_tx, write_tx
from strata.store.owners.datasets import rows as dataset_rows

_BLOCK = 1 << 20
_BATCH = 500  # deletions per SQL transaction that holds their dataset


def copy_verified(source: Storage, target: Storage, path: str, size: int) -> None:
    """``path`` copied from ``source`` to ``target`` and read back: the same ``size``
    bytes and the same SHA-256, or a :class:`LakeError` with nothing left at ``path``."""
    folder, _, name = path.rpartition("/")
    temp = f"{folder}/.{name}.{uuid.uuid4().hex[:12]}.copying"
    try:
        target.fs.create_dir(target.local(folder), recursive=True)
        with (
            source.fs.open_input_stream(source.local(path)) as src,
            target.fs.open_output_stream(target.local(temp)) as dst,
        ):
            wrote = _pipe(src, dst)
        target.fs.move(target.local(temp), target.local(path))
        with target.fs.open_input_stream(target.local(path)) as back:
            read = _pipe(back, None)
    except OSError as exc:
        _discard(target, temp)
        raise LakeError(
            f"cannot copy {source.spark_uri(path)} to {target.spark_uri(path)} ({exc}); make "
            "both places readable and writable by this process, then run the command again",
            path=path,
        ) from exc
    if wrote != read or read[0] != size:
        _discard(target, path)
        raise LakeError(
            f"the copy of {source.spark_uri(path)} at {target.spark_uri(path)} does not match "
            f"it ({read[0]} bytes read back, {size} expected); nothing was recorded: check "
            "the target file system, then run the command again",
            path=path,
        )


def has_copy(storage: Storage, path: str, size: int) -> bool:
    """Whether ``path`` lies on ``storage`` whole (``size`` bytes)."""
    import pyarrow.fs as pafs

    info = storage.fs.get_file_info(storage.local(path))
    return info.type == pafs.FileType.File and info.size == size


def _pipe(src: Any, dst: Any | None) -> tuple[int, str]:
    """Bytes read from ``src`` (written to ``dst`` when given): count and SHA-256."""
    digest, count = hashlib.sha256(), 0
    while block := src.read(_BLOCK):
        digest.update(block)
        count += len(block)
        if dst is not None:
            dst.write(block)
    return count, digest.hexdigest()


def _discard(storage: Storage, path: str) -> None:
    """Best effort: a failed copy's leftovers are hidden names no read lists."""
    with contextlib.suppress(LakeError):
        storage.delete_file(path)


def finish_deletes(lake: Lake, items: Sequence[Pending], now: datetime | None = None) -> int:
    """Delete the listed files that are due (:func:`pending.settle`) and unlist them;
    each dataset's share is done holding it, so a restore cannot record a copy between
    the check and the delete. Returns how many listed files are gone now (a file a
    killed process deleted before it could unlist it counts too)."""
    moved_before = (now or datetime.now(UTC)) - timedelta(seconds=lake.settings.gc_grace_seconds)
    by_dataset: dict[str, list[Pending]] = defaultdict(list)
    for item in items:
        by_dataset[item.dataset_uuid].append(item)
    deleted = 0
    for dataset_uuid, share in sorted(by_dataset.items()):
        for start in range(0, len(share), _BATCH):
            with write_tx(lake.engine) as conn:
                dataset_rows.lock(conn, [dataset_uuid])
                delete, unlist = pend.settle(
                    conn, dataset_uuid, share[start : start + _BATCH], moved_before
                )
                for item in delete:
                    lake.tier(item.root or None).delete_file(item.path)
                deleted += len(delete)
                pend.forget(conn, delete + unlist)
    return deleted


def finish_pending(lake: Lake, now: datetime | None = None) -> int:
    """Everything listed for deletion that is due now (what a killed pass or move left,
    and old copies past their grace); how many went."""
    with read_tx(lake.engine) as conn:
        listed = pend.pending(conn)
    return finish_deletes(lake, listed, now)
