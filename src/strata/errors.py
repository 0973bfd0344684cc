"""The one exception tree.

Every error Strata raises on purpose is a :class:`StrataError`. Each carries a
stable ``code`` (the JSON ``code`` of an API error), the HTTP status the API
answers with, and ``details`` for machines. Messages name the bad value and
say what to do about it.

::

    StrataError
    ├── ConfigError             bad setting or strata.toml
    ├── StoreError              metadata store unusable (503)
    │   └── SchemaVersionError  database newer (or older) than this code
    ├── StoreConflict           a write broke a uniqueness rule: another won (409)
    │   ├── BranchExists        a live branch already has that name
    │   └── BranchRefused       merge into itself or a child; delete main or a parent
    ├── InvalidArgument         a value the caller passed is malformed (400)
    │   ├── UnsupportedMediaType  a request body not declared JSON (415)
    │   ├── InvalidName         dataset name rules
    │   ├── InvalidEvent        OpenLineage event fails validation (422)
    │   └── StoreRefused        a value the store cannot hold
    ├── NotFound                unknown dataset, version, job, run … (404)
    ├── TransactionError        transaction misuse (409)
    │   ├── TransactionClosed   write/commit/abort after commit or abort
    │   ├── CommitConflict      another commit won (409)
    │   └── MergeConflict       the target moved since the branch forked (409)
    ├── SchemaMismatch          APPEND with an incompatible schema (409)
    ├── LakeError               the lake cannot be written or read (400)
    │   └── PurgedVersion       the version's containers were purged (410)
    ├── PipelineError           transforms cannot be loaded: import error, cycle,
    │                           duplicate or raw output (400)
    ├── TransformError          a transform broke its declaration while running (400)
    │   ├── UndeclaredInput     it read a dataset it did not declare
    │   ├── CheckFailed         a FAIL data check found bad rows: nothing committed
    │   └── CheckDeclarationError  a check cannot apply to the data (column, type)
    ├── RunAbandoned            the builder running a transform stopped before it ended
    └── Unauthorized / Forbidden  API auth (401 / 403)
"""

from __future__ import annotations

from typing import Any


class StrataError(Exception):
    """Base of every error Strata raises on purpose."""

    code = "strata_error"
    http_status = 400

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class ConfigError(StrataError):
    code = "config_error"


class StoreError(StrataError):
    code = "store_error"
    http_status = 503


class StoreConflict(StrataError):
    """A write broke a uniqueness rule: another write of the same thing won."""

    code = "conflict"
    http_status = 409


class BranchExists(StoreConflict):
    code = "branch_exists"


class BranchRefused(StoreConflict):
    """The branches as they stand refuse the change (409)."""

    code = "branch_refused"


class SchemaVersionError(StoreError):
    code = "schema_version"


class InvalidArgument(StrataError):
    code = "invalid_argument"
    http_status = 400


class UnsupportedMediaType(InvalidArgument):
    code = "unsupported_media_type"
    http_status = 415


class InvalidName(InvalidArgument):
    code = "invalid_name"


class InvalidEvent(InvalidArgument):
    code = "invalid_event"
    http_status = 422


class StoreRefused(InvalidArgument):
    """The store cannot hold a value (too long, out of range, not encodable)."""


class NotFound(StrataError):
    code = "not_found"
    http_status = 404


class TransactionError(StrataError):
    code = "transaction_error"
    http_status = 409


class TransactionClosed(TransactionError):
    code = "transaction_closed"


class CommitConflict(TransactionError):
    code = "commit_conflict"


class MergeConflict(TransactionError):
    """Merging would lose a commit the target made since the branch forked."""

    code = "merge_conflict"


class SchemaMismatch(StrataError):
    code = "schema_mismatch"
    http_status = 409


class LakeError(StrataError):
    code = "lake_error"
    http_status = 400


class PurgedVersion(LakeError):
    code = "purged_version"
    http_status = 410


class PipelineError(StrataError):
    code = "pipeline_error"
    http_status = 400


class TransformError(StrataError):
    code = "transform_error"
    http_status = 400


class UndeclaredInput(TransformError):
    code = "undeclared_input"


class CheckFailed(TransformError):
    """A data check with ``on_error="FAIL"`` found bad rows: nothing was committed."""

    code = "check_failed"


class CheckDeclarationError(TransformError):
    """A check that cannot apply to the data it judges (an unknown column, a type)."""

    code = "bad_check"


class RunAbandoned(StrataError):
    code = "run_abandoned"
    http_status = 409


class Unauthorized(StrataError):
    code = "unauthorized"
    http_status = 401


class Forbidden(StrataError):
    code = "forbidden"
    http_status = 403


# py4j's errors when the JVM under a Spark session is gone or unreachable.
_SPARK_GONE = frozenset({"Py4JNetworkError"})


def can_pass(exc: BaseException) -> bool:
    """Whether trying the same work again later may succeed: another commit won, the
    store or Spark was out of reach, the pipelines did not load (someone may fix them)."""
    if isinstance(exc, CommitConflict | StoreError | PipelineError | ConnectionError):
        return True
    return any(k.__name__ in _SPARK_GONE for k in type(exc).__mro__)
