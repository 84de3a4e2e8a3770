"""Disequality constraints for step 3(b)/(c) of Algorithm 1 (beyond the paper's enumeration).

The paper replaces a schematic answer by "all minimal substitutions θ' such that Pθ is not
unifiable with hθ'", which enumerates constants (its own stated bottleneck, 002 §6
"Complexity").  We instead attach *nogoods* — forbidden partial assignments — to the
schematic answer, so `X ≠ wt1` covers an open domain, and split into constants only where
a positive match forces it.  A `Cover` is a region of one answer's instances:
`eqs ∧ ⋀¬n` over that answer's unbound variables.
"""
from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple, Optional

from reasoning.semantics.patterns import Binding, LitPattern, reduce_nogoods


class Cover(NamedTuple):
    """Instances where `eqs` hold and none of the nogoods `negs` does (var index -> value)."""

    eqs: tuple  # tuple of (var, value)
    negs: tuple  # tuple of nogoods, each a tuple of (var, value)


TRUE = Cover((), ())


def cover_of(h: LitPattern, hb: Binding, head: LitPattern, lb: Binding, lng: frozenset,
             approx_full: bool) -> Optional[Cover]:
    """The instances of a negated hypothesis h (under hb) that an answer with head `head`
    (under lb, nogoods lng) can prove: None if they are not unifiable.

    Variable-variable equalities between h's own variables are not representable; the cover
    is then widened (`approx_full`, safe for step 3(c)) or dropped (None, safe for 3(b)).
    """
    hargs, ht = h.instantiate(hb)
    largs, lt = head.instantiate(lb)
    eqs: dict = {}
    lmap: dict = {}

    def bind_h(x: int, c) -> bool:
        cur = eqs.get(x)
        if cur is None:
            eqs[x] = c
            return True
        return cur == c

    approx = False
    pairs = list(zip(h.args, hargs, head.args, largs))
    for (hv, hx), hval, (lv, lx), lval in pairs:
        hvar = hx if (hv and hval is None) else None
        lvar = lx if (lv and lval is None) else None
        if hvar is None and lvar is None:
            if hval != lval:
                return None
        elif hvar is None:  # constant in h, variable in l
            got = lmap.get(lvar)
            if got is None:
                lmap[lvar] = ("c", hval)
            elif got[0] == "c":
                if got[1] != hval:
                    return None
            elif not bind_h(got[1], hval):
                return None
        elif lvar is None:  # variable in h, constant in l
            if not bind_h(hvar, lval):
                return None
        else:
            got = lmap.get(lvar)
            if got is None:
                lmap[lvar] = ("h", hvar)
            elif got[0] == "c":
                if not bind_h(hvar, got[1]):
                    return None
            elif got[1] != hvar:
                approx = True
    # time: h's time is ground when processed; l's head time may be unbound (rare)
    if ht is not None and lt is not None:
        if ht != lt:
            return None
    elif ht is not None and lt is None and head.tvar is not None:
        lmap.setdefault(head.tvar, ("c", ht - head.toff))
    elif ht is None:
        approx = True
    if approx:
        if not approx_full:
            return None
        return Cover(tuple(sorted(eqs.items())), ())
    # resolve ("h", x) links whose x got bound through a later constant
    negs = []
    for n in lng:
        out = []
        skip = False
        for v, c in n:
            m = lmap.get(v)
            if m is None:
                skip = True  # existential variable of l: the nogood can always be avoided
                break
            if m[0] == "c" or m[1] in eqs:
                val = m[1] if m[0] == "c" else eqs[m[1]]
                if val != c:
                    skip = True
                    break
                continue
            out.append((m[1], c))
        if skip:
            continue
        if not out:
            return None  # every instance of l violates this nogood
        negs.append(tuple(sorted(out)))
    return Cover(tuple(sorted(eqs.items())), tuple(negs))


def _bind(b: Binding, ng: frozenset, eqs) -> Optional[tuple[Binding, frozenset]]:
    nb = list(b)
    for v, c in eqs:
        if nb[v] is None:
            nb[v] = c
        elif nb[v] != c:
            return None
    nb = tuple(nb)
    red = reduce_nogoods(ng, nb)
    if red is None:
        return None
    return nb, red


def _add_nogood(b: Binding, ng: frozenset, n) -> Optional[frozenset]:
    rest = []
    for v, c in n:
        if b[v] is None:
            rest.append((v, c))
        elif b[v] != c:
            return ng  # already excluded by the binding
    if not rest:
        return None
    return ng | {tuple(rest)}


def partition(b: Binding, ng: frozenset, covers: list[Cover]):
    """Split the instances of (b, ng) into those inside some cover and those outside all.

    Returns (inside, outside), each a list of disjoint (binding, nogoods) pieces.  Single
    equalities without nogoods on the same variable are handled in one batch, so k answers
    `X = c_i` cost O(k) rather than O(k²).
    """
    if any(c == TRUE for c in covers):
        return [(b, ng)], []
    batch: dict[int, set] = defaultdict(set)
    general = set()
    for c in covers:
        if len(c.eqs) == 1 and not c.negs:
            batch[c.eqs[0][0]].add(c.eqs[0][1])
        else:
            general.add(c)
    # the pieces are a function of the *set* of covers: variables and general covers in a
    # canonical order (the split is sequential, so another order gives other, equivalent
    # pieces — and the covers come from sets, whose order depends on PYTHONHASHSEED)
    inside: list = []
    outside = [(b, ng)]
    for v, values in sorted(batch.items()):
        nxt = []
        for pb, png in outside:
            cur = pb[v]
            if cur is not None:
                if cur in values:
                    inside.append((pb, png))
                else:
                    nxt.append((pb, png))
                continue
            inside.extend(_bind_each(pb, png, v, values))
            excl = frozenset((((v, c),) for c in values))
            nxt.append((pb, png | excl))
        outside = nxt
    for c in sorted(general, key=repr):
        nxt = []
        for pb, png in outside:
            ins, outs = _split(pb, png, c)
            inside.extend(ins)
            nxt.extend(outs)
        outside = nxt
    return inside, outside


def _bind_each(b: Binding, ng: frozenset, v: int, values) -> list:
    """The pieces b[v := c] for every c in values, in O(|ng| + |values|): the nogoods not
    mentioning v are shared, single-variable exclusions of v are a set look-up."""
    keep, excluded, multi = [], set(), []
    for n in ng:
        if len(n) == 1 and n[0][0] == v:
            excluded.add(n[0][1])
        elif any(x == v for x, _ in n):
            multi.append(n)
        else:
            keep.append(n)
    keep_fs = frozenset(keep)
    out = []
    for c in sorted(values, key=str):
        if c in excluded:
            continue
        nb = list(b)
        nb[v] = c
        nb = tuple(nb)
        png = keep_fs
        if multi:
            red = reduce_nogoods(frozenset(multi), nb)
            if red is None:
                continue
            png = keep_fs | red
        out.append((nb, png))
    return out


def _split(b: Binding, ng: frozenset, c: Cover):
    """(pieces inside c, pieces outside c) of one (binding, nogoods) region."""
    inside, outside = [], []
    got = _bind(b, ng, c.eqs)
    if got is None:
        return [], [(b, ng)]
    ib, ing = got
    full = ing
    dead = False
    for n in c.negs:
        nn = _add_nogood(ib, full, n)
        if nn is None:
            dead = True
            break
        full = nn
    if not dead:
        inside.append((ib, full))
    # outside = ¬eqs  ∨  (eqs ∧ ¬n1..¬n_{j-1} ∧ n_j)
    if c.eqs:
        o = _add_nogood(b, ng, c.eqs)
        if o is not None:
            outside.append((b, o))
    acc = ing
    for n in c.negs:
        got2 = _bind(ib, acc, n)
        if got2 is not None:
            outside.append(got2)
        nxt = _add_nogood(ib, acc, n)
        if nxt is None:
            break
        acc = nxt
    return inside, outside
