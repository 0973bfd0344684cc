"""The lake: transactions, reads and garbage collection over one metadata store."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from strata import ids
from strata.errors import InvalidArgument, UndeclaredInput
from strata.ids import new_id
from strata.lake import branches, partition_hashes, partition_index, registry, schemas
from strata.lake import partitions as pkeys
from strata.lake.commit import Part
from strata.lake.names import validate_dataset_name
from strata.lake.registry import DatasetInfo, Version
from strata.lake.storage import FileEntry, Storage
from strata.lake.transaction import TYPES, Transaction, parse_type
from strata.settings import Settings
from strata.store import migrate
from strata.store.engine import engine_for, read_tx, write_tx
from strata.store.owners import namespaces
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import transactions as txns

_DATASETS = dataset_rows.relation()

# How much older than gc's cutoff a transaction folder with no transaction row must be
# before it goes (see ``Lake._remove_orphans``).
NO_ROW_MARGIN = timedelta(seconds=60)

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset as pads
    from pyspark.sql import DataFrame, SparkSession


# Set while a transform runs: who it is and the datasets it declared. Per thread and
# task, so transforms built side by side each keep their own.
_READABLE: ContextVar[tuple[str, frozenset[str]] | None] = ContextVar(
    "strata_readable", default=None
)


@contextmanager
def reads_limited_to(owner: str, names: Collection[str]) -> Iterator[None]:
    """Within the block, reading any lake dataset but ``names`` raises UndeclaredInput."""
    token = _READABLE.set((owner, frozenset(names)))
    try:
        yield
    finally:
        _READABLE.reset(token)


def _check_declared(dataset: str) -> None:
    limit = _READABLE.get()
    if limit is not None and dataset not in limit[1]:
        owner, names = limit
        raise UndeclaredInput(
            f"{owner} read dataset {dataset!r}, which it does not declare; add "
            f"{dataset.rsplit('/', maxsplit=1)[-1]}=Input({dataset!r}) to its inputs (it declares "
            f"{sorted(names)})",
            dataset=dataset,
        )


@dataclass(frozen=True)
class GcReport:
    """What ``strata gc`` removed."""

    transactions: int
    folders: int
    orphan_folders: int

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class Lake:
    """Immutable, versioned datasets in a lake folder, catalogued in the metadata store."""

    def __init__(self, settings: Settings, engine: Engine | None = None) -> None:
        self.settings = settings
        self.engine = engine or engine_for(settings)
        self.storage = Storage(settings.lake_uri)
        self.namespace = settings.namespace
        self.branch = settings.branch  # resolved (and refused if unknown) at each use
        self._archives: dict[str, Storage] = {}

    def tier(self, archive: str | None) -> Storage:
        """The storage a file lives on: the lake, or the archive root it was moved to."""
        if archive is None:
            return self.storage
        if archive not in self._archives:
            self._archives[archive] = Storage(archive, archive=True)
        return self._archives[archive]

    # -- transactions -------------------------------------------------------------

    def partitions(self, dataset: str, version: int | None = None) -> dict[str, int]:
        """The partitions of a version (latest by default): each key's text, with the last
        version that changed it."""
        validate_dataset_name(dataset)
        with read_tx(self.engine) as conn:
            v = self._version_in(conn, dataset, version)
            return partition_index.changed_at(conn, v.dataset_uuid, v.commit_id)

    def partition_fingerprints(
        self, dataset: str, version: int | None = None
    ) -> dict[str, str | None]:
        """The data fingerprint of each partition a version holds (None where unknown)."""
        validate_dataset_name(dataset)
        with read_tx(self.engine) as conn:
            v = self._version_in(conn, dataset, version)
            live = partition_index.live_counts(conn, v.dataset_uuid, at=v.commit_id)
            held = partition_hashes.latest(conn, v.dataset_uuid, list(live), at=v.commit_id)
        return {
            key: partition_hashes.fingerprint_of(v.schema_fields, held.get(key))
            for key in sorted(live)
        }

    def start(
        self,
        dataset: str | list[str],
        type: str = "APPEND",
        *,
        run_uuid: str | None = None,
        partition_by: list[str] | None = None,
        partitions: list[dict[str, Any]] | None = None,
    ) -> Transaction:
        """Start a transaction on one dataset, or on several that commit together.

        ``partition_by`` partitions what it writes (a partitioned dataset keeps its own
        when this is None); ``partitions`` makes a SNAPSHOT replace only those partitions
        (each a full or partial key) and keep the rest, as Delta's ``replaceWhere``.
        """
        kind = parse_type(type)
        replace = partitions
        names = [dataset] if isinstance(dataset, str) else list(dataset)
        if not names:
            raise InvalidArgument("a transaction needs at least one dataset")
        for name in names:
            validate_dataset_name(name)
        if len(set(names)) != len(names):
            raise InvalidArgument(f"dataset listed twice in one transaction: {names}")
        group = new_id()
        now = datetime.now(UTC)
        parts: list[Part] = []
        with write_tx(self.engine) as conn:
            branch = self._branch(conn)
            namespaces.ensure(conn, self.namespace, now)
            for name in names:
                ds_uuid = self._ensure_dataset(conn, name, now)
                head = registry.latest_version(conn, name, ds_uuid, branch.id)
                base = head.commit_id if head is not None else 0
                base_schema = head.schema_fields if head is not None else None
                dataset_by = partition_index.partition_by(conn, ds_uuid)
                had = head is not None
                planned = pkeys.plan(name, kind, dataset_by, had, partition_by, replace)
                _refuse_partitions_on_branch(name, branch, dataset_by or planned[0])
                txn_uuid = new_id()
                folder = f"{ds_uuid}/{txn_uuid}"
                # Folder first: a lake that cannot be written fails before anything is recorded.
                self.storage.make_dir(folder)
                opened = txns.Opened(txn_uuid, group, ds_uuid, kind, now, base, run_uuid, folder)
                txns.open_part(conn, opened)
                part = Part(name, ds_uuid, txn_uuid, base, base_schema, folder, type=kind)
                part.partition_limit = self.settings.partition_limit
                part.dataset_by = dataset_by
                part.partition_by, part.replace = planned
                part.branch_id, part.branch_name = branch.id, branch.name
                parts.append(part)
        return Transaction(self, kind, parts, group, run_uuid)

    transaction = start

    def on_branch(self, branch: str | None) -> Lake:
        """This lake read and written on ``branch`` (None: this lake's own)."""
        if branch is None or branch == self.branch:
            return self
        import dataclasses

        return Lake(dataclasses.replace(self.settings, branch=branch), self.engine)

    def _branch(self, conn: sa.Connection) -> branches.Branch:
        return branches.require(conn, self.branch)

    def _version_in(
        self,
        conn: sa.Connection,
        dataset: str,
        version: int | None = None,
        as_of: datetime | None = None,
    ) -> Version:
        """Version N, or this lake's branch's latest or version at ``as_of``."""
        on = self._branch(conn).id
        return registry.resolve_version(
            conn, self.namespace, dataset, version=version, as_of=as_of, branch_id=on
        )

    def _ensure_dataset(self, conn: sa.Connection, name: str, now: datetime) -> str:
        ds_uuid = ids.dataset_uuid(self.namespace, name)
        return dataset_rows.ensure_lake(
            conn,
            {
                "uuid": ds_uuid,
                "namespace": self.namespace,
                "name": name,
                "type": "DB_TABLE",
                "physical_name": f"{self.storage.uri}/{ds_uuid}",
                "is_lake": True,
                "created_at": now,
                "updated_at": now,
            },
        )

    # -- reads ----------------------------------------------------------------------

    def version(
        self, dataset: str, version: int | None = None, as_of: datetime | None = None
    ) -> Version:
        """The latest version, version ``N`` or the version current at ``as_of``."""
        validate_dataset_name(dataset)
        with read_tx(self.engine) as conn:
            return self._version_in(conn, dataset, version, as_of)

    def files(
        self,
        dataset: str,
        version: int | None = None,
        as_of: datetime | None = None,
        partitions: Mapping[str, Any] | None = None,
    ) -> list[FileEntry]:
        """The containers of a version (or of its partitions matching a key), relative to
        the lake root."""
        return self._resolve(dataset, version, as_of, partitions, declared=False)[1]

    def refuse_undeclared_files(
        self, frame: DataFrame, owner: str, versions: Collection[Version]
    ) -> None:
        """Raise :class:`UndeclaredInput` when ``frame``'s plan scans lake files that are
        not files of ``versions``: a read of the lake's folders behind the catalog's back
        (``spark.read.parquet`` on a dataset's folder) would leave lineage with a hole."""
        inside = [rel for f in frame.inputFiles() if (rel := self.storage.relative(f))]
        if not inside:
            return
        with read_tx(self.engine) as conn:
            allowed = {
                f.path
                for v in versions
                for f in registry.version_files(conn, v.dataset_uuid, v.commit_id)
            }
            stray = next((rel for rel in inside if rel not in allowed), None)
            if stray is None:
                return
            ds_uuid = stray.split("/", 1)[0]
            name = conn.execute(
                sa.select(_DATASETS.c.name).where(_DATASETS.c.uuid == ds_uuid)
            ).scalar()
        what = f"dataset {name!r}" if name else "a lake folder no dataset owns"
        raise UndeclaredInput(
            f"{owner} read lake files of {what} ({self.storage.spark_uri(stray)}) outside "
            "its declared input versions; declare it as an Input and read it through the "
            "input, not through the lake's folders",
            dataset=name,
            path=stray,
        )

    def _resolve(
        self,
        dataset: str,
        version: int | None,
        as_of: datetime | None,
        wanted: Mapping[str, Any] | None = None,
        declared: bool = True,
    ) -> tuple[Version, list[FileEntry]]:
        """A version and its containers (with ``wanted``, only that partition's); a read
        (``declared``) must be of a declared input while a transform runs."""
        validate_dataset_name(dataset)
        if declared:
            _check_declared(dataset)
        with read_tx(self.engine) as conn:
            v = registry.refuse_purged(self._version_in(conn, dataset, version, as_of))
            if wanted is None:
                return v, registry.version_files(conn, v.dataset_uuid, v.commit_id)
            by = partition_index.partition_by(conn, v.dataset_uuid)
            key = pkeys.check_filter(dataset, by, wanted)
            assert by is not None
            if set(key) == set(by):  # one whole key: no need to list the others
                keys = [pkeys.key_text(by, key)]
            else:
                keys = partition_index.keys_matching(conn, v.dataset_uuid, [key], v.commit_id)
            return v, registry.partition_files(conn, v.dataset_uuid, v.commit_id, keys)

    def schema_of(self, dataset: str) -> pa.Schema | None:
        """The Arrow schema of ``dataset``'s latest version; None when it has none."""
        validate_dataset_name(dataset)
        with read_tx(self.engine) as conn:
            found = registry.find_dataset(conn, self.namespace, dataset)
            on = self._branch(conn).id
            latest = registry.latest_version(conn, dataset, found["uuid"], on) if found else None
        schema = self._arrow_schema(latest) if latest is not None else None
        return schema if schema else None

    def read_arrow(
        self,
        dataset: str,
        version: int | None = None,
        as_of: datetime | None = None,
        partitions: Mapping[str, Any] | None = None,
    ) -> pa.Table:
        """A version as a pyarrow Table, without Spark (with ``partitions``, only the
        partitions matching that key, e.g. ``{"region": "JP"}``)."""
        v, files = self._resolve(dataset, version, as_of, partitions)
        return self._arrow_dataset(v, files).to_table()

    def head(self, dataset: str, rows: int, version: int | None = None) -> tuple[Version, pa.Table]:
        """The first ``rows`` rows of a version, without Spark: reading stops once enough
        rows are in, so a preview costs a few files, not the whole version."""
        v, files = self._resolve(dataset, version, None, None, declared=False)
        return v, self._arrow_dataset(v, files).head(rows)

    def _arrow_dataset(self, v: Version, files: list[FileEntry]) -> pads.Dataset:
        import pyarrow.dataset as pads

        schema = self._arrow_schema(v)
        if not files:
            return pads.dataset(schema.empty_table())
        parts = [
            pads.dataset(
                [tier.local(f.path) for f in run],
                schema=schema,
                format="parquet",
                filesystem=tier.fs,
            )
            for tier, run in self._by_tier(files)
        ]
        # One file system: a plain dataset; archived files too: a union in file order.
        return parts[0] if len(parts) == 1 else pads.dataset(parts)  # type: ignore[arg-type]

    def _by_tier(self, files: list[FileEntry]) -> list[tuple[Storage, list[FileEntry]]]:
        """``files`` in order, cut into runs that live on one tier each."""
        runs: list[tuple[Storage, list[FileEntry]]] = []
        for f in files:
            tier = self.tier(f.archive)
            if runs and runs[-1][0] is tier:
                runs[-1][1].append(f)
            else:
                runs.append((tier, [f]))
        return runs

    def read(
        self,
        dataset: str,
        version: int | None = None,
        as_of: datetime | None = None,
        spark: SparkSession | None = None,
        partitions: Mapping[str, Any] | None = None,
    ) -> DataFrame:
        """A version as a Spark DataFrame (with ``partitions``, only the partitions
        matching that key, e.g. ``{"region": "JP"}``: only their containers are read)."""
        from strata.lake.spark import get_spark

        v, files = self._resolve(dataset, version, as_of, partitions)
        return self._frame(spark or get_spark(self.settings), v, files)

    def read_keys(
        self, dataset: str, version: int, keys: Sequence[str], spark: SparkSession | None = None
    ) -> DataFrame:
        """The partitions ``keys`` (key texts) of a version, as a Spark DataFrame: only their
        containers are read."""
        from strata.lake.spark import get_spark

        validate_dataset_name(dataset)
        _check_declared(dataset)
        with read_tx(self.engine) as conn:
            v = registry.refuse_purged(
                registry.resolve_version(conn, self.namespace, dataset, version=version)
            )
            files = registry.partition_files(conn, v.dataset_uuid, v.commit_id, keys)
        return self._frame(spark or get_spark(self.settings), v, files)

    def read_added(
        self, dataset: str, after: int, upto: int, spark: SparkSession | None = None
    ) -> DataFrame:
        """The rows versions ``after + 1`` to ``upto`` appended, as a Spark DataFrame:
        only their containers are read, whatever came before."""
        from strata.lake.spark import get_spark

        validate_dataset_name(dataset)
        _check_declared(dataset)
        with read_tx(self.engine) as conn:
            v = registry.refuse_purged(
                registry.resolve_version(conn, self.namespace, dataset, version=upto)
            )
            files = registry.added_files(conn, v.dataset_uuid, after, upto)
        session = spark or get_spark(self.settings)
        return self._frame(session, v, files)

    def _frame(self, session: SparkSession, v: Version, files: list[FileEntry]) -> DataFrame:
        """``files`` of version ``v`` as one frame; none: an empty frame of its schema."""
        if not files:
            from pyspark.sql.pandas.types import from_arrow_schema

            return session.createDataFrame([], from_arrow_schema(self._arrow_schema(v)))
        uris = [self.tier(f.archive).spark_uri(f.path) for f in files]
        return schemas.read_parquet(session, uris, self._known_schema(v))

    def _arrow_schema(self, v: Version) -> pa.Schema:
        import pyarrow as pa

        return self._known_schema(v) or pa.schema([])

    def _known_schema(self, v: Version) -> pa.Schema | None:
        """The schema recorded with ``v`` (None for a version that recorded none)."""
        encoded = v.facets.get(schemas.ARROW_SCHEMA_FACET)
        return schemas.decode(encoded) if encoded else None

    def datasets(self) -> list[DatasetInfo]:
        with read_tx(self.engine) as conn:
            return registry.list_datasets(conn, self.namespace, self._branch(conn).id)

    def versions(self, dataset: str) -> list[Version]:
        validate_dataset_name(dataset)
        with read_tx(self.engine) as conn:
            return registry.list_versions(conn, self.namespace, dataset)

    # -- garbage collection ---------------------------------------------------------------

    def clean_transactions(self, folders: list[str], txn_uuids: list[str]) -> int:
        """Delete the folders of aborted transactions and mark them cleaned."""
        removed = sum(1 for folder in folders if self.storage.delete_dir(folder))
        with write_tx(self.engine) as conn:
            txns.mark_cleaned(conn, txn_uuids, datetime.now(UTC))
        return removed

    def gc(self, grace_seconds: float | None = None) -> GcReport:
        """Remove files of aborted and abandoned transactions older than the grace period.

        Committed versions are never touched. A transaction still open after the
        grace period is taken as abandoned (its writer died) and aborted first, in
        the same SQL transaction a commit would need, so the two cannot both win.
        """
        grace = self.settings.gc_grace_seconds if grace_seconds is None else grace_seconds
        cutoff = datetime.now(UTC) - timedelta(seconds=grace)
        with write_tx(self.engine) as conn:
            dead = txns.abort_abandoned(conn, cutoff, datetime.now(UTC))
        folders = self.clean_transactions([path for _, path in dead], [u for u, _ in dead])
        orphans = self._remove_orphans(cutoff)
        return GcReport(transactions=len(dead), folders=folders, orphan_folders=orphans)

    def _remove_orphans(self, cutoff: datetime) -> int:
        """Transaction folders that no open or committed transaction needs.

        Decided from the store when each dataset's folders are about to go, not from a
        list read before: a transaction started since then has a row by now. A folder is
        removed when its row says ABORTED (a final state) and it is older than the
        cutoff, or when it has no row and is older than the cutoff by
        :data:`NO_ROW_MARGIN`: a transaction makes its folder just before its row, so a
        folder without one is a starting transaction's for a moment, and folder times
        are coarse (or another machine's clock).
        """
        import pyarrow.fs as pafs

        removed = 0
        no_row_cutoff = cutoff - NO_ROW_MARGIN
        for ds in self.storage.list_dir(""):
            if ds.type != pafs.FileType.Directory:
                continue
            folders = {
                f.base_name: _aware(f.mtime)
                for f in self.storage.list_dir(ds.base_name)
                if f.type == pafs.FileType.Directory
            }
            states = self._transaction_states(list(folders))
            for name, mtime in folders.items():
                state = states.get(name)
                oldest = cutoff if state == "ABORTED" else no_row_cutoff
                if state in (None, "ABORTED") and mtime is not None and mtime < oldest:
                    removed += self.storage.delete_dir(f"{ds.base_name}/{name}")
        return removed

    def _transaction_states(self, uuids: list[str]) -> dict[str, str]:
        with read_tx(self.engine) as conn:
            return txns.states(conn, uuids)


def _refuse_partitions_on_branch(
    name: str, branch: branches.Branch, partition_by: list[str] | None
) -> None:
    if branch.id != branches.MAIN and partition_by:
        raise InvalidArgument(
            f"{name!r} is partitioned by {partition_by}, and partitioned datasets are "
            f"written on main only for now; write it without --branch {branch.name}",
            dataset=name,
            branch=branch.name,
        )


def _aware(mtime: datetime | None) -> datetime | None:
    return None if mtime is None else mtime.replace(tzinfo=mtime.tzinfo or UTC)


def connect(settings: Settings | None = None, **overrides: Any) -> Lake:
    """Open the lake from settings; the embedded default migrates itself on first use."""
    settings = settings or Settings.load(**overrides)
    engine = engine_for(settings)
    if settings.is_embedded:
        migrate.upgrade(engine)
    else:
        migrate.check(engine)
    return Lake(settings, engine)


__all__ = ["TYPES", "GcReport", "Lake", "connect"]
