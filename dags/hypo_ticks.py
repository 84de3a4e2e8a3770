"""hypo_ticks — one DAG run per tick τ of the stream: wait for the slice D|τ, validate and
ingest it, compute S_τ and the answers on Spark (jobs.lake), publish the answers.

τ is derived from the run's logical date:  τ = (logical_date − HYPO_EPOCH) / HYPO_TICK_UNIT
(defaults: epoch 2026-01-01T00:00Z, unit 1 day, so τ = days since the epoch).  The schedule
is one data interval per tick from the epoch (catchup on); a logical date that is not on the
tick grid (e.g. a manual trigger at "now") fails the run instead of guessing a tick.

Tasks (depends_on_past + wait_for_downstream on every task: a tick that failed anywhere holds
the next run at its first task, so no later tick runs until the failure is fixed and cleared):

  prepare         resolve the params, derive τ, create the lake on the first run (init)
  wait_for_slice  sensor on <lake>/landing/tick=<τ>/_READY.  A missing marker is never read
                  as "no facts": the producer declares an empty slice explicitly by writing
                  _READY with no data files.  Fails (no soft-fail) after HYPO_SLICE_TIMEOUT.
  ingest          JSONL/CSV/Parquet → facts; unreadable rows → quarantine (jobs.lake.ingest)
  tick            S_{τ-1} + D|τ → S_τ and the answers on Spark, with the Great Expectations
                  checks of the slice; bad rows → quarantine, summarised in the log
  publish         log new definite answers, new hypothetical answers with their deadlines and
                  refutations; write the lifecycle report of ticks τ-499..τ to
                  <lake>/reports/tick=<τ>.html (a temporary name, then a rename;
                  HYPO_REPORT_TICKS: the 500 ticks, 0 = no report); emit the
                  Asset hypo_answers (extra: lake, tick, counts, report)

Params (defaults from the environment at parse time, then the embedded defaults):
  lake          $HYPO_LAKE          or ./lake
  program       $HYPO_PROGRAM       or examples/wind_turbines.tdl
  spark_master  $HYPO_SPARK_MASTER  or local[2]     (spark://host:7077 for a cluster)
  confidence    $HYPO_CONFIDENCE=1  or false         (answers with their confidence; new lakes)
Relative paths are resolved against the project root (the directory holding dags/), not
the worker's current directory.  Parse-time settings (env): HYPO_EPOCH, HYPO_TICK_UNIT,
HYPO_SLICE_TIMEOUT, HYPO_SLICE_POKE, HYPO_RETRIES, HYPO_RETRY_DELAY, HYPO_MAX_RETRY_DELAY,
HYPO_TICK_TIMEOUT (durations as 30s, 5m, 1h, 1d, 2w).

Re-running a range (backfill) recomputes those ticks from S_{a-1}; continuing afterwards
gives the same lake as one pass (dates are logical dates, both ends included; a scheduler
must be running):
  airflow backfill create --dag-id hypo_ticks --from-date 2026-01-03 --to-date 2026-01-04 \
      --reprocess-behavior completed --max-active-runs 1          # ticks 2..3
Without a scheduler: python dags/run_local.py --from 2 --to 3 (dag.test per tick).

After a failed tick τ the next run waits (running, no task started) and holds the single
active-run slot.  Fix the cause (land the slice, fix the program), then re-run τ as a
backfill — backfill runs have their own slot — and the waiting run continues by itself:
  airflow backfill create --dag-id hypo_ticks --from-date <date of τ> --to-date <date of τ> \
      --reprocess-behavior failed --max-active-runs 1
(`airflow tasks clear` of τ alone re-queues τ behind the waiting run, which never starts.)
Manual runs (`airflow dags trigger`, dag.test) are not chained by depends_on_past when catchup
is on; the lake itself refuses a tick whose predecessor has not completed.
"""
from __future__ import annotations

import datetime as dt
import logging
import os
import re
from pathlib import Path
from typing import Any, Optional

from airflow.sdk import Asset, DeltaDataIntervalTimetable, Param, dag, get_current_context, task
from airflow.sdk.bases.sensor import PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException

log = logging.getLogger(__name__)

DAG_ID = "hypo_ticks"
PROJECT_ROOT = Path(os.environ.get("HYPO_HOME") or Path(__file__).resolve().parent.parent)
DEFAULT_LAKE = "./lake"
DEFAULT_PROGRAM = "examples/wind_turbines.tdl"
DEFAULT_MASTER = "local[2]"
DEFAULT_EPOCH = "2026-01-01T00:00:00+00:00"
READY = "_READY"
LIST_LIMIT = 50  # answers / quarantine rows listed per tick in the log

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


# ====================================================================== configuration
MAX_DURATION_S = 100 * 365 * 86400  # a setting longer than a century is a typo


def parse_duration(text: str, what: str = "duration") -> dt.timedelta:
    """'30s', '5m', '1h', '1d', '2w' (or a plain number of seconds) → timedelta > 0, at most
    a century (a ValueError naming `what`, the value and what is allowed otherwise)."""
    m = re.fullmatch(r"\s*(\d{1,30})\s*([smhdw]?)\s*", str(text))
    if not m or int(m.group(1)) == 0:
        raise ValueError(f"{what}: {text!r} is not a positive duration like 30s, 5m, 1h, 1d, 2w")
    secs = int(m.group(1)) * _UNITS[m.group(2) or "s"]
    if secs > MAX_DURATION_S:
        raise ValueError(f"{what}: {text!r} is longer than allowed (a positive duration of at "
                         f"most {MAX_DURATION_S // 86400}d)")
    return dt.timedelta(seconds=secs)


def parse_count(text: str, what: str) -> int:
    """A whole number ≥ 0 of an environment variable, or a ValueError naming it."""
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or len(t) > 18:
        raise ValueError(f"{what}: {text!r} is not a whole number ≥ 0")
    return int(t)


def format_duration(d: dt.timedelta) -> str:
    """The inverse of parse_duration: 1d, 15m, 90s."""
    secs = int(d.total_seconds())
    for u in ("w", "d", "h", "m"):
        if secs % _UNITS[u] == 0:
            return f"{secs // _UNITS[u]}{u}"
    return f"{secs}s"


def parse_epoch(text: str) -> dt.datetime:
    """ISO 8601; a naive value is UTC."""
    try:
        d = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"HYPO_EPOCH: {text!r} is not an ISO 8601 date-time") from None
    return d if d.tzinfo else d.replace(tzinfo=dt.timezone.utc)


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


EPOCH = parse_epoch(_env("HYPO_EPOCH", DEFAULT_EPOCH))
UNIT = parse_duration(_env("HYPO_TICK_UNIT", "1d"), "HYPO_TICK_UNIT")
SLICE_TIMEOUT = parse_duration(_env("HYPO_SLICE_TIMEOUT", "6h"), "HYPO_SLICE_TIMEOUT")
SLICE_POKE = parse_duration(_env("HYPO_SLICE_POKE", "60s"), "HYPO_SLICE_POKE")
RETRIES = parse_count(_env("HYPO_RETRIES", "2"), "HYPO_RETRIES")
RETRY_DELAY = parse_duration(_env("HYPO_RETRY_DELAY", "1m"), "HYPO_RETRY_DELAY")
MAX_RETRY_DELAY = parse_duration(_env("HYPO_MAX_RETRY_DELAY", "30m"), "HYPO_MAX_RETRY_DELAY")
TICK_TIMEOUT = parse_duration(_env("HYPO_TICK_TIMEOUT", "2h"), "HYPO_TICK_TIMEOUT")
# after each tick, `hypo lake vacuum --keep-state N --keep-answers M --retain-hours H`
# (unset or 0: never)
KEEP_STATE = parse_count(_env("HYPO_KEEP_STATE", "0"), "HYPO_KEEP_STATE")
KEEP_ANSWERS = parse_count(_env("HYPO_KEEP_ANSWERS", "0"), "HYPO_KEEP_ANSWERS")
RETAIN_HOURS = parse_count(_env("HYPO_RETAIN_HOURS", "168"), "HYPO_RETAIN_HOURS")
# Below a minute between pokes the sensor keeps its worker slot (mode "poke"): in
# "reschedule" mode a short interval races the scheduler (LocalExecutor: "finished with
# state success, but the task instance's state attribute is queued", then UP_FOR_RETRY)
# and a 30 s timeout took 107 s.  From a minute on, rescheduling frees the slot in between.
RESCHEDULE_FROM = dt.timedelta(seconds=60)
SENSOR_MODE = "reschedule" if SLICE_POKE >= RESCHEDULE_FROM else "poke"


def resolve(path: str) -> str:
    """A param path: absolute, or relative to the project root (never the worker's cwd)."""
    p = Path(os.path.expanduser(path))
    return str(p if p.is_absolute() else (PROJECT_ROOT / p).resolve())


def _plain_utc(d: dt.datetime) -> dt.datetime:
    """A stdlib UTC datetime (Airflow hands out pendulum ones, whose arithmetic differs)."""
    u = d.astimezone(dt.timezone.utc)
    return dt.datetime(u.year, u.month, u.day, u.hour, u.minute, u.second, u.microsecond,
                       tzinfo=dt.timezone.utc)


def tick_of(logical_date: Optional[dt.datetime], epoch: dt.datetime = EPOCH,
            unit: dt.timedelta = UNIT) -> int:
    """τ of a run: (logical_date − epoch) / unit, which must be a natural number."""
    if logical_date is None:
        raise AirflowFailException(
            f"this run has no logical date, so it has no tick; trigger it with a logical date "
            f"on the tick grid ({epoch.isoformat()} + τ × {format_duration(unit)})")
    if logical_date.tzinfo is None:
        raise AirflowFailException(f"logical date {logical_date} has no time zone")
    logical_date = _plain_utc(logical_date)
    delta = logical_date - _plain_utc(epoch)
    q, r = divmod(delta, unit)
    if delta < dt.timedelta(0) or r:
        near = epoch + max(q, 0) * unit
        raise AirflowFailException(
            f"logical date {logical_date.isoformat()} is not on the tick grid (epoch "
            f"{epoch.isoformat()}, one tick per {format_duration(unit)}); use a logical date "
            f"epoch + τ × unit, e.g. {near.isoformat()} for tick {max(q, 0)}")
    return int(q)


def date_of(tick: int, epoch: dt.datetime = EPOCH, unit: dt.timedelta = UNIT) -> dt.datetime:
    """The logical date of tick τ (inverse of tick_of)."""
    if tick < 0:
        raise ValueError(f"tick {tick} is negative")
    return epoch + tick * unit


def answers_asset(lake: Optional[str] = None) -> Asset:
    """The asset updated once per published tick (downstream DAGs: schedule=[ANSWERS] or
    Asset.ref(name="hypo_answers")).  Its URI names the default lake; the event's extra names
    the lake and tick actually published."""
    root = resolve(lake or _env("HYPO_LAKE", DEFAULT_LAKE))
    return Asset(name="hypo_answers", uri=f"hypo://localhost{root}/answers")


ANSWERS = answers_asset()


# ====================================================================== landing
def landing_dir(lake: str, tick: int) -> str:
    return os.path.join(lake, "landing", f"tick={tick}")


def slice_status(lake: str, tick: int) -> dict:
    """What the producer has put in <lake>/landing/tick=<τ>/: ready (the _READY marker is
    there), the data files (sorted), and entries we would not read (`unexpected`; names
    starting with _ or . such as _SUCCESS or .crc files are ignored)."""
    from jobs.ingest.files import is_data_file  # (not at import: the scheduler parses this file)

    d = landing_dir(lake, tick)
    out: dict[str, Any] = {"dir": d, "ready": False, "files": [], "unexpected": []}
    if not os.path.isdir(d):
        return out
    out["ready"] = os.path.isfile(os.path.join(d, READY))
    for name in sorted(os.listdir(d)):
        full = os.path.join(d, name)
        if name.startswith(("_", ".")):
            continue
        if os.path.isfile(full) and is_data_file(name):
            out["files"].append(full)
        else:
            out["unexpected"].append(name)
    return out


# ====================================================================== errors
def _fail(e: BaseException) -> AirflowFailException:
    """A readable, non-retryable failure for an error the user must fix (program error with
    FILE:LINE:COL, program mismatch, missing lake, tick order, unusable input)."""
    from reasoning.language.errors import ProgramError

    msg = e.format() if isinstance(e, ProgramError) else f"{type(e).__name__}: {e}"
    log.error("%s", msg)
    return AirflowFailException(msg)


def _call(fn, *args, **kwargs):
    """Run a jobs.lake function; user errors fail the task without retries, anything else
    (Spark died, concurrent commit, I/O) is raised for Airflow's retries with back-off."""
    from jobs.errors import ConcurrentTickError
    from reasoning.language.errors import HypoError

    try:
        return fn(*args, **kwargs)
    except ConcurrentTickError:
        raise
    except HypoError as e:
        raise _fail(e) from None


# ====================================================================== summaries
def _atom(o: dict) -> str:
    from reasoning.semantics.explain import format_atom_answer

    return format_atom_answer(o)


def answer_line(o: dict) -> str:
    """One answer as `hypo run` prints it in text."""
    atom = _atom(o)
    if o["status"] == "definite":
        return f"definite      {atom}   because {'; '.join(o['evidence']) or 'no premises'}"
    if o["status"] == "hypothetical":
        d = o.get("deadline")
        when = f"decided by tick {d}" if d is not None else "no deadline (unbounded wait)"
        return (f"hypothetical  {atom}   if {'; '.join(o['hypotheses'])}   [{when}; evidence: "
                f"{'; '.join(o['evidence'])}]")
    return f"{o['status']:<14}{atom}   needs {'; '.join(o['hypotheses'])}"


def summarize(tick: int, cur: list[dict], prev: list[dict]) -> dict:
    """What changed at τ, from all answers (pending included) at τ and τ−1: new definite
    answers, new hypothetical answers (with deadlines), refuted answers (hypothetical at τ−1,
    gone at τ without becoming definite) — the same lifecycle `hypo run` reports."""
    from reasoning.semantics.explain import answer_key

    prev_by = {answer_key(o): o for o in prev}
    cur_keys = {answer_key(o) for o in cur}
    new_def, new_hyp = [], []
    for o in cur:
        k = answer_key(o)
        was = prev_by.get(k, {}).get("status")
        if o["status"] == "definite" and was != "definite":
            new_def.append(o)
        elif o["status"] == "hypothetical" and was != "hypothetical":
            new_hyp.append(o)
    refuted = [o for k, o in prev_by.items() if o["status"] == "hypothetical" and k not in cur_keys]
    shown = [o for o in cur if o["status"] != "pending"]
    return {
        "tick": tick,
        "answers": len(shown),
        "definite": sum(1 for o in cur if o["status"] == "definite"),
        "hypothetical": sum(1 for o in cur if o["status"] == "hypothetical"),
        "pending": sum(1 for o in cur if o["status"] == "pending"),
        "new_definite": [answer_line(o) for o in new_def],
        "new_hypothetical": [answer_line(o) for o in new_hyp],
        "refuted": [_atom(o) for o in refuted],
        "lines": [answer_line(o) for o in shown],
    }


def summary_text(s: dict, limit: int = LIST_LIMIT) -> str:
    out = [f"tick {s['tick']}: {s['answers']} answer(s) ({s['definite']} definite, "
           f"{s['hypothetical']} hypothetical; {s['pending']} pending not shown); "
           f"{len(s['new_definite'])} new definite, {len(s['new_hypothetical'])} new "
           f"hypothetical, {len(s['refuted'])} refuted"]
    for title, key, pre in (("new definite", "new_definite", ""),
                            ("new hypothetical", "new_hypothetical", ""),
                            ("refuted", "refuted", "refuted       ")):
        items = s[key]
        for x in items[:limit]:
            out.append(f"  {pre}{x}")
        if len(items) > limit:
            out.append(f"  … and {len(items) - limit} more {title}")
    return "\n".join(out)


def quarantine_rows(lake: str, tick: int, batch: Optional[str] = None,
                    limit: int = LIST_LIMIT) -> list[dict]:
    """Rows quarantined for this tick: the tick stage of partition τ and the ingest stage of
    this slice's batch (rows of another tick land in their own partition).  Read from the
    quarantine Delta table (schemas/lake.json); informational only."""
    # jobs.table.delta.read_arrow reads file by file: deltalake's to_pyarrow_dataset can abort the
    # interpreter at exit in this build ("terminate called…")
    from jobs.table.delta import read_arrow

    p = os.path.join(lake, "quarantine")
    cols = ["tick", "stage", "reason_code", "reason", "source", "line", "raw", "batch"]
    rows = read_arrow(p, "quarantine", partitions={"tick": tick, "stage": "tick"},
                      columns=cols).to_pylist()
    if batch:
        ing = read_arrow(p, "quarantine", partitions={"stage": "ingest"}, columns=cols)
        rows += [r for r in ing.to_pylist() if r.get("batch") == batch]
    rows.sort(key=lambda r: (str(r.get("source")), r.get("line") or 0))
    return rows[:limit] if limit else rows


def quarantine_text(rows: list[dict], total: int) -> str:
    out = [f"{total} row(s) quarantined (kept in <lake>/quarantine with the reason):"]
    for r in rows:
        raw = (r.get("raw") or "").strip()
        raw = raw if len(raw) <= 80 else raw[:77] + "…"
        out.append(f"  {os.path.basename(str(r.get('source')))}:{r.get('line')}  "
                   f"[{r.get('stage')}/{r.get('reason_code')}] {r.get('reason')}"
                   f"{'   ' + raw if raw else ''}")
    if total > len(rows):
        out.append(f"  … and {total - len(rows)} more (hypo lake status; quarantine table)")
    return "\n".join(out)


def dq_failures(lake: str, tick: int) -> list[str]:
    """Failed Great Expectations of the tick (from <lake>/_hypo/dq/tick=<τ>.json)."""
    import json

    p = os.path.join(lake, "_hypo", "dq", f"tick={tick}.json")
    if not os.path.exists(p):
        return []
    with open(p, encoding="utf-8") as fh:
        doc = json.load(fh)
    return [f"{e['expectation']} {e.get('kwargs', '')}: {e.get('unexpected_count')} of "
            f"{e.get('element_count')} row(s) unexpected"
            for e in doc.get("expectations", []) if not e.get("success", True)]


# ====================================================================== the DAG
def _ctx_tick() -> tuple[int, dict]:
    ctx = get_current_context()
    return tick_of(ctx.get("logical_date")), ctx


@dag(
    dag_id=DAG_ID,
    description="Hypothetical answers per tick: slice → GX + ingest → Spark tick → answers",
    schedule=DeltaDataIntervalTimetable(UNIT),
    start_date=EPOCH,
    catchup=True,
    max_active_runs=1,
    default_args={
        "owner": "hypo",
        "depends_on_past": True,
        # a task also waits for the previous run's next task: a tick that failed anywhere
        # holds the next run at its first task (not half-way through it)
        "wait_for_downstream": True,
        "retries": RETRIES,
        "retry_delay": RETRY_DELAY,
        "retry_exponential_backoff": True,
        "max_retry_delay": MAX_RETRY_DELAY,
    },
    params={
        "lake": Param(_env("HYPO_LAKE", DEFAULT_LAKE), type="string", minLength=1,
                      description="lake directory (relative: to the project root)"),
        "program": Param(_env("HYPO_PROGRAM", DEFAULT_PROGRAM), type="string", minLength=1,
                         description="Temporal Datalog program the lake is initialised with"),
        "spark_master": Param(_env("HYPO_SPARK_MASTER", DEFAULT_MASTER), type="string",
                              minLength=1,
                              description="Spark master: local[N] or spark://host:7077"),
        "confidence": Param(_env("HYPO_CONFIDENCE", "") in ("1", "true", "yes"), type="boolean",
                            description="a new lake gives each answer its confidence (an "
                                        "existing lake keeps what it was created with)"),
    },
    tags=["hypo", "spark", "delta"],
    doc_md=__doc__,
)
def hypo_ticks():
    @task
    def prepare() -> dict:
        """Resolve the params, derive τ, create the lake on its first run."""
        tick, ctx = _ctx_tick()
        p = ctx["params"]
        lake, program = resolve(p["lake"]), resolve(p["program"])
        from jobs import lake as api

        r = _call(api.init, lake, program, None, bool(p.get("confidence", False)))
        log.info("tick %d (logical date %s, epoch %s, one tick per %s); lake %s %s "
                 "(program %s, sha256 %s, query %s); Spark master %s", tick,
                 ctx["logical_date"].isoformat(), EPOCH.isoformat(), format_duration(UNIT), lake,
                 "created" if r["created"] else "exists", program, r["hash"][:12], r["query"],
                 p["spark_master"])
        return {"tick": tick, "lake": lake, "program": program, "master": p["spark_master"]}

    @task.sensor(poke_interval=SLICE_POKE.total_seconds(), timeout=SLICE_TIMEOUT.total_seconds(),
                 mode=SENSOR_MODE, soft_fail=False)
    def wait_for_slice(run: dict) -> PokeReturnValue:
        """Done when <lake>/landing/tick=<τ>/_READY exists (no files = declared empty)."""
        s = slice_status(run["lake"], run["tick"])
        if not s["ready"]:
            log.info("slice %d not ready: no %s marker in %s (%d data file(s) there so far). "
                     "The producer writes the data files, then an empty %s; an empty slice is "
                     "declared by %s alone. Missing data is never taken as 'no facts': this "
                     "sensor fails after %s.", run["tick"], READY, s["dir"], len(s["files"]),
                     READY, READY, format_duration(SLICE_TIMEOUT))
            return PokeReturnValue(is_done=False)
        if s["unexpected"]:
            from jobs.ingest.files import DATA_SUFFIXES

            raise AirflowFailException(
                f"slice {run['tick']}: {s['dir']} holds entries that are not data files "
                f"({', '.join(s['unexpected'][:10])}); expected {', '.join(DATA_SUFFIXES)} "
                f"files (names starting with _ or . are ignored). Move them away or rename them.")
        log.info("slice %d ready: %s", run["tick"],
                 f"{len(s['files'])} file(s): " + ", ".join(os.path.basename(f) for f in s["files"])
                 if s["files"] else "declared empty by the producer (_READY, no data files)")
        return PokeReturnValue(is_done=True, xcom_value={"files": s["files"],
                                                         "empty": not s["files"]})

    @task
    def ingest(run: dict, slice_: dict) -> dict:
        """Producer files → facts; unreadable rows → quarantine (GX checks run in `tick`)."""
        if slice_["empty"]:
            log.info("slice %d is empty (declared by the producer): nothing to ingest", run["tick"])
            return {"tick": run["tick"], "batch": None, "accepted": 0, "rejected": 0}
        import inspect

        from jobs import lake as api

        kw = {"master": run["master"]} if "master" in inspect.signature(api.ingest).parameters \
            else {}
        r = _call(api.ingest, run["lake"], run["tick"], slice_["files"], **kw)
        if r.get("skipped"):
            log.info("slice %d: batch %s was already ingested (re-run): nothing to do",
                     run["tick"], r["batch"])
        else:
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(r.get("reasons", {}).items()))
            log.info("slice %d: batch %s, %d fact row(s) accepted, %d row(s) quarantined%s",
                     run["tick"], r["batch"], r["accepted"], r["rejected"],
                     f" ({reasons})" if reasons else "")
            for f in r.get("unreadable_files") or []:
                log.warning("unreadable file %s: copied to %s/_hypo/rejected/", f, run["lake"])
            if r.get("warning"):
                log.warning("%s", r["warning"])
        return {"tick": run["tick"], "batch": r["batch"], "accepted": r.get("accepted", 0),
                "rejected": r.get("rejected", 0)}

    @task(execution_timeout=TICK_TIMEOUT)
    def tick(run: dict, ing: dict) -> dict:
        """S_{τ-1} + D|τ → S_τ and the answers (Spark); bad rows are quarantined, not fatal."""
        from jobs import lake as api
        from jobs.table.store import Lake, rerun_advice, rerunnable

        s = _call(api.run_tick, run["lake"], run["tick"], run["master"], program=run["program"])
        c = s["counts"]
        log.info("tick %d: %d fact(s), %d accepted, %d rejected, %d duplicate(s); %d answer(s) "
                 "(%d definite, %d hypothetical, %d pending); state %d rows [state v%s, answers "
                 "v%s]", run["tick"], c["facts"], c["accepted"], c["rejected"], c["duplicates"],
                 c["answers"], c["definite"], c["hypothetical"], c["pending"], c["state_rows"],
                 s["state_version"], s["answers_version"])
        n_quar = int(c.get("rejected", 0)) + int(ing.get("rejected", 0))
        if n_quar:
            try:
                rows = quarantine_rows(run["lake"], run["tick"], ing.get("batch"), limit=0)
                log.warning("%s", quarantine_text(rows[:LIST_LIMIT], len(rows)))
            except Exception as e:  # noqa: BLE001 - the listing is informational only
                log.warning("%d row(s) quarantined (listing them failed: %s)", n_quar, e)
        for f in dq_failures(run["lake"], run["tick"]):
            log.warning("data quality: %s", f)
        late: dict = {}
        try:  # facts of a completed tick ingested after it read its slice: its answers lack them
            found = api.late_ticks(run["lake"])
            first = api.late_rerun_from(run["lake"], found) if found else None
            cut = Lake(run["lake"]).state_from() if found else 0
            late = found
        except Exception as e:  # noqa: BLE001 - informational only
            log.warning("could not check for late facts: %s", e)
        if late:
            what = ", ".join(f"tick {t}: {n} row(s)" for t, n in sorted(late.items()))
            if rerunnable(first, cut):
                log.warning("late facts: %s ingested after their tick ran; re-run from tick %d "
                            "(airflow backfill, or hypo lake run --from %d)", what, first, first)
            else:
                log.warning("late facts: %s ingested after their tick ran; S_%d was removed "
                            "by hypo lake vacuum (HYPO_KEEP_STATE): %s", what, first - 1,
                            rerun_advice(first, cut, run["tick"]))
        if KEEP_STATE or KEEP_ANSWERS:
            # bounded storage; here, so the next run's tick (depends_on_past) waits for it.
            # publish reads the answers of τ-1 too: at least 2 ticks of answers are kept
            try:
                from jobs.maintenance.retention import vacuum

                v = vacuum(run["lake"], KEEP_STATE or None, RETAIN_HOURS,
                           keep_answers=max(KEEP_ANSWERS, 2) if KEEP_ANSWERS else None)
                log.info("vacuum: S_τ kept from tick %d, answers from tick %d (%d and %d "
                         "tick(s) removed now); %d file(s) unused for %d h deleted (%d bytes)",
                         v["state"]["from"], v["answers"]["from"],
                         v["state"]["removed_partitions"], v["answers"]["removed_partitions"],
                         sum(v["deleted_files"].values()), RETAIN_HOURS, v["deleted_bytes"])
            except Exception as e:  # noqa: BLE001 - storage only: the next tick retries it
                log.warning("vacuum after tick %d failed: %s", run["tick"], e)
        return {"tick": run["tick"], "state_version": s["state_version"],
                "answers_version": s["answers_version"], "state_digest": s["state_digest"],
                "answers_digest": s["answers_digest"], "counts": c, "quarantined": n_quar}

    @task(outlets=[ANSWERS])
    def publish(run: dict, t: dict) -> dict:
        """Summarise what changed at τ and emit the hypo_answers asset event."""
        from jobs import lake as api

        tau = run["tick"]
        cur = _call(api.read_answers, run["lake"], tau, "all")
        prev = _call(api.read_answers, run["lake"], tau - 1, "all") if tau > 0 else []
        s = summarize(tau, cur, prev)
        log.info("%s", summary_text(s))
        report = None
        try:  # informational: a report that cannot be written does not hold later ticks
            from jobs.audit.report import publish_report, report_window

            r = publish_report(run["lake"], tau)
            report = r["path"]
            if report is None:
                log.info("no report: HYPO_REPORT_TICKS=0")
            else:
                log.info("report of ticks %d..%d (the last %d at most): %s (%d answers: %d "
                         "confirmed, %d refuted, %d open; pending, never announced: %d "
                         "refuted while pending, %d still pending; %d bytes)", r["start"],
                         r["end"], report_window(), report, r["answers"], r["confirmed"],
                         r["refuted"], r["open"], r["pending_refuted"], r["pending_open"],
                         r["bytes"])
        except Exception as e:  # noqa: BLE001
            log.warning("the report of tick %d could not be written: %s", tau, e)
        extra = {"lake": run["lake"], "tick": tau, "answers_version": t["answers_version"],
                 "answers_digest": t["answers_digest"], "answers": s["answers"],
                 "new_definite": len(s["new_definite"]),
                 "new_hypothetical": len(s["new_hypothetical"]), "refuted": len(s["refuted"]),
                 "quarantined": t["quarantined"], "report": report}
        get_current_context()["outlet_events"][ANSWERS].extra = extra
        return {**extra, **{k: s[k][:LIST_LIMIT] for k in
                            ("new_definite", "new_hypothetical", "refuted")}}

    run = prepare()
    sl = wait_for_slice(run)
    ing = ingest(run, sl)
    t = tick(run, ing)
    publish(run, t)


dag_object = hypo_ticks()
