"""The engine's commands of `hypo`: `check` a program, `run` it over a stream (`hypo lake`
is dispatched by hypo_cli, the layer that knows both reasoning/ and jobs/).

Exit codes: 0 success; 1 the run completed but some stream lines were rejected;
2 a program, usage or input error (reported as FILE:LINE:COL, never a traceback).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, TextIO

from .compiler import compile_file, describe_text, dumps
from .errors import HypoError, ProgramError
from .explain import (DEFINITE, HYPOTHETICAL, PENDING, answer_key, format_atom_answer,
                      static_horizons)
from .session import ENGINES, Session, answers_at, default_until, quiet_margin  # noqa: F401
from .stream import Slice, StreamReader, open_stream


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`hypo run`: Algorithm 1 over a stream file read slice by slice, printing every tick's
    answer set (or, with --changes, what changed)."""
    if getattr(args, "report", None) and os.path.isdir(args.report):
        raise HypoError(f"--report {args.report}: is a directory (give the HTML file's name)")
    cp = compile_file(args.program, args.query)
    for w in cp.warnings:
        print(w.format(), file=err)
    with open_stream(args.stream) as fh:
        return _run(args, cp, StreamReader(fh, cp, args.stream, args.max_gap), out, err)


def _run(args, cp, reader: StreamReader, out: TextIO, err: TextIO) -> int:
    sess = Session(cp, engine=args.engine, forget=not args.no_forget)
    tool = sess.row if sess.row is not None else sess.col.tool
    main_q = str(cp.main.atom)
    prev_hyp: dict = {}
    changes = Changes() if args.changes else None
    rep_data = _ReportCollector(args, cp) if getattr(args, "report", None) else None
    duplicates = 0
    accepted = 0
    slices = reader.column_slices()
    ahead = next(slices, None)
    tau = 0
    margin = None if args.no_skip or args.no_forget else quiet_margin(tool)
    pruner = _Pruner(args, cp, sess, err) if _wants_confidence(args) else None
    if pruner is not None and pruner.prunes:
        margin = None  # a replayed quiet stretch would rebuild pruned answers
    quiet = 0  # ticks in a row without facts that printed nothing
    while True:
        if args.until is not None:
            if tau > args.until:
                break
        elif ahead is None and tau > default_until(tool, reader):
            break
        if ahead is not None and ahead.tick == tau:
            sl = ahead
            ahead = next(slices, None)
        else:
            sl = Slice(tau)
        for r in reader.take_rejected():
            print(str(r), file=err)
            if rep_data is not None:
                rep_data.rejected(r)
        rep = sess.step_slice(sl, tau)
        if pruner is not None:
            pruner.tick(tau, sl.facts())
        if rep_data is not None:
            objs = sess.objects(False, True, False)
            if pruner is not None:
                objs = pruner.shown(objs)
                rep_data.confidences(tau, objs, pruner.conf.of)
            rep_data.tick(tau, len(sl), rep.duplicates, objs)
        if rep.duplicate_facts:
            for f, line in _duplicate_lines(sl.entries(), rep.duplicate_facts):
                print(f"{args.stream}:{line}: ignored (tick {tau}): duplicate: {f} had "
                      f"already arrived", file=err)
        duplicates += rep.duplicates
        accepted += len(sl) - rep.duplicates
        if args.format == "jsonl":
            if changes is not None:
                lines = changes.update(tau, sess.keyed(args.all_queries, args.all)
                                       if pruner is None else pruner.keyed())
                silent = not lines
            else:
                lines = (sess.lines(args.all_queries, args.all, args.ground) if pruner is None
                         else pruner.lines())
                silent = not lines
                if not lines:
                    lines = [json.dumps({"tick": tau, "query": main_q, "status": "none"})]
            if lines:
                out.write("\n".join(lines) + "\n")
        else:
            objs = sess.objects(args.all_queries, args.all, args.ground)
            main_objs = sess.objects(False, True, False)
            cf = None
            if pruner is not None:
                objs, main_objs = pruner.shown(objs), pruner.shown(main_objs)
                cf = pruner.conf.of if args.confidence else None
            cur = {answer_key(o) for o in main_objs}
            refuted = [o for k, o in prev_hyp.items() if k not in cur]
            prev_hyp = {answer_key(o): o for o in main_objs if o["status"] == HYPOTHETICAL}
            _text_tick(out, tau, sl.facts(), objs, sess.new_definite_keys(), refuted, main_q,
                       cf)
            silent = not objs and not refuted
        quiet = quiet + 1 if silent and not len(sl) else 0
        tau += 1
        if margin is not None and quiet >= margin:
            nxt = ahead.tick if ahead is not None else (
                args.until + 1 if args.until is not None else None)
            if nxt is not None and nxt - 2 * margin > tau:
                tau, prev_hyp = _skip_quiet(args, sess, changes, out, main_q, tau, nxt,
                                            margin)
                quiet = 0
    if args.until is not None:  # the lines after --until are not read
        for _ in slices:
            pass
    for r in reader.take_rejected():
        print(str(r), file=err)
        if rep_data is not None:
            rep_data.rejected(r)
    if rep_data is not None:
        rep_data.write(tau - 1, sess.executor, pruner)
    ign = ""
    if reader.ignored:
        ign = (f", {sum(reader.ignored.values())} ignored ("
               + ", ".join(f"{p} {n}" for p, n in sorted(reader.ignored.items()))
               + ": declared in #delay, used by no rule)")
    if pruner is not None and pruner.prunes:
        ign += pruner.summary()
    print(f"processed ticks 0..{tau - 1} ({sess.executor} engine): {accepted} facts accepted, "
          f"{duplicates} duplicates ignored, {len(reader.rejected)} rejected{ign}", file=err)
    return 1 if reader.rejected else 0


def _skip_quiet(args, sess: Session, changes, out: TextIO, main_q: str, tau: int, nxt: int,
                margin: int) -> tuple[int, dict]:
    """Skip the quiet stretch τ..nxt-margin-1 in O(margin): nothing can be printed there
    (session.quiet_margin), so it is one line; S_τ at nxt-margin is rebuilt by a fresh
    executor replaying the margin before it, whose output is not shown.  Returns the next
    tick to run and the text view's hypothetical answers."""
    last = nxt - margin - 1
    if args.format == "jsonl":
        if changes is None:
            out.write(json.dumps({"tick": tau, "query": main_q, "status": "none",
                                  "through": last}) + "\n")
    else:
        out.write(f"ticks {tau}..{last}: 0 fact(s), nothing to report (a quiet stretch, "
                  f"skipped)\n")
    start = nxt - 2 * margin
    sess.restart(start)
    for t in range(start, last + 1):
        sess.step([], t)
        if changes is not None:
            changes.update(t, sess.keyed(args.all_queries, args.all))
    prev_hyp = {}
    if args.format != "jsonl":
        prev_hyp = {answer_key(o): o for o in sess.objects(False, True, False)
                    if o["status"] == HYPOTHETICAL}
    return last + 1, prev_hyp


class _ReportCollector:
    """`--report FILE`: the lifecycle of the main query's answers (pending included) and the
    rejected lines per tick, rendered at the end as one HTML file (reasoning/report.py)."""

    def __init__(self, args, cp):
        from .lifecycle import Lifecycles

        self.args, self.cp = args, cp
        self.lcs = Lifecycles()
        self.quality: dict = {}
        self.no_tick = 0
        self.conf_recs: list = []  # (answer, confidence, tick) of non-definite answers
        self.definite_at: dict = {}  # answer -> first tick definite
        self.last_seen: dict = {}
        self.first_conf: dict = {}  # label -> confidence at first announcement

    def confidences(self, tau: int, objs: list, conf) -> None:
        """--confidence: each announcement's confidence and each answer's outcome."""
        for o in objs:
            k = (o["query"], json.dumps(o["substitution"], sort_keys=True))
            if o["status"] == DEFINITE:
                self.definite_at.setdefault(k, tau)
                continue
            c = conf(o)
            self.conf_recs.append((k, c, tau))
            self.last_seen[k] = tau
            self.first_conf.setdefault(format_atom_answer(o), round(c, 3))

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
        why = r.reason.split(":")[0][:60]
        q["reasons"][why] = q["reasons"].get(why, 0) + 1

    def tick(self, tau: int, n_facts: int, duplicates: int, objs: list) -> None:
        if n_facts:
            q = self._q(tau)
            q["facts"] += n_facts
            q["accepted"] += n_facts - duplicates
        self.lcs.observe(tau, objs)

    def write(self, last: int, executor: str, pruner=None) -> None:
        import hashlib

        from .report import ReportData, render, write

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
        if pruner is not None and self.args.confidence:
            d.calibration = [(c, 1.0 if self.definite_at.get(k, -1) >= t else 0.0)
                             for k, c, t in self.conf_recs
                             if k in self.definite_at or self.last_seen[k] < last]
            d.first_confidence = self.first_conf
            d.arrival_model = pruner.conf.model.summary()
        write(self.args.report, render(d))


class Changes:
    """`--changes`: per tick only the answers whose lines changed since the previous tick.
    An answer (its query, substitution and exclusions: explain.answer_key) is printed with
    all its current lines when that set of lines changed — `new` (not printed before),
    `updated` (other evidence, hypotheses or deadline), `decided` (now definite) — and once
    as `refuted` when it is gone without having become definite.  Replaying the changes
    (replace an answer's lines by the printed ones, drop refuted answers) gives the full
    output of every tick; definite answers are final (forgetting drops them after the tick
    they are printed at, as in the full output)."""

    def __init__(self):
        self.prev = None

    def update(self, tau: int, cur) -> list[str]:
        import polars as pl

        prefix = f'{{"tick": {tau}, '
        if cur is None:
            cur = pl.DataFrame(schema={"grp": pl.Int64, "skey": pl.String, "line": pl.String,
                                       "akey": pl.String, "status": pl.String})
        # answers and lines are compared by 128-bit hashes (two seeds) of their text: joins on
        # integers instead of ~200-byte strings (a collision has probability ~n²/2¹²⁸)
        body = pl.col("line").str.slice(len(prefix))
        cur = cur.with_columns(body=body, a1=pl.col("akey").hash(11), a2=pl.col("akey").hash(12),
                               l1=body.hash(13), l2=body.hash(14))
        prev = self.prev
        self.prev = cur.select("skey", "a1", "a2", "l1", "l2", "body", "status")
        if prev is None:
            changed = cur.with_columns(upd=pl.lit(False))
            gone = None
        else:
            key, line = ["a1", "a2"], ["a1", "a2", "l1", "l2"]
            added = cur.select(line).join(prev.select(line), on=line, how="anti")
            dropped = prev.join(cur.select(line), on=line, how="anti")
            keys = pl.concat([added.select(key), dropped.select(key)]).unique()
            changed = cur.join(keys, on=key, how="semi").join(
                prev.select(key).unique().with_columns(upd=pl.lit(True)), on=key, how="left",
                maintain_order="left").with_columns(pl.col("upd").fill_null(False))
            gone = dropped.join(cur.select(key), on=key, how="anti").filter(
                pl.col("status") != "definite").sort("skey")
        change = (pl.when(pl.col("status") == "definite").then(pl.lit("decided"))
                  .when(pl.col("upd")).then(pl.lit("updated")).otherwise(pl.lit("new")))
        out = changed.sort(["grp", "skey"]).select(pl.concat_str(
            [pl.lit(prefix + '"change": "'), change, pl.lit('", '), pl.col("body")]))
        out = out.to_series().to_list()
        if gone is not None and gone.height:
            out.extend(gone.select(pl.concat_str(
                [pl.lit(prefix + '"change": "refuted", '), pl.col("body")])).to_series().to_list())
        return out


def _duplicate_lines(entries, dups):
    """Pair each duplicate fact with its input line: the last occurrences are the repeats."""
    occ: dict = {}
    for f, no in entries:
        occ.setdefault(f, []).append(no)
    out = []
    for f in dict.fromkeys(dups):
        n = dups.count(f)
        out.extend((f, no) for no in occ.get(f, [0])[-n:])
    return sorted(out, key=lambda x: x[1])


def _wants_confidence(args) -> bool:
    return bool(getattr(args, "confidence", False) or getattr(args, "min_confidence", None)
                is not None or getattr(args, "max_state", None) is not None)


class _Pruner:
    """`--confidence`, `--min-confidence p`, `--max-state N` (002 §8): the arrival model fed
    every tick, the confidences of the printed answers, and the pruning of the main query's
    hypothetical and pending answers (never definite ones), removed from S_τ by either
    executor (the columnar one: from its Polars frames; on another backend only the output
    is pruned, a pruned answer staying hidden until it becomes definite)."""

    def __init__(self, args, cp, sess: Session, err: TextIO):
        from .confidence import Confidence

        self.args, self.sess, self.err = args, sess, err
        self.conf = Confidence(cp)
        self.main_q = str(cp.main.atom)
        self.prunes = args.min_confidence is not None or args.max_state is not None
        self.hidden: set = set()
        self.output_only = False  # a backend whose state is not pruned (not Polars)
        self.order = lambda x: (-x[0], x[1])  # most likely first (bench/confidence.py: random)
        self.n_low = self.n_over = 0
        self.state_pruned = 0

    def tick(self, tau: int, facts) -> None:
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
        if self.sess.row is not None:
            self.state_pruned += self._prune_row(gone)
        else:
            self.state_pruned += self._prune_columnar(gone)
        print(f"tick {tau}: pruned {len(low) + len(over)} answer(s) of {self.main_q} "
              f"({len(low)} below --min-confidence, {len(over)} beyond --max-state)",
              file=self.err)

    def _prune_row(self, keys: set) -> int:
        eng = self.sess.row
        n = 0
        for ans in list(eng.answers):
            tp = eng.templates[ans.tid]
            if tp.qid != eng.main_qid or eng.is_definite(ans):
                continue
            if key_of(tp, ans) in keys:
                eng.remove(ans)
                n += 1
        return n

    def _prune_columnar(self, keys: set) -> int:
        """The pruned answers' rows leave the columnar executor's S_τ (Polars frames; any
        other backend: the output only)."""
        import polars as pl

        from .columnar.layout import row_to_answer

        col = self.sess.col
        n = 0
        for k, tp in enumerate(col.templates):
            if tp.qid != col.main_qid:
                continue
            for P, A in list(col.S[k].items()):
                if not isinstance(A, pl.DataFrame):
                    self.output_only = True
                    continue
                if not A.height:
                    continue
                lay = col.layouts[k]
                mask = []
                for r in A.iter_rows(named=True):
                    a = row_to_answer(lay, r)
                    mask.append(len(a.ev) == len(tp.lits) or key_of(tp, a) not in keys)
                drop = len(mask) - sum(mask)
                if drop:
                    col.S[k][P] = A.filter(pl.Series(mask, dtype=pl.Boolean))
                    n += drop
        return n

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
        from .confidence import line_with_confidence

        if self.args.confidence:
            return line_with_confidence(o, self.conf.of(o))
        return json.dumps(o, ensure_ascii=False)

    def lines(self) -> list[str]:
        return [self._line(o) for o in self._objs()]

    def keyed(self):
        import polars as pl

        from .columnar.render import answer_key_text

        objs = self._objs(False)
        return pl.DataFrame(
            {"grp": [0 if o["query"] == self.main_q else 1 for o in objs],
             "skey": [json.dumps(o, sort_keys=True, ensure_ascii=False) for o in objs],
             "line": [self._line(o) for o in objs],
             "akey": [answer_key_text(o) for o in objs],
             "status": [o["status"] for o in objs]},
            schema={"grp": pl.Int64, "skey": pl.String, "line": pl.String, "akey": pl.String,
                    "status": pl.String})

    def summary(self) -> str:
        where = f"{self.state_pruned} removed from S_τ" + (
            "; the rest hidden from the output only" if self.output_only else "")
        return (f", {self.n_low + self.n_over} answer(s) pruned ({self.n_low} below "
                f"--min-confidence, {self.n_over} beyond --max-state; {where})")


def key_of(tp, a) -> tuple:
    """explain.answer_key of an Answer without rendering it (its query, bound substitution
    and single-variable exclusions, as Explainer.render builds them)."""
    qname: dict = {}
    for name, isvar, x, off in tp.qvars:
        if isvar and off == 0:
            qname.setdefault(x, name)
    excluded: dict = {}
    for n in a.ng:
        if len(n) == 1:
            v, c = n[0]
            excluded.setdefault(qname.get(v, tp.names[v]), []).append(c)
    return answer_key({"query": str(tp.query.atom), "substitution": tp.answer(a.b),
                       "excluded": {k: sorted(v, key=str) for k, v in excluded.items()}})


def _text_tick(out, tau, facts, objs, new_def, refuted, main_q, conf=None) -> None:
    """The people-facing view of one tick: new definite answers, hypothetical answers with
    what they wait for and until when, and what was refuted."""
    shown = ", ".join(str(f) for f in facts[:6]) + (" …" if len(facts) > 6 else "")
    out.write(f"tick {tau}: {len(facts)} fact(s){': ' + shown if facts else ''}\n")
    rank = {DEFINITE: 0, HYPOTHETICAL: 1}
    for o in sorted(objs, key=lambda o: rank.get(o["status"], 2)):
        atom = format_atom_answer(o)
        q = "" if o["query"] == main_q else f"[{o['query']}] "
        if o["status"] == DEFINITE:
            tag = "definite" if answer_key(o) in new_def else "definite (kept)"
            because = "; ".join(o["evidence"]) or "no premises"
            out.write(f"  {tag:<15} {q}{atom}  because {because}\n")
        elif o["status"] == HYPOTHETICAL:
            d = o["deadline"]
            when = f"decided by tick {d}" if d is not None else "no deadline (unbounded wait)"
            cs = f"; confidence {conf(o):.3f}" if conf is not None else ""
            out.write(f"  {'hypothetical':<15} {q}{atom}  if {'; '.join(o['hypotheses'])}  "
                      f"[{when}; evidence: {'; '.join(o['evidence'])}{cs}]\n")
        else:
            cs = f"  [confidence {conf(o):.3f}]" if conf is not None else ""
            out.write(f"  {'pending':<15} {q}{atom}  needs {'; '.join(o['hypotheses'])}{cs}\n")
    for o in refuted:
        out.write(f"  {'refuted':<15} {format_atom_answer(o)}  (was: if "
                  f"{'; '.join(o['hypotheses'])})\n")


def check(args: argparse.Namespace, out: TextIO, err: Optional[TextIO] = None) -> int:
    cp = compile_file(args.program, args.query)
    for w in cp.warnings:
        print(w.format(), file=err or sys.stderr)
    out.write(dumps(cp) + "\n" if args.format == "json" else describe_text(cp))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hypo", description="Hypothetical answers to continuous "
                                "queries over data streams (Temporal Datalog with negation).")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="show what the system made of a program")
    c.add_argument("program")
    c.add_argument("--query", help="the main query atom, e.g. 'OK(X, T)'")
    c.add_argument("--format", choices=["text", "json"], default="text")
    r = sub.add_parser("run", help="run a program over a JSON-lines stream")
    r.add_argument("program")
    r.add_argument("--stream", required=True, help='JSON lines {"tick": 3, "fact": "Hot(wt1, 1)"}')
    r.add_argument("--query")
    r.add_argument("--until", type=int, help="last tick to process")
    r.add_argument("--format", choices=["text", "jsonl"], default="text")
    r.add_argument("--all-queries", action="store_true", help="also the auxiliary queries")
    r.add_argument("--all", action="store_true", help="also pending answers (no evidence yet)")
    r.add_argument("--ground", action="store_true", help="expand unbound variables over #domain")
    r.add_argument("--no-forget", action="store_true",
                   help="keep definite answers in the state (as the paper's S_τ does)")
    r.add_argument("--engine", choices=ENGINES, default="auto",
                   help="executor of Algorithm 1: row (the reference), columnar "
                        "(set-at-a-time on Polars) or auto (row until a slice is large)")
    r.add_argument("--no-skip", action="store_true",
                   help="print every tick of a quiet stretch (no facts, nothing to report) "
                        "instead of one line for it")
    r.add_argument("--max-gap", type=int, default=100_000, metavar="N",
                   help="reject a line whose tick is more than N ticks after the previous "
                        "slice (a guard against a wrong tick; default 100000)")
    r.add_argument("--changes", action="store_true",
                   help="with --format jsonl: per tick only what changed (new, updated, "
                        "decided, refuted answers)")
    r.add_argument("--report", metavar="FILE",
                   help="also write the lifecycle report of the run (one self-contained HTML "
                        "file: answers per tick, timeline, ticks gained, slowest answers)")
    r.add_argument("--confidence", action="store_true",
                   help="add each answer's confidence (the probability that it is confirmed, "
                        "from an arrival model learned from the stream; README \"Confidence\")")
    r.add_argument("--min-confidence", type=_probability, metavar="P",
                   help="prune the main query's hypothetical and pending answers whose "
                        "confidence is below P (never definite ones; counted on stderr)")
    r.add_argument("--max-state", type=_natural, metavar="N",
                   help="keep at most the N most likely hypothetical and pending answers of "
                        "the main query (the rest are pruned and counted on stderr)")
    lk = sub.add_parser("lake", help="the lakehouse pipeline (Spark + Delta)", add_help=False)
    lk.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def _probability(text: str) -> float:
    """--min-confidence: a number in [0, 1]."""
    try:
        p = float(text)
    except ValueError:
        p = float("nan")
    if not 0.0 <= p <= 1.0:  # also NaN
        raise argparse.ArgumentTypeError(f"expected a probability between 0 and 1, got {text!r}")
    return p


def _natural(text: str) -> int:
    """--max-state: a natural number (of at most 18 digits)."""
    t = text.strip()
    if not t.isdigit() or len(t) > 18:
        raise argparse.ArgumentTypeError(f"expected a natural number, got {text!r}")
    return int(t)


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "lake":  # the command line that knows the lake is hypo_cli
        print("hypo: error: `lake` is a command of `hypo` (hypo_cli), not of the engine's "
              "command line: run `hypo lake …` or `python -m hypo_cli lake …`", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    try:
        if args.cmd == "check":
            return check(args, sys.stdout, sys.stderr)
        if args.cmd == "run":
            return run(args, sys.stdout, sys.stderr)
    except ProgramError as e:
        print(e.format(), file=sys.stderr)
        return 2
    except HypoError as e:
        print(f"hypo: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `hypo run … | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except OSError as e:
        print(f"hypo: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
