"""The lake on disk: its tables, the stored program, and the `_hypo/ticks` log of phases.

    <lake>/facts/  quarantine/  state/  answers/  dq/      Delta tables (schemas/lake.json)
    <lake>/_hypo/program.tdl, program.json                  the program (text, sha256, query)
    <lake>/_hypo/ticks/                                     Delta log of committed tick phases
    <lake>/_hypo/dq/tick=<τ>.json                           Great Expectations result per tick
    <lake>/_hypo/rejected/                                  copies of wholly unreadable inputs
    <lake>/landing/tick=<τ>/                                where producers drop slice files
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Mapping
from functools import cached_property
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reasoning.language.compiler import CompiledProgram, compile_program, shown_preds
from reasoning.language.errors import ProgramError
from reasoning.language.modular import MODES

from jobs.table import delta
from jobs.errors import LakeDamaged, LakeMissing, ProgramMismatch

DATA_TABLES = ("facts", "quarantine", "state", "answers", "dq")
PHASES = ("start", "state", "answers", "done")  # of a tick's run; `vacuum` rows: jobs/maintenance/retention.py


def read_program_info(meta_dir: str) -> dict:
    """_hypo/program.json: {"hash": sha256 of program.tdl, "file", "query", …}, or
    LakeDamaged saying what is wrong with it."""
    f = os.path.join(meta_dir, "program.json")
    try:
        with open(f, encoding="utf-8") as fh:
            info = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        why = getattr(e, "strerror", None) or str(e).splitlines()[0][:160]
        raise LakeDamaged(f"_hypo/program.json: unreadable ({why}); restore it from a backup "
                          f"(it records the sha256 of _hypo/program.tdl, its file name and the "
                          f"main query)") from None
    if not isinstance(info, dict) or not isinstance(info.get("hash"), str):
        raise LakeDamaged("_hypo/program.json: no program hash in it; restore it from a backup "
                          "(it records the sha256 of _hypo/program.tdl, its file name and the "
                          "main query)")
    return info


def default_root() -> str:
    return os.environ.get("HYPO_LAKE") or "./lake"


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


LOG_RETENTION_HOURS = 24  # files the ticks log's compactions replaced are deleted after this


class Lake:
    def __init__(self, root: Optional[str] = None):
        self.root = os.path.abspath(root or default_root())

    # ------------------------------------------------------------------ layout
    def path(self, kind: str) -> str:
        if kind == "ticks":
            return os.path.join(self.root, "_hypo", "ticks")
        return os.path.join(self.root, kind)

    @property
    def meta_dir(self) -> str:
        return os.path.join(self.root, "_hypo")

    def exists(self) -> bool:
        return os.path.exists(os.path.join(self.meta_dir, "program.json"))

    def require(self) -> "Lake":
        if not self.exists() and any(delta.is_table(self.path(k)) for k in DATA_TABLES):
            raise LakeDamaged(
                f"the lake at {self.root} has its tables but no _hypo/program.json: restore "
                f"it from a backup, or run `hypo lake init --program <its program> --lake "
                f"{self.root}` again, which rewrites it for the program the tables were made "
                f"for (_hypo/program.tdl)")
        if not self.exists():
            raise LakeMissing(f"no lake at {self.root} (create one with `hypo lake init --program "
                              f"P.tdl --lake {self.root}`, or pass --lake / set HYPO_LAKE)")
        for k in DATA_TABLES + ("ticks",):
            if not delta.is_table(self.path(k)):
                raise LakeMissing(f"the lake at {self.root} is damaged: table {k} is missing")
        return self

    def table(self, kind: str, version: Optional[int] = None):
        return delta.open_table(self.path(kind), version)

    # ------------------------------------------------------------------ program
    @cached_property
    def program_info(self) -> dict:
        self.require()
        return read_program_info(self.meta_dir)

    @cached_property
    def program_text(self) -> str:
        f = os.path.join(self.meta_dir, "program.tdl")
        try:
            with open(f, encoding="utf-8") as fh:
                return fh.read()
        except (OSError, UnicodeDecodeError) as e:
            raise LakeDamaged(f"_hypo/program.tdl: the stored program cannot be read "
                              f"({getattr(e, 'strerror', None) or e}); restore it from a backup "
                              f"(its sha256 is recorded in _hypo/program.json)") from None

    @cached_property
    def program(self) -> CompiledProgram:
        info = self.program_info
        text = self.program_text
        h = hashlib.sha256(text.encode()).hexdigest()
        if h != info["hash"]:
            raise ProgramMismatch(
                f"the stored program {self.meta_dir}/program.tdl was modified (sha256 {h[:12]} ≠ "
                f"{info['hash'][:12]} recorded at init); restore it or start a new lake")
        mode, kept = info.get("modular", "never"), info.get("derived", [])
        if mode not in MODES or not isinstance(kept, list) or \
                not all(isinstance(p, str) for p in kept):
            raise LakeDamaged(
                f"{self.meta_dir}/program.json: \"modular\" is {json.dumps(mode)} and "
                f"\"derived\" {json.dumps(kept)}; init writes one of {', '.join(MODES)} and a "
                f"list of predicates: restore the file from a backup")
        try:  # a lake made before modular evaluation (no "modular") unfolded every predicate
            cp = compile_program(text, info.get("file", "program.tdl"), info.get("query"),
                                 mode, "unfold")
        except ProgramError as e:
            raise ProgramMismatch(f"the stored program no longer compiles: {e.message}") from None
        if sorted(cp.modular) != kept:
            raise ProgramMismatch(
                f"modular evaluation {mode} now keeps "
                f"{shown_preds(cp.modular) or 'no predicate'} of the stored program as "
                f"derived literals, the lake's S_τ was made keeping "
                f"{shown_preds(kept) or 'none'} "
                f"(_hypo/program.json): run the version of hypo that made it, or a new lake")
        return cp

    def program_id(self) -> str:
        """The identity a tick is computed with: text hash and main query."""
        return f"{self.program_info['hash']}:{self.program_info.get('query') or ''}"

    def check_program(self, program_path: Optional[str], query: Optional[str] = None) -> None:
        """Refuse to run with another program than the one stored at init."""
        if program_path is None:
            return
        from reasoning.language.compiler import read_program_text
        from reasoning.language.errors import ProgramError

        try:
            text = read_program_text(program_path)  # as init stored it (no byte-order mark)
        except ProgramError as e:
            raise LakeMissing(f"{program_path}: {e.message}") from None
        h = hashlib.sha256(text.encode()).hexdigest()
        info = self.program_info
        if h != info["hash"] or (query is not None and query != info.get("query")):
            raise ProgramMismatch(
                f"program mismatch: the lake at {self.root} was initialised with "
                f"{info.get('file')} (sha256 {info['hash'][:12]}"
                f"{', query ' + info['query'] if info.get('query') else ''}), not {program_path} "
                f"(sha256 {h[:12]}{', query ' + query if query else ''}); use a new lake for "
                f"another program")

    # ------------------------------------------------------------------ ticks log
    def log(self, tick: int, run: str, phase: str, **fields: Any) -> None:
        row = {"tick": tick, "run": run, "phase": phase, "ts": now(),
               "program": self.program_info["hash"]}
        row.update(fields)
        if isinstance(row.get("counts"), dict):
            row["counts"] = json.dumps(row["counts"], sort_keys=True)
        schema = delta.arrow_schema("ticks")
        data = pa.Table.from_pylist([{k: row.get(k) for k in schema.names}], schema=schema)
        path = self.path("ticks")
        act = delta.write_file(path, "ticks", data, "log", {},
                               name=f"{tick:08d}-{phase}-{run}.parquet")
        delta.commit(self._ticks_table(), "ticks", [act], mode="append",
                     metadata={"tick": str(tick), "run": run, "phase": phase}, exclusive=False)
        if phase == "done":
            self.compact_log()

    def _ticks_table(self):
        """The ticks log's table, opened once per Lake and brought up to date by reading only
        the commits since (a tick appends four rows: a fresh open replays up to 100 commits;
        the log's appends are not conditional on a version, so a shared object is safe)."""
        dt = getattr(self, "_ticks_dt", None)
        if dt is None:
            dt = self._ticks_dt = self.table("ticks")
        else:
            try:
                dt.update_incremental()
            except Exception:  # noqa: BLE001 - reopened (and a damaged log named) below
                dt = self._ticks_dt = self.table("ticks")
        return dt

    def compact_log(self, max_files: int = 64) -> bool:
        """Once the ticks log has more than max_files files, bin-pack its small files into
        files of up to 256 KB (Delta OPTIMIZE; ~12 000 rows at ~20 bytes a row): a
        compaction rewrites at most that much, where rewriting the whole log made the bytes
        written grow with the square of the ticks (skipped if it conflicts with another
        run's commit)."""
        dt = self._ticks_table()
        if len(dt.file_uris()) <= max_files:
            return False
        try:
            dt.optimize.compact(target_size=1 << 18, commit_properties=delta.CommitProperties(
                custom_metadata=delta.with_user_metadata({"phase": "compact"}),
                max_commit_retries=0))
        except Exception:  # noqa: BLE001 - a conflict: the next tick's compaction retries
            return False
        try:  # the files compactions replaced, once no reader can still be at their version
            dt.vacuum(retention_hours=LOG_RETENTION_HOURS, dry_run=False,
                      enforce_retention_duration=False)
        except Exception:  # noqa: BLE001 - disk space only: the next compaction retries
            pass
        return True

    def ticks_log(self) -> "TicksLog":
        return TicksLog(delta.read_arrow(self.path("ticks"), "ticks", dt=self._ticks_table()))

    def _log(self, log) -> "TicksLog":
        """The ticks log given (read now if None; rows as dicts are taken too)."""
        if log is None:
            return self.ticks_log()
        if isinstance(log, TicksLog):
            return log
        return TicksLog(pa.Table.from_pylist(list(log), schema=delta.arrow_schema("ticks")))

    def done(self, log=None) -> "Done":
        """tick -> the latest `done` row (the run whose results are the tick's)."""
        return self._log(log).done()

    def kept_from(self, kind: str, log=None) -> int:
        """The first tick whose partition the state or answers table still holds: `hypo
        lake vacuum --keep-state/--keep-answers` removed those of earlier ticks (0: none)."""
        key = "state_from" if kind == "state" else "answers_from"
        return max([json.loads(r.get("counts") or "{}").get(key, 0)
                    for r in self._log(log).vacuums()] + [0])

    def state_from(self, log=None) -> int:
        """The first tick whose S_τ the state table still holds (kept_from)."""
        return self.kept_from("state", log)

    def answers_from(self, log=None) -> int:
        """The first tick whose answers the answers table still holds (kept_from)."""
        return self.kept_from("answers", log)

    def vacuumed_at(self, log=None) -> str:
        """When the last vacuum was logged ("" if never): a tick completed after it has its
        S_τ again, whatever the cut (a re-run from tick 0)."""
        return max([r["ts"] for r in self._log(log).vacuums()] + [""])

    def last_tick(self, done: Optional[dict] = None) -> int:
        """The last tick of the contiguous run of completed ticks from 0, a skipped quiet
        stretch counting as completed (-1: none)."""
        done = self.done() if done is None else done
        starts = stretches(done)
        if not starts and isinstance(done, Done):
            return done.contiguous_last()
        t = -1
        while True:
            s = starts.get(t + 1)
            if s is not None and (t + 1 not in done or done[t + 1]["ts"] <= done[s]["ts"]):
                t = s
            elif t + 1 in done:
                t += 1
            else:
                return t


def _log_order(r: dict) -> tuple:
    return r["ts"], r["tick"], PHASES.index(r["phase"]) if r["phase"] in PHASES else 9


class TicksLog:
    """The ticks log as read: an Arrow table, whose rows are built as dicts (in the order
    they were logged) only when iterated.  A tick's own checks use done() and vacuums(),
    which stay in Arrow: a lake of 10⁵ ticks has 4·10⁵ rows, and building them all as dicts
    took 1.2–1.8 s at every tick."""

    def __init__(self, table: pa.Table):
        self.table = table
        self._rows: Optional[list[dict]] = None
        self._done: Optional[Done] = None

    def rows(self) -> list[dict]:
        if self._rows is None:
            self._rows = sorted(self.table.to_pylist(), key=_log_order)
        return self._rows

    def __iter__(self):
        return iter(self.rows())

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitem__(self, i):
        return self.rows()[i]

    def _phase(self, phase: str) -> pa.Table:
        return self.table.filter(pc.equal(self.table["phase"], phase))

    def done(self) -> "Done":
        if self._done is None:
            self._done = Done(self._phase("done"))
        return self._done

    def vacuums(self) -> list[dict]:
        return self._phase("vacuum").to_pylist()

    def latest_phases(self) -> dict[int, str]:
        """tick -> the phase of its latest row (a tick's run logs start, state, answers,
        done in turn: not `done` means its last run did not finish), in Arrow."""
        t = self.table.filter(pc.is_in(self.table["phase"], pa.array(list(PHASES))))
        if not t.num_rows:
            return {}
        order = pc.index_in(t["phase"], pa.array(list(PHASES)))
        t = t.append_column("_o", order).take(pc.sort_indices(
            t.append_column("_o", order), [("tick", "ascending"), ("ts", "ascending"),
                                           ("_o", "ascending")]))
        ticks = t["tick"].to_numpy()
        last = np.ones(len(ticks), dtype=bool)
        last[:-1] = ticks[:-1] != ticks[1:]
        t = t.filter(pa.array(last))
        return dict(zip(t["tick"].to_pylist(), t["phase"].to_pylist()))


class Done(Mapping):
    """tick -> the latest `done` row of the tick (the run whose results are the tick's), over
    the Arrow rows of the log: a row is built as a dict when looked up; iteration is in
    tick order."""

    def __init__(self, table: pa.Table):
        n = table.num_rows
        if n:
            table = table.take(pc.sort_indices(table, [("tick", "ascending"),
                                                       ("ts", "ascending")]))
            ticks = table["tick"].to_numpy()
            last = np.ones(n, dtype=bool)
            last[:-1] = ticks[:-1] != ticks[1:]  # the latest row of each tick
            table = table.filter(pa.array(last))
        self._t = table
        self._ticks: list[int] = table["tick"].to_pylist()
        self._idx = dict(zip(self._ticks, range(len(self._ticks))))
        self._rows: dict[int, dict] = {}
        self._stretches: Optional[dict[int, int]] = None

    def __getitem__(self, tick: int) -> dict:
        r = self._rows.get(tick)
        if r is None:
            i = self._idx[tick]
            r = self._rows[tick] = self._t.slice(i, 1).to_pylist()[0]
        return r

    def __contains__(self, tick) -> bool:
        return tick in self._idx

    def beyond(self, column: str, version: int) -> list[tuple[int, int]]:
        """(tick, version) of the done rows whose `column` (state_version, answers_version)
        is above `version`."""
        if not self._t.num_rows:
            return []
        col = self._t[column]
        hit = pc.fill_null(pc.greater(col, version), False)
        return list(zip(self._t["tick"].filter(hit).to_pylist(), col.filter(hit).to_pylist()))

    def __iter__(self):
        return iter(self._ticks)

    def __len__(self) -> int:
        return len(self._ticks)

    def items(self):
        """Every (tick, row), the rows built at once (looking each up costs 10× more)."""
        if len(self._rows) < len(self._ticks):
            self._rows = dict(zip(self._ticks, self._t.to_pylist()))
        return self._rows.items()

    def values(self):
        return [r for _, r in self.items()]

    def contiguous_last(self) -> int:
        """The last tick of the run 0, 1, 2, … of completed ticks (-1: none), in numpy."""
        ticks = np.asarray(self._ticks, dtype=np.int64)  # in order
        gap = np.flatnonzero(ticks != np.arange(len(ticks)))
        return int(gap[0]) - 1 if len(gap) else len(ticks) - 1

    def column(self, name: str) -> list:
        """One column of the rows, in tick order (as iteration)."""
        return self._t[name].to_pylist()

    def stretches(self) -> dict[int, int]:
        """stretches() of these rows: only those whose counts carry `quiet_from` are read."""
        if self._stretches is None:
            c = self._t["counts"]
            hit = self._t.filter(pc.fill_null(pc.match_substring(c, '"quiet_from"'), False))
            self._stretches = {}
            for r in sorted(hit.to_pylist(), key=lambda r: (r["ts"], r["tick"])):  # latest wins
                a = quiet_from(r)
                if a is not None:
                    self._stretches[a] = r["tick"]
        return self._stretches


def rerunnable(tick: int, state_from: int) -> bool:
    """Tick τ can be re-run by itself: it starts from ∅ (τ = 0) or from an S_{τ-1} that
    `hypo lake vacuum --keep-state` kept (τ-1 ≥ state_from, Lake.state_from).  An earlier
    tick needs a re-run from tick 0, which computes every S_τ again from the facts."""
    return tick == 0 or tick - 1 >= state_from


def rerun_scope(state_from: int) -> str:
    """Which ticks can be re-run once the lake keeps S_τ from tick state_from on."""
    return (f"ticks from {state_from + 1} on can be re-run by themselves, earlier ones with a "
            f"re-run from tick 0")


def rerun_advice(tick: int, state_from: int, last: Optional[int] = None) -> str:
    """What to run to re-run tick τ when rerunnable() says it cannot run by itself."""
    to = max(tick, last if last is not None else tick)
    return (f"re-run from tick 0 (`hypo lake run --from 0 --to {to}`, which computes every "
            f"S_τ again from the facts), or only ticks from {state_from + 1} on")


def quiet_from(row: dict) -> Optional[int]:
    """The first tick of the quiet stretch a `done` row of the ticks log closes (its tick is
    the stretch's last), or None for a row of one computed tick."""
    c = row.get("counts") or ""
    if '"quiet_from"' not in c:
        return None
    return json.loads(c).get("quiet_from")


def stretches(done: dict[int, dict]) -> dict[int, int]:
    """first tick -> last tick of each quiet stretch `hypo lake run` skipped (no facts and
    nothing to report: reasoning.run.session.quiet_margin); its `done` row is at the last tick
    (of two stretches from one tick, the one skipped last)."""
    if isinstance(done, Done):
        return dict(done.stretches())
    out = {}
    for t, r in sorted(done.items(), key=lambda tr: (tr[1]["ts"], tr[0])):  # latest wins
        a = quiet_from(r)
        if a is not None:
            out[a] = t
    return out


def stretch_of(done: dict[int, dict], tick: int) -> Optional[tuple[int, int]]:
    """(first, last) of the skipped quiet stretch holding `tick`, if any."""
    for a, b in stretches(done).items():
        if a <= tick <= b:
            return a, b
    return None


def rerun_from(done: dict[int, dict], ticks) -> int:
    """The tick a re-run must start at to include facts of `ticks`: the earliest of them, or
    the first tick of the skipped quiet stretch holding it (whose inner ticks have no state)."""
    out = []
    for t in ticks:
        q = stretch_of(done, t)
        out.append(q[0] if q is not None else t)
    return min(out)


def fact_files(L: Lake) -> list[dict]:
    """The facts table's files as {partition.tick, num_records} (two columns only: a lake of
    10⁵ ticks has 10⁵ files)."""
    return delta.add_actions(L.table("facts"), columns=["partition.tick", "num_records"])
