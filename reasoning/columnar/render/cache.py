"""The render cache: lines of answers kept from S_τ-1 (002 Alg. 1 step 1(b)), τ rewritten."""
from __future__ import annotations

from reasoning.semantics.keyed import KeyedLines, concat_rendered
from reasoning.columnar.layout import vcol

# the native render cache (_render_native_cached) is left off for a pattern whose last
# RENDER_CACHE_MISSES look-ups hit no row — answers printed once, as definite ones that are
# then forgotten (the turbines: ~0.25 ms a tick of look-ups and upkeep for nothing) — and
# tried again every RENDER_CACHE_PROBE ticks
RENDER_CACHE_MISSES = 8
RENDER_CACHE_PROBE = 16


class RenderCache:
    """Renderer's lines of the previous tick (a mixin: self._rcache, self._rmiss,
    self._rcache_gen): a row's line depends on τ only through its `"tick": τ` prefix and its
    sort key's suffix."""

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
            if self._native.multi_possible:  # (else no nogood combines variables)
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
