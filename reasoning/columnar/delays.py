"""The delay function δ as joins (002 §3), for atoms whose arguments are bound per row.

δ(p(c̄, t)) of a ground atom is the greatest δ of the `#delay` patterns it matches, else the
predicate's default; δ of an atom with unbound arguments is the greatest δ over its
instances: the default and every pattern compatible with the bound arguments
(analysis.Delays.ground / .atom — the row engine's definition).  For a set of rows we group
the patterns by which of their constant positions meet a bound argument, and look each group
up with one left join; patterns with no such position contribute a constant.
"""
from __future__ import annotations

from typing import Any, Optional

from reasoning.language.analysis import Delays
from reasoning.columnar.layout import INT, OBJ

CONST, COL = "const", "col"


class DelayPlan:
    """δ for one predicate."""

    def __init__(self, delays: Delays, pred: str):
        self.d0 = delays.default.get(pred, 0)
        self.pats = [(tuple(d.pattern), d.delay) for d in delays.patterns.get(pred, ())
                     if d.pattern is not None]
        self._tables: dict = {}
        self._group_memo: dict = {}

    @property
    def constant(self) -> Optional[int]:
        """δ when it does not depend on the arguments (no instance patterns)."""
        return None if self.pats else self.d0

    def column(self, B, df, args: list[tuple[str, Any]], out: str):
        """df with column `out` = δ of the atom whose arguments are `args` (per position
        (CONST, value) or (COL, column name); a null column value is an unbound argument)."""
        if not self.pats:
            return B.with_columns(df, {out: B.lit(self.d0, INT)})
        cols = [(i, a[1]) for i, a in enumerate(args) if a[0] == COL]
        if not cols:
            return self._for_pattern(B, df, args, frozenset(), out)
        pat = B.lit(0, INT)
        for k, (_, name) in enumerate(cols):
            pat = pat + B.when(B.not_null(B.col(name)), B.lit(1 << k, INT), B.lit(0, INT))
        df = B.with_columns(df, {"_dpat": pat})
        parts = []
        for p in sorted(B.values(df, "_dpat")):
            bound = frozenset(i for k, (i, _) in enumerate(cols) if p >> k & 1)
            sub = B.filter(df, B.col("_dpat") == B.lit(p, INT))
            parts.append(self._for_pattern(B, sub, args, bound, out))
        if not parts:
            return B.drop(B.with_columns(df, {out: B.lit(self.d0, INT)}), ["_dpat"])
        return B.drop(B.concat(parts), ["_dpat"])

    def column_static(self, B, df, sides: list, out: str):
        """Like `column` for a static pattern: (CONST, None) is an unbound argument, every
        (COL, name) column is non-null."""
        df, expr, tmp = self.expr_static(B, df, sides, out)
        return B.drop(B.with_columns(df, {out: expr}), tmp)

    def expr_static(self, B, df, sides: list, tag: str):
        """(df with the look-up columns joined, the δ expression, the temporary columns).
        (CONST, None) is an unbound argument; every (COL, name) column is non-null."""
        if not self.pats:
            return df, B.lit(self.d0, INT), []
        bound = frozenset(i for i, a in enumerate(sides) if a[0] == COL)
        return self._lookups(B, df, sides, bound, tag)

    def lookup_spec(self, B, sides: list):
        """expr_static's δ as data for a fused kernel (ArraysBackend.deadlines): (whether
        the atom is ground, the greatest δ needing no look-up or None, the default,
        [(argument column, look-up table, its key column, its δ column)]); None when a
        pattern group is looked up by more than one argument."""
        if not self.pats:
            return True, None, self.d0, []
        bound = frozenset(i for i, a in enumerate(sides) if a[0] == COL)
        ground, groups, const = self._groups(tuple(sides), bound)
        looks = []
        for gi, (k, entries) in enumerate(groups):
            if len(k) != 1:
                return None
            name = f"_dl_f_{gi}"
            sig = (k, tuple((i, a[1]) for i, a in enumerate(sides) if a[0] == CONST), name)
            table = self._table(B, sig, k, entries, name)
            looks.append((sides[k[0]][1], table, f"_dk_{name}_0", name))
        return ground, const, self.d0, looks

    def _for_pattern(self, B, df, args, bound_cols: frozenset, out: str):
        df, expr, tmp = self._lookups(B, df, args, bound_cols, out)
        return B.drop(B.with_columns(df, {out: expr}), tmp)

    def _lookups(self, B, df, args, bound_cols: frozenset, tag: str):
        ground, groups, const = self._groups(tuple(args), bound_cols)
        exprs = []
        tmp = []
        for gi, (k, entries) in enumerate(groups):
            name = f"_dl_{tag}_{gi}"
            sig = (k, tuple((i, a[1]) for i, a in enumerate(args) if a[0] == CONST), name)
            table = self._table(B, sig, k, entries, name)
            keys = [f"_dk_{name}_{j}" for j in range(len(k))]
            df = B.join(df, table, [B.col(args[i][1]) for i in k], keys, how="left")
            exprs.append(B.col(name))
            tmp.extend([name] + keys)
        if const is not None:
            exprs.append(B.lit(const, INT))
        if ground:
            val = B.coalesce([B.greatest(exprs), B.lit(self.d0, INT)]) if exprs \
                else B.lit(self.d0, INT)
        else:
            val = B.greatest(exprs + [B.lit(self.d0, INT)])
        return df, val, tmp

    def _groups(self, args: tuple, bound_cols: frozenset) -> tuple:
        """(whether the atom is ground, [(bound positions, [(their pattern values, δ)])]
        sorted, the greatest δ of the patterns met by no bound position or None): the
        patterns compatible with args, by the positions a join must look up (memoised: the
        same atoms come back every tick)."""
        key = (args, bound_cols)
        got = self._group_memo.get(key)
        if got is not None:
            return got
        n = len(args)
        ground = all((a[0] == CONST and a[1] is not None) or i in bound_cols
                     for i, a in enumerate(args))
        groups: dict[tuple, list] = {}
        for pvals, d in self.pats:
            key_ = []
            ok = True
            for i, pv in enumerate(pvals):
                if pv is None or i >= n:
                    continue
                kind, val = args[i]
                if kind == CONST and val is None:
                    continue  # unbound: compatible with any pattern value
                if kind == CONST:
                    if val != pv:
                        ok = False
                        break
                elif i in bound_cols:
                    key_.append(i)
            if not ok:
                continue
            k = tuple(key_)
            groups.setdefault(k, []).append((tuple(pvals[i] for i in k), d))
        const = max((d for _, d in groups.pop((), [])), default=None)
        got = (ground, sorted(groups.items()), const)
        self._group_memo[key] = got
        return got

    def frames(self):
        """The look-up tables built so far (kept across ticks)."""
        return list(self._tables.values())

    def _table(self, B, sig: tuple, k: tuple, entries: list, name: str):
        got = self._tables.get((id(B), sig))
        if got is None:
            best: dict = {}
            for vals, d in entries:
                best[vals] = max(best.get(vals, d), d)
            cols = {f"_dk_{name}_{j}": [v[j] for v in best] for j in range(len(k))}
            cols[name] = list(best.values())
            schema = {f"_dk_{name}_{j}": OBJ for j in range(len(k))}
            schema[name] = INT
            got = B.from_columns(cols, schema)
            self._tables[(id(B), sig)] = got
        return got


def ground_delay_column(B, plan: DelayPlan, df, n_args: int, out: str):
    """δ of ground facts (a0..a{n-1}) as a column."""
    return plan.column(B, df, [(COL, f"a{i}") for i in range(n_args)], out)
