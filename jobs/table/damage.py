"""What is damaged in a Delta table's log or files, said in one line each (issue 11.6).

Used two ways: `hypo lake verify` lists every problem of every table with what to do, and
the commands that hit a damaged table (`status`, `answers`, `tick`, …) raise LakeDamaged
naming the table, version and file instead of a delta-rs or pyarrow traceback.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Optional

import pyarrow.parquet as pq

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d+\.\d+)?\.parquet$")
VERIFY_HINT = "run `hypo lake verify` for every problem and what to do"
# damage inside a file (its size and footer intact) is found by decoding it
VERIFY_DEEP_HINT = "run `hypo lake verify --deep` for every problem and what to do"


@dataclass(frozen=True)
class Problem:
    """One damaged thing: where (table, version, file relative to the lake), what, what to do."""

    table: str
    version: Optional[int]
    file: str
    what: str
    todo: str

    def line(self) -> str:
        at = f" version {self.version}" if self.version is not None else ""
        return f"{self.table}{at}: {self.file}: {self.what} — {self.todo}"

    def as_dict(self) -> dict:
        return {"table": self.table, "version": self.version, "file": self.file,
                "what": self.what, "todo": self.todo}


def label(path: str) -> str:
    """A table's name as the user knows it: facts, state, …, or _hypo/ticks."""
    path = os.path.normpath(path)
    base = os.path.basename(path)
    if os.path.basename(os.path.dirname(path)) == "_hypo":
        return f"_hypo/{base}"
    return base


def rel(path: str, table_path: str) -> str:
    """A file's name relative to the lake root (the table's parent, or _hypo's parent)."""
    root = os.path.dirname(os.path.normpath(table_path))
    if os.path.basename(root) == "_hypo":
        root = os.path.dirname(root)
    return os.path.relpath(path, root)


def log_versions(table_path: str) -> tuple[list[int], list[int]]:
    """(commit versions, checkpoint versions) present in a table's _delta_log."""
    d = os.path.join(table_path, "_delta_log")
    commits, cps = [], []
    for f in os.listdir(d):
        m = _COMMIT.match(f)
        if m:
            commits.append(int(m.group(1)))
            continue
        m = _CHECKPOINT.match(f)
        if m:
            cps.append(int(m.group(1)))
    return sorted(commits), sorted(set(cps))


def _commit_problem(full: str) -> Optional[str]:
    """Why one commit file is unreadable (None: every line is a JSON action)."""
    try:
        with open(full, "rb") as fh:
            data = fh.read()
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if not data.strip():
        return "is empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"is not UTF-8 text (byte {e.start})"
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            return f"is truncated or not JSON (line {i}: {e.msg})"
        if not isinstance(obj, dict) or not obj:
            return f"line {i} is not a Delta action"
    return None


def log_problems(table_path: str) -> list[Problem]:
    """Every missing or unreadable commit file of a table's Delta log."""
    name = label(table_path)
    d = os.path.join(table_path, "_delta_log")
    if not os.path.isdir(d):
        return [Problem(name, None, rel(d, table_path), "the table's Delta log is missing",
                        "restore the directory from a backup (the lake cannot be used without "
                        "it)")]
    commits, cps = log_versions(table_path)
    out: list[Problem] = []
    if not commits and not cps:
        return [Problem(name, None, rel(d, table_path), "the Delta log holds no commit",
                        "restore it from a backup")]
    last = max(commits + cps)
    present = set(commits)
    start = 0
    usable_cp = [c for c in cps if all(v in present for v in range(c + 1, last + 1))]
    if usable_cp:
        start = usable_cp[-1] + 1
    for v in range(start, last + 1):
        full = os.path.join(d, f"{v:020d}.json")
        if v not in present:
            out.append(Problem(name, v, rel(full, table_path), "this commit file is missing",
                               f"restore it from a backup: the table cannot be read past "
                               f"version {v - 1} without it"))
            continue
        why = _commit_problem(full)
        if why is None:
            continue
        if v == last:
            todo = (f"restore it from a backup, or move it aside (`mv {rel(full, table_path)} "
                    f"{rel(full, table_path)}.damaged`; the table then ends at version "
                    f"{v - 1}) and run `hypo lake verify` again")
        else:
            todo = (f"restore it from a backup: the table cannot be read past version "
                    f"{v - 1} without it")
        out.append(Problem(name, v, rel(full, table_path), f"this commit file {why}", todo))
    return out


def first_log_problem(table_path: str) -> Optional[str]:
    """The first log problem of a table as one line (for errors of other commands)."""
    try:
        ps = log_problems(table_path)
    except OSError:
        return None
    return ps[0].line() if ps else None


def data_file_problem(full: str, size: Optional[int] = None,
                      rows: Optional[int] = None, deep: bool = False,
                      required: tuple = ()) -> Optional[str]:
    """Why a data file referenced by a table cannot be used (None: present, the size the log
    recorded, a readable Parquet footer with the recorded row count; with deep, every data
    page decodes too — damage inside a file of the right size with an intact footer — and
    the `required` columns it has hold no null)."""
    try:
        st = os.stat(full)
    except FileNotFoundError:
        return "the file is missing"
    except OSError as e:
        return f"the file cannot be read ({e.strerror})"
    if size is not None and st.st_size != size:
        return f"the file has {st.st_size} bytes, the log recorded {size} (truncated or replaced)"
    try:
        md = pq.read_metadata(full)
    except Exception as e:  # noqa: BLE001 - any pyarrow/OS error means "unreadable"
        return f"the file is not readable Parquet ({str(e).splitlines()[0][:160]})"
    if rows is not None and md.num_rows != rows:
        return f"the file has {md.num_rows} rows, the log recorded {rows}"
    if deep:
        try:
            t = pq.read_table(full)
        except Exception as e:  # noqa: BLE001 - any decoding error means "damaged inside"
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            return f"the file's data cannot be decoded ({first})"
        for c in required:
            if c in t.column_names and t.column(c).null_count:
                return (f"{t.column(c).null_count} row(s) without a {c} (a required "
                        f"column)")
    return None


def stats_rows(stats: Optional[str]) -> Optional[int]:
    if not stats:
        return None
    try:
        n = json.loads(stats).get("numRecords")
    except (ValueError, AttributeError):
        return None
    return n if isinstance(n, int) else None
