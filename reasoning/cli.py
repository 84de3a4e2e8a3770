"""The `hypo` command: `check` a program, `run` it over a stream, and `lake` (jobs/).

Exit codes: 0 success; 1 the run completed but some stream lines were rejected;
2 a program, usage or input error (reported as FILE:LINE:COL, never a traceback).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, TextIO

from .compiler import compile_file, describe_text, dumps
from .engine import Engine
from .errors import HypoError, ProgramError
from .explain import DEFINITE, HYPOTHETICAL, Explainer, answer_key, format_atom_answer
from .stream import Stream, read_stream_file


def default_until(eng: Engine, st: Stream) -> int:
    """Last arrival tick plus enough ticks for every hypothesis to be decided."""
    ex = Explainer(eng)
    rels = [v for v in ex.rel.values()]
    maxd = max([eng.delays.max(p) for p in eng.cp.analysis.edb] or [0])
    if any(v is None for v in rels):
        extra = maxd + 1
    else:
        extra = max(rels + [maxd]) + 1
    return max(st.last_tick, 0) + extra


def answers_at(ex: Explainer, tick: int, answers, all_queries: bool, include_pending: bool,
               ground: bool) -> list[dict]:
    """The printed answer set of one tick (main query unless all_queries), sorted."""
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
    uniq = {json.dumps(o, sort_keys=True): o for o in out}
    return [uniq[k] for k in sorted(uniq, key=lambda k: (uniq[k]["query"] != str(eng.cp.main.atom), k))]


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`hypo run`: Algorithm 1 over a stream file, printing every tick's answer set."""
    cp = compile_file(args.program, args.query)
    st = read_stream_file(args.stream, cp)
    eng = Engine(cp, forget=not args.no_forget)
    until = args.until if args.until is not None else default_until(eng, st)
    ex = Explainer(eng)
    for r in st.rejected:
        print(str(r), file=err)
    main_q = str(cp.main.atom)
    prev_hyp: dict = {}
    duplicates = 0
    for tau in range(until + 1):
        entries = st.slices.get(tau, ())
        facts = [f for f, _ in entries]
        rep = eng.step(facts, tau)
        ex.reset()
        for f, line in _duplicate_lines(entries, rep.duplicate_facts):
            print(f"{args.stream}:{line}: ignored (tick {tau}): duplicate: {f} had already "
                  f"arrived", file=err)
        duplicates += rep.duplicates
        objs = answers_at(ex, tau, rep.snapshot, args.all_queries, args.all, args.ground)
        main_objs = answers_at(ex, tau, rep.snapshot, False, True, False)
        cur = {answer_key(o) for o in main_objs}
        refuted = [o for k, o in prev_hyp.items() if k not in cur]
        prev_hyp = {answer_key(o): o for o in main_objs if o["status"] == HYPOTHETICAL}
        if args.format == "jsonl":
            if not objs:
                out.write(json.dumps({"tick": tau, "query": main_q, "status": "none"}) + "\n")
            for o in objs:
                out.write(json.dumps(o, ensure_ascii=False) + "\n")
        else:
            new_def = {answer_key(ex.render(a, tau)) for a in rep.new_definite}
            _text_tick(out, tau, facts, objs, new_def, refuted, main_q)
    accepted = sum(len(v) for v in st.slices.values()) - duplicates
    print(f"processed ticks 0..{until}: {accepted} facts accepted, {duplicates} duplicates "
          f"ignored, {len(st.rejected)} rejected", file=err)
    return 1 if st.rejected else 0


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


def _text_tick(out, tau, facts, objs, new_def, refuted, main_q) -> None:
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
            out.write(f"  {'hypothetical':<15} {q}{atom}  if {'; '.join(o['hypotheses'])}  "
                      f"[{when}; evidence: {'; '.join(o['evidence'])}]\n")
        else:
            out.write(f"  {'pending':<15} {q}{atom}  needs {'; '.join(o['hypotheses'])}\n")
    for o in refuted:
        out.write(f"  {'refuted':<15} {format_atom_answer(o)}  (was: if "
                  f"{'; '.join(o['hypotheses'])})\n")


def check(args: argparse.Namespace, out: TextIO) -> int:
    cp = compile_file(args.program, args.query)
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
    lk = sub.add_parser("lake", help="the lakehouse pipeline (Spark + Delta)", add_help=False)
    lk.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "lake":
        from jobs.cli import main as lake_main

        return lake_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        if args.cmd == "check":
            return check(args, sys.stdout)
        if args.cmd == "run":
            return run(args, sys.stdout, sys.stderr)
    except ProgramError as e:
        print(e.format(), file=sys.stderr)
        return 2
    except HypoError as e:
        print(f"hypo: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"hypo: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
