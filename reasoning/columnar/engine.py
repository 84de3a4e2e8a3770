"""Algorithm 1 of 002_…txt (§6) set-at-a-time: S_τ, D|τ and the window W as tables, every
step a relational operation over them (layout.py describes the tables).

  step 1(a)  the slice's facts joined with each template's seed literal, then the other
             positive literals joined with D|τ ∪ W (local mgus, Def. 16, as optional joins)
  step 1(b)  the waiting answers joined with D|τ on their hypotheses' arguments and times;
             expiry is a filter on the `exp` column
  step 2     one row per template with T := τ
  step 3     per key of the T-stratification (waves, lowest first), the negated hypotheses
             joined with the answers of their instantiated predicate: refutation (3(b)) and
             evidence (3(c)) as aggregates over the covers, disequality constraints as rows
  forgetting filters on head times and the per-predicate retention

Each template's table is partitioned by *pattern*: the set of its variables that are bound
(a partition stores only those columns).  Every operation knows the pattern of its inputs
and outputs statically, so unification is decided once per pattern and runs as an equi-join
(unify.py) — the relational analogue of Soufflé's or Nemo's per-adornment relations.

The semantics are those of the row engine (reasoning/row/engine.py, the reference executor);
tests/test_columnar.py checks both against each other and the reference evaluator.  Two
rare shapes of step 3 — a negated hypothesis with two or more unbound variables, and covers
through answers that themselves carry nogoods or variable-variable links — are refined by
the row engine's own region algebra on just those rows (fallback.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from reasoning.language.compiler import CompiledProgram
from reasoning.row.engine import Engine as RowEngine
from reasoning.semantics.answer import TickReport
from reasoning.language.errors import HypoError
from reasoning.util.gcpause import frozen_survivors
from reasoning.semantics.patterns import ETemplate, Fact, LitPattern, compile_templates
from reasoning.columnar.backends.polars import PolarsBackend
from reasoning.columnar.delays import COL, CONST, DelayPlan
from reasoning.columnar.exactrows import ExactPass
from reasoning.columnar.layout import (BOOL, INT, MAX_LITERALS, META_KINDS, OBJ, Layout, acol,
                     encode_nogoods, fact_schema, facts_by_pred, row_to_answer, vcol)
from reasoning.columnar.unify import cover_spec, ground_under, literal_vars, match_spec
from reasoning.language.periodic import TimeDomain
from reasoning.language.syntax import Lrp

Pattern = frozenset


class Unsupported(HypoError):
    """A program shape the columnar executor does not take (--engine row or auto run it)."""


def unsupported(templates) -> Optional[str]:
    """Why the columnar executor cannot run a program of these templates (None: it can)."""
    for tp in templates:
        if len(tp.lits) > MAX_LITERALS:
            return (f"a template of {tp.query.atom} has {len(tp.lits)} literals (the columnar "
                    f"executor and the lake's state table take at most {MAX_LITERALS}: evidence "
                    f"is an int64 bit mask)")
    return None


@dataclass
class ColumnarReport(TickReport):
    """TickReport plus the tables of S_τ before forgetting (for rendering)."""

    frames: dict = field(default_factory=dict)  # (template, pattern) -> rows of S_τ
    fresh: dict = field(default_factory=dict)  # (template, pattern) -> rows definite at τ


class ColumnarEngine:
    """Algorithm 1 over tables; `step` is the update for one tick (the row engine's
    Engine.step contract)."""

    def __init__(self, cp: CompiledProgram, forget: bool = True, backend=None):
        self.cp = cp
        self.forget = forget
        self.B = backend if backend is not None else PolarsBackend()
        self.templates: tuple[ETemplate, ...] = compile_templates(cp.queries)
        why = unsupported(self.templates)
        if why is not None:
            raise Unsupported(f"{why}; `hypo run --engine row` (or auto) runs it")
        self.layouts = [Layout.of(tp) for tp in self.templates]
        self.strat = cp.analysis.stratification
        self.delays = cp.delays
        self.edb = dict(cp.analysis.edb)  # pred -> arity (with time)
        self.dplans = {p: DelayPlan(cp.delays, p) for p in self.edb}
        self.tool = RowEngine(cp, forget)  # the row engine's helpers (fallback, retention)
        self.retention = self.tool.retention
        self.full_seeds = self.tool.full_seeds
        self.main_qid = 0
        self.tau = -1
        self.tpl_ng = [encode_nogoods(tp.nogoods) for tp in self.templates]
        self.S: list[dict] = [{} for _ in self.templates]  # template -> pattern -> frame
        self.W = {p: self.B.empty(fact_schema(n - 1, window=True)) for p, n in self.edb.items()}
        self.by_pred: dict[str, list] = {}
        for lst in self.tool.by_pred.values():
            for tp, i, full in lst:
                self.by_pred.setdefault(tp.lits[i].pred, []).append((tp, i, full))
        self.by_head: dict[str, list[int]] = {}
        for tp in self.templates:
            self.by_head.setdefault(tp.head.pred, []).append(tp.tid)
        self.all_vars = [Pattern(range(len(tp.names))) for tp in self.templates]
        # static facts that spare looking at the data: which templates' answers can carry
        # nogoods at all (template nogoods, or pieces of step 3 on a negated literal), and
        # whether a nogood on several variables can arise anywhere
        self.exact = self.tool.exact  # exact instances of waiting answers (exact.py)
        self.answered = self.tool.answered
        self.may_ng = [bool(tp.nogoods) or bool(tp.neg) or self.exact.may_ng[tp.tid]
                       for tp in self.templates]
        self.multi_possible = any(len(n) > 1 for tp in self.templates for n in tp.nogoods) or \
            any(len({x for isvar, x in tp.lits[j].args if isvar}) > 1
                for tp in self.templates for j in tp.neg) or any(self.exact.multi) or \
            any(self.exact.time_ng)
        self.stats = {"fallback_refs": 0}
        # partitions whose rows may have an unbound time variable with a floor (exact.py)
        self.seeded: set = set()  # Answers of step 1(a) at τ, of templates with exact.nlits

    # ================================================================== expressions
    def _side(self, lp: LitPattern, i: int):
        isvar, x = lp.args[i]
        return (COL, vcol(x)) if isvar else (CONST, x)

    def _texpr(self, lp: LitPattern):
        B = self.B
        if lp.tvar is None:
            return B.lit(lp.toff, INT)
        return B.col(vcol(lp.tvar)) + B.lit(lp.toff, INT)

    def _schema(self, k: int, P: Pattern) -> dict:
        lay = self.layouts[k]
        out = {vcol(x): lay.kinds[x] for x in sorted(P)}
        out.update(META_KINDS)
        return out

    def _keys(self, P: Pattern) -> list[str]:
        return [vcol(x) for x in sorted(P)] + ["ev", "ng"]

    def _base(self, P: Pattern) -> list[str]:
        return [vcol(x) for x in sorted(P)] + ["ev", "ng"]

    def _sel(self, df, cols: list[str]):
        return self.B.select_cols(df, list(cols))

    def live_frames(self):
        """Every frame kept from one tick to the next: S, W, the delay tables and the last
        report's frames (read by the renderer after the tick)."""
        rep = getattr(self, "reported", None)
        if rep is not None:
            yield from rep.frames.values()
            yield from rep.fresh.values()
        for parts in self.S:
            yield from parts.values()
        yield from self.W.values()
        for plan in self.dplans.values():
            yield from plan.frames()

    def partitions(self, k: int):
        return self.S[k].items()

    # ================================================================== the tick
    def step(self, facts, tau: int, snapshot: bool = True, clean: bool = False
             ) -> ColumnarReport:
        """Algorithm 1 for tick τ (see _step); on a backend whose columns make many small
        Python objects (arrays: interned tuples, index lists) the cyclic collector is paused
        and the survivors frozen, as the row engine does (gcpause.py: a third of a turbine
        tick was collections)."""
        if not getattr(self.B, "python_objects", False):
            return self._step(facts, tau, snapshot, clean)
        with frozen_survivors():
            return self._step(facts, tau, snapshot, clean)

    def _step(self, facts, tau: int, snapshot: bool = True, clean: bool = False
              ) -> ColumnarReport:
        """Algorithm 1 for tick τ: S_{τ-1} and D|τ give S_τ (facts must be validated).
        `facts` is a list of Fact or {pred: {column: values} | frame (a0.., t)}; clean: the
        frames hold no duplicate (in the slice or of a fact in W) — the caller removed them."""
        if tau != self.tau + 1:
            raise ValueError(f"tick {tau} follows tick {self.tau}: ticks must be consecutive")
        B = self.B
        B.begin_tick()
        collect = getattr(B, "collect", None)
        if collect is not None:  # interned values no frame kept across ticks holds
            collect(self)
        self.seeded = set()
        rep = ColumnarReport(tau)
        cols = facts if isinstance(facts, dict) else facts_by_pred(facts)
        cols = {p: c if isinstance(c, dict) else B.adopt(c) for p, c in cols.items()}
        D: dict = {}
        dup_frames = []
        for p, c in cols.items():
            if p not in self.edb:  # a predicate no rule uses: kept in W like the row engine
                self.edb[p] = len([x for x in (c if isinstance(c, dict) else B.columns(c))
                                   if x != "t"]) + 1
                self.dplans[p] = DelayPlan(self.delays, p)
                self.W[p] = B.empty(fact_schema(self.edb[p] - 1, window=True))
            n = self.edb[p] - 1
            df = B.from_columns(c, fact_schema(n)) if isinstance(c, dict) else c
            if clean:
                D[p] = B.materialize(df)
                continue
            total = B.height(df)
            if total == 0:
                continue
            u = B.unique(df)
            keys = [acol(i) for i in range(n)] + ["t"]
            w = self.W[p]
            if not B.is_empty(w):
                wk = self._sel(w, keys)
                seen = B.join(u, wk, keys, keys, how="semi")
                if not B.is_empty(seen):
                    dup_frames.append((p, seen))
                    u = B.join(u, wk, keys, keys, how="anti")
            u = B.materialize(u)
            rep.duplicates += total - B.height(u)
            if not B.is_empty(u):
                D[p] = u
        # window expiry, after the duplicate check (a fact with t + δ = τ may arrive again at
        # τ: a duplicate): W keeps facts with t + δ > τ (002 Def. 17, potentially future)
        for p in self.W:
            w = self.W[p]
            if not B.is_empty(w):
                self.W[p] = B.filter(w, B.col("wexp") > B.lit(tau, INT))
        rep.accepted = sum(B.height(d) for d in D.values()) if B.cheap_checks else -1
        if rep.duplicates:
            rep.duplicate_facts = self._duplicate_facts(cols, dup_frames)
        # W's facts by predicate, and present = D|τ ∪ W (disjoint: duplicates are gone)
        window = {p: B.drop(w, ["wexp"]) for p, w in self.W.items() if not B.is_empty(w)}
        present = dict(window)
        for p, d in D.items():
            w = self.W[p]
            present[p] = d if B.is_empty(w) else B.materialize(
                B.concat([d, self._sel(w, B.columns(d))]))
        # step 1(b) and 1(a)
        new: dict = {}
        for k in range(len(self.templates)):
            if self.full_seeds[k]:
                self._step1_full(k, D, present, window, tau, new)
            else:
                self._step1b(k, D, present, tau, new)
                for i in self.templates[k].pos:
                    F = D.get(self.templates[k].lits[i].pred)
                    if F is not None:
                        self._step1a(k, i, F, present, tau, new)
        for (k, P), frames in new.items():
            self._add(k, P, B.concat(frames),
                      fresh_only=self.full_seeds[k] and P == self.all_vars[k])
        # step 2
        for k in range(len(self.templates)):
            self._step2(k, tau, present)
        # exact instances: the past instances of unbound time variables split off (exact.py)
        ExactPass(self, tau, D, present, None).split_first()
        # step 3
        self._step3(tau)
        # window update: facts of D|τ that may still be matched as hypotheses
        for p, d in D.items():
            n = self.edb[p] - 1
            # a fact's arguments are all bound: δ by the static plan (no per-row pattern);
            # t + δ by the fused kernel when the backend has it (ArraysBackend.deadlines)
            sides = [(COL, acol(i)) for i in range(n)]
            fused = getattr(B, "deadlines", None)
            spec = self.dplans[p].lookup_spec(B, sides) if fused is not None else None
            dd = fused(d, [(0, "t", 0, spec)], ("wexp", None)) if spec is not None else None
            if dd is None:
                dd, dexpr, tmp = self.dplans[p].expr_static(B, d, sides, "_d")
                dd = B.with_columns(dd, {"wexp": B.col("t") + dexpr})
                if tmp:
                    dd = B.drop(dd, tmp)
            dd = B.filter(dd, B.col("wexp") > B.lit(tau, INT))
            if not B.is_empty(dd):
                self.W[p] = B.materialize(B.concat([self.W[p], dd]))
        fresh = self._fresh(tau)
        ExactPass(self, tau, D, present, fresh).run()
        if self.forget and fresh:
            self._drop_redundant(fresh)
        rep.frames = {(k, P): a for k in range(len(self.templates)) for P, a in self.S[k].items()}
        rep.fresh = fresh
        self.reported = rep  # its frames stay readable until the next tick (rendering)
        if snapshot:
            rep.snapshot = self.answers()
            rep.new_definite = [row_to_answer(self.layouts[k], r) for (k, P), f in fresh.items()
                                if self.templates[k].qid == self.main_qid for r in B.rows(f)]
        self.tau = tau
        if self.forget:
            self._forget(tau)
        rep.state_size = sum(B.height(a) for parts in self.S for a in parts.values()) \
            if B.cheap_checks else -1
        return rep

    def _fresh(self, tau: int) -> dict:
        """The definite answers new at τ, per partition."""
        B = self.B
        fresh = {}
        for k in range(len(self.templates)):
            full = self.layouts[k].full_mask
            for P, a in self.S[k].items():
                f = B.materialize(B.filter(a, (B.col("born") == B.lit(tau, INT)) &
                                           (B.col("ev") == B.lit(full, INT))))
                if not B.is_empty(f):
                    fresh[(k, P)] = f
        return fresh

    def _duplicate_facts(self, cols: dict, dup_frames: list) -> list:
        """The duplicate facts of D|τ (repeats inside the slice, and facts already in W)."""
        B = self.B
        out: list = []
        for p, seen in dup_frames:
            n = self.edb[p] - 1
            for r in B.rows(seen):
                out.append(Fact(p, tuple(r[acol(i)] for i in range(n)), r["t"]))
        for p, c in cols.items():
            n = self.edb[p] - 1
            if not isinstance(c, dict):  # a frame as read (stream.Slice): rare, so by rows
                rows = B.rows(c)
                c = {k: [r[k] for r in rows] for k in [acol(i) for i in range(n)] + ["t"]}
            ts = c["t"]
            if len(ts) <= 1:
                continue
            seen_keys: set = set()
            for j in range(len(ts)):
                key = (tuple(c[acol(i)][j] for i in range(n)), int(ts[j]))
                if key in seen_keys:
                    out.append(Fact(p, key[0], key[1]))
                seen_keys.add(key)
        return out

    # ================================================================== finish & add
    def _finish(self, k: int, P: Pattern, df, tau: int, ng_empty: bool = False):
        """Rows of template k with pattern P from (binding, ev, ng): drop invalid timestamps
        (negative, or below a pre-processing bound), compute exp/dlp/unb, keep those whose
        positive hypotheses are all potentially future w.r.t. τ (step 1), reduce nogoods."""
        B = self.B
        tp = self.templates[k]
        sch = self._schema(k, P)
        if df is None or B.is_empty(df):
            return None
        if tp.head.tvar is None and tp.head.toff < 0:
            return None
        if any(lp.tvar is None and lp.toff < 0 for lp in tp.lits):
            return None
        # every bound time term must be natural: per time variable v >= max(-offset), and
        # the pre-processing lower bounds (002 Example 13's "invalid timestamps")
        lows: dict = {}
        for t in [tp.head] + list(tp.lits):
            if t.tvar is not None and t.tvar in P:
                lows[t.tvar] = max(lows.get(t.tvar, -t.toff), -t.toff)
        for v, kmin in tp.time_min:
            if v in P:
                lows[v] = max(lows.get(v, kmin), kmin)
        conds = [B.col(vcol(v)) >= B.lit(lo, INT) for v, lo in sorted(lows.items())]
        conds += [domain_cond(B, B.col(vcol(v)), d) for v, d in tp.periodic if v in P]
        # δ of each positive literal with a bound time, under the pattern
        got = self._fused_deadlines(tp, P, df)
        dexprs: dict = {}
        tmp: list = []
        exps = []
        for j in (tp.pos if got is None else ()):
            lp = tp.lits[j]
            if lp.tvar is not None and lp.tvar not in P:
                continue
            sides = []
            for isvar, x in lp.args:
                if not isvar:
                    sides.append((CONST, x))
                elif x in P:
                    sides.append((COL, vcol(x)))
                else:
                    sides.append((CONST, None))
            key = (lp.pred, tuple(sides))
            dexpr = dexprs.get(key)
            if dexpr is None:
                df, dexpr, t2 = self.dplans[lp.pred].expr_static(B, df, sides, str(len(dexprs)))
                dexprs[key] = dexpr
                tmp.extend(t2)
            e = self._texpr(lp) + dexpr
            exps.append(B.when(B.has_bit(B.col("ev"), j), B.null(INT), e))
        unbs = [~B.has_bit(B.col("ev"), j) for j, lp in enumerate(tp.lits)
                if lp.tvar is not None and lp.tvar not in P]
        xs = [f"_x{i}" for i in range(len(exps))] if len(exps) > 1 else []
        if xs:  # each literal's deadline once (exp and dlp both read them)
            df = B.with_columns(df, dict(zip(xs, exps)))
            exps = [B.col(x) for x in xs]
        more = {"unb": B.any_of(unbs) if unbs else B.lit(False, BOOL), "born": B.lit(tau, INT)}
        if got is None:
            df = B.with_columns(df, {"exp": B.least(exps), "dlp": B.greatest(exps), **more})
        else:
            df, exps = B.with_columns(got[0], more), got[1]
        if xs:  # before _reduce_nogoods, whose Python rows are typed by column name
            df = B.drop(df, xs)
        if exps:
            conds.append(B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT)))
        if conds:
            df = B.filter(df, B.all_of(conds))
        if not ng_empty:
            df = self._reduce_nogoods(k, P, df)
        if df is None or B.is_empty(df):
            return None
        return self._sel(df, list(sch))

    def _fused_deadlines(self, tp, P: Pattern, df):
        """(df with exp and dlp, whether any literal has one) from the backend's fused
        kernel (ArraysBackend.deadlines), or None: _finish then builds them as
        expressions, the same values."""
        fused = getattr(self.B, "deadlines", None)
        if fused is None:
            return None
        lits = []
        for j in tp.pos:
            lp = tp.lits[j]
            if lp.tvar is not None and lp.tvar not in P:
                continue
            sides = [(CONST, x) if not isvar else ((COL, vcol(x)) if x in P else (CONST, None))
                     for isvar, x in lp.args]
            spec = self.dplans[lp.pred].lookup_spec(self.B, sides)
            if spec is None:
                return None
            lits.append((j, None if lp.tvar is None else vcol(lp.tvar), lp.toff, spec))
        out = fused(df, lits)
        return None if out is None else (out, bool(lits))

    def _reduce_nogoods(self, k: int, P: Pattern, df):
        """patterns.reduce_nogoods on every row: a nogood satisfied by the binding is dropped,
        one violated by it drops the row, the rest keep their unbound variables."""
        B = self.B
        lay = self.layouts[k]
        objs = [x for x in sorted(P) if lay.kinds[x] == OBJ]
        # a time value's nogood is always of the `*` form (layout.encode_nogood)
        times = self.multi_possible and any(lay.kinds[x] == INT for x in P)
        if not (objs or times) or (B.cheap_checks and not B.any_nonempty_list(df, "ng")):
            return df
        has = B.list_len(B.col("ng")) > B.lit(0, INT)
        rest = B.filter(df, has)
        plain = B.filter(df, ~has)
        if self.multi_possible:
            multi_flag = B.list_any_prefix(B.col("ng"), "*")
            multi = B.filter(rest, multi_flag)
            rest = B.filter(rest, ~multi_flag)
        else:
            multi = None
        out = [plain]
        if not objs:
            out.append(rest)
        elif not B.is_empty(rest):
            viol = []
            ng = B.col("ng")
            for x in objs:
                v = B.col(vcol(x))
                viol.append(B.list_contains(ng, B.concat_str([B.lit(f"{x}:", OBJ), v])))
                ng = B.list_drop_prefix(ng, f"{x}:")
            rest = B.with_columns(rest, {"_viol": B.any_of(viol), "ng": ng})
            out.append(B.drop(B.filter(rest, ~B.col("_viol")), ["_viol"]))
        if multi is not None and B.exists(multi):
            from reasoning.semantics.patterns import reduce_nogoods

            rows = []
            for r in B.rows(multi):
                a = row_to_answer(lay, r)
                red = reduce_nogoods(a.ng, a.b)
                if red is None:
                    continue
                r["ng"] = encode_nogoods(red)
                rows.append(r)
            if rows:
                out.append(B.from_rows(rows, {c: _kind(lay, c, rows)
                                              for c in B.columns(multi)}))
        return B.concat(out)

    def _add(self, k: int, P: Pattern, df, fresh_only: bool = False) -> None:
        """Insert rows into S (set semantics: an answer already there keeps its row).
        fresh_only: the rows cannot equal a row already there (step 1 of a full-seed
        template on validated facts: a kept row with a seeded binding has every seeded
        literal in E, so its fact arrived before and a new one would be a duplicate)."""
        B = self.B
        if df is None or B.is_empty(df):
            return
        keys = self._keys(P)
        if not self.may_ng[k]:  # every ng is empty: not a key (list keys cost ~15%)
            keys.remove("ng")
        df = B.unique(df, keys)
        cur = self.S[k].get(P)
        if fresh_only and cur is not None:
            self.S[k][P] = B.materialize(B.concat([cur, df]))
        elif cur is not None and not B.is_empty(cur):
            df = B.join(df, self._sel(cur, keys), keys, keys, how="anti", nulls_equal=True)
            if not B.is_empty(df):
                self.S[k][P] = B.materialize(B.concat([cur, df]))
        else:
            self.S[k][P] = B.materialize(df)

    def _put(self, new: dict, k: int, P: Pattern, df) -> None:
        if df is not None and not self.B.is_empty(df):
            new.setdefault((k, P), []).append(df)

    # ================================================================== step 1
    def _fact_filter(self, lp: LitPattern, F, spec):
        B = self.B
        for fc, c in spec.fact_eq_const:
            F = B.filter(F, B.col(fc) == (B.lit(c, INT) if fc == "t" else B.lit(c, OBJ)))
        for a, b in spec.fact_eq_cols:
            F = B.filter(F, B.col(a) == B.col(b))
        return F

    def _match(self, df, lp: LitPattern, P: Pattern, F):
        """Local-mgu extension (LitPattern.match) of every row by the facts F of lp's
        predicate: an inner join on the bound arguments, binding the unbound ones."""
        B = self.B
        spec = match_spec(lp, P)
        F = self._fact_filter(lp, F, spec)
        if B.is_empty(F):
            return None
        lkeys = [B.col(vc) for vc, _ in spec.keys]
        src = [fc for _, fc in spec.keys]
        if spec.frame_time_key is not None:
            x, off = spec.frame_time_key
            lkeys.append(B.col(vcol(x)) + B.lit(off, INT))
            src.append("t")
        names = [f"_mk{i}" for i in range(len(src))]
        binds = sorted(spec.binds.items())
        items = [B.alias(B.col(c), n) for c, n in zip(src, names)]
        items += [B.alias(B.col(fc) + B.lit(off, INT) if fc == "t" else B.col(fc), vcol(x))
                  for x, (fc, off) in binds]
        F = B.select(F, items)
        J = B.join(df, F, lkeys, names, how="inner")
        return B.drop(J, names)

    def _prep(self, cache: dict, lp: LitPattern, F, tag: str):
        """The facts F restricted to lp's constants, keyed for an equi-join: (frame with key
        columns _k<tag>_<i> and a marker _m<tag>, left key expressions)."""
        B = self.B
        lkeys, src = [], []
        sig = []
        for i, (isvar, x) in enumerate(lp.args):
            if isvar:
                lkeys.append(B.col(vcol(x)))
                src.append(acol(i))
            else:
                sig.append((acol(i), x))
        if lp.tvar is None:
            sig.append(("t", lp.toff))
        else:
            lkeys.append(self._texpr(lp))
            src.append("t")
        base_key = (id(F), tuple(sig))
        Fc = cache.get(base_key)
        if Fc is None:
            Fc = F
            for c, v in sig:
                Fc = B.filter(Fc, B.col(c) == (B.lit(v, INT) if c == "t" else B.lit(v, OBJ)))
            cache[base_key] = Fc
        names = [f"_k{tag}_{i}" for i in range(len(src))]
        R = B.select(Fc, [B.alias(B.col(c), n) for c, n in zip(src, names)] +
                     [B.alias(B.lit(True, BOOL), f"_m{tag}")])
        return R, lkeys, names

    def _present_all(self, df, k: int, P: Pattern, present: dict, skip: Optional[int] = None,
                     cache: Optional[dict] = None):
        """E' = Hσ ∩ (D|τ ∪ W): set the bit of every positive literal that is ground under P
        and present (one left join per literal — on the arrays backend a membership mark —,
        one projection for all)."""
        B = self.B
        tp = self.templates[k]
        if B.is_empty(df):
            return df
        cache = {} if cache is None else cache
        cols = B.columns(df)
        ev = B.col("ev")
        mark = getattr(B, "mark_matches", None)
        for j in tp.pos:
            lp = tp.lits[j]
            if j == skip or not ground_under(lp, P):
                continue
            F = present.get(lp.pred)
            if F is None or B.is_empty(F):
                continue
            R, lkeys, names = self._prep(cache, lp, F, str(j))
            if not lkeys:
                if B.exists(R):
                    ev = B.set_bit(ev, j)
                continue
            if B.cheap_checks and B.is_empty(R):
                continue  # no fact with the literal's constants: nothing to mark
            if mark is not None:  # R's keys are unique (facts): a mark, no gather
                df = mark(df, R, lkeys, names, f"_m{j}")
                hit = B.col(f"_m{j}")
            else:
                df = B.join(df, R, lkeys, names, how="left")
                hit = B.not_null(B.col(f"_m{j}"))
            # one OR per literal: `when(m, ev | bit, ev)` nested would repeat ev in both
            # branches, an expression (and Spark SQL text) of 2^m nodes — 8 ms a select at m = 8
            ev = B.bit_or(ev, B.when(hit, B.lit(1 << j, INT), B.lit(0, INT)))
        return B.select(df, [B.alias(ev, "ev") if c == "ev" else B.col(c) for c in cols])

    def _local_mgus(self, k: int, df, P: Pattern, skip: Optional[int], lookup: dict,
                    present: dict) -> list:
        """Local mgus (Def. 16) of every row's positive hypotheses against `lookup` (each
        unmatched literal either joins a fact or stays open), then E' = Hσ ∩ present:
        [(pattern, rows)]."""
        B = self.B
        tp = self.templates[k]
        frames = [(df, P)]
        for j in tp.pos:
            if j == skip:
                continue
            lp = tp.lits[j]
            nxt = []
            for G, bs in frames:
                if ground_under(lp, bs):
                    nxt.append((G, bs))
                    continue
                F = lookup.get(lp.pred)
                if F is not None and not B.is_empty(F) and not B.is_empty(G):
                    M = self._match(G, lp, bs, F)
                    if M is not None and not B.is_empty(M):
                        nxt.append((M, bs | literal_vars(lp)))
                nxt.append((G, bs))
            frames = self._by_pattern(nxt)
        cache: dict = {}
        return [(bs, self._present_all(G, k, bs, present, skip, cache)) for G, bs in frames]

    def _by_pattern(self, frames: list) -> list:
        """Frames of the same pattern of bound variables as one (their union): different
        subsets of matched literals often bind the same variables, and each frame costs the
        joins of every later literal — without this a template of m positive literals
        carries up to 2^m frames through the local mgus (a 1.8× faster tick on a small
        program with many templates, where the row engine was still 50× faster)."""
        B = self.B
        groups: dict = {}
        for G, bs in frames:
            groups.setdefault(bs, []).append(G)
        return [(Gs[0] if len(Gs) == 1 else B.concat(Gs), bs) for bs, Gs in groups.items()]

    def _seed(self, k: int, i: int, F, extra: Optional[dict] = None):
        """Bindings of template k from the facts F matching literal i: (pattern, rows with
        the pattern's columns, ev = {i}, ng = the template's nogoods)."""
        B = self.B
        tp = self.templates[k]
        lp = tp.lits[i]
        spec = match_spec(lp, Pattern())
        F = self._fact_filter(lp, F, spec)
        if B.is_empty(F):
            return None, None
        items = []
        for x in sorted(spec.binds):
            fc, off = spec.binds[x]
            e = B.col(fc) + B.lit(off, INT) if fc == "t" else B.col(fc)
            items.append(B.alias(e, vcol(x)))
        items.append(B.alias(B.lit(1 << i, INT), "ev"))
        items.append(B.alias(B.str_list(self.tpl_ng[k]), "ng"))
        return Pattern(spec.binds), B.select(F, items)

    def _step1a(self, k: int, i: int, F, present: dict, tau: int, new: dict) -> None:
        """Step 1(a): P_Q's template k seeded by the facts F of literal i's predicate."""
        P, S = self._seed(k, i, F)
        if S is None:
            return
        for P2, G in self._local_mgus(k, S, P, i, present, present):
            got = self._finish(k, P2, G, tau)
            self._put(new, k, P2, got)
            if self.exact.nlits[k] and got is not None:
                # answers made from a fact of D|τ ("past": seeded, exact.py)
                lay = self.layouts[k]
                self.seeded.update(row_to_answer(lay, r) for r in self.B.rows(got))

    def _flags(self, k: int, P: Pattern, A, D: dict, cache: dict):
        """Step 1(b)'s wake-up of the rows of partition (k, P): hit (a ground positive
        hypothesis arrived) and touched (a non-ground one may match a fact of D|τ) as
        expressions over marker columns joined to A."""
        B = self.B
        tp = self.templates[k]
        hits, touches = [], []
        for j in tp.pos:
            lp = tp.lits[j]
            F = D.get(lp.pred)
            if F is None:
                continue
            notev = ~B.has_bit(B.col("ev"), j)
            if ground_under(lp, P):
                R, lkeys, names = self._prep(cache, lp, F, f"h{j}")
                if lkeys:
                    A = B.join(A, R, lkeys, names, how="left")
                    hits.append(notev & B.not_null(B.col(f"_mh{j}")))
                elif B.exists(R):
                    hits.append(notev)
            elif lp.tvar is None:
                if lp.toff in set(B.values(F, "t")):
                    touches.append(notev)
            elif lp.tvar in P:
                key = ("times", id(F))
                Ft = cache.get(key)
                if Ft is None:
                    Ft = cache[key] = B.unique(B.select(F, [B.alias(B.col("t"), "_kt")]))
                R = B.select(Ft, [B.alias(B.col("_kt"), f"_kt{j}"),
                                  B.alias(B.lit(True, BOOL), f"_mw{j}")])
                A = B.join(A, R, [self._texpr(lp)], [f"_kt{j}"], how="left")
                touches.append(notev & B.not_null(B.col(f"_mw{j}")))
            else:
                touches.append(notev)
        return A, hits, touches

    def _pristine(self, k: int):
        B = self.B
        if self.tpl_ng[k]:
            return (B.col("ev") == B.lit(0, INT)) & (
                B.list_join(B.col("ng"), "\u0000") == B.lit("\u0000".join(self.tpl_ng[k]), OBJ))
        return (B.col("ev") == B.lit(0, INT)) & (B.list_len(B.col("ng")) == B.lit(0, INT))

    def _step1b(self, k: int, D: dict, present: dict, tau: int, new: dict,
                skip: Optional[Pattern] = None) -> None:
        """Step 1(b): answers of S_{τ-1} touched by D|τ evolve by local mgus against D|τ;
        untouched ones stay unless a positive hypothesis expired (`exp` ≤ τ)."""
        B = self.B
        live = B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT))
        cache: dict = {}
        for P in list(self.S[k]):
            if P == skip:
                continue
            A = self.S[k][P]
            if B.is_empty(A):
                continue
            if not self.templates[k].pos:
                continue  # no positive hypothesis: nothing arrives, nothing expires
            A, hits, touches = self._flags(k, P, A, D, cache)
            if not hits and not touches:
                self.S[k][P] = B.filter(A, live)
                continue
            hit = B.any_of(hits) if hits else B.lit(False, BOOL)
            act = hit | (B.any_of(touches) if touches else B.lit(False, BOOL))
            A = B.with_columns(A, {"_hit": hit, "_act": act, "_pri": self._pristine(k),
                                   "_live": live})
            keep = ((~B.col("_act")) & B.col("_live")) | (
                B.col("_pri") & (~B.col("_hit")) & B.col("_live"))
            evolve = B.col("_act") & (~B.col("_pri"))
            A = B.materialize(A)
            E = B.materialize(B.filter(A, evolve))
            self.S[k][P] = B.materialize(self._sel(B.filter(A, keep), list(self._schema(k, P))))
            if B.is_empty(E):
                continue
            E = self._sel(E, self._base(P))
            for P2, M in self._local_mgus(k, E, P, None, D, present):
                self._put(new, k, P2, self._finish(k, P2, M, tau))

    def _step1_full(self, k: int, D: dict, present: dict, window: dict, tau: int,
                    new: dict) -> None:
        """Steps 1(a) and 1(b) for a template whose every positive literal binds all its
        variables: the facts of D|τ give the seeded bindings (one table for the tick); the
        ground answers they hit are exactly those with a seeded binding and an open seeded
        literal.  Non-ground partitions (from steps 2 and 3) take the general 1(b)."""
        B = self.B
        tp = self.templates[k]
        G = self.all_vars[k]
        seeds, facts = [], []
        for i in tp.pos:
            F = D.get(tp.lits[i].pred)
            if F is None:
                continue
            P, S = self._seed(k, i, F)
            if S is not None and not B.is_empty(S):
                seeds.append(S)
                facts.append((i, F))
        vcols = [vcol(x) for x in sorted(G)]
        if seeds:
            # a seeded binding grounds every positive literal, and literal j's instance is in
            # D|τ iff literal j seeded it: the seed mask is E' ∩ D|τ, so only the window W
            # (disjoint from D|τ: duplicates are gone) is joined for the rest of E'
            if self._seeds_disjoint(tp, facts):
                Sd = B.concat(seeds)  # one literal per binding: the mask is its bit
                Sd = B.with_columns(B.select_cols(Sd, vcols + ["ev"]), {"smask": B.col("ev")})
            else:
                Sd = B.group_agg(B.concat(seeds), vcols, {"smask": B.agg_sum(B.col("ev"))},
                                 scalar=True)
                Sd = B.with_columns(Sd, {"ev": B.col("smask")})
            Sd = B.materialize(self._present_all(Sd, k, G, window))
        else:
            Sd = None
        # the ground partition: hits join the seeded bindings
        A = self.S[k].get(G)
        live = B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT))
        if A is not None and not B.is_empty(A):
            if Sd is not None:
                J = B.join(A, B.select(Sd, [B.col(c) for c in vcols + ["smask"]] +
                                       [B.alias(B.col("ev"), "pbits")]), vcols, vcols,
                           how="left")
                hit = B.not_null(B.col("smask")) & (
                    B.bit_and(B.col("smask"), B.bit_not(B.col("ev"))) != B.lit(0, INT))
                J = B.materialize(B.with_columns(J, {"_hit": hit, "_pri": self._pristine(k)}))
                self.S[k][G] = B.materialize(self._sel(B.filter(J, (~B.col("_hit")) & live),
                                                       list(self._schema(k, G))))
                E = B.materialize(B.filter(J, B.col("_hit") & (~B.col("_pri"))))
                if not B.is_empty(E):
                    E = B.select(E, [B.col(c) for c in vcols] + [
                        B.alias(B.bit_or(B.col("ev"), B.col("pbits")), "ev"), B.col("ng")])
                    self._put(new, k, G, self._finish(k, G, E, tau, ng_empty=True))
            else:
                self.S[k][G] = B.materialize(B.filter(A, live))
        if Sd is not None:
            Sd = B.select(Sd, [B.col(c) for c in vcols] + [
                B.col("ev"), B.alias(B.str_list(self.tpl_ng[k]), "ng")])
            self._put(new, k, G, self._finish(k, G, Sd, tau, ng_empty=not self.tpl_ng[k]))
        # other partitions: the general step 1(b)
        self._step1b(k, D, present, tau, new, skip=G)

    def _seeds_disjoint(self, tp: ETemplate, facts: list) -> bool:
        """No binding is seeded by two literals: each literal's facts give its own binding
        once (validated facts, a full-seed template), and the bindings' times T = t − off of
        two literals never meet (e.g. every fact of the slice on time: then T differs by
        the literals' offsets).  Decided from the slice's distinct times (a few values),
        where looking at the data is cheap; otherwise the seeds are merged by a group-by."""
        B = self.B
        if len(facts) < 2:
            return True
        lits = [tp.lits[i] for i, _ in facts]
        if not B.cheap_checks or any(lp.tvar is None or lp.tvar != lits[0].tvar
                                     for lp in lits):
            return False
        seen: set = set()
        times: dict = {}
        for (i, F), lp in zip(facts, lits):
            ts = times.get(id(F))
            if ts is None:
                ts = times[id(F)] = B.values(F, "t")
            mine = {t - lp.toff for t in ts}
            if seen & mine:
                return False
            seen |= mine
        return True

    # ================================================================== step 2
    def _step2(self, k: int, tau: int, present: Optional[dict] = None) -> None:
        """Step 2: ⟨P, θσ, ∅, Hσ⟩ with σ = [T := τ] if Hσ's positive part is potentially
        future (one row per template: built by the row engine's own `_finish`)."""
        from reasoning.columnar.fallback import answer_rows

        B = self.B
        tp = self.templates[k]
        h = tp.head
        b = [None] * len(tp.names)
        if h.tvar is None:
            if h.toff != tau:
                return
        else:
            b[h.tvar] = tau - h.toff
        if present is not None and self.exact.arrived_ground(
                tp, tuple(b), lambda p, args, t: self._present_has(present, p, args, t)):
            return
        a = self.tool._finish(tp, tuple(b), frozenset(), tp.nogoods, tau)
        self.tool._info.clear()
        if a is None:
            return
        P = Pattern(i for i, v in enumerate(a.b) if v is not None)
        self._add(k, P, B.from_rows(answer_rows(self, k, P, [a], tau, tau), self._schema(k, P)))

    def _present_has(self, present: dict, pred: str, args: tuple, t: int) -> bool:
        """p(args, t) ∈ W ∪ D|τ (a few look-ups per template and tick, for step 2)."""
        B = self.B
        F = present.get(pred)
        if F is None or B.is_empty(F):
            return False
        cond = B.col("t") == B.lit(t, INT)
        for i, a in enumerate(args):
            cond = cond & (B.col(acol(i)) == B.lit(a, OBJ))
        return B.exists(B.filter(F, cond))

    # ================================================================== step 3
    def _step3(self, tau: int) -> None:
        """Step 3: negated hypotheses in the topological order of the p_t, one wave per
        order key (nodes with the same key never depend on each other)."""
        B = self.B
        keys: set = set()
        for k, tp in enumerate(self.templates):
            for j in tp.neg:
                lp = tp.lits[j]
                lvl = self.strat.level.get(lp.pred, 0)
                slope = self.strat.slope.get(lp.pred, 0)
                phi = self.strat.phi.get(lp.pred, 0)
                for P, A in self.S[k].items():
                    if lp.tvar is not None and lp.tvar not in P:
                        continue
                    open_ = B.filter(A, ~B.has_bit(B.col("ev"), j))
                    if B.is_empty(open_):
                        continue
                    if slope == 0 or lp.tvar is None:
                        t0 = lp.toff if lp.tvar is None else 0
                        keys.add((lvl, slope * t0 + phi))
                    else:
                        ts = B.values(B.select(open_, [B.alias(self._texpr(lp), "_t")]), "_t")
                        keys.update((lvl, slope * t + phi) for t in ts)
        for key in sorted(keys):
            Lcache: dict = {}
            for k, tp in enumerate(self.templates):
                for j in tp.neg:
                    lp = tp.lits[j]
                    if self.strat.level.get(lp.pred, 0) != key[0]:
                        continue
                    slope = self.strat.slope.get(lp.pred, 0)
                    phi = self.strat.phi.get(lp.pred, 0)
                    tcond = None
                    if slope == 0 or lp.tvar is None:
                        t0 = lp.toff if lp.tvar is None else 0
                        if slope * t0 + phi != key[1]:
                            continue
                    else:
                        if (key[1] - phi) % slope:
                            continue
                        tcond = self._texpr(lp) == B.lit((key[1] - phi) // slope, INT)
                    for P in list(self.S[k]):
                        if lp.tvar is not None and lp.tvar not in P:
                            continue
                        A = self.S[k][P]
                        cond = ~B.has_bit(B.col("ev"), j)
                        if tcond is not None:
                            cond = cond & tcond
                        R = B.materialize(B.filter(A, cond))
                        if B.is_empty(R):
                            continue
                        rest = B.filter(A, ~cond)
                        L = Lcache.get(lp.pred)  # noqa
                        if L is None:
                            L = Lcache[lp.pred] = self._L_frames(lp.pred, tau)
                        kept, pieces = self._refine(k, j, P, R, L, tau)
                        self.S[k][P] = B.materialize(
                            B.concat([rest, kept]) if kept is not None else rest)
                        for P2, df in pieces:
                            self._add(k, P2, df)

    def _head_items(self, k: int, prefix: str = "") -> list:
        B = self.B
        head = self.templates[k].head
        items = [B.alias(B.col(vcol(x)) if isvar else B.lit(x, OBJ), f"{prefix}la{pos}")
                 for pos, (isvar, x) in enumerate(head.args)]
        items.append(B.alias(self._texpr(head), f"{prefix}lt"))
        return items

    def _L_frames(self, pred: str, tau: int) -> list:
        """Step 3(a): the answers of pred (heads instantiated: la<i>, lt; definite: ldef;
        carries nogoods: lng; least head time not split off, for a head time unbound:
        lmin): [(template, bound head variables, frame)]."""
        B = self.B
        out = []
        for k2 in self.by_head.get(pred, ()):
            tp2 = self.templates[k2]
            head = tp2.head
            hv = literal_vars(head)
            full = self.layouts[k2].full_mask
            for P2, A in self.S[k2].items():
                if B.is_empty(A):
                    continue
                items = []
                for pos, (isvar, x) in enumerate(head.args):
                    if not isvar:
                        items.append(B.alias(B.lit(x, OBJ), f"la{pos}"))
                    elif x in P2:
                        items.append(B.alias(B.col(vcol(x)), f"la{pos}"))
                if head.tvar is None or head.tvar in P2:
                    items.append(B.alias(self._texpr(head), "lt"))
                items.append(B.alias(B.col("ev") == B.lit(full, INT), "ldef"))
                items.append(B.alias(B.list_len(B.col("ng")) > B.lit(0, INT), "lng"))
                lmin = self._head_floor(k2, tau) if head.tvar is not None and \
                    head.tvar not in P2 else None
                if lmin is not None:
                    items.append(B.alias(lmin, "lmin"))
                out.append((k2, P2 & hv, B.materialize(B.select(A, items))))
        return out

    def _head_floor(self, k: int, tau: int):
        """The least head time an answer with its head time unbound still proves at step 3
        of τ (exact.Exactness.split_below, as an expression; null: every time), or None."""
        B = self.B
        tp = self.templates[k]
        ex = self.exact
        lits = [i for i in ex.flits[k] if tp.lits[i].tvar == tp.head.tvar]
        if not lits:
            return None
        pos = sum(1 << i for i in tp.pos)
        ev = B.col("ev")
        old = B.when(B.col("born") == B.lit(tau, INT), B.null(INT), B.lit(tau - 1, INT))
        at = B.when(B.bit_and(ev, pos) != B.lit(0, INT), B.lit(tau, INT), old)
        terms = [B.when(B.has_bit(ev, i), B.null(INT),
                        at + B.lit(1 - tp.lits[i].toff + tp.head.toff, INT)) for i in lits]
        return B.when(ev == B.lit(0, INT), B.null(INT), B.greatest(terms))

    def _covers(self, R, lp: LitPattern, h_bound: Pattern, L: list):
        """The covers (regions.cover_of) of each ref's negated literal by the answers of L,
        as rows (_rid, ldef, lng, approx, eqv); eqv is the value the single unbound variable
        must take (null: every instance is covered)."""
        B = self.B
        parts = []
        self._approx = False
        unb = sorted({x for isvar, x in lp.args if isvar} - h_bound)
        for k2, l_bound, F in L:
            head = self.templates[k2].head
            if head.tvar is None:
                l_time = ("C", head.toff)
            elif head.tvar in l_bound:
                l_time = ("L", "lt")
            else:
                l_time = None
            spec = cover_spec(lp, h_bound, head, l_bound, ("R", "_ht"), l_time)
            if spec is None:
                continue
            self._approx = self._approx or spec.approx
            Rf, Lf = R, F
            lkeys, rkeys = [], []
            for a, b in spec.conds:
                if a[0] == "L" and b[0] == "R":
                    a, b = b, a
                if a[0] == "R" and b[0] == "L":
                    lkeys.append(a[1])
                    rkeys.append(b[1])
                elif a[0] == "R" or b[0] == "R":
                    Rf = B.filter(Rf, self._side_expr(a) == self._side_expr(b))
                else:
                    Lf = B.filter(Lf, self._side_expr(a) == self._side_expr(b))
            if B.is_empty(Rf) or B.is_empty(Lf):
                continue
            side = spec.eqs.get(unb[0]) if unb else None
            floor = l_time is None and "lmin" in B.columns(Lf)  # "past" (exact.py)
            lcols = sorted(set(rkeys) | ({side[1]} if side and side[0] == "L" else set())
                           | {"ldef", "lng"} | ({"lmin"} if floor else set()))
            Lsel = B.select(Lf, [B.alias(B.col(c), "_L_" + c) for c in lcols])
            rcols = sorted({"_rid"} | set(lkeys) | ({side[1]} if side and side[0] == "R"
                                                    else set()) | ({"_ht"} if floor else set()))
            J = B.join(self._sel(Rf, rcols), Lsel, lkeys, ["_L_" + c for c in rkeys],
                       how="inner")
            if floor:
                J = B.filter(J, B.is_null(B.col("_L_lmin")) |
                             (B.col("_ht") >= B.col("_L_lmin")))
            if side is None:
                eqv = B.null(OBJ)
            elif side[0] == "L":
                eqv = B.col("_L_" + side[1])
            else:
                eqv = self._side_expr(side)
            J = B.select(J, [B.col("_rid"), B.alias(B.col("_L_ldef"), "ldef"),
                             B.alias(B.col("_L_lng"), "lng"),
                             B.alias(B.lit(spec.approx, BOOL), "approx"),
                             B.alias(eqv, "eqv")])
            parts.append(J)
        return parts

    def _side_expr(self, side):
        B = self.B
        if side[0] == "C":
            return B.lit(side[1], INT if isinstance(side[1], int) else OBJ)
        return B.col(side[1])

    def _refine(self, k: int, j: int, P: Pattern, R, L: list, tau: int):
        """Steps 3(b)-(c) for negated literal j of template k on the refs R (partition P, ¬h
        open at this wave): (unchanged refs, [(pattern, new pieces)])."""
        B = self.B
        tp = self.templates[k]
        lp = tp.lits[j]
        sch = list(self._schema(k, P))
        hvars = {x for isvar, x in lp.args if isvar}
        h_bound = Pattern(hvars & P)
        unb = sorted(hvars - P)
        R = B.with_row_id(R, "_rid")
        R = B.with_columns(R, {"_ht": self._texpr(lp)})
        complex_ = []
        if len(unb) >= 2:
            complex_.append(R)
            R = None
        elif unb and self.multi_possible:  # a nogood on several variables (`*`)
            mflag = B.list_any_prefix(B.col("ng"), "*")
            mx = B.filter(R, mflag)
            if not B.is_empty(mx):
                complex_.append(mx)
                R = B.filter(R, ~mflag)
        kept = None
        out: list = []
        if R is not None and not B.is_empty(R):
            kept, out = self._refine_simple(k, j, P, R, L, tau, h_bound, unb, complex_)
        if complex_:
            from reasoning.columnar.fallback import refine_rows

            Cx = B.concat([self._sel(f, sch) for f in complex_])
            kept_c, new_c = refine_rows(self, k, j, P, Cx, tau)
            if kept_c is not None:
                kept = kept_c if kept is None else B.concat([kept, kept_c])
            out.extend(new_c)
        return kept, out

    def _refine_simple(self, k, j, P, R, L, tau, h_bound, unb, complex_):
        B = self.B
        tp = self.templates[k]
        lp = tp.lits[j]
        sch = list(self._schema(k, P))
        bit = 1 << j
        Fl, Tr = B.lit(False, BOOL), B.lit(True, BOOL)
        parts = self._covers(R, lp, h_bound, L)
        C = B.concat(parts) if parts else None
        maybe = any(self.may_ng[k2] for k2, _, _ in L) or self._approx
        if C is not None and not B.is_empty(C):
            if maybe and self._any_flag(C):
                bad = B.filter(C, B.col("lng") | B.col("approx"))
                ids = B.unique(self._sel(bad, ["_rid"]))
                complex_.append(B.join(R, ids, ["_rid"], ["_rid"], how="semi"))
                R = B.join(R, ids, ["_rid"], ["_rid"], how="anti")
                C = B.join(C, ids, ["_rid"], ["_rid"], how="anti")
                if B.is_empty(R):
                    return None, []
        else:
            C = None
        future = B.col("_ht") > B.lit(tau, INT)
        out: list = []
        if not unb:
            # h is ground: every cover is all of h
            if C is None or B.is_empty(C):
                R = B.with_columns(R, {"_dt": Fl, "_at": Fl})
            else:
                mark = getattr(B, "mark_rids", None)  # (the arrays backend: no group-by)
                marked = mark(R, C, {"_dt": "ldef", "_at": None}) if mark else None
                if marked is not None:
                    R = marked
                else:
                    agg = B.group_agg(C, ["_rid"], {"_dt": B.agg_any(B.col("ldef")),
                                                     "_at": B.agg_any(Tr)}, scalar=True)
                    R = B.join(R, agg, ["_rid"], ["_rid"], how="left")
                    R = B.with_columns(R, {"_dt": B.coalesce([B.col("_dt"), Fl]),
                                           "_at": B.coalesce([B.col("_at"), Fl])})
            kept = self._sel(B.filter(R, (~B.col("_dt")) & (future | B.col("_at"))), sch)
            go = B.filter(R, (~B.col("_dt")) & (~future) & (~B.col("_at")))
            if not B.is_empty(go):
                # 3(c): no answer of p_t unifies: ¬h moves to E (binding unchanged)
                out.append((P, B.select(go, [B.alias(B.bit_or(B.col("ev"), B.lit(bit, INT)),
                                                     "ev") if c == "ev" else
                                             (B.alias(B.lit(tau, INT), "born") if c == "born"
                                              else B.col(c)) for c in sch])))
            return kept, out
        x = unb[0]
        pref = f"{x}:"
        if C is not None and not B.is_empty(C):
            agg = B.group_agg(C, ["_rid"], {
                "_dt": B.agg_any(B.col("ldef") & B.is_null(B.col("eqv"))),
                "_at": B.agg_any(B.is_null(B.col("eqv"))),
                "_dv": B.agg_distinct(B.when(B.col("ldef"), B.col("eqv"), B.null(OBJ))),
                "_av": B.agg_distinct(B.col("eqv")),
            })
            R = B.join(R, agg, ["_rid"], ["_rid"], how="left")
            R = B.with_columns(R, {
                "_dt": B.coalesce([B.col("_dt"), Fl]), "_at": B.coalesce([B.col("_at"), Fl]),
                "_dv": B.coalesce([B.col("_dv"), B.empty_list()]),
                "_av": B.coalesce([B.col("_av"), B.empty_list()])})
        else:
            R = B.with_columns(R, {"_dt": Fl, "_at": Fl, "_dv": B.empty_list(),
                                   "_av": B.empty_list()})
        nodef = B.list_len(B.col("_dv")) == B.lit(0, INT)
        same = (~B.col("_dt")) & nodef & (future | B.col("_at"))
        R = B.with_columns(R, {"_same": same})
        kept = self._sel(B.filter(R, B.col("_same")), sch)
        ch = B.filter(R, (~B.col("_same")) & (~B.col("_dt")))
        if B.is_empty(ch):
            return kept, out
        pieces = []
        stay = B.filter(ch, future | B.col("_at"))
        if not B.is_empty(stay):  # 3(b) only (t > τ), or every instance still provable:
            # the instances a definite answer proves are refuted, X ∉ def values
            # (an answer whose X ∉ … holds them all already is unchanged: it keeps its
            # birth tick, as the row engine keeps the answer itself — exact.py reads it)
            stay = B.with_columns(stay, {"_ng1": self._union_prefixed(B.col("ng"),
                                                                        B.col("_dv"), pref)})
            ng1 = B.col("_ng1")  # (a column: the expression is not evaluated twice)
            born = B.when(B.list_len(ng1) == B.list_len(B.col("ng")), B.col("born"),
                          B.lit(tau, INT))
            pieces.append(B.select(stay, [B.alias(ng1, "ng") if c == "ng" else
                                          (B.alias(born, "born") if c == "born"
                                           else B.col(c)) for c in sch]))
        go = B.filter(ch, (~future) & (~B.col("_at")))
        if not B.is_empty(go):
            # 3(c): outside every cover ¬h moves to E; inside, X is bound to each value.
            # _dv ⊆ _av, so ng ∪ X:_av is _ng1 ∪ X:_av without sorting _ng1's values twice
            # (the schematic answer of a 10⁶-fact tick has 6 · 10⁵ of them)
            pieces.append(B.select(go, [
                B.alias(self._union_prefixed(B.col("ng"), B.col("_av"), pref), "ng")
                if c == "ng" else
                (B.alias(B.bit_or(B.col("ev"), B.lit(bit, INT)), "ev") if c == "ev" else
                 (B.alias(B.lit(tau, INT), "born") if c == "born" else B.col(c)))
                for c in sch]))
            G = B.filter(go, B.list_len(B.col("_av")) > B.lit(0, INT))
            if not B.is_empty(G):
                # X bound to each value of its covers (_av) that is neither a definite
                # answer's (_dv) nor excluded by the row's nogoods — taken from the covers'
                # rows, not by exploding the lists (_av holds 10⁴-10⁵ devices' names)
                base = self._base(P)
                rid = ["_rid"]
                CG = B.join(B.filter(C, B.not_null(B.col("eqv"))), B.select(G, [B.col("_rid")]),
                            rid, rid, how="semi")
                vals = B.unique(B.select(CG, [B.col("_rid"), B.alias(B.col("eqv"), "_c")]))
                exc = [B.select(B.filter(CG, B.col("ldef")),
                                [B.col("_rid"), B.alias(B.col("eqv"), "_c")])]
                if not B.cheap_checks or B.any_nonempty_list(G, "ng"):
                    mine = B.explode(B.select(G, [B.col("_rid"), B.alias(
                        B.list_strip_prefix(B.col("ng"), pref), "_c")]), "_c")
                    exc.append(B.filter(mine, B.not_null(B.col("_c"))))
                exc = B.concat(exc)
                if not B.is_empty(exc):
                    vals = B.join(vals, exc, ["_rid", "_c"], ["_rid", "_c"], how="anti")
                ngk = B.list_norm(B.list_drop_prefix(B.col("ng"), pref))  # other variables'
                ins = B.join(vals, B.select(G, [B.col(c) for c in ["_rid"] + base
                                                if c != "ng"] + [B.alias(ngk, "ng")]),
                             rid, rid, how="inner")
                P2 = P | {x}
                ins = B.select(ins, [B.alias(B.col("_c"), vcol(c_)) if c_ == x else
                                     B.col(vcol(c_)) for c_ in sorted(P2)] +
                               [B.col("ev"), B.col("ng")])
                out.append((P2, self._finish(k, P2, ins, tau)))
        if pieces:
            out.append((P, B.concat(pieces)))
        return kept, out

    def _union_prefixed(self, ng, vals, prefix: str):
        """ng ∪ {prefix + v : v ∈ vals}, normalised (step 3(b)-(c)'s new nogoods X:c)."""
        B = self.B
        fused = getattr(B, "list_union_prefixed", None)
        if fused is not None:
            return fused(ng, vals, prefix)
        return B.list_norm(B.list_concat(ng, B.list_prefix(vals, prefix)))

    def _any_flag(self, C) -> bool:
        B = self.B
        return bool(B.col_max(B.select(C, [B.alias(B.col("lng") | B.col("approx"), "_f")]),
                              "_f"))

    # ================================================================== forgetting
    def _drop_redundant(self, fresh: dict) -> None:
        """Non-definite derivations of a ground answer that just became definite are
        dropped (bounded state; 3(b) refutes through the definite one)."""
        B = self.B
        by_pred: dict = {}
        for (k, P), f in fresh.items():
            head = self.templates[k].head
            if not literal_vars(head) <= P:
                continue
            n = len(head.args)
            H = B.select(f, self._head_items(k, prefix="_r") + [B.alias(B.lit(True, BOOL),
                                                                         "_rnd")])
            by_pred.setdefault((head.pred, n), []).append(H)
        for (pred, n), hs in by_pred.items():
            H = B.unique(B.concat(hs))
            rcols = [f"_rla{p}" for p in range(n)] + ["_rlt", "_rnd"]
            for k2 in self.by_head.get(pred, ()):
                head2 = self.templates[k2].head
                if not any(literal_vars(head2) <= P2 for P2 in self.S[k2]):
                    continue
                full = self.layouts[k2].full_mask
                lkeys = [B.col(vcol(x)) if isvar else B.lit(x, OBJ) for isvar, x in head2.args]
                lkeys += [self._texpr(head2), B.col("ev") != B.lit(full, INT)]
                for P2 in list(self.S[k2]):
                    if not literal_vars(head2) <= P2:
                        continue
                    A = self.S[k2][P2]
                    self.S[k2][P2] = B.materialize(
                        self._sel(B.join(A, H, lkeys, rcols, how="anti"), B.columns(A)))

    def _forget(self, tau: int) -> None:
        """Bounded state (000 §7): a definite answer is emitted once, then dropped as soon as
        no negated hypothesis created later can refer to it."""
        B = self.B
        for k, tp in enumerate(self.templates):
            pred = tp.head.pred
            full = B.col("ev") == B.lit(self.layouts[k].full_mask, INT)
            for P, A in list(self.S[k].items()):
                if B.is_empty(A):
                    del self.S[k][P]
                    continue
                if pred not in self.retention:
                    drop = full
                else:
                    lag = self.retention[pred]
                    if lag is None or (tp.head.tvar is not None and tp.head.tvar not in P):
                        continue
                    ht = self._texpr(tp.head)
                    drop = full & (ht + B.lit(lag, INT) <= B.lit(tau, INT))
                A = B.materialize(B.filter(A, ~drop))
                if B.is_empty(A):
                    del self.S[k][P]
                else:
                    self.S[k][P] = A

    # ================================================================== views
    def answers(self, frames: Optional[dict] = None) -> list:
        """S_τ as row-engine Answers (tests, fallback, rendering of rare options)."""
        B = self.B
        out = []
        items = frames.items() if frames is not None else (
            ((k, P), A) for k in range(len(self.templates)) for P, A in self.S[k].items())
        for (k, P), A in items:
            lay = self.layouts[k]
            out.extend(row_to_answer(lay, r) for r in B.rows(A))
        return out

    def window_facts(self) -> list:
        """The facts of W (arrived, still future-possible by timestamp)."""
        B = self.B
        out = []
        for p, w in self.W.items():
            n = self.edb[p] - 1
            for r in B.rows(w):
                out.append(Fact(p, tuple(r[acol(i)] for i in range(n)), r["t"]))
        return out

    def load_window(self, facts: Iterable) -> None:
        """Replace W (facts with their δ recomputed)."""
        B = self.B
        by: dict = {}
        for f in facts:
            by.setdefault(f.pred, []).append(f)
        for p in list(self.W):
            self.W[p] = B.empty(fact_schema(self.edb[p] - 1, window=True))
        for p, fs in by.items():
            if p not in self.edb:
                self.edb[p] = len(fs[0].args) + 1
                self.dplans[p] = DelayPlan(self.delays, p)
            n = self.edb[p] - 1
            rows = [{**{acol(i): f.args[i] for i in range(n)}, "t": f.time,
                     "wexp": f.time + self.delays.ground(p, f.args)} for f in fs]
            self.W[p] = B.from_rows(rows, fact_schema(n, window=True))

    def row_view(self) -> RowEngine:
        """The row engine holding S_τ (for the rare paths that use its algorithms)."""
        eng = RowEngine(self.cp, self.forget)
        eng.tau = self.tau
        for a in self.answers():
            eng.add(a, self.tau)
        eng._info.clear()
        eng.fresh_definite = set()
        return eng

    def load_answers(self, answers: Iterable, tick: int) -> None:
        """Replace S by the given row-engine Answers (exp/dlp/unb recomputed), at tick."""
        from reasoning.columnar.fallback import answer_rows

        B = self.B
        by: dict = {}
        for a in answers:
            P = Pattern(i for i, v in enumerate(a.b) if v is not None)
            by.setdefault((a.tid, P), []).append(a)
        self.S = [{} for _ in self.templates]
        for (k, P), lst in by.items():
            rows = answer_rows(self, k, P, lst, tick, born=-1)
            self.S[k][P] = B.from_rows(rows, self._schema(k, P))
        self.tau = tick


def _kind(lay: Layout, c: str, rows: Optional[list] = None) -> str:
    """The kind of column c of a template's table; a working column (an expiry term, a
    delay) by its values in rows (an int column typed as an object one made its numbers
    strings, or on the arrays backend interned them as strings)."""
    if c.startswith("v") and c[1:].isdigit():
        return lay.kinds[int(c[1:])]
    if c in META_KINDS or rows is None:
        return META_KINDS.get(c, OBJ)
    v = next((r[c] for r in rows if r.get(c) is not None), None)
    return BOOL if isinstance(v, bool) else INT if isinstance(v, int) else OBJ


# above every value a time variable takes (times below 2^60, stream.MAX_TIME, plus program
# offsets of at most 18 digits): an lrp's numbers past it (an offset, period or until made
# by the CRT from two large periods) do not fit the plans' 64-bit integers, nor matter
BEYOND = 1 << 62


def lrp_cond(B, e, a: Lrp):
    """e ∈ a as a backend condition (003 §2's lrp with its constraints)."""
    if a.offset >= BEYOND:
        return B.lit(False, BOOL)
    cond = e >= B.lit(a.offset, INT)
    if a.until is not None and a.until < BEYOND:
        cond = cond & (e <= B.lit(a.until, INT))
    if a.period == 0 or a.period >= BEYOND:  # only its first time is reachable
        return cond & (e == B.lit(a.offset, INT))
    if a.period > 1:
        cond = cond & (B.pmod(e - B.lit(a.offset, INT), a.period) == B.lit(0, INT))
    return cond


def domain_cond(B, e, d: TimeDomain):
    """e in the time domain d (periodic.py): in its allowed lrp and in none excluded."""
    conds = [] if d.allowed is None else [lrp_cond(B, e, d.allowed)]
    conds += [~lrp_cond(B, e, x) for x in d.excluded]
    return B.all_of(conds) if conds else B.lit(True, BOOL)
