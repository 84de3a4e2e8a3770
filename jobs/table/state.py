"""S_τ in the lake (the `state` table, format hypo-state/2; schemas/lake.json): the columnar
engine's partitions (template, pattern) and window W as rows of one generic table, written
and read by Spark — and, for tests, migration and the row engine, as row-engine Answers."""
from __future__ import annotations

import json
from typing import Iterable

from reasoning.columnar.layout import (BOOL, INT, INTLIST, OBJ, STRLIST, acol,
                                       decode_nogoods, encode_nogoods, vcol)
from reasoning.language.compiler import CompiledProgram
from reasoning.semantics.answer import Answer
from reasoning.semantics.patterns import Fact, compile_templates
from schemas.lake import STATE_FORMAT, column_names

from jobs.errors import LakeDamaged, LakeError, ProgramMismatch

COLS = column_names("state", with_partitions=False)


def pattern_bits(P) -> int:
    return sum(1 << x for x in P)


def bits_pattern(bits: int) -> frozenset:
    return frozenset(i for i in range(64) if bits >> i & 1)


def meta_info(cp: CompiledProgram) -> str:
    return json.dumps({"format": STATE_FORMAT, "program": cp.text_hash,
                       "query": str(cp.main.atom)}, sort_keys=True)


# ------------------------------------------------------------------ frames (any backend)
STATE_KINDS = {"kind": OBJ, "template": INT, "pattern": INT, "vals": STRLIST, "times": INTLIST,
               "ev": INT, "ng": STRLIST, "exp": INT, "dlp": INT, "unb": BOOL, "born": INT,
               "status": OBJ, "pred": OBJ, "args": STRLIST, "time": INT, "wexp": INT,
               "info": OBJ}


def state_frame(B, eng, cp: CompiledProgram):
    """The rows of S_τ (the engine after its tick: answers, W and a meta row) as one frame
    with the state table's columns (tick excluded: it is the partition)."""
    parts = []
    null = {c: B.null(k) for c, k in STATE_KINDS.items()}
    for k, lay in enumerate(eng.layouts):
        full = lay.full_mask
        n = len(lay.kinds)
        for P, df in eng.S[k].items():
            vals = B.typed_list([B.col(vcol(x)) if x in P and lay.kinds[x] == OBJ
                                 else B.null(OBJ) for x in range(n)], OBJ)
            times = B.typed_list([B.col(vcol(x)) if x in P and lay.kinds[x] == INT
                                  else B.null(INT) for x in range(n)], INT)
            status = B.when(B.col("ev") == B.lit(full, INT), B.lit("definite", OBJ),
                            B.when(B.col("ev") != B.lit(0, INT), B.lit("hypothetical", OBJ),
                                   B.lit("pending", OBJ)))
            items = {"kind": B.lit("answer", OBJ), "template": B.lit(k, INT),
                     "pattern": B.lit(pattern_bits(P), INT), "vals": vals, "times": times,
                     "ev": B.col("ev"), "ng": B.col("ng"), "exp": B.col("exp"),
                     "dlp": B.col("dlp"), "unb": B.col("unb"), "born": B.col("born"),
                     "status": status}
            parts.append(B.select(df, [B.alias(items.get(c, null[c]), c) for c in COLS]))
    for p, w in eng.W.items():
        n = eng.edb[p] - 1
        items = {"kind": B.lit("fact", OBJ), "pred": B.lit(p, OBJ),
                 "args": B.typed_list([B.col(acol(i)) for i in range(n)], OBJ),
                 "time": B.col("t"), "wexp": B.col("wexp")}
        parts.append(B.select(w, [B.alias(items.get(c, null[c]), c) for c in COLS]))
    heads = [{"kind": "answered", "pred": p, "args": list(a), "time": t, "wexp": until}
             for p, a, t, until in eng.answered.items()]
    if heads:  # definite heads remembered for exact answers (reasoning/semantics/exact.py, Answered)
        parts.append(B.from_rows(heads, {c: STATE_KINDS[c] for c in COLS}))
    parts.append(B.from_rows([{"kind": "meta", "info": meta_info(cp)}],
                             {c: STATE_KINDS[c] for c in COLS}))
    return B.concat(parts)


# the columns each kind of state row fills: a null there is a damaged file (issue 44.11: a
# null ev was read as "no evidence" and the tick went on, a null kind as an earlier layout)
REQUIRED_BY_KIND = {"answer": ("template", "pattern", "vals", "times", "ev"),
                    "fact": ("pred", "args", "time"), "answered": ("pred", "args", "time"),
                    "meta": ("info",)}


def bad_rows(B, df):
    """The rows with no kind, or a null in a column their kind needs."""
    kind = B.col("kind")
    conds = [B.is_null(kind)]
    for k, cols in REQUIRED_BY_KIND.items():
        conds.append((kind == B.lit(k, OBJ)) & B.any_of([B.is_null(B.col(c)) for c in cols]))
    return B.filter(df, B.any_of(conds))


def damaged_state(tick: int, n: int, kind) -> LakeDamaged:
    return LakeDamaged(
        f"the state of tick {tick} has {n} row(s) missing a column their kind needs (e.g. "
        f"{'an ' + kind if kind == 'answer' else 'a ' + (kind or 'kind-less')} row): a damaged file — re-run tick {tick} (`hypo lake run "
        f"--from {tick} --to {tick}`) or restore the file from a backup; `hypo lake verify "
        f"--deep` names it")


def state_rows_problem(t) -> "str | None":
    """Why the rows of a state file (an Arrow table) are damaged (verify --deep), or None."""
    import pyarrow.compute as pc

    if "kind" not in t.column_names:
        return None
    kind = t.column("kind")
    if kind.null_count:
        return f"{kind.null_count} row(s) have no kind"
    for k, cols in REQUIRED_BY_KIND.items():
        sub = t.filter(pc.equal(kind, k))
        for c in cols:
            if c in sub.column_names and sub.column(c).null_count:
                return f"{sub.column(c).null_count} {k} row(s) have a null {c}"
    return None


def load_state(B, eng, df, tick: int, cp: CompiledProgram) -> None:
    """Fill the engine with S_tick from the state rows (a frame of one tick)."""
    df = B.materialize(df)
    ans = B.filter(df, B.col("kind") == B.lit("answer", OBJ))
    # what the driver needs, read in one pass (on Spark one job): the meta row, the
    # remembered definite heads and the partitions (template, pattern) of the answers
    small = ("kind", "info", "pred", "args", "time", "template", "pattern")
    kind = B.col("kind")
    side = B.select(B.filter(df, (kind == B.lit("meta", OBJ)) |
                             (kind == B.lit("answered", OBJ))), [B.col(c) for c in small])
    parts = B.select(B.unique(B.select(ans, [B.col("template"), B.col("pattern")])),
                     [B.alias(B.lit("part", OBJ), "kind"), B.alias(B.null(OBJ), "info"),
                      B.alias(B.null(OBJ), "pred"), B.alias(B.null(STRLIST), "args"),
                      B.alias(B.null(INT), "time"), B.col("template"), B.col("pattern")])
    bad = B.select(bad_rows(B, df), [B.alias(B.lit("bad", OBJ), "kind"),
                                      B.alias(B.col("kind"), "info"), B.alias(B.null(OBJ), "pred"),
                                      B.alias(B.null(STRLIST), "args"), B.alias(B.null(INT), "time"),
                                      B.alias(B.null(INT), "template"), B.alias(B.null(INT), "pattern")])
    got = B.rows(B.concat([side, parts, bad]))  # (one read: on Spark one job)
    wrong = [r for r in got if r["kind"] == "bad"]
    if wrong:
        raise damaged_state(tick, len(wrong), wrong[0]["info"])
    info = [r["info"] for r in got if r["kind"] == "meta"]
    check_meta(info, tick, cp)
    parts = [r for r in got if r["kind"] == "part"]
    eng.S = [{} for _ in eng.templates]
    for r in parts:
        k, P = int(r["template"]), bits_pattern(int(r["pattern"]))
        if k >= len(eng.templates):
            raise LakeError(f"state of tick {tick} names template {k}, which this program has "
                            f"not")
        lay = eng.layouts[k]
        items = []
        for x in sorted(P):
            src = "vals" if lay.kinds[x] == OBJ else "times"
            items.append(B.alias(B.get_item(B.col(src), x), vcol(x)))
        items += [B.col(c) for c in ("ev", "ng", "exp", "dlp", "unb", "born")]
        sub = B.filter(ans, (B.col("template") == B.lit(k, INT)) &
                       (B.col("pattern") == B.lit(pattern_bits(P), INT)))
        eng.S[k][P] = B.materialize(B.select(sub, items))
    facts = B.filter(df, B.col("kind") == B.lit("fact", OBJ))
    for p, arity in eng.edb.items():
        n = arity - 1
        w = B.filter(facts, B.col("pred") == B.lit(p, OBJ))
        eng.W[p] = B.materialize(B.select(w, [B.alias(B.get_item(B.col("args"), i), acol(i))
                                              for i in range(n)] +
                                          [B.alias(B.col("time"), "t"), B.col("wexp")]))
    eng.answered.load((r["pred"], tuple(r["args"]), int(r["time"])) for r in got
                      if r["kind"] == "answered")
    eng.tau = tick


def check_meta(info: list, tick: int, cp: CompiledProgram) -> None:
    if not info:
        raise LakeError(f"the state of tick {tick} has no meta row (damaged or written by an "
                        f"earlier layout: run `hypo lake migrate`)")
    m = json.loads(info[0])
    if m.get("format") != STATE_FORMAT:
        raise LakeError(f"the state of tick {tick} has format {m.get('format')}; this version "
                        f"reads {STATE_FORMAT} (run `hypo lake migrate`)")
    if m.get("program") != cp.text_hash:
        raise ProgramMismatch(f"state of tick {tick} was written by another program (sha256 "
                              f"{str(m.get('program'))[:12]}); this lake's program is "
                              f"{cp.text_hash[:12]}")


# ------------------------------------------------------------------ Python views
def rows_to_answers(cp: CompiledProgram, rows: Iterable[dict]) -> tuple[list, list]:
    """(Answers, window Facts) of state rows (dicts)."""
    tps = compile_templates(cp.queries)
    answers, window = [], []
    # per (template, pattern): each variable's column (vals, times) or None (unbound); per
    # (template, ev): its literal set — a few of each for thousands of rows
    slots: dict = {}
    evs: dict = {}
    nothing = frozenset()
    for r in rows:
        kind = r["kind"]
        if kind == "answer":
            k, bits = int(r["template"]), int(r["pattern"])
            sl = slots.get((k, bits))
            if sl is None:
                tp = tps[k]
                P = bits_pattern(bits)
                sl = slots[(k, bits)] = [
                    None if x not in P else ("times" if x in tp.time_vars else "vals")
                    for x in range(len(tp.names))]
            vals, times = r["vals"], r["times"]
            b = tuple([None if c is None else (int(times[x]) if c == "times" else vals[x])
                       for x, c in enumerate(sl)])
            e = int(r["ev"])
            ev = evs.get((k, e))
            if ev is None:
                ev = evs[(k, e)] = frozenset(i for i in range(len(tps[k].lits)) if e >> i & 1)
            ng = r["ng"]
            answers.append(Answer(k, b, ev, decode_nogoods(ng) if ng else nothing))
        elif kind == "fact":
            window.append(Fact(r["pred"], tuple(r["args"]), int(r["time"])))
    return answers, window


def rows_to_answered(rows: Iterable[dict]) -> list[tuple]:
    """(pred, args, time) of the remembered definite heads in state rows (exact.py)."""
    return [(r["pred"], tuple(r["args"]), int(r["time"])) for r in rows
            if r["kind"] == "answered"]


def row_layouts(eng):
    """What answer_state_rows reads of an engine (templates, layouts, δ), for the row
    engine: a program the columnar executor does not take (modular evaluation) still has
    the state table's layout."""
    from types import SimpleNamespace

    from reasoning.columnar.layout import Layout

    return SimpleNamespace(templates=eng.templates, tool=eng,
                           layouts=[Layout.of(tp) for tp in eng.templates])


def answer_state_rows(eng, answers: list, window: list, cp: CompiledProgram,
                      answered: Iterable[tuple] = ()) -> list[dict]:
    """State rows (dicts) for Answers, window facts and remembered definite heads
    (pred, args, time, until), exp/dlp/unb recomputed (migration): answer_state_columns'
    rows."""
    cols = answer_state_columns(eng, answers, window, cp, answered)
    return [dict(zip(COLS, r)) for r in zip(*(cols[c] for c in COLS))]


def answer_state_columns(eng, answers: list, window: list, cp: CompiledProgram,
                         answered: Iterable[tuple] = ()) -> dict[str, list]:
    """The state table's columns (lists) for Answers, window facts and remembered definite
    heads (pred, args, time, until), exp/dlp/unb recomputed (the row executor's S_τ,
    migration); built column by column — a dict per row and a frame from the dicts took
    twice as long at 9 · 10⁴ rows."""
    from reasoning.columnar.fallback import row_meta

    out: dict[str, list] = {c: [] for c in COLS}
    kind, tpl, pat, vals, times, evc, ngc, expc, dlpc, unbc, born, status = (
        out[c] for c in ("kind", "template", "pattern", "vals", "times", "ev", "ng", "exp",
                         "dlp", "unb", "born", "status"))
    objmask = [[k == OBJ for k in lay.kinds] for lay in eng.layouts]
    nlits = [len(tp.lits) for tp in eng.templates]
    evbits: dict = {}
    for a in answers:
        k = a.tid
        b = a.b
        exp, dlp, unb = row_meta(eng, k, a)
        m = objmask[k]
        e = evbits.get(a.ev)
        if e is None:
            e = evbits[a.ev] = sum(1 << i for i in a.ev)
        kind.append("answer")
        tpl.append(k)
        pat.append(sum(1 << i for i, v in enumerate(b) if v is not None))
        vals.append([v if o else None for v, o in zip(b, m)])
        times.append([None if o else v for v, o in zip(b, m)])
        evc.append(e)
        ngc.append(encode_nogoods(a.ng) if a.ng else [])
        expc.append(exp)
        dlpc.append(dlp)
        unbc.append(unb)
        born.append(-1)
        status.append("definite" if len(a.ev) == nlits[k] else
                      ("hypothetical" if a.ev else "pending"))
    n = len(answers)
    rest = [{"kind": "fact", "pred": f.pred, "args": list(f.args), "time": f.time,
             "wexp": f.time + cp.delays.ground(f.pred, f.args)} for f in window]
    rest += [{"kind": "answered", "pred": p, "args": list(args), "time": t, "wexp": until}
             for p, args, t, until in answered]
    rest.append({"kind": "meta", "info": meta_info(cp)})
    for c, col in out.items():
        if len(col) < n:
            col.extend([None] * (n - len(col)))
        col.extend(r.get(c) for r in rest)
    return out
