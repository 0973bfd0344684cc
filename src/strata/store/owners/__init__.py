"""The owners of the shared tables: each table family is read and written through one
module (or package of rooms), and no module outside ``strata.store`` names its tables
(``tests/unit/test_table_owners.py`` holds that).

Owned here: namespaces (:mod:`.namespaces`), tags (:mod:`.tags`: ``tags``,
``dataset_tags``, ``job_tags``), sources (:mod:`.sources`), stored events
(:mod:`.events`: ``lineage_events``), the fold's queue (:mod:`.event_queue`:
``lineage_pending``), the runs family (:mod:`.runs`, a package: ``runs``,
``run_inputs``, ``run_states``, ``run_input_facets``, ``job_run_counts``), the jobs
family (:mod:`.jobs`, a package: ``jobs``, ``job_versions``, ``job_version_io``,
``job_aliases``), the datasets family (:mod:`.datasets`, a package: ``datasets``,
``dataset_versions``, ``transactions``, ``dataset_files``, ``column_lineage``,
``dataset_symlinks``), and the build's tables a lower layer touches: the commit outbox
(:mod:`.triggers`: ``build_triggers``), the partition catalog (:mod:`.partition_builds`)
and check results (:mod:`.check_results`). Each owner offers typed reads (plain
dataclasses) and writes that take the caller's connection, so a caller's transaction
spans several owners; a query across families composes an owner's joins or reads its
read-only relation.
"""
