"""Time constraints from periodic background facts (003_…txt §2: linear repeating points
and the constraints of generalized tuples).

A literal on a periodic predicate is decided at pre-processing, never a hypothesis: its
time term V+k must lie in (positive) or outside (negated) the lrps of the matching facts.
What remains is, per time variable V of a template, a `TimeDomain`: V lies in one lrp
(`allowed`: offset, period, until — the intersection of the positive constraints, by the
Chinese remainder theorem) and in none of the `excluded` lrps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from reasoning.language.syntax import Lrp

SEARCH = 100_000  # candidates tried when deciding whether a domain is empty (see first)


def intersect(a: Lrp, b: Lrp) -> Optional[Lrp]:
    """a ∩ b as one lrp (None if empty): congruences combined by the CRT, bounds by max/min."""
    until = b.until if a.until is None else (a.until if b.until is None else min(a.until, b.until))
    lo = max(a.offset, b.offset)
    if a.period == 0 or b.period == 0:
        point, other = (a, b) if a.period == 0 else (b, a)
        t = point.offset
        return Lrp(t) if t in other and (until is None or t <= until) else None
    g = math.gcd(a.period, b.period)
    if (b.offset - a.offset) % g:
        return None
    m = a.period // g * b.period
    # x ≡ a.offset (mod a.period), x ≡ b.offset (mod b.period)
    k = ((b.offset - a.offset) // g * pow(a.period // g, -1, b.period // g)) % (b.period // g)
    x = (a.offset + a.period * k) % m
    first = lo + (x - lo) % m
    return canonical(Lrp(first, m, until))


def canonical(a: Lrp) -> Optional[Lrp]:
    """The same set with `until` at its last element and one element as period 0 (None if
    empty)."""
    if a.until is None:
        return a
    if a.until < a.offset:
        return None
    if a.period == 0:
        return Lrp(a.offset)
    last = a.offset + (a.until - a.offset) // a.period * a.period
    return Lrp(a.offset) if last == a.offset else Lrp(a.offset, a.period, last)


def at_least(a: Lrp, lo: int) -> Optional[Lrp]:
    """The elements of a that are ≥ lo (None if none)."""
    if a.offset >= lo:
        return a
    if a.period == 0:
        return None
    first = a.offset + -(-(lo - a.offset) // a.period) * a.period
    return canonical(Lrp(first, a.period, a.until))


@dataclass(frozen=True, order=True)
class TimeDomain:
    """The values a template's time variable may take: in `allowed` (None: any natural
    time term) and in none of `excluded` (the lrps of negated periodic literals)."""

    allowed: Optional[Lrp] = None
    excluded: tuple[Lrp, ...] = ()

    def admits(self, v: int) -> bool:
        return (self.allowed is None or v in self.allowed) and not any(v in e for e in self.excluded)

    def restrict(self, lrp: Lrp) -> Optional["TimeDomain"]:
        """This domain ∩ lrp (None if empty)."""
        a = canonical(lrp) if self.allowed is None else intersect(self.allowed, lrp)
        return None if a is None else TimeDomain(a, self.excluded)

    def exclude(self, lrp: Lrp) -> "TimeDomain":
        c = canonical(lrp)
        if c is None:
            return self
        return TimeDomain(self.allowed, tuple(sorted(set(self.excluded) | {c}, key=_key)))

    def normal(self, lo: int) -> Optional["TimeDomain"]:
        """The domain of a variable whose values are ≥ lo (its time terms are natural): the
        allowed lrp starting at its first value ≥ lo, the exclusions that still matter (None
        if no value is left)."""
        allowed = at_least(self.allowed if self.allowed is not None else Lrp(lo, 1), lo)
        if allowed is None:
            return None
        keep = tuple(sorted({e2 for e2 in (at_least(e, allowed.offset) for e in self.excluded)
                             if e2 is not None and intersect(e2, allowed)}, key=_key))
        d = TimeDomain(allowed, keep)
        if first(d) is None:
            return None
        if allowed.period == 1 and allowed.until is None and allowed.offset == lo:
            allowed = None  # only the natural bound: no constraint of its own
        return TimeDomain(allowed, keep) if (allowed is not None or keep) else TimeDomain()

    @staticmethod
    def from_json(j: dict) -> "TimeDomain":
        """The inverse of to_json."""
        def lrp(x: dict) -> Lrp:
            return Lrp(x["offset"], x["period"], x.get("until"))

        return TimeDomain(lrp(j) if "period" in j else None,
                          tuple(lrp(e) for e in j.get("excluded", ())))

    @property
    def trivial(self) -> bool:
        return self.allowed is None and not self.excluded

    def text(self, name: str) -> str:
        """`T = 3 + 7n, n ≥ 0`, `T = 3 + 7n, 0 ≤ n ≤ 4`, with `, T ≠ 8 + 14n, n ≥ 0`."""
        parts = []
        if self.allowed is not None:
            parts.append(f"{name} = {_lrp_text(self.allowed)}")
        parts += [f"{name} ≠ {_lrp_text(e)}" for e in self.excluded]
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """`{"period": 7, "offset": 3}` (+ "until" when bounded, + "excluded": [...])."""
        out: dict[str, Any] = {}
        if self.allowed is not None:
            out.update(_lrp_json(self.allowed))
        if self.excluded:
            out["excluded"] = [_lrp_json(e) for e in self.excluded]
        return out


def _key(a: Lrp) -> tuple:
    """A sort key of lrps (`until` None last)."""
    return (a.offset, a.period, a.until is None, a.until or 0)


def _lrp_text(a: Lrp) -> str:
    if a.period == 0:
        return str(a.offset)
    base = f"{a.offset} + {a.period}n" if a.offset else f"{a.period}n"
    if a.until is None:
        return f"{base}, n ≥ 0"
    return f"{base}, 0 ≤ n ≤ {(a.until - a.offset) // a.period}"


def _lrp_json(a: Lrp) -> dict[str, Any]:
    out: dict[str, Any] = {"period": a.period, "offset": a.offset}
    if a.until is not None:
        out["until"] = a.until
    return out


def first(d: TimeDomain) -> Optional[int]:
    """The least value of a domain with an allowed lrp (None if it is empty).  Beyond the
    largest offset of its lrps the exclusions repeat with the lcm of the periods, so one
    such stretch decides (at most SEARCH candidates are tried; past that, the domain is
    assumed non-empty)."""
    a = d.allowed
    assert a is not None
    if a.period == 0:
        return a.offset if d.admits(a.offset) else None
    span = a.period
    for e in d.excluded:
        span = math.lcm(span, e.period or 1)
    top = max([a.offset] + [e.offset for e in d.excluded]
              + [e.until for e in d.excluded if e.until is not None]) + span
    v, n = a.offset, 0
    while v <= top and (a.until is None or v <= a.until):
        if d.admits(v):
            return v
        v += a.period
        n += 1
        if n > SEARCH:
            return v
    return None
