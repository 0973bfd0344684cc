"""The jobs family, one owner in rooms, each the only module that names its tables:
:mod:`.rows` (``jobs``), :mod:`.versions` (``job_versions`` and ``job_version_io``, the
lineage graph's edges) and :mod:`.aliases` (``job_aliases``, the names a job's events
use when it is known by another)."""
