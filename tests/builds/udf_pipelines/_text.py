"""A helper module of the pipeline folder (a leading ``_``: not a pipeline)."""


def shout(value):
    return None if value is None else value.upper() + "!"
