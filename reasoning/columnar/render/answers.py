"""The answers of S_τ set-at-a-time: the `hypo run --format jsonl` objects (explain.py's
Explainer.render, same bytes) built as string columns, and the deadlines (explain.py's
Explainer.deadline) as joins over the answers of the negated hypotheses' predicates, one wave
per order key of the T-stratification (the answers a deadline depends on have smaller keys).

Everything is string concatenation over columns, the `excluded` lists of single-variable
nogoods (the "X ∉ {…}" answers of step 3, up to 10⁶–10⁷ constants in one answer) included
on Polars; rows with nogoods over several variables (`excluded_combinations`), rows with
periodic time domains, rows with nogoods on Spark, and — for `hypo run` on the arrays
executor — a tick's few new rows (PYTHON_NEW_ROWS) are built in Python (explain.py's
objects).
"""
from __future__ import annotations

import json
from typing import Optional

from reasoning.semantics.explain import (answer_key_text, DEFINITE, HYPOTHETICAL, PENDING, answer_object, identity_exclusions,
                       printed_name, static_horizons)
from reasoning.util.gcpause import frozen_survivors
from reasoning.semantics.keyed import KeyedLines, concat_rendered
from reasoning.language.metric import aux_template
from reasoning.language.syntax import Const, Time
from reasoning.columnar.layout import BOOL, INT, OBJ, vcol
from reasoning.columnar.unify import cover_spec, literal_vars

BARE = r"^(?:[a-z][A-Za-z0-9_]*|-?[0-9]+)$"
_SPECIAL = "[\u0000-\u001f]"
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


# sorting networks (compare-exchange layers) for 1–4 items; _TOP sorts after every literal
# text (a literal starts with an ASCII predicate name or "not ")
_NETS = {1: [], 2: [[(0, 1)]], 3: [[(0, 1)], [(1, 2)], [(0, 1)]],
         4: [[(0, 1), (2, 3)], [(0, 2), (1, 3)], [(1, 2)]]}
_TOP = "\U0010ffff"

# a handful of new rows (at most PYTHON_NEW_ROWS, with at most PYTHON_NEW_ELEMENTS excluded
# constants in all) are rendered by the object builder from the executor's own rows: the
# string plan costs ~20 Polars operations (~2.5 ms) whatever the height, the builder ~20 µs
# a row plus ~0.7 µs an excluded constant.  Measured on the turbines (one new `OK(X, T)`
# with X ∉ {…} a tick): 1 840 constants 2.5 ms by the builder against 4.7 ms by the plan;
# 20 000 constants 14–16 ms against 8–9 ms
PYTHON_NEW_ROWS = 64
PYTHON_NEW_ELEMENTS = 8_000

# the compiled row formatter (rowformat.py) takes ~0.7 µs a row of a one-literal template and
# ~1.9 µs one of three literals (their texts sorted a row), the string plan ~2.5 ms plus ~1.1
# µs a row: above this many rows of a template of 3+ literals the plan renders them
FORMAT_MAX_ROWS = 3_000
# rows go to the C row formatter first (_format_c: single-variable exclusions included) when
# the kernels are C's; False: the compiled Python one only (tests compare them)
C_FORMAT = True
# the native render cache (_render_native_cached) is left off for a pattern whose last
# RENDER_CACHE_MISSES look-ups hit no row — answers printed once, as definite ones that are
# then forgotten (the turbines: ~0.25 ms a tick of look-ups and upkeep for nothing) — and
# tried again every RENDER_CACHE_PROBE ticks
RENDER_CACHE_MISSES = 8
RENDER_CACHE_PROBE = 16


class Renderer:
    """Renders a ColumnarEngine's tables (a tick's snapshot) as JSON lines."""

    def __init__(self, eng, native=None):
        """eng: the engine as rendered (its backend builds the strings); native: the engine
        itself when it runs on another backend (arrays): its frames are what lines() takes,
        their deadlines are computed there and only the rows printed are converted."""
        self.eng = eng
        self.B = eng.B
        self.rel = static_horizons(eng.tool)
        self.main_q = str(eng.cp.main.atom)
        self.stats = {"python_rows": 0, "python_few": 0, "formatted": 0, "formatted_c": 0}
        self._native = None
        if native is not None:
            self._native = Renderer(native)
            self._native.stats = self.stats
        self._table = False  # rendering the lake's answers-table columns
        self._memo = None  # (frames, options, rendered) of the last call of lines()
        # (k, P) -> the previous tick's rows: their line bodies (_render_cached), or (key
        # columns, rendered rows, their tick) (_render_native_cached)
        self._rcache: dict = {}
        self._rmiss: dict = {}  # (k, P) -> ticks in a row whose look-up hit no row
        self._rcache_gen = None  # the native executor's id generation they were made in
        self._plain = False  # while rendering rows whose strings need no JSON escape
        self._static_plain: dict = {}  # k -> the template's static texts need none
        self._formatters: dict = {}  # (k, P, with nogoods) -> its row formatter (rowformat.py)

    # ------------------------------------------------------------ string expressions
    def _escape_json(self, e, special: bool):
        B = self.B
        e = B.str_replace(B.str_replace(e, "\\", "\\\\"), '"', '\\"')
        if special:
            for ch, rep in _SHORT.items():
                e = B.str_replace(e, ch, rep)
            for code in range(32):
                ch = chr(code)
                if ch not in _SHORT:
                    e = B.str_replace(e, ch, f"\\u{code:04x}")
        return e

    def _jstr(self, e, special: bool = True):
        if self._plain:  # nothing to escape: quotes around the text
            return self.B.concat_str([self.B.lit('"', OBJ), e, self.B.lit('"', OBJ)])
        return self.B.json_str(e)

    def _plain_rows(self, k: int, P, df) -> bool:
        """Whether every string the rows of df print through _jstr — their constants, and
        the literals built of them — is its own JSON text between quotes: every constant a
        bare name or number (syntax.Const prints it unquoted, and it holds no `"`, `\\` or
        control character), and so every static piece of the template.  Then rendering
        skips the JSON encoder (~1.4 ms per 10⁴ strings in Polars, several a row)."""
        import polars as pl

        eng = self.eng
        tp = eng.templates[k]
        lay = eng.layouts[k]
        if not self._static_is_plain(k):
            return False
        objs = [x for x in P if x not in tp.time_vars]
        if any(lay.kinds[x] != OBJ for x in objs):
            return False
        if not objs:
            return True
        return bool(df.select(pl.all_horizontal(
            [pl.col(vcol(x)).str.contains(BARE).all() for x in objs])).item())

    def _static_is_plain(self, k: int) -> bool:
        """Every static text template k prints (names, predicates, constants, a metric
        literal's pieces) is its own JSON text between quotes."""
        memo = self._static_plain.get(k)
        if memo is None:
            tp = self.eng.templates[k]
            texts = list(tp.names) + [lp.pred for lp in tp.lits] + [
                str(Const(x)) for lp in tp.lits for isvar, x in lp.args if not isvar] + [
                p for lp in tp.lits for p in (aux_template(lp.pred) or ()) if isinstance(p, str)]
            memo = self._static_plain[k] = not any(
                c in '"\\' or c < " " for t in texts for c in str(t))
        return memo

    def _cfmt(self, e):
        """Program syntax of an object constant (syntax.Const.__str__)."""
        B = self.B
        if self._plain:  # every constant is bare (_plain_rows)
            return e
        quoted = B.concat_str([B.lit('"', OBJ), B.str_replace(B.str_replace(e, "\\", "\\\\"),
                                                              '"', '\\"'), B.lit('"', OBJ)])
        return B.when(B.str_matches(e, BARE), e, quoted)

    def _literal(self, k: int, P, j: int):
        """The literal j of template k under pattern P in program syntax (LitPattern.render)."""
        B = self.B
        tp = self.eng.templates[k]
        lp = tp.lits[j]
        parts: list = []
        static: list[str] = []

        def put(x):
            if isinstance(x, str):
                static.append(x)
            else:
                if static:
                    parts.append(B.lit("".join(static), OBJ))
                    static.clear()
                parts.append(x)

        def arg(isvar, x):
            if not isvar:
                put(str(Const(x)))
            elif x in P:
                put(self._cfmt(B.col(vcol(x))))
            else:
                put(tp.names[x])

        def time(d: int):
            if lp.tvar is None:
                put(str(lp.toff + d))
            elif lp.tvar in P:
                put(B.to_str(B.col(vcol(lp.tvar)) + B.lit(lp.toff + d, INT)))
            else:
                put(str(Time(tp.names[lp.tvar], lp.toff + d)))

        put("" if lp.positive else "not ")
        pieces = aux_template(lp.pred)  # `not A(…) Since[a,b] B(…)` as written (metric.py)
        if pieces is not None:
            for p in pieces:
                if isinstance(p, str):
                    put(p)
                elif p[0] == "a":
                    arg(*lp.args[p[1]])
                else:
                    time(p[1])
        else:
            put(lp.pred + "(")
            for isvar, x in lp.args:
                arg(isvar, x)
                put(", ")
            time(0)
            put(")")
        if static:
            parts.append(B.lit("".join(static), OBJ))
        return parts[0] if len(parts) == 1 else B.concat_str(parts)

    def _json_list(self, lst, special: bool):
        B = self.B
        return B.concat_str([B.lit("[", OBJ),
                             B.list_join(B.list_eval(lst, lambda e: self._jstr(e, special)),
                                         ", "),
                             B.lit("]", OBJ)])

    def _substitution(self, k: int, P, sort: bool):
        B = self.B
        tp = self.eng.templates[k]
        vals: dict = {}
        order: list = []
        for name, isvar, x, off in tp.qvars:
            if not isvar:
                v = B.lit(json.dumps(x, ensure_ascii=False), OBJ)
            elif x in P:
                if x in tp.time_vars:
                    v = B.to_str(B.col(vcol(x)) + B.lit(off, INT))
                else:
                    v = None  # filled below (needs the special flag)
                    v = ("obj", x)
            else:
                continue
            if name not in vals:
                order.append(name)
            vals[name] = v
        names = sorted(order) if sort else order
        return names, vals

    # ------------------------------------------------------------ deadlines
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
            full = eng.layouts[k2].full_mask
            for (kk, P2), fs in final.items():
                if kk != k2:
                    continue
                A = B.concat(fs)
                if B.is_empty(A):
                    continue
                items = []
                for pos, (isvar, x) in enumerate(head.args):
                    if not isvar:
                        items.append(B.alias(B.lit(x, OBJ), f"la{pos}"))
                    elif x in P2:
                        items.append(B.alias(B.col(vcol(x)), f"la{pos}"))
                if head.tvar is None or head.tvar in P2:
                    items.append(B.alias(eng._texpr(head), "lt"))
                items.append(B.alias(B.col("ev") == B.lit(full, INT), "ldef"))
                items.append(B.alias(B.list_len(B.col("ng")) > B.lit(0, INT), "lng"))
                items.append(B.alias(B.col("dl"), "ldl"))
                out.append((k2, P2 & literal_vars(head), B.select(A, items)))
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
            for k2, l_bound, F in self._L(lp.pred, final):
                head = eng.templates[k2].head
                if head.tvar is None:
                    l_time = ("C", head.toff)
                elif head.tvar in l_bound:
                    l_time = ("L", "lt")
                else:
                    l_time = None
                spec = cover_spec(lp, h_bound, head, l_bound, ("R", "_ht"), l_time)
                if spec is None:
                    continue
                Rf, Lf = R, F
                lkeys, rkeys = [], []
                for a, b in spec.conds:
                    if a[0] == "L" and b[0] == "R":
                        a, b = b, a
                    if a[0] == "R" and b[0] == "L":
                        lkeys.append(a[1])
                        rkeys.append(b[1])
                    elif a[0] == "R" or b[0] == "R":
                        Rf = B.filter(Rf, eng._side_expr(a) == eng._side_expr(b))
                    else:
                        Lf = B.filter(Lf, eng._side_expr(a) == eng._side_expr(b))
                if B.is_empty(Rf) or B.is_empty(Lf):
                    continue
                Lsel = B.select(Lf, [B.alias(B.col(c), "_L_" + c) for c in
                                     sorted(set(rkeys) | {"ldef", "lng", "ldl"})])
                J = B.join(B.select(Rf, [B.col(c) for c in sorted({"_rid"} | set(lkeys))]),
                           Lsel, lkeys, ["_L_" + c for c in rkeys], how="inner")
                if B.is_empty(J):
                    continue
                if eng.may_ng[k2] and B.col_max(B.select(J, [B.alias(B.col("_L_lng"), "_f")]),
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

    # ------------------------------------------------------------ lines
    def lines(self, frames: dict, tau: int, all_queries: bool = False,
              include_pending: bool = False, with_keys: bool = False, table: bool = False):
        """The printed answer set of tick τ (main query unless all_queries), sorted as
        `hypo run` prints it: (query ≠ main, json.dumps(obj, sort_keys=True)).  With
        with_keys: a frame of (grp, skey, line, akey, status) instead of the list, unsorted
        (--changes sorts what it prints); with table: the lake's answers-table columns
        (unsorted).  Only the answers asked for are rendered (memo on the frames and the
        options)."""
        B = self.B
        memo = self._memo
        opts = (tau, table, all_queries, include_pending)
        if memo is not None and memo[0] is frames and memo[1] == opts:
            out = memo[2]
        else:
            self._table = table
            out = self._render_all(frames, tau, all_queries, include_pending)
            self._memo = (frames, opts, out)
        if isinstance(out, KeyedLines):
            if not out.height:
                return [] if not (with_keys or table) else None
            return out.to_polars() if table else out if with_keys else out.sorted_lines()
        if out is None or (B.cheap_checks and B.is_empty(out)):
            return [] if not (with_keys or table) else None
        if table or with_keys:
            return out
        return B.column_list(B.sort(out, ["grp", "skey"]), "line")

    def _render_all(self, frames: dict, tau: int, every: bool, pending: bool = True):
        """The rendered answers of every query (or of the main one), pending ones included if
        asked: only the rows printed are rendered."""
        B = self.B
        eng = self.eng
        src = self._native or self  # the frames' own backend: filters and deadlines
        NB = src.B
        shown = {k for k, tp in enumerate(eng.templates) if tp.qid == eng.main_qid or every}
        needed = set(shown)
        as_l: set = set()  # templates whose answers some deadline looks at
        todo = list(shown)
        while todo:  # deadlines look at the answers of negated predicates (recursively)
            k = todo.pop()
            tp = eng.templates[k]
            for j in tp.neg:
                for k2 in eng.by_head.get(tp.lits[j].pred, ()):
                    as_l.add(k2)
                    if k2 not in needed:
                        needed.add(k2)
                        todo.append(k2)
        todo_frames = {}
        for (k, P), df in frames.items():
            if k not in needed:
                continue
            if k in shown and not pending and k not in as_l:
                # pending rows are not printed and no deadline reads them: none computed
                df = NB.filter(df, NB.col("ev") != NB.lit(0, INT))
            todo_frames[(k, P)] = df
        dls = src.deadlines(todo_frames, tau)
        parts = []
        cache = self._columns_only()
        kept: dict = {}
        for (k, P), df in dls.items():
            if k not in shown:
                continue
            if not pending and k in as_l:
                df = NB.filter(df, NB.col("ev") != NB.lit(0, INT))
            if self._native is not None:
                if NB.is_empty(df):
                    continue
                if cache and not self._time_constrained(k, P):
                    df, got = self._render_native_cached(k, P, df, tau, kept)
                    if got is not None:
                        parts.append(got)
                    if df is None:
                        continue
                    parts.extend(self._render(k, P, NB.to_polars(df), tau))
                    continue
                df = NB.to_polars(df)
            if not B.is_empty(df):
                if cache and not self._time_constrained(k, P):
                    df, got = self._render_cached(k, P, df, tau, kept)
                    if got is not None:
                        parts.append(got)
                    if B.is_empty(df):
                        continue
                parts.extend(self._render(k, P, df, tau))
        if cache:
            self._rcache = kept
            if self._native is not None:
                self._rcache_gen = NB.generation()
        if not parts:
            return None
        if any(isinstance(p, KeyedLines) for p in parts):
            out = concat_rendered(parts)
            if isinstance(out, KeyedLines):
                return out.distinct()
        else:
            out = B.concat(parts)
        if B.name == "polars" and out.get_column("skey").n_unique() == out.height:
            return out  # (the common case: no two rows print the same; ~5× cheaper a check)
        return B.unique(out, ["skey"])

    def _time_constrained(self, k: int, P) -> bool:
        """Rows of pattern P print time constraints (the object builder renders them): they
        leave a variable constrained by periodic facts unbound, or the time variable of a
        literal (its floor, exact.py "past")."""
        tp = self.eng.templates[k]
        return any(v not in P for v, _ in tp.periodic) or any(
            lp.tvar is not None and lp.tvar not in P for lp in tp.lits)

    def _columns_only(self) -> bool:
        """Rendering for `hypo run` on Polars: the in-process shortcuts (_render_cached,
        _json_sets) apply; the lake's table columns and Spark take the general plan."""
        return self.B.name == "polars" and not self._table

    @staticmethod
    def _untick(df, tau: int, keep: tuple = ()):
        """Rendered rows as bodies: the line without its `{"tick": τ, ` prefix, the sort
        key without its `, "tick": τ}` suffix (the only places τ appears; _retick)."""
        import polars as pl

        return df.select(*keep, "grp",
                         pl.col("skey").str.head(-len(f', "tick": {tau}}}')).alias("skey"),
                         pl.col("line").str.slice(len(f'{{"tick": {tau}, ')).alias("line"),
                         "akey", "status")

    @staticmethod
    def _retick(body, tau: int):
        """The rendered rows of tick τ from bodies (_untick)."""
        import polars as pl

        return body.select(
            "grp", pl.concat_str([pl.col("skey"), pl.lit(f', "tick": {tau}}}')]).alias("skey"),
            pl.concat_str([pl.lit(f'{{"tick": {tau}, '), pl.col("line")]).alias("line"),
            "akey", "status")

    def _render_cached(self, k: int, P, df, tau: int, kept: dict):
        """Lines of the rows without nogoods, rendered once per row: a row's line depends on
        τ only through its `"tick": τ` prefix (and the sort key's suffix), so the bodies of
        the previous tick are reused for rows equal in every rendered column (bindings,
        evidence mask, deadline) and only new or changed rows are rendered.  Returns the
        rows left to render (those with nogoods) and the lines of the others."""
        import polars as pl

        keys = [vcol(x) for x in sorted(P)] + ["ev", "dl"]
        ng = pl.col("ng").list.len() > 0
        rest = df.filter(ng)
        plain = df.filter(~ng)
        if plain.height == 0:
            return rest, None
        old = self._rcache.get((k, P))
        if old is not None:
            hit = old.join(plain.select(keys), on=keys, how="semi", nulls_equal=True)
            new = plain.join(old.select(keys), on=keys, how="anti", nulls_equal=True)
        else:
            hit, new = None, plain
        bodies = []
        if hit is not None and hit.height:
            bodies.append(hit)
        if new.height:
            bodies.extend(self._untick(x, tau, keys) for x in self._render(k, P, new, tau, keys))
        if not bodies:
            return rest, None
        body = pl.concat(bodies) if len(bodies) > 1 else bodies[0]
        kept[(k, P)] = body
        return rest, self._retick(body, tau)

    def _render_native_cached(self, k: int, P, df, tau: int, kept: dict):
        """_render_cached on the executor's own frames (arrays): a row equal to one of the
        previous tick in every rendered column — bindings, evidence mask, deadline and
        nogoods, as interned ids — takes that row's line (its tick rewritten); only the
        other rows are rendered, straight from the executor's columns (_render_formatted)
        or converted to Polars.  Rows whose nogoods combine variables (`*`: the object
        builder's) are returned to render as before.  Returns (rows left to render or
        None, the rendered rows of tick τ)."""
        import numpy as np

        NB = self._native.B
        keys = [vcol(x) for x in sorted(P)] + ["ev", "dl", "ng"]
        if self.eng.may_ng[k] and self._exclusion_names(k, P) is not None:
            rest = None
            if self._native.eng.multi_possible:  # (else no nogood combines variables)
                combo = NB.list_any_prefix(NB.col("ng"), "*")
                rest = NB.filter(df, combo)
                df = NB.filter(df, ~combo)
                rest = None if NB.is_empty(rest) else rest
        elif self.eng.may_ng[k]:  # every nogood through the object builder
            return df, None
        else:
            rest = None
        if NB.is_empty(df):
            return rest, None
        old = self._rcache.get((k, P)) if self._rcache_gen == NB.generation() else None
        parts = []  # (rows or their key columns, rendered rows of tick τ)
        if old is not None:
            okeys, orows, otau = old
            hit = NB.member_rows(okeys, df, keys)
            self._rmiss[(k, P)] = 0 if hit.any() else self._rmiss.get((k, P), 0) + 1
            if hit.any():
                idx = np.flatnonzero(hit)
                if isinstance(orows, KeyedLines):
                    got = orows.compress(hit.tolist()).retick(otau, tau)
                else:
                    import polars as pl

                    got = orows.filter(pl.Series(hit))
                    got = got if otau == tau else self._re_tick(got, otau, tau)
                parts.append((okeys.take(idx, idx.size), got))
            new_rows = ~NB.member_rows(df, okeys, keys)
            if new_rows.all():
                new = df
            else:
                idx = np.flatnonzero(new_rows)
                new = df.take(idx, idx.size)
        else:
            new = df
        if new.n and (got := self._render_formatted(k, P, new, tau)) is not None:
            parts.append((new, got))
        elif new.n and self._few(new):
            parts.append((new, self._render_python(k, P, new, tau, native=True)))
        elif new.n:
            import polars as pl

            # only the columns a line reads (not exp, dlp, unb, born) go to Polars
            todo = NB.with_row_id(NB.select_cols(new, keys), "_ri")
            drawn = [x for x in self._render(k, P, NB.to_polars(todo), tau, ("_ri",))
                     if "_ri" in x.columns]
            got = pl.concat(drawn).sort("_ri") if len(drawn) > 1 else drawn[0].sort("_ri")
            if got.height != new.n:  # every row is drawn once, in its order
                raise AssertionError("native render cache: rows lost")
            parts.append((new, got.select("grp", "skey", "line", "akey", "status")))
        orows = concat_rendered([p[1] for p in parts])
        if self._rmiss.get((k, P), 0) < RENDER_CACHE_MISSES or tau % RENDER_CACHE_PROBE == 0:
            kept[(k, P)] = (NB.concat([NB.select_cols(p[0], keys) for p in parts]), orows, tau)
        return rest, orows

    @staticmethod
    def _re_tick(df, old: int, tau: int):
        """Rendered rows of tick `old` as rows of tick τ (_untick then _retick, in one)."""
        import polars as pl

        return df.select(
            "grp", pl.concat_str([pl.col("skey").str.head(-len(f', "tick": {old}}}')),
                                  pl.lit(f', "tick": {tau}}}')]).alias("skey"),
            pl.concat_str([pl.lit(f'{{"tick": {tau}, '),
                           pl.col("line").str.slice(len(f'{{"tick": {old}, '))]).alias("line"),
            "akey", "status")

    def _render_formatted(self, k: int, P, df, tau: int):
        """The rendered rows (grp, skey, line, akey, status) of tick τ of native rows whose
        every printed string needs no JSON escape and whose nogoods are single-variable
        (`excluded`), by the template's compiled row formatter (rowformat.py); None when
        some row does not qualify (the object builder or the string plan renders them)."""
        from reasoning.columnar.render.rowformat import Unformattable, all_bare, compile_row_formatter

        NB = self._native.B
        eng = self.eng
        tp = eng.templates[k]
        lay = eng.layouts[k]
        if not self._static_is_plain(k):
            return None
        names = ngs = None
        if eng.may_ng[k] and NB.any_nonempty_list(df, "ng"):
            names = self._exclusion_names(k, P)
            if names is None:
                return None
        if C_FORMAT and (got := self._format_c(k, P, df, tau, names)) is not None:
            return got
        if names is not None:
            ngs = NB.column_list(df, "ng")
        if len(tp.lits) > 2 and df.n > FORMAT_MAX_ROWS:
            return None  # sorting 3+ literal texts a row: the string plan is cheaper
        cols = []
        for x in sorted(P):
            if x not in tp.time_vars and lay.kinds[x] != OBJ:
                return None
            vals = NB.column_list(df, vcol(x))
            if None in vals or (x not in tp.time_vars and not all_bare(vals)):
                return None  # (a bound variable is never null: the plan would say how)
            cols.append(vals)
        key = (k, P, names is not None)
        fmt = self._formatters.get(key)
        if fmt is None:
            fmt = self._formatters[key] = compile_row_formatter(tp, P, str(tp.query.atom),
                                                                names)
        args = [cols, NB.column_list(df, "ev"), NB.column_list(df, "dl")]
        try:
            skeys, lines, akeys, sts = fmt(*args, ngs, tau)
        except Unformattable:
            return None
        return self._formatted_frame(k, skeys, lines, akeys, sts)

    def _formatted_frame(self, k: int, skeys, lines, akeys, sts, c: bool = False):
        """A row formatter's columns as rendered rows (grp, skey, line, akey, status): as
        KeyedLines for `hypo run` (lists to lists: a frame, then its lists again for the
        printer, cost ~0.5 ms a tick of ~10³ lines)."""
        n = len(lines)
        grp = 0 if str(self.eng.templates[k].query.atom) == self.main_q else 1
        self.stats["formatted"] += n
        if c:
            self.stats["formatted_c"] += n
        if self._columns_only():
            return KeyedLines([grp] * n, skeys, lines, akeys, sts, floors=False)
        import polars as pl

        # (not pl.repeat(…, eager=True): a lazy query, ~0.5 ms)
        return pl.DataFrame({"grp": pl.Series([grp] * n, dtype=pl.Int64),
                             "skey": pl.Series(skeys, dtype=pl.String),
                             "line": pl.Series(lines, dtype=pl.String),
                             "akey": pl.Series(akeys, dtype=pl.String),
                             "status": pl.Series(sts, dtype=pl.String)})

    def _format_c(self, k: int, P, df, tau: int, names=None):
        """_render_formatted's rows by the C row formatter (rowformat.compile_row_program),
        ~3–10× cheaper than the compiled Python one; with `names` (_exclusion_names) their
        exclusions too.  None when it does not apply (no C kernels, a value not bare, a null
        binding, a nogood over several variables)."""
        from reasoning.columnar.render.rowformat import compile_row_program

        key = (k, P, "c", names is not None)
        if key not in self._formatters:
            tp = self.eng.templates[k]
            self._formatters[key] = compile_row_program(tp, P, str(tp.query.atom), names)
        prog = self._formatters[key]
        if prog is None:
            return None
        spec, svars, ivars = prog
        got = self._native.B.format_rows(df, spec, [vcol(x) for x in svars],
                                         [vcol(x) for x in ivars], tau)
        if got is None:
            return None
        return self._formatted_frame(k, *got, c=True)

    def _few(self, df) -> bool:
        """Are a frame's rows few enough for the object builder (PYTHON_NEW_ROWS)?"""
        NB = self._native.B
        if df.n > PYTHON_NEW_ROWS:
            return False
        if df.n == 0 or not NB.any_nonempty_list(df, "ng"):
            return True
        lens = NB.column_list(NB.select(df, [NB.alias(NB.list_len(NB.col("ng")), "_n")]), "_n")
        return sum(x or 0 for x in lens) <= PYTHON_NEW_ELEMENTS

    def _json_sets(self, df, lits: list):
        """The evidence and hypotheses JSON lists (sorted, distinct; hypotheses minus
        evidence, as render_object) of a template with at most 4 literals, without list
        columns: each literal's text or a sentinel above every text, sorted by a sorting
        network of min/max, repeats blanked — 2–3× cheaper than list sort/unique in Polars."""
        import polars as pl

        n = len(lits)
        if n == 1:  # in E or in H: one projection (each step below is an operation of
            # Polars' fixed ~100-250 µs)
            item = pl.concat_str([pl.lit("["), self._jstr(lits[0]), pl.lit("]")])
            in_e = (pl.col("ev") & 1) != 0
            return df.with_columns(_evj=pl.when(in_e).then(item).otherwise(pl.lit("[]")),
                                   _hyj=pl.when(in_e).then(pl.lit("[]")).otherwise(item))
        bit = [(pl.col("ev") & (1 << j)) != 0 for j in range(n)]
        lc = [pl.col(f"_l{j}") for j in range(n)]
        df = df.with_columns(*[l.alias(f"_l{j}") for j, l in enumerate(lits)])
        ev = [pl.when(bit[j]).then(lc[j]).otherwise(pl.lit(_TOP)) for j in range(n)]
        hy = [pl.when(~bit[j] & ~pl.any_horizontal(
            [pl.lit(False)] + [bit[i] & (lc[i] == lc[j]) for i in range(n) if i != j]))
            .then(lc[j]).otherwise(pl.lit(_TOP)) for j in range(n)]
        df = df.with_columns(*[e.alias(f"_e{j}") for j, e in enumerate(ev)],
                             *[h.alias(f"_h{j}") for j, h in enumerate(hy)])
        for layer in _NETS[n]:
            ex = []
            for x in ("_e", "_h"):
                for a, b in layer:
                    ca, cb = pl.col(f"{x}{a}"), pl.col(f"{x}{b}")
                    ex += [pl.min_horizontal(ca, cb).alias(f"{x}{a}"),
                           pl.max_horizontal(ca, cb).alias(f"{x}{b}")]
            df = df.with_columns(ex)

        def joined(x):
            items = []
            for j in range(n):
                c = pl.col(f"{x}{j}")
                skip = c == _TOP if j == 0 else (c == _TOP) | (c == pl.col(f"{x}{j - 1}"))
                items.append(pl.when(skip).then(None).otherwise(self._jstr(c)))
            return pl.concat_str([pl.lit("["), pl.concat_str(items, separator=", ",
                                                             ignore_nulls=True), pl.lit("]")])

        return df.with_columns(joined("_e").alias("_evj"), joined("_h").alias("_hyj"))

    def _render(self, k: int, P, df, tau: int, keep: tuple = ()) -> list:
        B = self.B
        eng = self.eng
        if self._time_constrained(k, P):  # prints its time constraint: the object builder
            return [self._render_python(k, P, df, tau)]
        has_ng = eng.may_ng[k] and (not B.cheap_checks or B.any_nonempty_list(df, "ng"))
        out = []
        exc = None
        if has_ng:
            names = self._exclusion_names(k, P) if B.name == "polars" else None
            slow = B.list_len(B.col("ng")) > B.lit(0, INT)
            if names is not None:  # single-variable nogoods render as columns; `*` (combos)
                slow = slow & B.list_any_prefix(B.col("ng"), "*")  # in Python
                exc = self._excluded_exprs(names)
            ng_rows = B.filter(df, slow)
            df = B.filter(df, ~slow)
            if not (B.cheap_checks and B.is_empty(ng_rows)):
                out.append(self._render_python(k, P, ng_rows, tau))
        if B.is_empty(df):
            return out
        self._plain = self._columns_only() and self._plain_rows(k, P, df)
        try:
            out.append(self._render_rows(k, P, df, tau, keep, exc))
        finally:
            self._plain = False
        return out

    def _render_rows(self, k: int, P, df, tau: int, keep: tuple, exc):
        """The lines of rows rendered as columns (no nogood, or single-variable ones)."""
        B = self.B
        eng = self.eng
        tp = eng.templates[k]
        full = eng.layouts[k].full_mask
        if exc:
            for cols in exc[3]:  # each variable's sorted constants, then their JSON list, once
                df = B.with_columns(df, cols)
        exc_obj = exc[0] if exc else B.lit("{}", OBJ)
        special = True
        st = B.when(B.col("ev") == B.lit(full, INT), B.lit(DEFINITE, OBJ),
                    B.when(B.col("ev") != B.lit(0, INT), B.lit(HYPOTHETICAL, OBJ),
                           B.lit(PENDING, OBJ)))
        lits = [self._literal(k, P, j) for j in range(len(tp.lits))]
        if self._columns_only() and len(lits) in _NETS:
            df = self._json_sets(B.with_columns(df, {"_st": st}), lits)
            evj, hyj = B.col("_evj"), B.col("_hyj")
        else:
            ev = B.list_norm(B.list_of([B.when(B.has_bit(B.col("ev"), j), l, B.null(OBJ))
                                        for j, l in enumerate(lits)]))
            hy = B.list_norm(B.list_of([B.when(B.has_bit(B.col("ev"), j), B.null(OBJ), l)
                                        for j, l in enumerate(lits)]))
            df = B.with_columns(df, {"_st": st, "_ev": ev, "_hy": hy})
            # (Polars' set difference does not keep the order: sorted again)
            df = B.with_columns(df, {"_hy": B.list_norm(B.list_minus(B.col("_hy"),
                                                                     B.col("_ev")))})
            evj = self._json_list(B.col("_ev"), special)
            hyj = self._json_list(B.col("_hy"), special)
        dlt = B.coalesce([B.to_str(B.col("dl")), B.lit("null", OBJ)])
        q = json.dumps(str(tp.query.atom), ensure_ascii=False)
        sub_line = self._sub_expr(k, P, False, special)
        sub_sort = self._sub_expr(k, P, True, special)
        line = B.concat_str([B.lit(f'{{"tick": {tau}, "query": {q}, "status": "', OBJ), B.col("_st"),
                             B.lit('", "substitution": ', OBJ), sub_line,
                             B.lit(', "excluded": ', OBJ), exc_obj, B.lit(', "evidence": ', OBJ),
                             evj, B.lit(', "hypotheses": ', OBJ), hyj,
                             B.lit(', "deadline": ', OBJ), dlt, B.lit("}", OBJ)])
        skey = B.concat_str([B.lit('{"deadline": ', OBJ), dlt, B.lit(', "evidence": ', OBJ), evj,
                             B.lit(', "excluded": ', OBJ), exc_obj,
                             B.lit(', "hypotheses": ', OBJ), hyj,
                             B.lit(f', "query": {q}, "status": "', OBJ), B.col("_st"),
                             B.lit('", "substitution": ', OBJ), sub_sort,
                             B.lit(f', "tick": {tau}}}', OBJ)])
        akey = self._akey_expr(k, P, q, special, exc[1] if exc else None)
        grp = B.lit(0 if str(tp.query.atom) == self.main_q else 1, INT)
        items = [B.col(c) for c in keep] + [
            B.alias(grp, "grp"), B.alias(skey, "skey"), B.alias(line, "line"),
            B.alias(akey, "akey"), B.alias(B.col("_st"), "status")]
        if self._table:
            items += [B.alias(B.lit(str(tp.query.atom), OBJ), "query"),
                      B.alias(sub_sort, "substitution"), B.alias(exc_obj, "excluded"),
                      B.alias(B.null(OBJ), "excluded_combinations"),
                      B.alias(B.col("_ev"), "evidence"), B.alias(B.col("_hy"), "hypotheses"),
                      B.alias(B.col("dl"), "deadline"),
                      B.alias(self._atom(k, P, exc[2] if exc else None), "atom")]
        return B.select(df, items)

    def _exclusion_names(self, k: int, P) -> Optional[list]:
        """[(printed name, variable)] of the variables of pattern P's rows that may carry
        single-variable nogoods, sorted by name (explain.exclusions' naming); None when two
        variables would print under one name (their lists merge: the Python path)."""
        name_of = printed_name(self.eng.templates[k])
        got = [(name_of(v), v) for v in range(len(self.eng.layouts[k].kinds)) if v not in P]
        if len({n for n, _ in got}) != len(got):
            return None
        return sorted(got)

    def _excluded_exprs(self, names: list) -> tuple:
        """explain.exclusions of rows whose nogoods are all single-variable (`v:c`), as
        Polars expressions: the `excluded` JSON object, its items as answer_key_text writes
        them, format_atom_answer's `X ∉ {…}` conditions (empty: none), and the columns they
        read, to add first in this order ([{_xv<v>: variable v's constants}, {_xj<v>: their
        JSON list}]: computed once, not once per expression — 3 s against 9 s for 6.6 · 10⁶
        constants; the JSON list is read by the line, the sort key, the answer key and the
        table's `excluded`: ~90 ms less per 6 · 10⁵ constants).  Each variable's constants
        are distinct and sorted by code point, as sorted() sorts str."""
        import polars as pl

        B = self.B
        obj, key, atom = [], [], []
        pre, pre_j = {}, {}
        for name, v in names:
            pref = f"{v}:"
            pre[f"_xv{v}"] = pl.col("ng").list.eval(pl.element().filter(
                pl.element().str.starts_with(pref)).str.slice(len(pref)).unique().sort())
            vals = pl.col(f"_xv{v}")
            has = vals.list.len() > 0
            pre_j[f"_xj{v}"] = vals.list.eval(B.json_str(pl.element())).list.join(", ")
            jl = pl.col(f"_xj{v}")
            nm = json.dumps(name, ensure_ascii=False)
            obj.append(pl.when(has).then(pl.concat_str([pl.lit(nm + ": ["), jl, pl.lit("]")])))
            key.append(pl.when(has).then(pl.concat_str([pl.lit("[" + nm + ", ["), jl,
                                                        pl.lit("]]")])))
            atom.append(pl.when(has).then(pl.concat_str(
                [pl.lit(f"{name} ∉ {{"), vals.list.join(", "), pl.lit("}")])))
        return (pl.concat_str([pl.lit("{"), pl.concat_str(obj, separator=", ", ignore_nulls=True),
                               pl.lit("}")]),
                pl.concat_str(key, separator=", ", ignore_nulls=True),
                pl.concat_str(atom, separator=", ", ignore_nulls=True), [pre, pre_j])

    def _atom(self, k: int, P, conds=None):
        """format_atom_answer relationally (conds: the rows' `X ∉ {…}` conditions, or
        none)."""
        B = self.B
        tp = self.eng.templates[k]
        q = tp.query.atom
        names, vals = self._substitution(k, P, False)
        raw: dict = {}
        for name, isvar, x, off in tp.qvars:
            if not isvar:
                raw[name] = B.lit(str(x), OBJ)
            elif x in P:
                raw[name] = (B.to_str(B.col(vcol(x)) + B.lit(off, INT)) if x in tp.time_vars
                             else B.col(vcol(x)))
        parts: list = [B.lit(q.pred + "(", OBJ)]
        first = True
        for t in q.args:
            if not first:
                parts.append(B.lit(", ", OBJ))
            first = False
            name = getattr(t, "name", None)
            if name is not None and name in raw:
                parts.append(raw[name])
            else:
                parts.append(B.lit(str(t), OBJ))
        if q.time is not None:
            if not first:
                parts.append(B.lit(", ", OBJ))
            tv = q.time.var
            if tv and tv in raw:
                parts.append(raw[tv])
            else:
                parts.append(B.lit(tv if tv else str(q.time.offset), OBJ))
        parts.append(B.lit(")", OBJ))
        atom = B.concat_str(parts)
        if conds is None:
            return atom
        return B.when(conds == B.lit("", OBJ), atom,
                      B.concat_str([atom, B.lit(" for ", OBJ), conds]))

    def _special(self, df, P, k: int) -> bool:
        """Some bound object value holds a control character (needs \\uXXXX escapes)."""
        B = self.B
        lay = self.eng.layouts[k]
        objs = [vcol(x) for x in sorted(P) if lay.kinds[x] == OBJ]
        if not objs:
            return False
        if not B.cheap_checks:
            return True  # escape everything rather than look
        flag = B.any_of([B.str_matches(B.col(c), _SPECIAL) for c in objs])
        return bool(B.col_max(B.select(df, [B.alias(flag, "_s")]), "_s"))

    def _sub_expr(self, k: int, P, sort: bool, special: bool):
        B = self.B
        names, vals = self._substitution(k, P, sort)
        if not names:
            return B.lit("{}", OBJ)
        parts: list = [B.lit("{", OBJ)]
        for i, name in enumerate(names):
            v = vals[name]
            parts.append(B.lit(("" if i == 0 else ", ") + json.dumps(name) + ": ", OBJ))
            if isinstance(v, tuple):
                parts.append(self._jstr(B.col(vcol(v[1])), special))
            else:
                parts.append(v)
        parts.append(B.lit("}", OBJ))
        return B.concat_str(parts)

    def _akey_expr(self, k: int, P, q: str, special: bool, exc=None):
        """answer_key_text relationally: [query, [[name, value], …], [[name, [c, …]], …]]
        (exc: the exclusions' items, or none)."""
        B = self.B
        names, vals = self._substitution(k, P, True)
        parts: list = [B.lit("[" + q + ", [", OBJ)]
        for i, name in enumerate(names):
            v = vals[name]
            parts.append(B.lit(("" if i == 0 else ", ") + "[" + json.dumps(name) + ", ", OBJ))
            parts.append(self._jstr(B.col(vcol(v[1])), special) if isinstance(v, tuple) else v)
            parts.append(B.lit("]", OBJ))
        if exc is None:
            parts.append(B.lit("], []]", OBJ))
        else:
            parts += [B.lit("], [", OBJ), exc, B.lit("]]", OBJ)]
        return B.concat_str(parts)

    def _render_python(self, k: int, P, df, tau: int, native: bool = False):
        """Rows with nogoods (X ∉ {…}): the object built like Explainer.render (native: df
        is a frame of the native executor, read there)."""
        from reasoning.columnar.layout import STRLIST

        B = self.B
        tp = self.eng.templates[k]
        lay = self.eng.layouts[k]
        rows = []
        with frozen_survivors():  # an answer may carry 10⁵–10⁶ exclusions (tuples, strings)
            for r in (self._native.B if native else B).rows(df):
                rows.append(self._python_row(tp, lay, r, tau))
        self.stats["python_rows" if not native else "python_few"] += len(rows)
        schema = {"grp": INT, "skey": OBJ, "line": OBJ, "akey": OBJ, "status": OBJ}
        if self._table:
            schema.update(query=OBJ, substitution=OBJ, excluded=OBJ,
                          excluded_combinations=OBJ, evidence=STRLIST, hypotheses=STRLIST,
                          deadline=INT, atom=OBJ)
        return B.from_rows(rows, schema)

    def _python_row(self, tp, lay, r: dict, tau: int) -> dict:
        """One row with nogoods rendered by explain.answer_object (its nogoods decoded in
        their stored, sorted order)."""
        from reasoning.semantics.explain import format_atom_answer
        from reasoning.columnar.layout import row_to_answer, split_nogood_list

        a = row_to_answer(lay, r, nogoods=False)
        obj = render_object(tp, a, tau, r["dl"], split=split_nogood_list(r["ng"]))
        row = {"grp": 0 if obj["query"] == self.main_q else 1,
               "skey": json.dumps(obj, sort_keys=True, ensure_ascii=False),
               "line": json.dumps(obj, ensure_ascii=False),
               "akey": answer_key_text(obj), "status": obj["status"]}
        if self._table:
            row.update(query=obj["query"],
                       substitution=json.dumps(obj["substitution"], sort_keys=True,
                                               ensure_ascii=False),
                       excluded=json.dumps(obj["excluded"], sort_keys=True,
                                           ensure_ascii=False),
                       excluded_combinations=json.dumps(
                           obj["excluded_combinations"], sort_keys=True, ensure_ascii=False)
                       if "excluded_combinations" in obj else None,
                       evidence=obj["evidence"], hypotheses=obj["hypotheses"],
                       deadline=obj["deadline"], atom=format_atom_answer(obj))
        return row


def render_object(tp, a, tick: int, deadline: Optional[int], ng=None,
                  split: Optional[tuple] = None) -> dict:
    """explain.Explainer.render with the deadline given (and the nogoods, if given, instead
    of a.ng: as nogoods, or split as layout.split_nogood_list gives them)."""
    st = DEFINITE if len(a.ev) == len(tp.lits) else (HYPOTHETICAL if a.ev else PENDING)
    return answer_object(tp, a, a.b, a.ng if ng is None else ng, tick, st,
                         None if st == DEFINITE else deadline, split)
