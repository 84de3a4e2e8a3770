"""The tick job: S_{τ-1} (state version of tick τ-1) × D|τ (facts partition τ) → S_τ and the
main query's answers, on Spark, without collecting facts or state to the driver.

Plan of one tick (jobs/partition.py explains the key):

 1. D|τ is read from the facts files of partition τ and validated distributed
    (mapInPandas: Great Expectations per Spark partition + reasoning.stream.validate).
 2. The global rows of S_{τ-1} (answers whose key variable is unbound) are few: they are
    kept in a separate file of each state version, read on the driver and shipped with the
    group function.  Everything else is keyed: state rows by their `key` column, facts by
    args[pos(pred)].
 3. groupBy(group) over key-bound state rows ∪ valid facts ∪ one extra empty group (so the
    global answers evolve even with no data); the group is the key itself (buckets=0) or a
    hash bucket of it (buckets=B: one engine per bucket instead of per key value, the same
    argument applies to any union of key values).  Each group runs the pure update
    (load_rows → Engine.step → to_rows, i.e. reasoning.rows.advance) on its rows plus the
    global rows, and emits its key-bound S_τ rows, its rendered key-bound answers, its
    version of the global rows (state after forgetting, answers before) and counts.
 4. Global rows from all groups are merged by a Spark aggregation: grouped by (template,
    binding, evidence, nogoods not on the key variable), their nogoods on the key variable
    unioned (each group split off the key values it decided), the deadline max-merged.
    The merged rows (few) are rendered on the driver.
 5. Spark writes the S_τ, answers and quarantine Parquet files; delta-rs commits them
    (state: overwrite; answers and quarantine: replace partition τ), each conditional on
    the version read at the start of the run.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from reasoning.compiler import CompiledProgram, compile_program
from reasoning.engine import Answer, Engine
from reasoning.explain import Explainer, answer_key, format_atom_answer
from reasoning.patterns import Fact
from reasoning.rows import STATE_COLUMNS, answer_row, load_rows, to_rows
from schemas.lake import arrow_schema, spark_ddl

from . import delta
from .dq import empty_summary, merge_summaries, validate_frame
from .errors import ConcurrentTickError, InjectedFault, LakeError, ProgramMismatch, TickOrderError
from .partition import PartitionKey, find_key
from .store import Lake

GLOBAL = "\u0000global"
HOOKS: list[Callable[[str, int], None]] = []  # test hooks: called with (phase, tick)
PHASE_POINTS = ("after_validate", "after_compute", "after_state_commit", "after_answers_commit",
                "after_quarantine_commit", "before_done")

GIN = ("gkey string, key string, kind string, template long, binding string, evidence_idx array<long>, "
       "nogoods string, pred string, args array<string>, time long, source string, line long, "
       "batch string")
_GOUT_EXTRA = [
    ("rtype", "string"), ("ng_rest", "string"), ("ng_key", "array<string>"),
    ("deadline", "long"), ("excluded", "string"), ("excluded_combinations", "string"),
    ("atom", "string"), ("answer_key", "string"), ("sort_key", "string"), ("json", "string"),
    ("reason_code", "string"), ("reason", "string"), ("source", "string"), ("line", "long"),
    ("batch", "string"), ("n_new", "long"), ("n_accepted", "long"), ("n_dup", "long"),
    ("n_dup_engine", "long"), ("n_state", "long"), ("n_answers", "long"), ("n_definite", "long"),
    ("n_hypothetical", "long"), ("n_pending", "long"), ("sd_hi", "long"), ("sd_lo", "long"),
    ("ad_hi", "long"), ("ad_lo", "long"), ("n_nulls", "long"),
]
GOUT_COLS = list(STATE_COLUMNS.items()) + _GOUT_EXTRA
GOUT = ", ".join(f"`{n}` {t}" for n, t in GOUT_COLS)
VOUT = ("rtype string, tick long, pred string, args array<string>, time long, source string, "
        "line long, batch string, reason_code string, reason string, raw string, dq string")
ANSWER_FILE_COLS = [n for n in arrow_schema("answers", with_partitions=False).names]
QUAR_FILE_COLS = [n for n in arrow_schema("quarantine", with_partitions=False).names]
STATE_COLS = list(STATE_COLUMNS)


# ====================================================================== worker side
_PROGRAMS: dict[str, tuple] = {}


def _program(P: dict) -> tuple[CompiledProgram, PartitionKey]:
    """Compiled program and key, once per Python worker process and program."""
    k = P["program_id"]
    got = _PROGRAMS.get(k)
    if got is None:
        cp = compile_program(P["text"], P["file"], P["query"])
        got = (cp, find_key(cp))
        _PROGRAMS[k] = got
    return got


def _split16(acc: int) -> tuple[int, int]:
    return acc >> 32, acc & 0xFFFFFFFF


def format_atom(obj: dict) -> str:
    """The answer as an atom for people (reasoning.explain.format_atom_answer)."""
    return format_atom_answer(obj)


def answer_columns(obj: dict, key: Optional[str]) -> dict:
    """The answers-table columns of one rendered answer object."""
    return {
        "query": obj["query"], "status": obj["status"],
        "substitution": json.dumps(obj["substitution"], sort_keys=True, ensure_ascii=False),
        "excluded": json.dumps(obj["excluded"], sort_keys=True, ensure_ascii=False),
        "excluded_combinations": (json.dumps(obj["excluded_combinations"], sort_keys=True,
                                             ensure_ascii=False)
                                  if "excluded_combinations" in obj else None),
        "evidence": list(obj["evidence"]), "hypotheses": list(obj["hypotheses"]),
        "deadline": obj["deadline"], "atom": format_atom(obj),
        "answer_key": json.dumps(answer_key(obj), ensure_ascii=False),
        "sort_key": json.dumps(obj, sort_keys=True),
        "json": json.dumps(obj, ensure_ascii=False), "key": key,
    }


def _nogood_lists(tp, ng) -> list:
    return sorted([[tp.names[v], c] for v, c in n] for n in ng)


def _split_nogoods(pk: PartitionKey, tid: int, ngs: list) -> tuple[str, list[str]]:
    kv = pk.key_var_name.get(tid)
    rest = [n for n in ngs if all(name != kv for name, _ in n)]
    keyed = [json.dumps(n) for n in ngs if any(name == kv for name, _ in n)]
    return json.dumps(rest), keyed


def _row_digest(row: dict) -> str:
    return json.dumps({c: row.get(c) for c in STATE_COLS}, sort_keys=True, ensure_ascii=False)


def _list(a) -> list:
    """A list column value (numpy array from Arrow) as a list of Python values."""
    return a.tolist() if hasattr(a, "tolist") else list(a)


def _parse_globals(pk: PartitionKey, rows: list[dict]) -> list[tuple]:
    """Global rows with their nogoods split: (row, nogoods not on the key variable, key value
    -> nogoods on the key variable with that value)."""
    out = []
    for r in rows:
        kv = pk.key_var_name.get(r["template"])
        rest, keyed = [], {}
        for n in json.loads(r["nogoods"]):
            vals = [v for name, v in n if name == kv]
            if vals:
                keyed.setdefault(str(vals[0]), []).append(n)
            else:
                rest.append(n)
        out.append((r, rest, keyed))
    return out


def _restricted(globals_: list[tuple], keys: Optional[list]) -> list[dict]:
    """The global rows as an engine for `keys` needs them: nogoods on other key values are
    irrelevant there (no fact or answer of that engine can bind the key variable to them);
    keys None: all nogoods (the carrier group)."""
    out = []
    for r, rest, keyed in globals_:
        if keys is None:
            ngs = rest + [n for ns in keyed.values() for n in ns]
        else:
            ngs = rest + [n for k in keys for n in keyed.get(k, ())]
        out.append({"kind": "answer", "template": r["template"], "binding": r["binding"],
                    "evidence_idx": r["evidence_idx"], "nogoods": json.dumps(ngs)})
    return out


def group_update(P: dict, pdf):
    """One group (a key value, or a hash bucket of key values): the pure update
    S_{τ-1} × D|τ → S_τ (reasoning.rows.advance: load_rows, Engine.step, to_rows) per chunk
    of at most P["keys_per_engine"] key values, each with the global rows.  Emits the
    key-bound S_τ rows, the rendered key-bound answers, this group's merged version of the
    global rows, quarantine rows for duplicates, and counts."""
    import pandas as pd

    cp, pk = _program(P)
    tau = P["tau"]
    gkey = pdf["gkey"].iat[0]
    carrier = gkey == GLOBAL
    state_by: dict[str, list] = {}
    new_by: dict[str, list] = {}
    for kind, key, tpl, binding, ev, ng, pred, args, t, src, line, batch in zip(
            pdf["kind"], pdf["key"], pdf["template"], pdf["binding"], pdf["evidence_idx"],
            pdf["nogoods"], pdf["pred"], pdf["args"], pdf["time"], pdf["source"], pdf["line"],
            pdf["batch"]):
        if kind == "answer":
            state_by.setdefault(key, []).append(
                {"kind": "answer", "template": int(tpl), "binding": binding,
                 "evidence_idx": _list(ev), "nogoods": ng})
        elif kind == "fact":
            state_by.setdefault(key, []).append(
                {"kind": "fact", "pred": pred, "args": _list(args), "time": int(t)})
        elif kind == "new":
            new_by.setdefault(key, []).append(
                (src or "", 0 if line is None or pd.isna(line) else int(line), batch or "",
                 Fact(pred, tuple(_list(args)), int(t))))
    globals_ = _parse_globals(pk, P["globals"])
    keys = sorted(set(state_by) | set(new_by))
    m = max(1, int(P.get("keys_per_engine") or 1))
    chunks: list = [keys[i:i + m] for i in range(0, len(keys), m)]
    if carrier:
        chunks = [None]  # the carrier: no key, every inherited nogood
    elif not chunks:
        chunks = [[]]  # single partition, no data: the answers still evolve

    def key_of(_eng, x):
        if isinstance(x, Fact):
            return pk.fact_key(x)
        return pk.answer_key(x.tid, x.b)

    out: list[dict] = []
    merged: dict[tuple, dict] = {}
    cnt = Counter()
    sd = ad = 0

    def merge(rtype: str, tid: int, binding: str, ev: list, ngs: list, deadline=None,
              null: int = 0) -> None:
        rest, keyed = _split_nogoods(pk, tid, ngs)
        k = (rtype, tid, binding, tuple(ev), rest)
        cur = merged.get(k)
        if cur is None:
            cur = merged[k] = {"rtype": rtype, "template": tid, "binding": binding,
                               "evidence_idx": list(ev), "ng_rest": rest, "ng_key": set(),
                               "deadline": None, "n_nulls": 0}
        cur["ng_key"].update(keyed)
        cur["n_nulls"] += null
        if deadline is not None and (cur["deadline"] is None or deadline > cur["deadline"]):
            cur["deadline"] = deadline

    for chunk in chunks:
        state_rows: list[dict] = []
        new: list[tuple] = []
        for k in chunk or ():
            state_rows.extend(state_by.get(k, ()))
            new.extend(new_by.get(k, ()))
        # duplicates: in the slice, or still in the window W (arrived at an earlier tick)
        window = set()
        for r in state_rows:
            if r["kind"] == "fact":
                args = tuple(r["args"])
                if r["time"] + cp.delays.ground(r["pred"], args) > tau:
                    window.add((r["pred"], args, r["time"]))
        new.sort(key=lambda x: (x[0], x[1], x[2], x[3].pred, x[3].args, x[3].time))
        seen: set = set()
        facts: list[Fact] = []
        for src, line, batch, f in new:
            k = (f.pred, f.args, f.time)
            if k in seen or k in window:
                why = (f"duplicate of a fact already in slice {tau}" if k in seen
                       else "duplicate: this fact already arrived at an earlier tick")
                out.append({"rtype": "Q", "reason_code": "duplicate", "reason": why,
                            "source": src, "line": line, "batch": batch, "pred": f.pred,
                            "args": list(f.args), "time": f.time, "hypotheses": [str(f)]})
                continue
            seen.add(k)
            facts.append(f)
        cnt["n_new"] += len(new)
        cnt["n_dup"] += len(new) - len(facts)
        eng = load_rows(cp, state_rows + _restricted(globals_, chunk), tau - 1)
        rep = eng.step(facts, tau)
        cnt["n_accepted"] += rep.accepted
        cnt["n_dup_engine"] += rep.duplicates
        for r in to_rows(eng, key_of):
            if r["kind"] == "meta":
                continue
            if r["key"] is None:
                merge("G", r["template"], r["binding"], r["evidence_idx"],
                      json.loads(r["nogoods"]))
                continue
            if carrier:
                raise AssertionError(f"the global group produced a key-bound row {r}")
            r["rtype"] = "S"
            out.append(r)
            cnt["n_state"] += 1
            sd = delta.digest_add(sd, _row_digest(r))
        ex = Explainer(eng)
        seen_ans: set = set()
        for a in rep.snapshot:
            tp = eng.templates[a.tid]
            if tp.qid != eng.main_qid:
                continue
            key = pk.answer_key(a.tid, a.b)
            if key is None:
                d = None if eng.is_definite(a) else ex.deadline(a)
                merge("H", a.tid, json.dumps({tp.names[i]: v for i, v in enumerate(a.b)
                                              if v is not None}, sort_keys=True),
                      sorted(a.ev), _nogood_lists(tp, a.ng), d,
                      int(d is None and not eng.is_definite(a)))
                continue
            obj = ex.render(a, tau)
            cols = answer_columns(obj, key)
            if cols["sort_key"] in seen_ans:
                continue
            seen_ans.add(cols["sort_key"])
            cols["rtype"] = "A"
            out.append(cols)
            cnt["n_answers"] += 1
            cnt[f"n_{obj['status']}"] += 1
            ad = delta.digest_add(ad, cols["json"])
    for v in merged.values():
        v["ng_key"] = sorted(v["ng_key"])
        out.append(v)
    sh, sl = _split16(sd)
    ah, al = _split16(ad)
    out.append({"rtype": "C", **{k: cnt[k] for k in (
        "n_new", "n_accepted", "n_dup", "n_dup_engine", "n_state", "n_answers", "n_definite",
        "n_hypothetical", "n_pending")}, "sd_hi": sh, "sd_lo": sl, "ad_hi": ah, "ad_lo": al})
    cols = [n for n, _ in GOUT_COLS]
    return pd.DataFrame.from_records([{c: r.get(c) for c in cols} for r in out], columns=cols)


def _fact_text(pred, args, t) -> str:
    try:
        return str(Fact(str(pred), tuple(str(a) for a in args), int(t)))
    except (TypeError, ValueError):
        return json.dumps({"pred": pred, "args": None if args is None else [str(a) for a in args],
                           "time": None if t is None else str(t)})


def validate_chunks(P: dict, it):
    """mapInPandas over D|τ: one GX validation per Spark partition."""
    import pandas as pd

    cp, _ = _program(P)
    chunks = [c for c in it if len(c)]
    if not chunks:
        return
    pdf = pd.concat(chunks, ignore_index=True)
    checked, summary = validate_frame(pdf, cp, P["program_id"])
    out = checked[["tick", "pred", "args", "time", "source", "line", "batch", "reason_code",
                   "reason"]].copy()
    out.insert(0, "rtype", "row")
    out["raw"] = [None if code is None else _fact_text(p, a, t)
                  for code, p, a, t in zip(out["reason_code"], out["pred"], out["args"], out["time"])]
    out["dq"] = None
    n_bad = int(out["reason_code"].notna().sum())
    yield out
    dq = {c: [None] for c in out.columns}
    dq["rtype"] = ["dq"]
    dq["dq"] = [json.dumps({"rows": len(out), "rejected": n_bad, "expectations": summary})]
    yield pd.DataFrame(dq, columns=out.columns, dtype=object)


# ====================================================================== driver side
class Timer:
    """Wall-clock seconds per phase of a tick (reported in the summary: where the time goes)."""

    def __init__(self):
        import time

        self._now = time.perf_counter
        self.t = self._now()
        self.phases: dict[str, float] = {}

    def lap(self, name: str) -> None:
        t = self._now()
        self.phases[name] = round(self.phases.get(name, 0.0) + t - self.t, 4)
        self.t = t


@dataclass
class TickContext:
    lake: Lake
    tau: int
    run: str
    cp: CompiledProgram
    pk: PartitionKey
    buckets: int
    keys_per_engine: int = 32
    versions: dict = field(default_factory=dict)  # table -> version read at start
    tables: dict = field(default_factory=dict)  # table -> DeltaTable at that version


def fault(phase: str, tau: int) -> None:
    """Fault injection: HYPO_LAKE_FAULT=<phase>[@<tick>] raises InjectedFault there
    (HYPO_LAKE_FAULT_MODE=exit: the process dies with exit code 75 instead)."""
    for h in list(HOOKS):
        h(phase, tau)
    spec = os.environ.get("HYPO_LAKE_FAULT")
    if not spec:
        return
    name, _, at = spec.partition("@")
    if name != phase or (at and int(at) != tau):
        return
    if os.environ.get("HYPO_LAKE_FAULT_MODE") == "exit":
        os._exit(75)
    raise InjectedFault(f"injected fault at {phase} of tick {tau}")


def preflight(lake: Lake, tau: int, done: Optional[dict] = None) -> None:
    """Refuse a tick whose predecessor has not completed (before any Spark work)."""
    if tau < 0:
        raise TickOrderError(f"tick {tau} is negative")
    done = lake.done() if done is None else done
    if tau > 0 and tau - 1 not in done:
        last = lake.last_tick(done)
        raise TickOrderError(
            f"tick {tau} cannot run before tick {tau - 1} has completed (last completed tick: "
            f"{last}); run `hypo lake run --from {last + 1} --to {tau}`")


def _prev_state(ctx: TickContext, done: dict) -> tuple[int, list[str], list[dict], int]:
    """(state version of S_{τ-1} or -1, Spark files of its key-bound rows, its global rows,
    rows)."""
    tau = ctx.tau
    if tau == 0:
        return -1, [], [], 0
    preflight(ctx.lake, tau, done)
    v = done[tau - 1]["state_version"]
    path = ctx.lake.path("state")
    dt = delta.open_table(path, v)
    hist_tick = _commit_tick(path, v)
    if hist_tick is not None and hist_tick != tau - 1:
        raise LakeError(f"state version {v} is tick {hist_tick}, not {tau - 1}: the ticks log "
                        f"and the state table disagree")
    adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    spark_files, globals_, total = [], [], 0
    for a in adds:
        full = os.path.join(path, a["path"])
        n = a.get("num_records")
        nulls = a.get("null_count.key")
        total += n or 0
        if n is not None and nulls is not None and nulls == n:
            t = pq.read_table(full).to_pylist()
            for r in t:
                if r["kind"] == "meta":
                    if r["query"] != ctx.cp.text_hash:
                        raise ProgramMismatch(
                            f"state of tick {tau - 1} was written by another program (sha256 "
                            f"{str(r['query'])[:12]}); this lake's program is "
                            f"{ctx.cp.text_hash[:12]}")
                elif r["kind"] == "answer":
                    globals_.append({"kind": "answer", "template": int(r["template"]),
                                     "binding": r["binding"],
                                     "evidence_idx": [int(i) for i in r["evidence_idx"]],
                                     "nogoods": r["nogoods"]})
        else:
            spark_files.append(full)
    return v, spark_files, globals_, total


def _commit_tick(path: str, version: int) -> Optional[int]:
    f = os.path.join(path, "_delta_log", f"{version:020d}.json")
    if not os.path.exists(f):
        return None
    with open(f, encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            if "commitInfo" in obj:
                t = obj["commitInfo"].get("tick")
                return None if t is None else int(t)
    return None


_FACT_TYPES = {"pred": pa.string(), "args": pa.list_(pa.string()), "time": pa.int64(),
               "source": pa.string(), "line": pa.int64(), "batch": pa.string()}


def _facts_files(ctx: TickContext) -> tuple[list[str], list[dict]]:
    """Files of partition τ of the facts table, and quarantine rows for files whose Parquet
    schema cannot be read as facts (checked from the footers only)."""
    dt = ctx.tables["facts"]
    path = ctx.lake.path("facts")
    good, bad = [], []
    for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist():
        if a.get("partition.tick") != ctx.tau:
            continue
        full = os.path.join(path, a["path"])
        why = None
        try:
            sch = pq.read_schema(full)
            for name in ("pred", "args", "time"):
                if name not in sch.names:
                    why = f"facts file has no `{name}` column"
                    break
            if why is None:
                for name, typ in _FACT_TYPES.items():
                    if name in sch.names:
                        got = sch.field(name).type
                        if (got != typ and not (pa.types.is_list(got) and pa.types.is_list(typ)
                                                and got.value_type == typ.value_type)):
                            why = f"facts file column `{name}` is {got}, expected {typ}"
                            break
        except Exception as e:  # noqa: BLE001 - a damaged file of a producer
            why = f"facts file is not readable Parquet ({type(e).__name__}: {str(e)[:200]})"
        if why:
            bad.append({"reason_code": "wrong_schema", "reason": why, "source": full, "line": 0,
                        "raw": "", "raw_bytes": os.path.getsize(full) if os.path.exists(full)
                        else None, "batch": ctx.run})
        else:
            good.append(full)
    return good, bad


def _key_expr(F, pk: PartitionKey):
    if pk.single:
        return F.lit("*")
    cases = " ".join(f"WHEN '{p}' THEN {i + 1}" for p, i in sorted(pk.positions.items()))
    return F.expr(f"element_at(args, CASE pred {cases} END)")


_LABELS: dict[tuple, list] = {}


def bucket_labels(spark, buckets: int, partitions: int) -> list[str]:
    """A group label per bucket b such that Spark's hash partitioning (the shuffle of
    groupBy) sends it to partition b mod partitions: the buckets spread evenly over the
    tasks (plain labels "0".."B-1" can put half of them into one task)."""
    k = (buckets, partitions)
    got = _LABELS.get(k)
    if got is None:
        from pyspark.sql import functions as F

        rows = (spark.range(buckets * 256)
                .select((F.col("id") / 256).cast("long").alias("b"),
                        F.concat((F.col("id") / 256).cast("long").cast("string"), F.lit(":"),
                                 (F.col("id") % 256).cast("string")).alias("label"))
                .where(F.expr(f"pmod(hash(label), {partitions}) = pmod(b, {partitions})"))
                .groupBy("b").agg(F.min("label").alias("label")).collect())
        best = {r["b"]: r["label"] for r in rows}
        got = [best.get(b, str(b)) for b in range(buckets)]
        _LABELS[k] = got
    return got


def _group_expr(F, col, buckets: int, labels: Optional[list] = None):
    if buckets and buckets > 0:
        b = F.pmod(F.xxhash64(col), F.lit(buckets))
        if labels:
            return F.element_at(F.array(*[F.lit(x) for x in labels]), (b + 1).cast("int"))
        return b.cast("string")
    return col


def _answer_from(cp: CompiledProgram, eng: Engine, tid: int, binding: str, ev, ngs: list) -> Answer:
    tp = eng.templates[tid]
    idx = {n: i for i, n in enumerate(tp.names)}
    b = [None] * len(tp.names)
    for n, v in json.loads(binding).items():
        b[idx[n]] = v
    ng = frozenset(tuple(sorted((idx[v], c) for v, c in n)) for n in ngs)
    return Answer(tid, tuple(b), frozenset(int(i) for i in ev), ng)


def merge_small(rows, cnames) -> tuple[list[dict], dict]:
    """The Spark aggregation of compute(), on the driver (for a few groups)."""
    acc: dict[tuple, dict] = {}
    c = {k: 0 for k in cnames}
    c["groups"] = 0
    for r in rows:
        if r["rtype"] == "C":
            for k in cnames:
                c[k] += int(r[k] or 0)
            c["groups"] += 1
            continue
        k = (r["rtype"], r["template"], r["binding"], tuple(r["evidence_idx"]), r["ng_rest"])
        m = acc.get(k)
        if m is None:
            m = acc[k] = {"rtype": r["rtype"], "template": r["template"], "binding": r["binding"],
                          "evidence_idx": list(r["evidence_idx"]), "ng_rest": r["ng_rest"],
                          "ng_keys": set(), "deadline": None, "nulls": 0}
        m["ng_keys"].update(r["ng_key"] or ())
        m["nulls"] += int(r["n_nulls"] or 0)
        if r["deadline"] is not None and (m["deadline"] is None or r["deadline"] > m["deadline"]):
            m["deadline"] = r["deadline"]
    return list(acc.values()), c


def compute(spark, ctx: TickContext, spark_state_files: list[str], global_rows: list[dict],
            facts_files: list[str], bad_files: list[dict], tm: Timer) -> dict:
    """Steps 1-5 up to (not including) the commits; returns what the commits need."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    lake, tau, run, cp, pk = ctx.lake, ctx.tau, ctx.run, ctx.cp, ctx.pk
    info = lake.program_info
    P = {"program_id": lake.program_id(), "text": lake.program_text,
         "file": info.get("file", "program.tdl"), "query": info.get("query"), "tau": tau,
         "globals": global_rows, "keys_per_engine": ctx.keys_per_engine}
    res: dict[str, Any] = {"dq": [], "n_rejected": 0, "n_slice": 0}
    # ---- 1. D|τ, validated
    persisted = []
    if facts_files:
        raw = (spark.read.schema(spark_ddl("facts", with_partitions=False)).parquet(*facts_files)
               .withColumn("tick", F.lit(tau).cast("long"))
               .select("tick", "pred", "args", "time", "source", "line", "batch"))
        vdf = raw.mapInPandas(lambda it: validate_chunks(P, it), VOUT)
        vdf = vdf.persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(vdf)
        parts = [json.loads(r["dq"]) for r in vdf.where("rtype = 'dq'").select("dq").collect()]
        res["dq"] = merge_summaries([p["expectations"] for p in parts])
        res["n_slice"] = sum(p["rows"] for p in parts)
        res["n_rejected"] = sum(p["rejected"] for p in parts)
        tm.lap("validate (GX)")
        good = vdf.where("rtype = 'row' AND reason_code IS NULL")
        bad = vdf.where("rtype = 'row' AND reason_code IS NOT NULL")
    else:
        good = bad = None
        res["dq"] = empty_summary(cp) if os.environ.get("HYPO_LAKE_DQ_EMPTY") else []
    fault("after_validate", tau)
    # ---- 2./3. groups
    null = F.lit(None)
    labels = (bucket_labels(spark, ctx.buckets,
                            int(spark.conf.get("spark.sql.shuffle.partitions")))
              if ctx.buckets > 0 else None)
    pieces = []
    if spark_state_files:
        st = (spark.read.schema(spark_ddl("state")).parquet(*spark_state_files)
              .where("key IS NOT NULL AND kind IN ('answer', 'fact')"))
        pieces.append(st.select(
            _group_expr(F, F.col("key"), ctx.buckets, labels).alias("gkey"), "key", "kind",
            "template",
            "binding",
            "evidence_idx", "nogoods", "pred", "args", "time", null.cast("string").alias("source"),
            null.cast("long").alias("line"), null.cast("string").alias("batch")))
    if good is not None:
        pieces.append(good.withColumn("key", _key_expr(F, pk)).select(
            _group_expr(F, F.col("key"), ctx.buckets, labels).alias("gkey"), "key",
            F.lit("new").alias("kind"),
            null.cast("long").alias("template"), null.cast("string").alias("binding"),
            null.cast("array<long>").alias("evidence_idx"), null.cast("string").alias("nogoods"),
            "pred", "args", "time", "source", "line", "batch"))
    mk = spark.createDataFrame([("*" if pk.single else GLOBAL, "marker")], "k string, kind string")
    mk = mk.select((_group_expr(F, F.col("k"), ctx.buckets, labels) if pk.single
                    else F.col("k"))
                   .alias("gkey"), null.cast("string").alias("key"), "kind")
    for c, t in [("template", "long"), ("binding", "string"), ("evidence_idx", "array<long>"),
                 ("nogoods", "string"), ("pred", "string"), ("args", "array<string>"),
                 ("time", "long"), ("source", "string"), ("line", "long"), ("batch", "string")]:
        mk = mk.withColumn(c, null.cast(t))
    pieces.append(mk)
    gin = pieces[0]
    for p in pieces[1:]:
        gin = gin.unionByName(p)
    out = gin.groupBy("gkey").applyInPandas(lambda pdf: group_update(P, pdf), GOUT)
    out = out.persist(StorageLevel.MEMORY_AND_DISK)
    persisted.append(out)
    cnames = ("n_new", "n_accepted", "n_dup", "n_dup_engine", "n_state", "n_answers",
              "n_definite", "n_hypothetical", "n_pending", "sd_hi", "sd_lo", "ad_hi", "ad_lo")
    small = out.where("rtype IN ('G', 'H', 'C')")
    if ctx.buckets > 0:
        # few groups: their global rows are few too; merge them on the driver
        merged, c = merge_small(small.collect(), cnames)
    else:
        # one group per key value: merge with a Spark aggregation first
        rows = (small.groupBy("rtype", "template", "binding", "evidence_idx", "ng_rest")
                .agg(F.array_distinct(F.flatten(F.collect_list("ng_key"))).alias("ng_keys"),
                     F.max("deadline").alias("deadline"),
                     F.sum("n_nulls").alias("nulls"),
                     F.count(F.lit(1)).alias("groups"), *[F.sum(x).alias(x) for x in cnames])
                .collect())
        merged = [m.asDict() for m in rows if m["rtype"] in ("G", "H")]
        crow = [m for m in rows if m["rtype"] == "C"]
        c = {k: int(crow[0][k] or 0) for k in cnames + ("groups",)}
    tm.lap("groups (engine) + merge")
    # ---- 4. merge the global rows (driver: few rows)
    eng = Engine(cp)
    eng.tau = tau
    ex = Explainer(eng)
    g_state, g_answers = [], []
    sd = (c["sd_hi"] << 32) + c["sd_lo"]
    ad = (c["ad_hi"] << 32) + c["ad_lo"]
    for m in sorted(merged, key=lambda m: (m["rtype"], m["template"], m["binding"],
                                           list(m["evidence_idx"]), m["ng_rest"])):
        ngs = json.loads(m["ng_rest"]) + [json.loads(s) for s in (m["ng_keys"] or [])]
        a = _answer_from(cp, eng, int(m["template"]), m["binding"], m["evidence_idx"], ngs)
        if m["rtype"] == "G":
            row = answer_row(eng, a, tau, None)
            g_state.append(row)
        else:
            obj = ex.render(a, tau)
            if obj["status"] != "definite":
                obj["deadline"] = None if m["nulls"] else m["deadline"]
            g_answers.append(answer_columns(obj, None))
    uniq = {}
    for a in g_answers:
        uniq.setdefault(a["sort_key"], a)
    g_answers = list(uniq.values())
    meta = {k: None for k in STATE_COLS}
    meta.update(kind="meta", tick=tau, query=cp.text_hash)
    g_state.sort(key=lambda r: (r["template"], r["binding"], r["evidence_idx"], r["nogoods"]))
    for r in [meta] + g_state:
        sd = delta.digest_add(sd, _row_digest(r))
    for a in g_answers:
        ad = delta.digest_add(ad, a["json"])
        c[f"n_{a['status']}"] += 1
    c["n_answers"] += len(g_answers)
    c["n_state"] += len(g_state) + 1
    c["n_global_state"] = len(g_state)
    c["n_global_answers"] = len(g_answers)
    tm.lap("render globals")
    # ---- 5. write the files (uncommitted until the commits)
    tag = f"{tau:08d}-{run}"
    state_dir = f"v-{tag}"
    out.where("rtype = 'S'").select(*STATE_COLS).write.mode("overwrite").parquet(
        os.path.join(lake.path("state"), state_dir))
    state_actions = delta.dir_actions(lake.path("state"), state_dir, {})
    tm.lap("write state")
    gtab = pa.Table.from_pylist([{k: r.get(k) for k in STATE_COLS} for r in [meta] + g_state],
                                schema=arrow_schema("state"))
    state_actions.append(delta.write_file(lake.path("state"), "state", gtab, state_dir, {},
                                          name=f"global-{tag}.parquet"))
    ans_dir = f"tick={tau}/r-{run}"
    out.where("rtype = 'A'").select(*ANSWER_FILE_COLS).write.mode("overwrite").parquet(
        os.path.join(lake.path("answers"), ans_dir))
    answer_actions = delta.dir_actions(lake.path("answers"), ans_dir, {"tick": str(tau)})
    tm.lap("write answers")
    if g_answers:
        atab = pa.Table.from_pylist([{k: a.get(k) for k in ANSWER_FILE_COLS} for a in g_answers],
                                    schema=arrow_schema("answers", with_partitions=False))
        answer_actions.append(delta.write_file(lake.path("answers"), "answers", atab, ans_dir,
                                               {"tick": str(tau)}, name=f"global-{tag}.parquet"))
    q_dir = f"tick={tau}/stage=tick/r-{run}"
    q_actions = []
    n_quar = res["n_rejected"] + c["n_dup"] + len(bad_files)
    if res["n_rejected"] + c["n_dup"]:
        qparts = []
        if bad is not None and res["n_rejected"]:
            qparts.append(bad.select(
                "reason_code", "reason", "source", "line", "raw",
                null.cast("long").alias("raw_bytes"), "pred", "args", "time", "batch"))
        if c["n_dup"]:
            qparts.append(out.where("rtype = 'Q'").select(
                "reason_code", "reason", "source", "line",
                F.element_at("hypotheses", 1).alias("raw"), null.cast("long").alias("raw_bytes"),
                "pred", "args", "time", "batch"))
        q = qparts[0]
        for p in qparts[1:]:
            q = q.unionByName(p)
        q.select(*QUAR_FILE_COLS).write.mode("overwrite").parquet(
            os.path.join(lake.path("quarantine"), q_dir))
        q_actions = delta.dir_actions(lake.path("quarantine"), q_dir,
                                      {"tick": str(tau), "stage": "tick"})
    if bad_files:
        qt = pa.Table.from_pylist([{k: r.get(k) for k in QUAR_FILE_COLS} for r in bad_files],
                                  schema=arrow_schema("quarantine", with_partitions=False))
        q_actions.append(delta.write_file(lake.path("quarantine"), "quarantine", qt, q_dir,
                                          {"tick": str(tau), "stage": "tick"},
                                          name=f"files-{tag}.parquet"))
    tm.lap("write quarantine")
    for df in persisted:
        df.unpersist()
    counts = {"facts": res["n_slice"], "rejected": res["n_rejected"] + len(bad_files),
              "duplicates": c["n_dup"], "engine_duplicates": c["n_dup_engine"],
              "accepted": c["n_accepted"], "quarantined": n_quar, "state_rows": c["n_state"],
              "answers": c["n_answers"], "definite": c["n_definite"],
              "hypothetical": c["n_hypothetical"], "pending": c["n_pending"],
              "groups": c["groups"], "global_state_rows": c["n_global_state"],
              "global_answers": c["n_global_answers"]}
    return {"state_actions": state_actions, "answer_actions": answer_actions,
            "quarantine_actions": q_actions, "dq": res["dq"], "counts": counts,
            "state_digest": delta.digest_hex(sd), "answers_digest": delta.digest_hex(ad),
            "dirs": [os.path.join(lake.path("state"), state_dir),
                     os.path.join(lake.path("answers"), ans_dir),
                     os.path.join(lake.path("quarantine"), q_dir)]}


def run_tick(lake: Lake, tau: int, spark, buckets: int, keys_per_engine: int = 32) -> dict:
    """One tick, committed phase by phase (see module doc); returns the tick's summary."""
    lake.require()
    cp = lake.program
    tm = Timer()
    run = uuid.uuid4().hex[:12]
    ctx = TickContext(lake, tau, run, cp, lake.key, buckets, keys_per_engine)
    # versions read at the start: every commit of this run is conditional on them
    for k in ("facts", "state", "answers", "quarantine", "dq"):
        ctx.tables[k] = lake.table(k)
        ctx.versions[k] = ctx.tables[k].version()
    log = lake.ticks_log()
    done = lake.done(log)
    prev_v, state_files, globals_, _ = _prev_state(ctx, done)
    facts_files, bad_files = _facts_files(ctx)
    lake.log(tau, run, "start", facts_version=ctx.versions["facts"], prev_state_version=prev_v)
    tm.lap("plan (delta logs)")
    r = compute(spark, ctx, state_files, globals_, facts_files, bad_files, tm)
    fault("after_compute", tau)
    md = {"tick": str(tau), "run": run, "program": cp.text_hash}
    what = f"tick {tau} is being written by another run"
    try:
        sv = delta.commit(ctx.tables["state"], "state", r["state_actions"], mode="overwrite",
                          metadata={**md, "prev_state_version": str(prev_v),
                                    "facts_version": str(ctx.versions["facts"]),
                                    "digest": r["state_digest"]}, what=what)
    except ConcurrentTickError as e:
        raise ConcurrentTickError(f"{e}; nothing of this run was committed") from None
    lake.log(tau, run, "state", facts_version=ctx.versions["facts"], prev_state_version=prev_v,
             state_version=sv, state_digest=r["state_digest"])
    fault("after_state_commit", tau)
    av = delta.commit(ctx.tables["answers"], "answers", r["answer_actions"], mode="overwrite",
                      partition_filters=[("tick", "=", str(tau))],
                      metadata={**md, "digest": r["answers_digest"]}, what=what)
    lake.log(tau, run, "answers", state_version=sv, answers_version=av,
             answers_digest=r["answers_digest"])
    fault("after_answers_commit", tau)
    qv = -1
    qt = lake.table("quarantine")
    if r["quarantine_actions"] or _has_partition(qt, tau, "tick"):
        delta.commit(qt, "quarantine", r["quarantine_actions"], mode="overwrite",
                     partition_filters=[("tick", "=", str(tau)), ("stage", "=", "tick")],
                     metadata=md, exclusive=False, what=what)
        qv = lake.table("quarantine").version()
    fault("after_quarantine_commit", tau)
    _write_dq(lake, tau, run, r["dq"], r["counts"])
    fault("before_done", tau)
    tm.lap("commits")
    summary = {"tick": tau, "run": run, "facts_version": ctx.versions["facts"],
               "prev_state_version": prev_v, "state_version": sv, "answers_version": av,
               "quarantine_version": qv, "state_digest": r["state_digest"],
               "answers_digest": r["answers_digest"], "counts": r["counts"]}
    lake.log(tau, run, "done", **{k: v for k, v in summary.items() if k not in ("tick", "run")})
    tm.lap("commits")
    summary["seconds"] = tm.phases
    return summary


def _has_partition(dt, tau: int, stage: str) -> bool:
    return bool(dt.file_uris(file_pruning_predicate=[("tick", "=", str(tau)),
                                                     ("stage", "=", stage)]))


def _write_dq(lake: Lake, tau: int, run: str, summary: list[dict], counts: dict) -> None:
    d = os.path.join(lake.meta_dir, "dq")
    os.makedirs(d, exist_ok=True)
    doc = {"tick": tau, "run": run, "success": all(s["success"] for s in summary),
           "rows": counts.get("facts", 0), "rejected": counts.get("rejected", 0),
           "expectations": summary}
    tmp = os.path.join(d, f".tick={tau}.json.{run}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
    os.replace(tmp, os.path.join(d, f"tick={tau}.json"))
    rows = [{"tick": tau, "run": run, **s} for s in summary]
    dq = lake.table("dq")
    acts = []
    if rows:
        t = pa.Table.from_pylist(rows, schema=arrow_schema("dq"))
        acts.append(delta.write_file(lake.path("dq"), "dq", t, f"tick={tau}", {"tick": str(tau)},
                                     name=f"dq-{run}.parquet"))
    delta.commit(dq, "dq", acts, mode="overwrite", partition_filters=[("tick", "=", str(tau))],
                 metadata={"tick": str(tau), "run": run}, exclusive=False)
