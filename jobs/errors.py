"""Errors of the lake jobs the user can act on (printed as one line by `hypo lake`, exit 2)."""
from __future__ import annotations

from reasoning.language.errors import HypoError


class LakeError(HypoError):
    """A lake command cannot proceed; the message says why and what to do."""


class LakeMissing(LakeError):
    """No lake (or a table of it) at the given path."""


class ProgramMismatch(LakeError):
    """The lake was initialised with another program (or its stored program was altered)."""


class TickOrderError(LakeError):
    """A tick was requested before its predecessor completed."""


class ConcurrentTickError(LakeError):
    """Another run committed to the lake while this run was computing the same tick."""


class InputError(LakeError):
    """An input file cannot be used at all (missing, unreadable directory, ...)."""


class InjectedFault(BaseException):
    """Raised by the fault-injection hook (HYPO_LAKE_FAULT) to simulate a crash; a
    BaseException so that no error handler on the way swallows it."""


class LakeDamaged(LakeError):
    """A file the lake's tables or logs refer to is missing or unreadable (one line naming
    the table, version and file; `hypo lake verify` lists every such problem)."""


class TaskLibraryError(Exception):
    """A library's error (library_error) inside a Spark task of the tick, raised on the
    driver with the worker's text (jobs/tick/spark_partitioned.py)."""


def library_error(e: BaseException) -> bool:
    """An error raised inside deltalake, pyarrow, Polars or Spark (reading a damaged lake),
    here or in a Spark task, rather than by this project."""
    mod = type(e).__module__ or ""
    return isinstance(e, TaskLibraryError) or mod.startswith(
        ("deltalake", "pyarrow", "polars", "pyspark", "py4j", "_internal"))
