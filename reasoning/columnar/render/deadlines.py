"""The printed deadlines: when t + δ settles an answer's negated hypotheses (002 Def. 5)."""
from __future__ import annotations

from reasoning.semantics.explain import static_horizons
from reasoning.columnar.layout import BOOL, INT, vcol
from reasoning.columnar.step3_negation import l_items
from reasoning.columnar.step3_refine import cover_join, head_time
from reasoning.columnar.unify import cover_spec, literal_vars


class Deadlines:
    """The deadlines of a ColumnarEngine's frames (explain.py's Explainer.deadline) as joins
    over the answers of the negated hypotheses' predicates, one wave per order key of the
    T-stratification (the answers a deadline depends on have smaller keys)."""

    def __init__(self, eng, stats: dict):
        """eng: the engine whose frames are read, on its own backend; stats: the renderer's
        counters (python_rows counts the rows whose deadline Explainer computes)."""
        self.eng = eng
        self.B = eng.B
        self.rel = static_horizons(eng.tool)
        self.stats = stats

    def deadlines(self, frames: dict, tau: int) -> dict:
        """(k, P) -> the frame with a `dl` column (Explainer.deadline; null: definite or
        unbounded)."""
        B = self.B
        eng = self.eng
        final: dict = {}
        pending: dict = {}
        for (k, P), df in frames.items():
            if B.is_empty(df):
                continue
            tp = eng.templates[k]
            full = eng.layouts[k].full_mask
            fused = self._fused_deadlines(k, P, df, tau)
            if fused is not None:
                done, pend = fused
                if pend is not None:
                    pending[(k, P)] = pend
                final[(k, P)] = [done]
                continue
            definite = B.col("ev") == B.lit(full, INT)
            parts = [B.lit(tau, INT), B.col("dlp")]
            nulls = [B.col("unb")]
            needs = []
            for j in tp.neg:
                lp = tp.lits[j]
                if lp.tvar is not None and lp.tvar not in P:
                    continue  # unbound time: counted in unb
                open_ = ~B.has_bit(B.col("ev"), j)
                t = eng._texpr(lp)
                r = self.rel.get(lp.pred, 0)
                if r is None:
                    nulls.append(open_ & (t > B.lit(tau, INT)))
                else:
                    parts.append(B.when(open_ & (t > B.lit(tau, INT)), t + B.lit(r, INT),
                                        B.null(INT)))
                needs.append(open_ & (t <= B.lit(tau, INT)))
            dl0 = B.when(definite | B.any_of(nulls), B.null(INT), B.greatest(parts))
            df = B.with_columns(df, {"dl": dl0, "_bad": B.any_of(nulls) & ~definite,
                                     "_needs": (~definite) & B.any_of(needs) if needs
                                     else B.lit(False, BOOL)})
            if needs:
                pend = B.filter(df, B.col("_needs") & ~B.col("_bad"))
                done = B.filter(df, ~(B.col("_needs") & ~B.col("_bad")))
                if not B.is_empty(pend):
                    pending[(k, P)] = pend
            else:
                done = df
            final[(k, P)] = [B.drop(done, ["_bad", "_needs"])]
        if pending:
            self._deadline_waves(final, pending, tau)
        return {kp: B.concat(fs) for kp, fs in final.items()}

    def _fused_deadlines(self, k: int, P, df, tau: int):
        """deadlines' first pass for one frame by the backend's fused kernel
        (ArraysBackend.render_deadlines): (the rows done, with dl; the rows that need a
        negated predicate's deadline, or None), or None: the expressions then."""
        fused = getattr(self.B, "render_deadlines", None)
        if fused is None:
            return None
        eng = self.eng
        tp = eng.templates[k]
        lits = []
        for j in tp.neg:
            lp = tp.lits[j]
            if lp.tvar is not None and lp.tvar not in P:
                continue  # unbound time: counted in unb
            r = self.rel.get(lp.pred, 0)
            lits.append((j, None if lp.tvar is None else vcol(lp.tvar), lp.toff,
                         -1 if r is None else r))
        return fused(df, eng.layouts[k].full_mask, tau, lits)

    def _head_key(self, k: int):
        eng = self.eng
        head = eng.templates[k].head
        st = eng.strat
        lvl, slope, phi = st.level.get(head.pred, 0), st.slope.get(head.pred, 0), \
            st.phi.get(head.pred, 0)
        return lvl, slope, phi, head

    def _deadline_waves(self, final: dict, pending: dict, tau: int) -> None:
        B = self.B
        eng = self.eng
        keys: dict = {}
        for (k, P), df in pending.items():
            lvl, slope, phi, head = self._head_key(k)
            if slope == 0 or head.tvar is None or head.tvar not in P:
                kk = (lvl, phi if head.tvar is None or head.tvar in P or slope == 0
                      else -10 ** 18)
                keys.setdefault(kk, []).append(((k, P), None))
            else:
                ts = B.values(B.select(df, [B.alias(eng._texpr(head), "_t")]), "_t")
                for t in ts:
                    keys.setdefault((lvl, slope * t + phi), []).append(((k, P), t))
        for key in sorted(keys):
            for (k, P), t in keys[key]:
                df = pending[(k, P)]
                if t is not None:
                    df = B.filter(df, eng._texpr(eng.templates[k].head) == B.lit(t, INT))
                if B.is_empty(df):
                    continue
                final[(k, P)].append(self._deadline_L(k, P, df, final, tau))

    def _L(self, pred: str, final: dict) -> list:
        B = self.B
        eng = self.eng
        out = []
        for k2 in eng.by_head.get(pred, ()):
            head = eng.templates[k2].head
            for (kk, P2), fs in final.items():
                if kk != k2:
                    continue
                A = B.concat(fs)
                if B.is_empty(A):
                    continue
                items = l_items(eng, k2, P2) + [B.alias(B.col("dl"), "ldl")]
                out.append((k2, P2 & literal_vars(head), B.select(A, items),
                            eng.part_may_ng(k2, P2)))
        return out

    def _deadline_L(self, k: int, P, df, final: dict, tau: int):
        """Deadlines of rows whose negated hypotheses at t ≤ τ wait for answers of L."""
        B = self.B
        eng = self.eng
        tp = eng.templates[k]
        df = B.with_row_id(df, "_rid")
        aggs = []
        python_ids = []
        for j in tp.neg:
            lp = tp.lits[j]
            if lp.tvar is not None and lp.tvar not in P:
                continue
            R = B.filter(df, (~B.has_bit(B.col("ev"), j)) &
                         (eng._texpr(lp) <= B.lit(tau, INT)))
            if B.is_empty(R):
                continue
            R = B.with_columns(R, {"_ht": eng._texpr(lp)})
            hvars = {x for isvar, x in lp.args if isvar}
            h_bound = frozenset(hvars & P)
            for k2, l_bound, F, may_ng in self._L(lp.pred, final):
                spec = cover_spec(lp, h_bound, eng.templates[k2].head, l_bound, ("R", "_ht"),
                                  head_time(eng, k2, l_bound))
                if spec is None:
                    continue
                Rf, Lf, lkeys, rkeys = cover_join(eng, spec, R, F)
                if B.is_empty(Rf) or B.is_empty(Lf):
                    continue
                Lsel = B.select(Lf, [B.alias(B.col(c), "_L_" + c) for c in
                                     sorted(set(rkeys) | {"ldef", "lng", "ldl"})])
                J = B.join(B.select(Rf, [B.col(c) for c in sorted({"_rid"} | set(lkeys))]),
                           Lsel, lkeys, ["_L_" + c for c in rkeys], how="inner")
                if B.is_empty(J):
                    continue
                if may_ng and B.col_max(B.select(J, [B.alias(B.col("_L_lng"), "_f")]),
                                                 "_f"):
                    python_ids.append(B.select(B.filter(J, B.col("_L_lng")), [B.col("_rid")]))
                aggs.append(B.select(J, [B.col("_rid"), B.alias(B.col("_L_ldl"), "ldl"),
                                         B.alias(B.col("_L_ldef"), "ldef")]))
        if aggs:
            C = B.concat(aggs)
            agg = B.group_agg(C, ["_rid"], {
                "_dmax": B.agg_max(B.col("ldl")),
                "_dnull": B.agg_any((~B.col("ldef")) & B.is_null(B.col("ldl")))}, scalar=True)
            df = B.join(df, agg, ["_rid"], ["_rid"], how="left")
            dl = B.when(B.coalesce([B.col("_dnull"), B.lit(False, BOOL)]), B.null(INT),
                        B.greatest([B.col("dl"), B.col("_dmax")]))
            df = B.with_columns(df, {"dl": dl})
        if python_ids:
            ids = B.unique(B.concat(python_ids))
            slow = B.join(df, ids, ["_rid"], ["_rid"], how="semi")
            df = B.join(df, ids, ["_rid"], ["_rid"], how="anti")
            df = B.concat([self._select_back(k, P, df), self._python_deadlines(k, P, slow,
                                                                               tau)])
            return df
        return self._select_back(k, P, df)

    def _select_back(self, k, P, df):
        B = self.B
        cols = list(self.eng._schema(k, P)) + ["dl"]
        return B.select(df, [B.col(c) for c in cols])

    def _python_deadlines(self, k, P, df, tau: int):
        """Rows whose covering answers carry nogoods: Explainer.deadline on a row view."""
        from reasoning.semantics.explain import Explainer
        from reasoning.columnar.layout import row_to_answer

        B = self.B
        eng = self.eng
        view = eng.row_view()
        ex = Explainer(view)
        lay = eng.layouts[k]
        rows = B.rows(df)
        for r in rows:
            r["dl"] = ex.deadline(row_to_answer(lay, r))
        self.stats["python_rows"] += len(rows)
        sch = dict(eng._schema(k, P))
        sch["dl"] = INT
        return B.from_rows([{c: r.get(c) for c in sch} for r in rows], sch)
