"""Build state: the build catalog, program versions, leases and the trigger queue, behind
one facade (:class:`BuildState`), the only place in :mod:`strata.builds` that speaks SQL."""

from strata.builds.state.facade import BuildState, BuiltVersion

__all__ = ["BuildState", "BuiltVersion"]
