"""The string plan: S_τ's answers (002 Alg. 1) as JSON lines built by column string expressions."""
from __future__ import annotations

import json
from typing import Optional

from reasoning.semantics.explain import DEFINITE, HYPOTHETICAL, PENDING, printed_name
from reasoning.language.metric import aux_template
from reasoning.language.syntax import BARE_CONST, Const, Time
from reasoning.columnar.layout import INT, OBJ, vcol

BARE = r"^(?:[a-z][A-Za-z0-9_]*|-?[0-9]+)$"
_SPECIAL = "[\u0000-\u001f]"
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


# sorting networks (compare-exchange layers) for 1–4 items; _TOP sorts after every literal
# text (a literal starts with an ASCII predicate name or "not ")
_NETS = {1: [], 2: [[(0, 1)]], 3: [[(0, 1)], [(1, 2)], [(0, 1)]],
         4: [[(0, 1), (2, 3)], [(0, 2), (1, 3)], [(1, 2)]]}
_TOP = "\U0010ffff"


class StringPlan:
    """Renderer's string plan (a mixin: self.eng, self.B, self._plain, self._table,
    self._static_plain): everything is string concatenation over columns, the `excluded` lists
    of single-variable nogoods (the "X ∉ {…}" answers of step 3, up to 10⁶–10⁷ constants in
    one answer) included on Polars."""

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
                [pl.lit(f"{name} ∉ {{"), vals.list.eval(self._quoted(pl.element())).list.join(", "),
                 pl.lit("}")])))
        return (pl.concat_str([pl.lit("{"), pl.concat_str(obj, separator=", ", ignore_nulls=True),
                               pl.lit("}")]),
                pl.concat_str(key, separator=", ", ignore_nulls=True),
                pl.concat_str(atom, separator=", ", ignore_nulls=True), [pre, pre_j])

    def _quoted(self, e):
        """A constant as the program syntax writes it (syntax.Const: bare when it reads back
        as itself, else in double quotes with \\ and \" escaped), relationally."""
        B = self.B
        esc = B.str_replace(B.str_replace(e, "\\", "\\\\"), '"', '\\"')
        return B.when(B.str_matches(e, BARE_CONST), e,
                      B.concat_str([B.lit('"', OBJ), esc, B.lit('"', OBJ)]))

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
                raw[name] = B.lit(str(Const(x)) if isinstance(x, str) else str(x), OBJ)
            elif x in P:
                raw[name] = (B.to_str(B.col(vcol(x)) + B.lit(off, INT)) if x in tp.time_vars
                             else self._quoted(B.col(vcol(x))))
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
