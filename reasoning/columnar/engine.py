"""Algorithm 1 of 002_…txt (§6) set-at-a-time: S_τ, D|τ and the window W as tables, every
step a relational operation over them (layout.py describes the tables).  This module holds
the static plan (templates, layouts, delay plans) and the tick, which calls the steps in the
paper's order, each in its own module:

  window.py             D|τ (the slice less duplicates), W's expiry and update (Def. 17)
  step1_evidence.py     step 1(a): the slice's facts joined with each template's seed
                        literal, then the other positive literals joined with D|τ ∪ W
                        (local mgus, Def. 16, as optional joins: mgus.py); step 1(b): the
                        waiting answers joined with D|τ on their hypotheses' arguments and
                        times; expiry is a filter on the `exp` column
  step1_family.py       steps 1(a)–(b) of the ground answers of the full-seed templates of
                        one layout (a window program's unfolding) as one table, and the
                        tick's tail of those rows (new definite rows, drop_redundant's and
                        drop_answered's anti-joins), which the later phases then skip
  step2_new_answers.py  step 2: one row per template with T := τ
  step3_negation.py     step 3: per key of the T-stratification (waves, lowest first), the
                        negated hypotheses against 3(a)'s answers of their predicate;
  step3_derived.py      step 3 of a program under modular evaluation: node by node, derived
                        literals decided (and callers seeded) with the row engine's
                        functions on the rows concerned;
  step3_refine.py       refutation (3(b)) and evidence (3(c)) as aggregates over the
                        covers, disequality constraints as rows
  forgetting.py         filters on head times and the per-predicate retention
  finish.py, state.py   a new row's exp/dlp/unb and nogoods; S_τ's tables, load/save

Each template's table is partitioned by *pattern*: the set of its variables that are bound
(a partition stores only those columns).  Every operation knows the pattern of its inputs
and outputs statically, so unification is decided once per pattern and runs as an equi-join
(unify.py) — the relational analogue of Soufflé's or Nemo's per-adornment relations.

The semantics are those of the row engine (reasoning/row/engine.py, the reference executor);
tests/test_columnar.py checks both against each other and the reference evaluator.  Two
rare shapes of step 3 — a negated hypothesis with two or more unbound variables, and covers
through answers that themselves carry nogoods or variable-variable links — are refined by
the row engine's own region algebra on just those rows (fallback.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from reasoning.language.compiler import CompiledProgram
from reasoning.row.engine import Engine as RowEngine
from reasoning.semantics.answer import TickReport
from reasoning.language.errors import HypoError
from reasoning.util.gcpause import frozen_survivors
from reasoning.semantics.patterns import ETemplate, LitPattern, compile_templates
from reasoning.columnar.backends.polars import PolarsBackend
from reasoning.columnar.delays import DelayPlan
from reasoning.columnar.exactrows import ExactPass
from reasoning.columnar.forgetting import drop_redundant, forget_definite
from reasoning.columnar.layout import (INT, MAX_LITERALS, META_KINDS, OBJ, Layout,
                                       encode_nogoods, fact_schema, row_to_answer, vcol)
from reasoning.columnar.state import Pattern, add, answers, fresh_rows, load_answers, row_view
from reasoning.columnar.step1_evidence import seeds_disjoint, step1
from reasoning.columnar.step1_family import families
from reasoning.columnar.step2_new_answers import dead_at_birth, step2
from reasoning.columnar.step3_negation import step3
from reasoning.columnar.step3_derived import step3_modular
from reasoning.columnar.window import admit, arrive, load_window, window_facts


class Unsupported(HypoError):
    """A program shape the columnar executor does not take (a template longer than the
    evidence mask: the session runs it on the row engine, whatever --engine asked — the
    same answers; the lake refuses it at init)."""


def unsupported(cp: CompiledProgram, templates=None) -> Optional[str]:
    """Why the columnar executor cannot run a program (None: it can), with the rule that
    makes a template long, or its windows as one literal; templates: the program's, if
    compiled already."""
    if cp.windows and any(tp.windows for q in cp.queries for tp in q.templates):
        return ("its windows are one literal each (--windows literal), which the columnar "
                "executor does not take")
    return too_long(cp, templates)


def row_by_row(cp: CompiledProgram) -> Optional[str]:
    """Why `--engine auto` and the lake keep a program under modular evaluation on the row
    engine (None: not one): the columnar executor decides its derived literals with the
    row engine's functions on the rows concerned (step3_derived.py), slower than the row
    engine itself on such programs (docs/performance.md)."""
    if not cp.modular:
        return None
    from reasoning.language.compiler import shown_preds

    return (f"modular evaluation keeps {shown_preds(cp.modular)} as derived literals, "
            f"which the columnar executor decides row by row")


def too_long(cp: CompiledProgram, templates=None) -> Optional[str]:
    """Why the lake's state table cannot hold a program's answers (None: it can): a
    template longer than the evidence bit mask, with the rule that makes it long."""
    from reasoning.language.metric import readable
    from reasoning.language.preprocess import longest_rule

    for tp in templates if templates is not None else compile_templates(cp.queries):
        if len(tp.lits) > MAX_LITERALS:
            rule = longest_rule(cp.program, tp.query.atom.pred)
            at = (f" (the rule at {rule.span.file}:{rule.span.line}:{rule.span.column}, "
                  f"{len(rule.body)} literals, is in each template through it)"
                  if rule is not None and rule.span.line else "")
            return readable(
                f"a template of {tp.query.atom} has {len(tp.lits)} literals{at}; the columnar "
                f"executor and the lake's state table take at most {MAX_LITERALS}: evidence "
                f"is one int64 bit mask")
    return None


@dataclass
class ColumnarReport(TickReport):
    """TickReport plus the tables of S_τ before forgetting (for rendering)."""

    frames: dict = field(default_factory=dict)  # (template, pattern) -> rows of S_τ
    fresh: dict = field(default_factory=dict)  # (template, pattern) -> rows definite at τ


class ColumnarEngine:
    """Algorithm 1 over tables; `step` is the update for one tick (the row engine's
    Engine.step contract)."""

    def __init__(self, cp: CompiledProgram, forget: bool = True, backend=None):
        self.cp = cp
        self.forget = forget
        self.B = backend if backend is not None else PolarsBackend()
        self.templates: tuple[ETemplate, ...] = compile_templates(cp.queries)
        why = unsupported(cp, self.templates)
        if why is not None:
            raise Unsupported(why)
        self.layouts = [Layout.of(tp) for tp in self.templates]
        self.strat = cp.analysis.stratification
        self.delays = cp.delays
        self.edb = dict(cp.analysis.edb)  # pred -> arity (with time)
        self.dplans = {p: DelayPlan(cp.delays, p) for p in self.edb}
        self.tool = RowEngine(cp, forget)  # the row engine's helpers (fallback, retention)
        self.retention = self.tool.retention
        self.full_seeds = self.tool.full_seeds
        self.main_qid = 0
        self.tau = -1
        self.tpl_ng = [encode_nogoods(tp.nogoods) for tp in self.templates]
        self.S: list[dict] = [{} for _ in self.templates]  # template -> pattern -> frame
        self.W = {p: self.B.empty(fact_schema(n - 1, window=True)) for p, n in self.edb.items()}
        self.by_pred: dict[str, list] = {}
        for lst in self.tool.by_pred.values():
            for tp, i, full in lst:
                self.by_pred.setdefault(tp.lits[i].pred, []).append((tp, i, full))
        self.by_head: dict[str, list[int]] = {}
        for tp in self.templates:
            self.by_head.setdefault(tp.head.pred, []).append(tp.tid)
        self.all_vars = [Pattern(range(len(tp.names))) for tp in self.templates]
        # static facts that spare looking at the data: which templates' answers can carry
        # nogoods at all (template nogoods, or pieces of step 3 on a negated literal), and
        # whether a nogood on several variables can arise anywhere
        self.exact = self.tool.exact  # exact instances of waiting answers (exact.py)
        self.answered = self.tool.answered
        # (a derived literal's pieces carry the nogoods of the answer deciding it)
        self.may_ng = [bool(tp.nogoods) or bool(tp.neg) or bool(tp.der) or
                       self.exact.may_ng[tp.tid] for tp in self.templates]
        self.multi_possible = any(len(n) > 1 for tp in self.templates for n in tp.nogoods) or \
            any(len({x for isvar, x in tp.lits[j].args if isvar}) > 1
                for tp in self.templates for j in tp.neg) or \
            any(len({x for isvar, x in tp.lits[j].args if isvar} | {tp.lits[j].tvar}) > 1
                for tp in self.templates for j in tp.der) or \
            any(self.exact.multi) or any(self.exact.time_ng)
        # the variables a nogood of a template's answer can be on, besides exact
        # refinement's (exact.py partition_watched): the program's nogoods', the negated
        # and derived literals' (step 3's pieces); reduction (finish.py reduce_nogoods) drops a nogood
        # once its variables are bound, so the rows of a partition binding them all have
        # none (part_may_ng)
        self.ng_vars = [frozenset().union(
            *[{x for x, _ in n} for n in tp.nogoods],
            *[{x for isvar, x in tp.lits[j].args if isvar} |
              ({tp.lits[j].tvar} if tp.lits[j].tvar is not None else set())
              for j in tp.neg + tp.der])
            for tp in self.templates]
        self.stats = {"fallback_refs": 0}
        # modular evaluation: templates with derived literals (step3_derived.py)
        self.derived = any(tp.der for tp in self.templates)
        # partitions whose rows may have an unbound time variable with a floor (exact.py)
        self.seeded: set = set()  # Answers of step 1(a) at τ, of templates with exact.nlits
        self.seed_cache: dict = {}  # mgus.seed_bindings: a literal's bindings from D|τ, a tick
        # full-seed templates whose ground rows step 1 evaluates together (step1_family.py);
        # not on Spark's relational plan, where its small tables' reads would be jobs
        self.step2_dead = [dead_at_birth(self, tp) for tp in self.templates]
        self.families = families(self) if getattr(self.B, "cheap_checks", False) else []
        # (tick, S) after a tick with forgetting: the next tick continues from a state this
        # engine made (no row loaded or put in from outside), which step1_family's tail needs
        self.clean = None
        self.continued = False
        self.fam_done: dict = {}  # template -> step1_family.TailDone of this tick
        self.fam_tables: dict = {}  # family tids -> (its table after forgetting, frames)

    # ================================================================== expressions
    def _texpr(self, lp: LitPattern):
        B = self.B
        if lp.tvar is None:
            return B.lit(lp.toff, INT)
        return B.col(vcol(lp.tvar)) + B.lit(lp.toff, INT)

    def _schema(self, k: int, P: Pattern) -> dict:
        lay = self.layouts[k]
        out = {vcol(x): lay.kinds[x] for x in sorted(P)}
        out.update(META_KINDS)
        return out

    def _keys(self, P: Pattern) -> list[str]:
        """An answer's identity in a partition of pattern P: its bound variables, E, nogoods."""
        return [vcol(x) for x in sorted(P)] + ["ev", "ng"]

    def _sel(self, df, cols: list[str]):
        return self.B.select_cols(df, list(cols))

    def _side_expr(self, side):
        B = self.B
        if side[0] == "C":
            return B.lit(side[1], INT if isinstance(side[1], int) else OBJ)
        return B.col(side[1])

    def live_frames(self):
        """Every frame kept from one tick to the next: S, W, the delay tables and the last
        report's frames (read by the renderer after the tick)."""
        rep = getattr(self, "reported", None)
        if rep is not None:
            yield from rep.frames.values()
            yield from rep.fresh.values()
        for parts in self.S:
            yield from parts.values()
        yield from self.W.values()
        for plan in self.dplans.values():
            yield from plan.frames()

    def part_may_ng(self, k: int, P: Pattern) -> bool:
        """Can a row of template k's partition P carry nogoods (statically)?"""
        return self.may_ng[k] and (not self.ng_vars[k] <= P or
                                   self.exact.partition_watched(k, P))

    def tail_done(self, k: int, A):
        """step1_family's record of template k at this tick if A is still the ground frame
        its tail left (the later phases then skip A), else None."""
        done = self.fam_done.get(k)
        return done if done is not None and A is done.frame else None

    def partitions(self, k: int):
        return self.S[k].items()

    # ================================================================== the tick
    def step(self, facts, tau: int, snapshot: bool = True, clean: bool = False
             ) -> ColumnarReport:
        """Algorithm 1 for tick τ (see _step); on a backend whose columns make many small
        Python objects (arrays: interned tuples, index lists) the cyclic collector is paused
        and the survivors frozen, as the row engine does (gcpause.py: a third of a turbine
        tick was collections)."""
        if not getattr(self.B, "python_objects", False):
            return self._step(facts, tau, snapshot, clean)
        with frozen_survivors():
            return self._step(facts, tau, snapshot, clean)

    def _step(self, facts, tau: int, snapshot: bool = True, clean: bool = False
              ) -> ColumnarReport:
        """Algorithm 1 for tick τ: S_{τ-1} and D|τ give S_τ (facts must be validated).
        `facts` is a list of Fact or {pred: {column: values} | frame (a0.., t)}; clean: the
        frames hold no duplicate (in the slice or of a fact in W) — the caller removed them."""
        if tau != self.tau + 1:
            raise ValueError(f"tick {tau} follows tick {self.tau}: ticks must be consecutive")
        B = self.B
        B.begin_tick()
        collect = getattr(B, "collect", None)
        if collect is not None:  # interned values no frame kept across ticks holds
            collect(self)
        self.seeded = set()
        self.continued = self.clean is not None and self.clean[0] == tau - 1 and \
            self.clean[1] is self.S
        self.clean = None
        self.fam_done = {}
        rep = ColumnarReport(tau)
        # D|τ less duplicates, W's expiry; present = D|τ ∪ W
        D, W, present = arrive(self, facts, tau, clean, rep)
        step1(self, D, present, W, tau)  # 1(b) and 1(a)
        step2(self, tau, present)
        # exact instances: the past instances of unbound time variables split off (exact.py)
        ExactPass(self, tau, D, present, None).split_first()
        if self.derived:  # 3(a)-(c) node by node, derived literals too (step3_derived.py)
            step3_modular(self, tau, present)
        else:
            step3(self, tau)  # 3(a)-(c), wave by wave
        # window update: facts of D|τ that may still be matched as hypotheses
        admit(self, D, tau)
        fresh = fresh_rows(self, tau)
        ExactPass(self, tau, D, present, fresh).run()
        if self.forget and fresh:
            drop_redundant(self, fresh)
        rep.frames = {(k, P): a for k in range(len(self.templates)) for P, a in self.S[k].items()}
        rep.fresh = fresh
        self.reported = rep  # its frames stay readable until the next tick (rendering)
        if snapshot:
            rep.snapshot = self.answers()
            rep.new_definite = [row_to_answer(self.layouts[k], r) for (k, P), f in fresh.items()
                                if self.templates[k].qid == self.main_qid for r in B.rows(f)]
        self.tau = tau
        if self.forget:
            forget_definite(self, tau)
            self.clean = (tau, self.S)
        rep.state_size = sum(B.height(a) for parts in self.S for a in parts.values()) \
            if B.cheap_checks else -1
        return rep

    # the steps' functions other modules (exactrows.py) and tests call on the engine
    _add = add
    _fresh = fresh_rows
    _seeds_disjoint = seeds_disjoint

    # ================================================================== views
    def answers(self, frames: Optional[dict] = None) -> list:
        """S_τ (or the given frames) as row-engine Answers (state.py)."""
        return answers(self, frames)

    def window_facts(self) -> list:
        """The facts of W (window.py)."""
        return window_facts(self)

    def load_window(self, facts: Iterable) -> None:
        """Replace W (window.py)."""
        load_window(self, facts)

    def row_view(self, window: bool = False) -> RowEngine:
        """The row engine holding S_τ (state.py)."""
        return row_view(self, window)

    def load_answers(self, answers: Iterable, tick: int) -> None:
        """Replace S by the given row-engine Answers, at tick (state.py)."""
        load_answers(self, answers, tick)
