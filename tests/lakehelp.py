"""Helpers of the lake tests: the `hypo run` reference, per-tick answer lines, lake copies."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections import defaultdict
from typing import Optional

from hypo_cli import main as hypo_main
from reasoning.run.session import default_until
from reasoning.language.compiler import compile_file
from reasoning.row.engine import Engine
from reasoning.stream.reader import read_stream_file


def hypo(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = hypo_main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def until_of(program: str, stream: str, query: Optional[str] = None) -> int:
    cp = compile_file(program, query)
    return default_until(Engine(cp), read_stream_file(stream, cp))


def reference(program: str, stream: str, until: int, query: Optional[str] = None,
              all_: bool = False) -> dict[int, list[str]]:
    """tick -> the lines `hypo run --format jsonl` prints for it."""
    argv = ["run", program, "--stream", stream, "--format", "jsonl", "--until", str(until),
            "--no-skip"]
    if query:
        argv += ["--query", query]
    if all_:
        argv.append("--all")
    rc, out, err = hypo(*argv)
    assert rc in (0, 1), err
    by = defaultdict(list)
    for line in out.splitlines():
        by[json.loads(line)["tick"]].append(line)
    return dict(by)


def lake_lines(lake: str, tick: int, status: Optional[str] = None, main: str = "") -> list[str]:
    """The lines `hypo lake answers --tick τ --format jsonl` prints."""
    argv = ["lake", "--lake", lake, "answers", "--tick", str(tick)]
    if status:
        argv += ["--status", status]
    rc, out, err = hypo(*argv)
    assert rc == 0, err
    return out.splitlines()


def api_lines(lake: str, tick: int, status: Optional[str] = None, main: str = "") -> list[str]:
    from jobs.lake import read_answers

    objs = read_answers(lake, tick, status)
    if not objs:
        return [json.dumps({"tick": tick, "query": main, "status": "none"})]
    return [json.dumps(o, ensure_ascii=False) for o in objs]


def null_state_column(lake: str, tick: int, col: str) -> str:
    """Damage the first state file of a tick: nulls in column `col`, the file's size in the
    Delta log updated so that its footer and size look intact (issue 44.11); its path."""
    import glob

    import pyarrow as pa
    import pyarrow.parquet as pq

    f = sorted(glob.glob(os.path.join(lake, "state", f"tick={tick}", "**", "*.parquet"),
                         recursive=True))[0]
    t = pq.read_table(f)
    i = t.schema.get_field_index(col)
    pq.write_table(t.set_column(i, t.schema.field(i),
                                pa.nulls(t.num_rows, t.schema.field(i).type)), f)
    rel = os.path.relpath(f, os.path.join(lake, "state"))
    for lf in glob.glob(os.path.join(lake, "state", "_delta_log", "*.json")):
        rows = [json.loads(x) for x in open(lf) if x.strip()]
        for o in rows:
            if "add" in o and o["add"]["path"] == rel:
                o["add"]["size"] = os.path.getsize(f)  # the size the log records: intact
        with open(lf, "w") as fh:
            fh.write("\n".join(json.dumps(o) for o in rows) + "\n")
    return f


def copy_lake(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    return dst


def write_program(tmp, text: str, name: str = "p.tdl") -> str:
    p = os.path.join(str(tmp), name)
    with open(p, "w", encoding="utf-8") as fh:
        fh.write(text)
    return p


def check_lake_equals_run(lake: str, program: str, stream: str, main: str,
                          executor: str = "local", last: int = 0, what: str = "") -> int:
    """A new lake for `program`, the stream ingested, every tick run (the last `last` ones
    with `executor`, the earlier ones on the driver; last = 0: all with `executor`); every
    tick's answers, pending included, must be `hypo run --all`'s.  Returns the last tick."""
    from jobs import lake as api

    until = until_of(program, stream)
    api.init(lake, program)
    api.ingest(lake, None, [stream])
    first = max(0, until - last + 1) if last else 0
    if first:
        api.run_range(lake, 0, first - 1, executor="local")
    api.run_range(lake, first, until, executor=executor)
    ref = reference(program, stream, until, all_=True)
    for t in range(until + 1):
        assert api_lines(lake, t, "all", main) == ref[t], f"{what} tick {t}"
    assert lake_changes(lake, 0, until) == run_changes(program, stream, until), \
        f"{what}: the change feed"
    return until


def run_changes(program: str, stream: str, until: int, query: Optional[str] = None,
                start: int = 0) -> list[str]:
    """The lines `hypo run --changes --format jsonl` prints for ticks start..until."""
    argv = ["run", program, "--stream", stream, "--format", "jsonl", "--until", str(until),
            "--changes"]
    if query:
        argv += ["--query", query]
    rc, out, err = hypo(*argv)
    assert rc in (0, 1), err
    return [x for x in out.splitlines() if json.loads(x)["tick"] >= start]


def lake_changes(lake: str, start: int, end: int) -> list[str]:
    """The lines `hypo lake changes --from start --to end` prints."""
    rc, out, err = hypo("lake", "--lake", lake, "changes", "--from", str(start), "--to",
                        str(end))
    assert rc == 0, err
    return out.splitlines()
