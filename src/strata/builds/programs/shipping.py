"""Pipeline code on executors: a pipeline folder's modules travel inside the functions
Spark pickles (Python UDFs), since executors cannot import them by name.

cloudpickle pickles a function of an importable module as a reference (module and
name) that the executor imports. A pipeline folder is on the driver's ``sys.path``
only, so a UDF defined in a pipeline, or calling a helper module beside it, would fail
on every executor, local or remote, with ``ModuleNotFoundError``. Pickled by value, the
code goes with the function; only installed libraries (pyspark, Strata, what the
pipelines import from site-packages) must exist where the executors run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def pickle_by_value(root: Path) -> list[str]:
    """Have pyspark's cloudpickle carry every loaded module from ``root`` by value;
    return their names."""
    from pyspark import cloudpickle

    prefix = str(root).rstrip(os.sep) + os.sep
    names = []
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if origin and origin.startswith(prefix) and module.__name__ == name:
            cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
            names.append(name)
    return sorted(names)
