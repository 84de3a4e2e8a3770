"""Compile a program: parse → well-formedness → analysis → pre-processing into 𝐐 and P_Q."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from reasoning.language.analysis import Analysis, Delays, analyse
from reasoning.language.errors import HypoError, ProgramError, ProgramWarning
from reasoning.language.modular import MODES, blocked_note, certainly_over, choose
from reasoning.language.metric import lifted_window
from reasoning.language.preprocess import MAX_TEMPLATES, Query, build_queries
from reasoning.language.syntax import Atom, Lrp, Program, Span, Time, Var


@dataclass(frozen=True)
class CompiledProgram:
    """What the online engine consumes: program, analysis, δ, and 𝐐 with every P_Q."""

    program: Program
    analysis: Analysis
    delays: Delays
    queries: tuple[Query, ...]
    domain: tuple[str, ...]
    text_hash: str
    warnings: tuple[ProgramWarning, ...] = ()
    modular: frozenset = frozenset()  # IDB predicates kept as derived literals (modular.py)
    windows: bool = False  # positive diamonds as one literal (issue 45.2; windows_mode)

    @property
    def main(self) -> Query:
        return self.queries[0]

    def to_json(self) -> dict[str, Any]:
        """Stable JSON description (documented in docs/cli.md, `hypo check --format json`)."""
        an = self.analysis
        preds = []
        for name in sorted(set(an.arities) | set(an.rigid)):
            kind = ("rigid" if name in an.rigid else "idb" if name in an.idb
                    else "periodic" if name in an.periodic else "edb")
            entry: dict[str, Any] = {
                "name": name,
                "kind": kind,
                "arity": an.rigid.get(name, an.arities.get(name)),
            }
            if kind == "periodic":
                entry["facts"] = periodic_fact_texts(self.program, name)
            if kind == "edb":
                entry["delay"] = {
                    "default": self.delays.default.get(name, 0),
                    "max": self.delays.max(name),
                    "instances": [
                        {"args": [("_" if p is None else p) for p in (d.pattern or ())],
                         "delay": d.delay}
                        for d in self.delays.patterns.get(name, ())
                    ],
                }
            preds.append(entry)
        st = an.stratification
        out = {
            "format": "hypo-check/1",
            "file": self.program.file,
            "hash": self.text_hash,
            "query": str(self.main.atom),
            "domain": list(self.domain),
            "predicates": preds,
            "properties": {
                "nonrecursive": an.nonrecursive,
                "connected": an.connected,
                "multiple_temporal_variables": bool(an.multi_temporal_rules),
                "t_stratified": True,
            },
            "strata": [
                {
                    "level": st.level[c[0]],
                    "predicates": list(c),
                    "time_ordered": bool(st.slope.get(c[0], 0)),
                    "key": {p: {"slope": st.slope.get(p, 0), "phi": st.phi.get(p, 0)} for p in c},
                }
                for c in st.sccs
            ],
            "queries": [
                {
                    "id": q.qid,
                    "atom": str(q.atom),
                    "main": q.main,
                    "templates": [
                        {
                            "theta": {v: t for v, t in tp.theta},
                            "head": str(tp.head),
                            "hypotheses": [str(l) for l in tp.literals],
                            "nogoods": [dict(n) for n in tp.nogoods],
                            "time_min": dict(tp.time_min),
                            **({"windows": [list(w) for w in tp.windows]}
                               if tp.windows else {}),
                            **({"periodic": {v: d.to_json() for v, d in tp.periodic}}
                               if tp.periodic else {}),
                        }
                        for tp in q.templates
                    ],
                }
                for q in self.queries
            ],
        }
        if self.program.translations:  # only for programs with metric operators
            out["translations"] = [
                {"line": t.span.line, "rule": " ".join(t.text.split()),
                 "rules": [str(self.program.rules[i]) for i in t.rules]}
                for t in self.program.translations
            ]
        if self.modular:  # only for programs under modular evaluation
            out["modular"] = sorted(self.modular)
        return out


def _query_time_ok(q: Atom) -> bool:
    return q.time is None or q.time.var is None or q.time.offset == 0


def modular_mode(modular: Optional[str] = None) -> str:
    """The modular evaluation mode asked for: `modular`, else $HYPO_MODULAR, else auto."""
    mode = modular or os.environ.get("HYPO_MODULAR") or "auto"
    if mode not in MODES:
        raise HypoError(f"unknown modular evaluation {mode!r} ($HYPO_MODULAR or --modular: "
                        f"{', '.join(MODES)})")
    return mode


def windows_mode(windows: Optional[str] = None) -> str:
    """How positive diamonds are pre-processed: `windows`, else $HYPO_WINDOWS, else unfold
    (one rule per tick of the window); literal: one literal on a time variable constrained
    to the window (issue 45.2)."""
    mode = windows or os.environ.get("HYPO_WINDOWS") or "unfold"
    if mode not in WINDOW_MODES:
        raise HypoError(f"unknown window mode {mode!r} ($HYPO_WINDOWS or --windows: "
                        f"{', '.join(WINDOW_MODES)})")
    return mode


WINDOW_MODES = ("unfold", "literal")


def compile_program(text: str, file: str = "<input>", query: Optional[str] = None,
                    modular: Optional[str] = None,
                    windows: Optional[str] = None) -> CompiledProgram:
    """Parse, check, analyse and pre-process a program (raises ProgramError on bad input).
    modular: auto, never or always (modular.py; default $HYPO_MODULAR, else auto);
    windows: unfold or literal (windows_mode)."""
    from reasoning.language.parser import parse_atom, parse_program_with_spans
    from reasoning.language.wellformed import (check_program, delay_warnings, edb_predicates, idb_predicates,
                             predicate_arities)

    literal = windows_mode(windows) == "literal"
    prog, spans = parse_program_with_spans(text, file, literal)
    qspan = prog.query_span
    if query is not None:
        qatom = parse_atom(query, "--query", prog.rigid)
        prog = dataclasses.replace(
            prog, query=qatom, query_span=Span("--query", 1, 1, 1, len(query.rstrip()) + 1))
        qspan = prog.query_span
    if prog.query is None:
        raise ProgramError(
            "no query: add `#query Pred(X, T).` to the program or pass --query",
            Span(file, 1, 1), text,
        )
    try:
        check_program(prog, spans)
    except ProgramError as e:  # an error of --query shows the option's text, not the program
        if query is not None and e.span.file == "--query":
            raise ProgramError(e.message.replace("#query", "--query", 1), e.span, query) from None
        raise
    if not _query_time_ok(prog.query):
        raise ProgramError(
            "the query's time argument must be a variable or a timestamp, not T+k",
            qspan, prog.source if query is None else query,
        )
    idb = idb_predicates(prog)
    edb = edb_predicates(prog)
    arities = predicate_arities(prog)
    an = analyse(prog, idb, edb, arities)
    _check_termination(prog, an, qspan)
    delays = Delays.from_decls(prog.delays)
    mode = modular_mode(modular)
    kept = choose(prog, an, mode) if mode == "always" else frozenset()
    if mode == "auto" and certainly_over(prog, an, prog.query.pred, MAX_TEMPLATES):
        kept = choose(prog, an, mode)  # (the unfolding would fail at the budget below)

    def resolvable(ps: frozenset) -> frozenset:
        """ps less the lifted diamonds where those are resolved as one literal (never kept)."""
        return frozenset(p for p in ps if lifted_window(p) is None) if literal else ps

    kept = resolvable(kept)
    try:
        queries = build_queries(prog, prog.query, set(idb), edb, qspan, kept, literal)
    except ProgramError as e:  # over pre-processing's budgets: keep predicates out (auto)
        over = mode == "auto" and "budget" in e.message
        kept = choose(prog, an, mode) if over else kept
        if not kept:
            note = blocked_note(prog, an) if over else ""
            if note:
                raise ProgramError(e.message + note, e.span, e.source) from None
            raise
        kept = resolvable(kept)
        queries = build_queries(prog, prog.query, set(idb), edb, qspan, kept, literal)
    consts = set(prog.domain)
    for r in list(prog.rules) + list(prog.facts):
        for a in [r.head] + [l.atom for l in r.body]:
            for t in a.args:
                if not isinstance(t, Var):
                    consts.add(t.value)
    for t in prog.query.args:
        if not isinstance(t, Var):
            consts.add(t.value)
    domain = tuple(sorted(consts))
    h = hashlib.sha256(text.encode()).hexdigest()
    warns = tuple(ProgramWarning(m, sp, prog.source) for sp, m in delay_warnings(prog, spans))
    return CompiledProgram(prog, an, delays, queries, domain, h, warns, kept, literal)


def _check_termination(prog: Program, an: Analysis, qspan: Span) -> None:
    """Refuse programs whose pre-processing would not terminate (000 Example 7, Prop. 9)."""
    if not an.positive_cycles:
        return
    # reachable predicates from the query (positive or negative edges: aux queries too)
    succ: dict[str, set[str]] = {}
    for e in an.edges:
        succ.setdefault(e.head, set()).add(e.body)
    seen, todo = set(), [prog.query.pred]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo.extend(succ.get(p, ()))
    for cyc in an.positive_cycles:
        if seen & set(cyc):
            rule = next(
                prog.rules[e.rule_index] for e in an.edges
                if e.head in cyc and e.body in cyc and not e.negative
            )
            ring = " -> ".join(list(cyc) + [cyc[0]])
            raise ProgramError(
                f"pre-processing would not terminate: positive recursion through {ring} "
                f"(000 Example 7; only nonrecursive positive dependencies are supported, "
                f"Prop. 9)",
                rule.span, prog.source,
            )


def read_program_text(path: str) -> str:
    """A program file's text (UTF-8; a leading byte-order mark, which Windows editors write,
    is dropped)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ProgramError(f"cannot read program: {e.strerror}", Span(str(path), 0, 0)) from None
    except UnicodeDecodeError as e:
        raise ProgramError(f"program is not UTF-8 text ({e.reason})", Span(str(path), 1, 1)) from None
    return text[1:] if text.startswith("\ufeff") else text


def compile_file(path: str, query: Optional[str] = None, modular: Optional[str] = None,
                 windows: Optional[str] = None) -> CompiledProgram:
    """Compile a program file."""
    return compile_program(read_program_text(path), str(path), query, modular, windows)


def describe_text(cp: CompiledProgram) -> str:
    """`hypo check` text output in the papers' notation."""
    an = cp.analysis
    lines = [f"program {cp.program.file} (sha256 {cp.text_hash[:12]})", "", "predicates:"]
    for name in sorted(set(an.arities) | set(an.rigid)):
        if name in an.rigid:
            lines.append(f"  {name}/{an.rigid[name]}  rigid (background facts)")
        elif name in an.idb and aux_meaning(name) is not None:
            lines.append(f"  {name}/{an.arities[name]}  IDB, auxiliary: {aux_meaning(name)}")
        elif name in an.idb:
            lines.append(f"  {name}/{an.arities[name]}  IDB")
        elif name in an.periodic:
            lines.append(f"  {name}/{an.arities[name]}  periodic (background facts: "
                         f"{', '.join(periodic_fact_texts(cp.program, name))})")
        else:
            lines.append(f"  {name}/{an.arities[name]}  EDB  δ: {cp.delays.describe(name)}"
                         f" (max {cp.delays.max(name)})")
    lines += _describe_translations(cp.program)
    lines += ["", "properties:",
              f"  nonrecursive: {'yes' if an.nonrecursive else 'no'}",
              f"  connected: {'yes' if an.connected else 'no'}",
              f"  multiple temporal variables: "
              f"{'yes' if an.multi_temporal_rules else 'no'}",
              "  T-stratified: yes", "", "strata (lowest first):"]
    lines += ["  " + s for s in an.stratification.describe()]
    if cp.domain:
        lines += ["", f"domain: {', '.join(cp.domain)}"]
    if cp.modular:
        lines += ["", f"modular evaluation: {shown_preds(cp.modular)} stay derived "
                      f"literals of their callers, decided by their auxiliary queries"]
    lines += ["", "queries:"]
    for q in cp.queries:
        tag = "main" if q.main else "auxiliary"
        lines.append(f"  Q{q.qid} = ⟨{q.atom}, Π⟩  ({tag})")
        body = ", ".join(str(t) for t in q.templates) if q.templates else ""
        lines.append(f"    P_Q{q.qid} = {{{body}}}")
    return "\n".join(lines) + "\n"


def periodic_fact_texts(prog: Program, pred: str) -> list[str]:
    """The periodic facts of `pred` as written: `Maint(wt1, 3 + 7n)`, `… until 100`."""
    out = []
    for a, lrp in prog.periodic_facts().get(pred, []):
        parts = [str(t) for t in a.args]
        text = f"{a.pred}({', '.join(parts + [str(Lrp(lrp.offset, lrp.period))])})"
        out.append(text if lrp.until is None else f"{text} until {lrp.until}")
    return out


def shown_preds(preds) -> str:
    """Predicates named for people, sorted: an auxiliary one as the operator it stands for
    (`Diamondminus[0,30] B(X, T)`, not `__Diamondminus0_30_B_142d7d08`)."""
    return ", ".join(aux_meaning(p) or p for p in sorted(preds))


def aux_meaning(pred: str) -> Optional[str]:
    """What an auxiliary predicate (metric.py: `Since`, or a lifted diamond) holds for, e.g.
    `A(X, T) Since[1,2] B(X, T)`."""
    from reasoning.language.metric import AUX_PREFIX, aux_names, render_aux

    if not pred.startswith(AUX_PREFIX):
        return None
    names = aux_names(pred)
    if names is None:
        return None
    return render_aux(pred, list(names[:-1]), lambda d: str(Time(names[-1], d)))


def _describe_translations(prog: Program) -> list[str]:
    """`hypo check`: each rule written with metric operators and the plain rules it became."""
    if not prog.translations:
        return []
    out = ["", "metric operators, translated into plain rules (the analysis below is of these):"]
    for t in prog.translations:
        out.append(f"  line {t.span.line}: {' '.join(t.text.split())}")
        for i in t.rules:
            out.append(f"    {prog.rules[i]}")
    return out


def dumps(cp: CompiledProgram) -> str:
    return json.dumps(cp.to_json(), indent=2, ensure_ascii=False)
