"""The row formatter path: S_τ's rows (002 Alg. 1) printed by rowformat.py's formatters."""
from __future__ import annotations

from reasoning.semantics.keyed import KeyedLines
from reasoning.columnar.layout import OBJ, vcol

# the compiled row formatter (rowformat.py) takes ~0.7 µs a row of a one-literal template and
# ~1.9 µs one of three literals (their texts sorted a row), the string plan ~2.5 ms plus ~1.1
# µs a row: above this many rows of a template of 3+ literals the plan renders them
FORMAT_MAX_ROWS = 3_000
# rows go to the C row formatter first (_format_c: single-variable exclusions included) when
# the kernels are C's; False: the compiled Python one only (tests compare them)
C_FORMAT = True


class FormattedRows:
    """Renderer's compiled row formatters (a mixin: self._formatters, self._native): the
    string plan's bytes, specialised per template and binding pattern."""

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
