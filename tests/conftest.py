"""Shared fixtures: `engine` runs a test once per executor of Algorithm 1 (the row engine,
the reference, and the set-at-a-time one)."""
from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings

from tests import helpers

# CI (.ci/run sets HYPO_CI=1): the same examples on every run, so its duration is predictable
# and a failure reproduces; locally the examples are random (and HYPO_THOROUGH=1 doubles them).
# An xdist worker (scripts/test.sh runs two) executes its tests from a `__main__` without
# __file__ or __spec__; pyspark.sql.connect (imported by Great Expectations) takes such a
# process for a doctest run and calls sys.exit(0).  Give the worker's main module a file.
if os.environ.get("PYTEST_XDIST_WORKER") and not hasattr(sys.modules["__main__"], "__file__"):
    sys.modules["__main__"].__file__ = "<pytest-xdist worker>"

# The files that take longest, longest first (`--durations=0` of the whole suite in one
# process: 317, 188, 97, 52, 52, 39, 36 s of its 950 s).  scripts/test.sh hands whole files to
# its workers in collection order (`--dist loadfile --no-loadscope-reorder`), so these start
# at once instead of the Spark file starting last and the run waiting for it alone.  Only the
# order changes; a stale list costs minutes of wall time, never a test.
LONG_FILES_FIRST = ("test_lake_spark.py", "test_columnar.py", "test_airflow_scheduler.py",
                    "test_exact.py", "test_engine_properties.py", "test_dag.py",
                    "test_lake_quiet.py")


def pytest_collection_modifyitems(config, items):
    """Tests of LONG_FILES_FIRST before the others (a stable sort: the order within a file
    and among the other files is pytest's)."""
    rank = {name: i for i, name in enumerate(LONG_FILES_FIRST)}
    items.sort(key=lambda it: rank.get(it.path.name, len(rank)))


settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("HYPO_CI") == "1":
    settings.load_profile("ci")


@pytest.fixture(params=helpers.ENGINES)
def engine(request, monkeypatch):
    monkeypatch.setattr(helpers, "ENGINE", request.param)
    return request.param
