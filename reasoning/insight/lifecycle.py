"""The lifecycle of answers over a sequence of per-tick answer sets (no Spark, no I/O).

Feed the main query's answer objects of each tick (the dicts of `hypo run --format jsonl
--all`, pending included) in tick order to `Lifecycles.observe`; `finish` closes the run.
Per answer it records

  first     the tick it was first announced (shown as hypothetical or definite),
  decided   the tick it became definite (outcome `confirmed`) or the first observed tick at
            which it was gone without having become definite (`refuted`); None while `open`,
  deadline  the last deadline announced for it (None: definite at once, or unbounded),

and per tick the counts of definite, hypothetical and pending answers and of refutations.

A pending answer (no evidence yet, shown with `--all` only) is not announced: it starts no
lifecycle.  It is counted apart, so that every answer the run saw is counted once: one that
becomes hypothetical or definite starts its lifecycle then (`pending_since` keeps the tick
it was first pending); one gone while still pending is `refuted while pending`
(`pending_refuted`, per tick and in all); one still pending at the end is `still pending`
(`pending_open`).  An announced answer shown as pending later is still that lifecycle.
With `--confidence`, an object's `confidence` at the tick its answer is announced is the
lifecycle's `confidence` (1 for an answer definite at once).

An answer's identity is `explain.answer_key` — query, bound substitution and the exclusions
of its object variables (a time variable's are time constraints, like its floor) —
the identity of `hypo run`'s text view, `--changes` and the DAG's publish task: an answer
whose exclusions grow (`X ∉ {wt1}` → `X ∉ {wt1, wt2}`) is the old answer refuted and a new
one announced, as `--changes` prints it.  Definite answers are final: once confirmed, the
same key seen again (`--no-forget` keeps it) starts nothing new.  A refuted answer that comes
back is a new lifecycle.  Ticks may be skipped (a quiet stretch of `hypo run`): an answer
missing at the next observed tick is refuted at the tick after the last one it was seen at.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from reasoning.semantics.explain import answer_key, format_atom_answer

CONFIRMED, REFUTED, OPEN = "confirmed", "refuted", "open"
OUTCOMES = (CONFIRMED, REFUTED, OPEN)


@dataclass(slots=True)
class Lifecycle:
    label: str  # the answer in program syntax, e.g. `OK(X, 1) for X ∉ {wt1}`
    first: int
    first_status: str  # hypothetical | definite
    last_seen: int
    decided: Optional[int] = None
    outcome: str = OPEN
    deadline: Optional[int] = None
    confidence: Optional[float] = None  # the object's confidence when announced (--confidence)
    pending_since: Optional[int] = None  # first tick pending, when pending before announced

    @property
    def gained(self) -> Optional[int]:
        """Ticks between announcement and certainty of a confirmed answer: how much earlier
        it was known than by waiting for it to become definite (0: definite at once)."""
        return self.decided - self.first if self.outcome == CONFIRMED else None

    def wait(self, last_tick: int) -> int:
        """Ticks from announcement to decision (to the last tick for an open answer)."""
        return (self.decided if self.decided is not None else last_tick + 1) - self.first


@dataclass(slots=True)
class TickCounts:
    tick: int
    definite: int = 0
    hypothetical: int = 0
    pending: int = 0
    refuted: int = 0
    confirmed: int = 0  # answers announced as hypothetical earlier that became definite now
    announced: int = 0  # answers announced for the first time at this tick
    pending_refuted: int = 0  # pending answers, never announced, gone at this tick


@dataclass
class Lifecycles:
    """The lifecycles of a run; `observe` each tick in order, then `finish`."""

    label: Callable[[dict], str] = format_atom_answer
    key: Callable[[dict], object] = answer_key  # the lake passes its answer_key column
    all: list = field(default_factory=list)  # every Lifecycle, in announcement order
    ticks: list = field(default_factory=list)  # TickCounts per observed tick
    first_tick: Optional[int] = None
    last_tick: Optional[int] = None
    _open: dict = field(default_factory=dict)  # key -> Lifecycle
    _confirmed: set = field(default_factory=set)
    _pending: dict = field(default_factory=dict)  # key -> first tick, never announced yet
    pending_refuted: int = 0  # pending answers gone without having been announced

    def observe(self, tick: int, objs: Iterable[dict]) -> TickCounts:
        if self.last_tick is not None and tick <= self.last_tick:
            raise ValueError(f"tick {tick} observed after tick {self.last_tick}")
        prev = self.last_tick
        self.first_tick = tick if self.first_tick is None else self.first_tick
        self.last_tick = tick
        c = TickCounts(tick)
        seen = set()
        for o in objs:
            st = o.get("status")
            if st not in ("definite", "hypothetical", "pending"):
                continue  # the `none` line of an empty tick
            setattr(c, st, getattr(c, st) + 1)
            k = self.key(o)
            seen.add(k)
            lc = self._open.get(k)
            if lc is not None:
                lc.last_seen = tick
                if st == "definite":
                    lc.decided, lc.outcome = tick, CONFIRMED
                    del self._open[k]
                    self._confirmed.add(k)
                    c.confirmed += 1
                elif st == "hypothetical":
                    lc.deadline = o.get("deadline")
                continue
            if k in self._confirmed:
                continue
            if st == "pending":
                self._pending.setdefault(k, tick)
                continue
            lc = Lifecycle(self.label(o), tick, st, tick, deadline=o.get("deadline"),
                           confidence=o.get("confidence"),
                           pending_since=self._pending.pop(k, None))
            self.all.append(lc)
            c.announced += 1
            if st == "definite":
                lc.decided, lc.outcome = tick, CONFIRMED
                self._confirmed.add(k)
            else:
                self._open[k] = lc
        gone = [k for k in self._open if k not in seen]
        for k in gone:
            lc = self._open.pop(k)
            lc.decided = (prev + 1) if prev is not None else tick
            lc.outcome = REFUTED
            c.refuted += 1
        for k in [k for k in self._pending if k not in seen]:
            del self._pending[k]
            c.pending_refuted += 1
        self.pending_refuted += c.pending_refuted
        self.ticks.append(c)
        return c

    def finish(self) -> "Lifecycles":
        """Nothing to close (open answers stay open); returns self for chaining."""
        return self

    # ------------------------------------------------------------------ summaries
    def outcomes(self) -> dict:
        out = {o: 0 for o in OUTCOMES}
        for lc in self.all:
            out[lc.outcome] += 1
        return out

    @property
    def pending_open(self) -> int:
        """Pending answers never announced and still there at the last tick."""
        return len(self._pending)

    def gained(self) -> list[int]:
        return [lc.gained for lc in self.all if lc.outcome == CONFIRMED]

    def slowest(self, n: int) -> list[Lifecycle]:
        """The n answers that took longest from announcement to decision (open ones count
        up to the last tick), ties by announcement."""
        last = self.last_tick if self.last_tick is not None else 0
        return sorted(self.all, key=lambda lc: (-lc.wait(last), lc.first, lc.label))[:n]

    def timeline(self, cap: int) -> tuple[list[Lifecycle], str]:
        """At most `cap` lifecycles to draw, in announcement order: all of them if they fit,
        else the cap/2 announced first and the slowest of the rest; with a sentence saying
        what was left out ('' when nothing was)."""
        if len(self.all) <= cap:
            return list(self.all), ""
        half = cap // 2
        first = self.all[:half]
        ids = {id(lc) for lc in first}
        last = self.last_tick if self.last_tick is not None else 0
        rest = sorted((lc for lc in self.all if id(lc) not in ids),
                      key=lambda lc: (-lc.wait(last), lc.first, lc.label))[:cap - half]
        ids |= {id(lc) for lc in rest}
        chosen = [lc for lc in self.all if id(lc) in ids]
        return chosen, (f"showing {len(chosen)} of {len(self.all)} answers: the {half} "
                        f"announced first and the {cap - half} slowest of the others; "
                        f"{len(self.all) - len(chosen)} left out")


def build(sequence: Iterable[tuple[int, Iterable[dict]]],
          label: Callable[[dict], str] = format_atom_answer,
          key: Callable[[dict], object] = answer_key) -> Lifecycles:
    """Lifecycles from (tick, answer objects) pairs in tick order."""
    lcs = Lifecycles(label=label, key=key)
    for tick, objs in sequence:
        lcs.observe(tick, objs)
    return lcs.finish()


class Calibration:
    """Announced confidences against outcomes (issue 13's reliability plot): every tick's
    non-definite answers with their confidence; an announcement counts as confirmed (1) if
    its answer — (query, substitution) — is definite at that tick or later, refuted (0) if
    it left S before the last tick without being definite, and is left out while open."""

    def __init__(self):
        self.recs: list = []  # (answer, confidence, tick)
        self.definite_at: dict = {}  # answer -> first tick definite
        self.last_seen: dict = {}

    def observe(self, tick: int, key, status: str, confidence: float) -> None:
        if status == "definite":
            self.definite_at.setdefault(key, tick)
            return
        self.recs.append((key, confidence, tick))
        self.last_seen[key] = tick

    def records(self, last: int) -> list[tuple[float, float]]:
        """(announced confidence, 1.0 confirmed | 0.0 refuted) of decided announcements."""
        return [(c, 1.0 if self.definite_at.get(k, -1) >= t else 0.0)
                for k, c, t in self.recs if k in self.definite_at or self.last_seen[k] < last]
