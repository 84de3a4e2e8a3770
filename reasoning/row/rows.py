"""S_τ as plain, serialisable rows (the Delta `state` schema) and the pure update
`advance(program, S_{τ-1} rows, D|τ, τ) -> (S_τ rows, report)` (Algorithm 1 as a function)."""
from __future__ import annotations

import json
from typing import Any, Iterable, Optional

from reasoning.language.compiler import CompiledProgram
from reasoning.row.engine import Engine
from reasoning.semantics.answer import Answer, TickReport
from reasoning.semantics.explain import status
from reasoning.semantics.patterns import Fact

# column -> type (documented in docs/lake.md, "Tables")
STATE_COLUMNS = {
    "kind": "string",  # "answer" | "fact" (a fact of W) | "answered" (exact.py) | "meta"
    "tick": "long",  # τ of S_τ
    "qid": "long",
    "template": "long",
    "binding": "string",  # JSON object: variable -> value (bound variables only)
    "evidence_idx": "array<long>",
    "nogoods": "string",  # JSON list of lists of [variable, value]
    "query": "string",
    "status": "string",
    "substitution": "string",  # JSON object of the bound query variables
    "evidence": "array<string>",
    "hypotheses": "array<string>",
    "pred": "string",
    "args": "array<string>",
    "time": "long",
    "key": "string",  # partition key value (None: global)
}


def answer_row(eng: Engine, a: Answer, tick: int, key: Optional[str] = None) -> dict[str, Any]:
    """One schematic answer as a state row."""
    tp = eng.templates[a.tid]
    binding = {tp.names[i]: v for i, v in enumerate(a.b) if v is not None}
    ng = sorted([[tp.names[v], c] for v, c in n] for n in a.ng)
    return {
        "kind": "answer",
        "tick": tick,
        "qid": tp.qid,
        "template": tp.tid,
        "binding": json.dumps(binding, sort_keys=True),
        "evidence_idx": sorted(a.ev),
        "nogoods": json.dumps(ng, sort_keys=True),
        "query": str(tp.query.atom),
        "status": status(eng, a),
        "substitution": json.dumps(tp.answer(a.b), sort_keys=True),
        "evidence": sorted({tp.lits[i].render(a.b, tp.names) for i in a.ev}),
        "hypotheses": sorted({tp.lits[i].render(a.b, tp.names)
                              for i in range(len(tp.lits)) if i not in a.ev}),
        "pred": None,
        "args": None,
        "time": None,
        "key": key,
    }


def fact_row(f: Fact, tick: int, key: Optional[str] = None) -> dict[str, Any]:
    """A fact of the window W (arrived, still future-possible by timestamp) as a state row."""
    return {
        "kind": "fact", "tick": tick, "qid": None, "template": None, "binding": None,
        "evidence_idx": None, "nogoods": None, "query": None, "status": None,
        "substitution": None, "evidence": None, "hypotheses": [str(f)],
        "pred": f.pred, "args": list(f.args), "time": f.time, "key": key,
    }


def meta_row(eng: Engine, tick: int) -> dict[str, Any]:
    """The program hash, so a state written by another program is refused."""
    row = {c: None for c in STATE_COLUMNS}
    row.update(kind="meta", tick=tick, query=eng.cp.text_hash)
    return row


def to_rows(eng: Engine, key_of=None) -> list[dict[str, Any]]:
    """Dump S_τ (answers and window) as rows."""
    tick = eng.tau
    rows = [meta_row(eng, tick)]
    for a in sorted(eng.answers, key=lambda a: (a.tid, str(a.b), sorted(a.ev), sorted(a.ng))):
        rows.append(answer_row(eng, a, tick, key_of(eng, a) if key_of else None))
    for (pred, t), s in sorted(eng.window.items()):
        for args in sorted(s):
            f = Fact(pred, args, t)
            rows.append(fact_row(f, tick, key_of(eng, f) if key_of else None))
    for pred, args, t, _ in eng.answered.items():  # definite heads remembered (exact.py)
        row = fact_row(Fact(pred, args, t), tick)
        row.update(kind="answered", hypotheses=None)
        rows.append(row)
    return rows


def load_rows(cp: CompiledProgram, rows: Iterable[dict[str, Any]], tick: int,
              forget: bool = True) -> Engine:
    """Rebuild the indexed engine state S_tick from rows (inverse of to_rows)."""
    eng = Engine(cp, forget=forget)
    eng.tau = tick
    for r in rows:
        kind = r["kind"]
        if kind == "meta":
            if r["query"] != cp.text_hash:
                raise ValueError("state was written by a different program (hash mismatch)")
            continue
        if kind == "answered":
            eng.answered.add(r["pred"], tuple(r["args"]), int(r["time"]))
            continue
        if kind == "fact":
            f = Fact(r["pred"], tuple(r["args"]), int(r["time"]))
            d = cp.delays.ground(f.pred, f.args)
            eng.window[(f.pred, f.time)].add(f.args)
            eng.window_expiry[f.time + d].add(f)
            continue
        tp = eng.templates[int(r["template"])]
        idx = {n: i for i, n in enumerate(tp.names)}
        b = [None] * len(tp.names)
        for n, v in json.loads(r["binding"]).items():
            b[idx[n]] = v
        ng = frozenset(tuple((idx[v], c) for v, c in n) for n in json.loads(r["nogoods"]))
        a = Answer(tp.tid, tuple(b), frozenset(int(i) for i in r["evidence_idx"]), ng)
        eng.add(a, tick)
    eng.fresh_definite = set()
    if forget:
        for a in [a for a in eng.answers if eng.is_definite(a)]:
            tp = eng.templates[a.tid]
            lag = eng.retention.get(tp.head.pred)
            _, ht = tp.head.instantiate(a.b)
            if lag is not None and ht is not None:
                eng.retire[max(ht + lag, tick + 1)].add(a)
    return eng


def advance(cp: CompiledProgram, rows: Iterable[dict[str, Any]], facts: Iterable[Fact],
            tau: int, forget: bool = True) -> tuple[list[dict[str, Any]], TickReport, Engine]:
    """The pure update: S_{τ-1} rows and D|τ give S_τ rows (and the tick's report)."""
    eng = load_rows(cp, rows, tau - 1, forget)
    rep = eng.step(facts, tau)
    return to_rows(eng), rep, eng
