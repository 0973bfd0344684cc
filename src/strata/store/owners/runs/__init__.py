"""The runs family: what runs read, what they said, and each job's run count.

One owner in rooms, each the only module that names its tables:

- :mod:`.inputs`: ``run_inputs``, the versions each run is bound to as read;
- :mod:`.said`: ``run_states`` and ``run_input_facets``, what a run's events said;
- :mod:`.counts`: ``job_run_counts``, kept by triggers on ``runs``.

The ``runs`` rows themselves join this owner next. A read that joins these tables to
another family's (a run's inputs with their datasets) composes the joins offered here
(:func:`.inputs.join_read`, :func:`.counts.join_run_count`), so the statement stays one
statement and the tables are still named here alone.
"""
