"""Confidence and pruning in `hypo run` (002 §8): `--confidence`, `--min-confidence p`,
`--max-state N` — the arrival model fed every tick, the confidences of the printed answers,
and the main query's hypothetical and pending answers pruned from S_τ."""
from __future__ import annotations

import json
from typing import Optional, TextIO

from reasoning.semantics.explain import DEFINITE, PENDING, answer_key
from reasoning.run.session import Session


def wants_confidence(args) -> bool:
    """Any of --confidence, --min-confidence, --max-state."""
    return bool(getattr(args, "confidence", False) or getattr(args, "min_confidence", None)
                is not None or getattr(args, "max_state", None) is not None)


class Pruner:
    """`--confidence`, `--min-confidence p`, `--max-state N` (002 §8): the arrival model fed
    every tick, the confidences of the printed answers, and the pruning of the main query's
    hypothetical and pending answers (never definite ones), removed from S_τ by either
    executor (the columnar one: from its in-process frames; on Spark only the output
    is pruned, a pruned answer staying hidden until it becomes definite)."""

    def __init__(self, args, cp, sess: Session, err: TextIO):
        from reasoning.insight.confidence import Confidence

        self.args, self.sess, self.err = args, sess, err
        self.conf = Confidence(cp)
        self.main_q = str(cp.main.atom)
        self.prunes = args.min_confidence is not None or args.max_state is not None
        self.hidden: set = set()
        self.output_only = False  # a backend whose state is not pruned (Spark)
        self.order = lambda x: (-x[0], x[1])  # most likely first (bench/confidence.py: random)
        self.n_low = self.n_over = 0
        self.state_pruned = 0

    def tick(self, tau: int, facts) -> None:
        from reasoning.util.gcpause import frozen_survivors

        with frozen_survivors():  # many small acyclic objects (objects, model, confidences)
            self._tick(tau, facts)

    def _tick(self, tau: int, facts) -> None:
        if not self.output_only:
            self.hidden = set()  # pruned answers are gone from S_τ
        objs = self.objs_all = self.sess.objects(True, True, False)
        self.conf.observe(tau, facts, objs)
        if not self.prunes:
            return
        if self.hidden:  # answers gone from S_τ do not come back: forget their keys
            self.hidden &= {answer_key(o) for o in objs if o["query"] == self.main_q}
        a = self.args
        cand = [(self.conf.of(o), json.dumps(o, sort_keys=True), o) for o in objs
                if o["query"] == self.main_q and o["status"] != DEFINITE
                and answer_key(o) not in self.hidden]
        low = [x for x in cand if a.min_confidence is not None and x[0] < a.min_confidence]
        keep = [x for x in cand if not (a.min_confidence is not None and x[0] < a.min_confidence)]
        over = []
        if a.max_state is not None and len(keep) > a.max_state:
            keep.sort(key=self.order)
            over = keep[a.max_state:]
        gone = {answer_key(x[2]) for x in low + over}
        if not gone:
            return
        self.n_low += len(low)
        self.n_over += len(over)
        self.hidden |= gone
        removed, output_only = self.sess.prune_main(gone)
        self.state_pruned += removed
        self.output_only |= output_only
        print(f"tick {tau}: pruned {len(low) + len(over)} answer(s) of {self.main_q} "
              f"({len(low)} below --min-confidence, {len(over)} beyond --max-state)",
              file=self.err)

    def shown(self, objs: list) -> list:
        if not self.hidden:
            return objs
        return [o for o in objs if o["status"] == DEFINITE or answer_key(o) not in self.hidden]

    def _objs(self, ground: Optional[bool] = None) -> list:
        """The printed objects: without --ground, filtered from this tick's objects of all
        queries (same order: session.answers_at sorts by query ≠ main, then canonical JSON)
        instead of rendering S_τ a second time."""
        a = self.args
        ground = a.ground if ground is None else ground
        if ground:
            return self.shown(self.sess.objects(a.all_queries, a.all, True))
        return self.shown([o for o in self.objs_all
                           if (a.all_queries or o["query"] == self.main_q)
                           and (a.all or o["status"] != PENDING)])

    def _line(self, o: dict) -> str:
        from reasoning.insight.confidence import line_with_confidence

        if self.args.confidence:
            return line_with_confidence(o, self.conf.of(o))
        return json.dumps(o, ensure_ascii=False)

    def lines(self) -> list[str]:
        from reasoning.util.gcpause import frozen_survivors

        with frozen_survivors():
            return [self._line(o) for o in self._objs()]

    def keyed(self):
        from reasoning.semantics.keyed import KeyedLines

        return KeyedLines.from_objects(self._objs(False), self.main_q, self._line)

    def summary(self) -> str:
        where = f"{self.state_pruned} removed from S_τ" + (
            "; the rest hidden from the output only" if self.output_only else "")
        return (f", {self.n_low + self.n_over} answer(s) pruned ({self.n_low} below "
                f"--min-confidence, {self.n_over} beyond --max-state; {where})")
