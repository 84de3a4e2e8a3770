"""One continuous query over a stream, whichever executor runs Algorithm 1: the row engine
(engine.py, the reference executor), the set-at-a-time one (columnar/), or `auto`, which
starts on the row engine and hands S_τ over to the columnar one at the first slice of at
least `threshold` facts — the program's crossover (auto_threshold).

`lines` renders a tick's answer set exactly as `hypo run --format jsonl` prints it, with
either executor (tests/test_columnar.py checks they print the same bytes).
"""
from __future__ import annotations

import json
from typing import Optional

try:  # (answers_at's sort keys; json's where it is absent)
    import orjson
except ImportError:  # pragma: no cover
    orjson = None

from reasoning.language.compiler import CompiledProgram
from reasoning.row.engine import Engine
from reasoning.semantics.answer import TickReport
from reasoning.semantics.explain import DEFINITE, Explainer, answer_key, static_horizons
from reasoning.semantics.patterns import Fact

ENGINES = ("row", "columnar", "auto")
# `auto` hands over at the first slice of auto_threshold(templates) facts: AUTO_PER_LITERAL ×
# templates / literals, within [AUTO_MIN, AUTO_THRESHOLD].  Measured (bench/engine.py
# --in-process, bench/windows.py; docs/performance.md "Row or columnar"): a columnar tick
# costs ~0.6 ms a template whatever the slice's size, a row tick ~0.005 ms a fact and a
# literal, so the crossover is at ~120 × templates / literals facts a slice (turbines ~55,
# malfunction < 50, a window program of 25 templates and 211 literals < 36); twice that
# leaves the row engine the small slices it is fastest on.
# The templates the columnar executor's step 1 evaluates together (columnar/step1_family.py:
# a window program's unfolding) cost about as much as FAMILY_TEMPLATES of them alone (`w1`'s
# 9 and `w2`'s 25 in one family: a 2.5 and 2.9 ms tick at 36 facts a slice when it was set;
# about 1.0 ms each since the family's tail and byte tables — docs/performance.md).
AUTO_THRESHOLD = 300
AUTO_MIN = 20
AUTO_PER_LITERAL = 240
FAMILY_TEMPLATES = 4


def auto_threshold(templates) -> int:
    """Facts per slice from which `auto` runs the program on the columnar executor: the
    measured crossover for its templates' count and literals (see AUTO_PER_LITERAL; a
    family of templates evaluated together counts as FAMILY_TEMPLATES at most)."""
    from reasoning.columnar.step1_family import groups

    n = len(templates)
    for ks in groups(templates):
        n -= len(ks) - min(len(ks), FAMILY_TEMPLATES)
    lits = sum(len(tp.lits) for tp in templates)
    if not n or not lits:
        return AUTO_THRESHOLD
    return max(AUTO_MIN, min(AUTO_THRESHOLD, -(-AUTO_PER_LITERAL * n // lits)))


def default_until(eng, st) -> int:
    """Last arrival tick (st.last_tick) plus enough ticks for every hypothesis to be decided
    (`hypo run` without --until, `hypo lake run` without --to)."""
    rels = list(static_horizons(eng).values())
    maxd = max([eng.delays.max(p) for p in eng.cp.analysis.edb] or [0])
    if any(v is None for v in rels):
        extra = maxd + 1
    else:
        extra = max(rels + [maxd]) + 1
    return max(st.last_tick, 0) + extra


def quiet_margin(eng) -> Optional[int]:
    """M such that, once M ticks in a row brought no fact and printed nothing, every later
    tick without facts prints nothing too, and S_τ after such a stretch is what a fresh
    engine started M ticks earlier builds (None: no such bound, e.g. an unbounded wait or a
    definite answer kept forever).

    Why: with no facts, S_τ only changes by step 2 (answers at T := τ), their expiry and
    step 3 — all relative to τ once τ is past every constant time of P_Q.  An answer lives
    at most H ticks (its positive hypotheses' δ, its negated hypotheses' horizons, the
    retention of definite answers), and step 3 looks at most one H per query level away.
    """
    rels = list(static_horizons(eng).values())
    keep = list(eng.retention.values())
    if any(v is None for v in rels + keep):
        return None
    maxd = max([eng.delays.max(p) for p in eng.cp.analysis.edb] or [0])
    offs = [0]
    for tp in eng.templates:
        offs.append(abs(tp.head.toff))
        offs.extend(abs(lp.toff) for lp in tp.lits)
    h = max(rels + [0]) + max(keep + [0]) + maxd + max(offs) + 2
    return h * (len(eng.cp.queries) + 1) + 2


def quiet_stretch(margin: Optional[int], quiet: int, tau: int,
                  nxt: Optional[int]) -> Optional[tuple[int, int]]:
    """(replay start, last skipped tick) when ticks τ..last can be skipped: `quiet` ≥ margin
    ticks in a row brought no fact and printed nothing, and the next fact arrives at `nxt`
    (or the run ends at nxt - 1).  S_last is what a fresh executor builds from ∅ over the
    ticks start..last without facts (quiet_margin); used by `hypo run` and `hypo lake run`."""
    if margin is None or quiet < margin or nxt is None or nxt - 2 * margin <= tau:
        return None
    return nxt - 2 * margin, nxt - margin - 1


def answers_at(ex: Explainer, tick: int, answers, all_queries: bool, include_pending: bool,
               ground: bool) -> list[dict]:
    """The printed answer set of one tick (main query unless all_queries), sorted by
    (query ≠ main, canonical JSON)."""
    eng = ex.eng
    out = []
    for a in answers:
        tp = eng.templates[a.tid]
        if tp.qid != eng.main_qid and not all_queries:
            continue
        if not a.ev and not include_pending and not eng.is_definite(a):
            continue
        if ground:
            for g in ex.groundings(a, eng.cp.domain):
                out.append(ex.render(a, tick, g))
        else:
            out.append(ex.render(a, tick))
    uniq = {sorted_json(o): o for o in out}
    main = str(eng.cp.main.atom)
    return [uniq[k] for k in sorted(uniq, key=lambda k: (uniq[k]["query"] != main, k))]


def sorted_json(o: dict) -> bytes:
    """An answer object's sort key: json.dumps(o, sort_keys=True) without spaces, as UTF-8
    (orjson's; json's where orjson refuses a value — an integer past 64 bits, a lone
    surrogate).  The spaces json.dumps puts after every `,` and `:` between items
    change no comparison, so the order is json.dumps(o, sort_keys=True)'s, which the
    columnar renderer sorts by (render/)."""
    if orjson is not None:
        try:
            return orjson.dumps(o, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # (orjson.JSONEncodeError is one)
            pass
    return json.dumps(o, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass")


class Session:
    """Algorithm 1 tick by tick on the chosen executor, and each tick's rendering."""

    def __init__(self, cp: CompiledProgram, engine: str = "auto", forget: bool = True,
                 threshold: Optional[int] = None, backend=None):
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r} (row, columnar or auto)")
        self.cp = cp
        self.forget = forget
        self.mode = engine
        self.threshold = threshold  # auto: facts a slice from which it runs columnar
        self.handed_over: Optional[tuple[int, int]] = None  # auto: (tick, slice's facts)
        self.backend = backend
        self.tau = -1
        self.rep: Optional[TickReport] = None
        self.row: Optional[Engine] = None
        self.col = None
        self.renderer = None
        self.ex: Optional[Explainer] = None
        self.unsupported: Optional[str] = None  # why the columnar executor cannot run it
        self._view: Optional[tuple] = None  # (report, Explainer over the columnar S_τ)
        if engine == "columnar":
            from reasoning.columnar import Unsupported

            try:
                self._start_columnar()
            except Unsupported as e:  # the row engine runs it: one answer whichever executor
                self.unsupported = str(e)
        if self.col is None:
            self.row = Engine(cp, forget=forget)
            self.ex = Explainer(self.row)
        if threshold is None:  # the program's crossover, from the executor's templates
            self.threshold = auto_threshold(self.templates)

    @property
    def templates(self):
        """The program's compiled templates (whichever executor holds them)."""
        return (self.row if self.row is not None else self.col).templates

    @property
    def executor(self) -> str:
        return "columnar" if self.col is not None else "row"

    def _start_columnar(self) -> None:
        from reasoning.columnar import ColumnarEngine
        from reasoning.columnar.backends.choice import default_backend, polars_view
        from reasoning.columnar.render.answers import Renderer

        self.col = ColumnarEngine(self.cp, forget=self.forget,
                                  backend=self.backend or default_backend())
        view = polars_view(self.col)
        self.renderer = Renderer(view, native=self.col) if view is not None \
            else Renderer(self.col)

    def restart(self, tau: int) -> None:
        """A fresh executor of the same kind whose next tick is τ (after a quiet stretch:
        see quiet_margin; cli.run replays the margin from here)."""
        if self.col is not None:
            self._start_columnar()
            self.col.tau = tau - 1
        else:
            self.row = Engine(self.cp, forget=self.forget)
            self.row.tau = tau - 1
            self.ex = Explainer(self.row)
        self.tau = tau - 1
        self.rep = None

    def _handover(self) -> None:
        """S_τ and the window move from the row engine to the columnar one."""
        row = self.row
        self._start_columnar()
        self.col.load_answers(list(row.answers), row.tau)
        self.col.load_window([Fact(p, args, t) for (p, t), s in row.window.items()
                              for args in s])
        self.col.answered.load((p, a, t) for p, a, t, _ in row.answered.items())
        self.row = None
        self.ex = None

    def step(self, facts: list, tau: int) -> TickReport:
        """Algorithm 1 for tick τ (facts validated, as Engine.step)."""
        self._auto(len(facts), tau)
        if self.col is not None:
            self.rep = self.col.step(facts, tau, snapshot=False)
        else:
            self.rep = self.row.step(facts, tau)
            self.ex.reset()
        self.tau = tau
        return self.rep

    def step_slice(self, sl, tau: int) -> TickReport:
        """step() on a stream.Slice: the columnar executor takes its frames as they were
        read, the row engine its Fact objects."""
        self._auto(len(sl), tau)
        if self.col is None:
            return self.step(sl.facts(), tau)
        ready = sl.ready
        if ready is not None and ready[0] == self.col.B.name:
            return self.step(ready[1], tau)
        cols = sl.columns()  # scanned or line-by-line chunks: columns, no frame
        return self.step(sl.frames() if cols is None else cols, tau)

    def prepare_slice(self, sl) -> None:
        """On the thread that reads the stream ahead (stream.Prefetched): the columnar
        executor's input conversion that touches no state of the tick — the slice's frames,
        their numbers as arrays, their strings' hash signatures — so the tick only looks
        them up (~8 % of a turbine tick at 10⁴ devices).  Nothing for the row engine."""
        col = self.col
        prep = getattr(col.B, "prepare_input", None) if col is not None else None
        if prep is not None and len(sl) and sl.columns() is None:
            sl.ready = (col.B.name, prep(sl.frames()))

    def _auto(self, n: int, tau: int) -> None:
        """--engine auto: hand S_τ over to the columnar executor at the first slice of ≥
        threshold facts."""
        if self.mode == "auto" and self.col is None and n >= self.threshold \
                and self.unsupported is None:
            from reasoning.columnar import Unsupported

            try:
                self._handover()
                self.handed_over = (tau, n)
            except Unsupported as e:  # the row engine keeps S_τ: it runs the program
                self.unsupported = str(e)

    def why(self) -> str:
        """Which executor ran and why (`hypo run --verbose`)."""
        if self.mode != "auto":
            if self.unsupported:
                return f"row engine (--engine {self.mode}, but {self.unsupported})"
            return f"{self.executor} engine (--engine {self.mode})"
        if self.cp.modular:  # no slice size makes the columnar executor take it
            from reasoning.columnar.engine import row_by_row

            return f"row engine (auto: {row_by_row(self.cp)})"
        from reasoning.columnar.step1_family import groups

        tps = self.templates
        tog = sum(len(ks) for ks in groups(tps))
        rule = (f"auto: the row engine until a slice of ≥ {self.threshold} facts, the "
                f"crossover for {len(tps)} template(s)"
                f"{f', {tog} of them evaluated together,' if tog else ''} of "
                f"{sum(len(t.lits) for t in tps)} literal(s)")
        if self.handed_over is not None:
            tau, n = self.handed_over
            return f"columnar engine from tick {tau} ({rule}; tick {tau} had {n})"
        if self.unsupported:
            return f"row engine ({rule}; {self.unsupported})"
        return f"row engine ({rule}; no slice had as many)"

    def prune_main(self, keys: set) -> tuple[int, bool]:
        """Remove from S_τ the main query's non-definite answers whose answer_key is in
        `keys` (002 §8 pruning, `--min-confidence` / `--max-state`): (how many were removed,
        whether some could only be hidden from the output — the Spark backend)."""
        from reasoning.semantics.explain import key_of

        if self.col is None:
            eng = self.row
            n = 0
            for ans in list(eng.answers):
                tp = eng.templates[ans.tid]
                if tp.qid != eng.main_qid or eng.is_definite(ans):
                    continue
                if key_of(tp, ans) in keys:
                    eng.remove(ans)
                    n += 1
            return n, False
        from reasoning.columnar.layout import row_to_answer

        self._view = None  # (S_τ changes)
        col = self.col
        B = col.B
        keep_rows = getattr(B, "keep_rows", None)
        n = 0
        output_only = False
        for k, tp in enumerate(col.templates):
            if tp.qid != col.main_qid:
                continue
            for P, A in list(col.S[k].items()):
                if keep_rows is None:  # Spark: the output only
                    output_only = True
                    continue
                if not B.height(A):
                    continue
                lay = col.layouts[k]
                mask = [len(a.ev) == len(tp.lits) or key_of(tp, a) not in keys
                        for a in (row_to_answer(lay, r) for r in B.rows(A))]
                drop = len(mask) - sum(mask)
                if drop:
                    col.S[k][P] = keep_rows(A, mask)
                    n += drop
        return n, output_only

    # ------------------------------------------------------------------ rendering
    def lines(self, all_queries: bool = False, include_pending: bool = False,
              ground: bool = False) -> list[str]:
        """The `hypo run --format jsonl` lines of the current tick (without the "none"
        line of an empty tick)."""
        if self.col is not None and not ground and not self.cp.modular:
            return self.renderer.lines(self.rep.frames, self.tau, all_queries, include_pending)
        return [json.dumps(o, ensure_ascii=False)
                for o in self.objects(all_queries, include_pending, ground)]

    def objects(self, all_queries: bool = False, include_pending: bool = False,
                ground: bool = False) -> list[dict]:
        if self.col is not None:
            if not ground and not self.cp.modular:
                return [json.loads(x) for x in self.lines(all_queries, include_pending)]
            snap = self.col.answers(self.rep.frames)
            return answers_at(self._explainer(), self.tau, snap, all_queries,
                              include_pending, ground)
        return answers_at(self.ex, self.tau, self.rep.snapshot, all_queries, include_pending,
                          ground)

    def new_definite_keys(self) -> set:
        """answer_key of the main query's answers that became definite at this tick."""
        if self.col is not None:
            frames = {kp: f for kp, f in self.rep.fresh.items()
                      if self.col.templates[kp[0]].qid == self.col.main_qid}
            if not frames:
                return set()
            if self.cp.modular:  # (derived literals: the row engine's Explainer, objects())
                ex = self._explainer()
                return {answer_key(ex.render(a, self.tau)) for a in self.col.answers(frames)}
            return {answer_key(json.loads(x)) for x in
                    self.renderer.lines(frames, self.tau, False, True)}
        return {answer_key(self.ex.render(a, self.tau)) for a in self.rep.new_definite}

    def _explainer(self) -> Explainer:
        """The columnar executor's S_τ in the row engine's Explainer (its rare renderings;
        a program with derived literals: their ways, read with W and step 2's head times
        created ahead), built once a tick (prune_main drops it: S_τ changed)."""
        if self._view is None or self._view[0] is not self.rep:
            self._view = (self.rep, Explainer(self.col.row_view(window=bool(self.cp.modular))))
        return self._view[1]

    def keyed(self, all_queries: bool = False, include_pending: bool = False):
        """The current lines with their keys for --changes (keyed.KeyedLines, or a frame of
        its columns; in no particular order)."""
        from reasoning.semantics.keyed import KeyedLines

        if self.col is not None and not self.cp.modular:
            return self.renderer.lines(self.rep.frames, self.tau, all_queries,
                                       include_pending, with_keys=True)
        return KeyedLines.from_objects(self.objects(all_queries, include_pending, False),
                                       str(self.cp.main.atom), ordered=True)

    # ------------------------------------------------------------------ views (tests)
    @property
    def templates(self):
        return (self.row if self.row is not None else self.col).templates

    @property
    def main_qid(self) -> int:
        return 0

    def is_definite(self, a) -> bool:
        return len(a.ev) == len(self.templates[a.tid].lits)

    def delta(self, pred: str, args: tuple) -> int:
        return (self.row if self.row is not None else self.col.tool).delta(pred, args)

    def answers(self) -> list:
        """S_τ before forgetting, as row-engine Answers."""
        if self.col is not None:
            return self.col.answers(self.rep.frames)
        return list(self.rep.snapshot)

    @property
    def state_size(self) -> int:
        return self.rep.state_size if self.rep is not None else 0

    def horizons(self) -> dict:
        from reasoning.semantics.explain import static_horizons

        return static_horizons(self.row if self.row is not None else self.col.tool)


__all__ = ["Session", "ENGINES", "AUTO_THRESHOLD", "auto_threshold", "answers_at",
           "default_until", "quiet_margin", "quiet_stretch",
           "DEFINITE"]
