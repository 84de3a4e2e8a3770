"""`hypo run --report FILE`: what a run's lifecycle report is made of, collected tick by
tick (lifecycles, rejected lines, confidences) and written at the end (reasoning/insight/report.py)."""
from __future__ import annotations

import json
import os

from reasoning.semantics.explain import DEFINITE


def reason_head(reason: str, limit: int = 80) -> str:
    """What a rejection's reason says before its details (the first ':' outside brackets:
    `late: arrived at tick 13 …` → `late`), cut at a word with '…' past `limit` characters:
    the per-tick reasons of the report."""
    depth = 0
    for i, c in enumerate(reason):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ":" and depth <= 0:
            reason = reason[:i]
            break
    reason = reason.strip()
    if len(reason) > limit:
        cut = reason.rfind(" ", 0, limit)
        reason = reason[:cut if cut > limit // 2 else limit].rstrip(" ,;(") + "…"
    return reason


class RunReport:
    """`--report FILE`: the lifecycle of the main query's answers (pending included) and the
    rejected lines per tick, rendered at the end as one HTML file (reasoning/insight/report.py)."""

    def __init__(self, args, cp):
        from reasoning.insight.lifecycle import Lifecycles

        self.args, self.cp = args, cp
        self.lcs = Lifecycles()
        self.quality: dict = {}
        self.no_tick = 0
        self.calibration = None  # lifecycle.Calibration with --confidence

    def confidences(self, tau: int, objs: list, conf) -> list:
        """--confidence: each announcement's confidence and each answer's outcome; returns
        the objects with their `confidence` (for `tick`: an answer's confidence when announced)."""
        from reasoning.insight.lifecycle import Calibration

        if self.calibration is None:
            self.calibration = Calibration()
        out = []
        for o in objs:
            c = 1.0 if o["status"] == DEFINITE else conf(o)
            self.calibration.observe(
                tau, (o["query"], json.dumps(o["substitution"], sort_keys=True)),
                o["status"], c)
            out.append({**o, "confidence": c})
        return out

    def _q(self, tick: int) -> dict:
        return self.quality.setdefault(tick, {"tick": tick, "facts": 0, "accepted": 0,
                                              "quarantined": 0, "reasons": {}})

    def rejected(self, r) -> None:
        if r.tick is None:
            self.no_tick += 1
            return
        q = self._q(r.tick)
        q["facts"] += 1
        q["quarantined"] += 1
        why = reason_head(r.reason)
        q["reasons"][why] = q["reasons"].get(why, 0) + 1

    def tick(self, tau: int, n_facts: int, duplicates: int, objs: list) -> None:
        if n_facts:
            q = self._q(tau)
            q["facts"] += n_facts
            q["accepted"] += n_facts - duplicates
        self.lcs.observe(tau, objs)

    def write(self, last: int, executor: str, pruner=None) -> None:
        import hashlib

        from reasoning.insight.report import ReportData, render, write

        with open(self.args.program, encoding="utf-8") as fh:
            text = fh.read()
        notes = [f"hypo run {os.path.basename(self.args.program)} --stream "
                 f"{os.path.basename(self.args.stream)} ({executor} engine); ticks of a skipped "
                 f"quiet stretch had no answers"]
        if self.no_tick:
            notes.append(f"{self.no_tick} rejected line(s) carried no usable tick")
        d = ReportData(
            title=f"hypo lifecycle report: {self.cp.main.atom}",
            source=f"stream {self.args.stream}", start=self.lcs.first_tick or 0,
            end=max(last, 0), lifecycles=self.lcs.finish(),
            quarantined={t: q["quarantined"] for t, q in self.quality.items()},
            quality=[self.quality[t] for t in sorted(self.quality)],
            quality_note="rejected stream lines per arrival tick (duplicates are ignored, not "
                         "rejected); the Great Expectations suite runs in the lake only",
            program_text=text, program_hash=hashlib.sha256(text.encode()).hexdigest(),
            program_file=self.args.program, query=str(self.cp.main.atom), notes=notes)
        if pruner is not None and self.args.confidence and self.calibration is not None:
            d.calibration = self.calibration.records(last)
            d.arrival_model = pruner.conf.model.summary()
        write(self.args.report, render(d))
