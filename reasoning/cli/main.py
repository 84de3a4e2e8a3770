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

# numpy's OpenBLAS starts a thread a core that spin-waits once started; the engine does no
# linear algebra, and on 2 cores the spinning took 5–10 % of `hypo run`'s CPU (set before
# numpy is first imported, below; a value the user set stands)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from reasoning.run.changes import Changes
from reasoning.columnar.backends.choice import BACKENDS, default_backend
from reasoning.language.compiler import WINDOW_MODES, compile_file, describe_text, dumps
from reasoning.language.errors import HypoError, ProgramError
from reasoning.language.modular import MODES
from reasoning.semantics.explain import DEFINITE, HYPOTHETICAL, answer_key, format_atom_answer
from reasoning.run.pruning import Pruner, wants_confidence
from reasoning.run.runreport import RunReport
from reasoning.util.atomic import check_writable
from reasoning.run.session import (ENGINES, Session, answers_at, default_until, quiet_margin,  # noqa: F401
                      quiet_stretch)
from reasoning.stream.blocks import Heartbeat
from reasoning.stream.prefetch import Prefetched
from reasoning.stream.reader import StreamReader
from reasoning.stream.slices import Slice
from reasoning.stream.sources import STDIN, open_stream, stream_name


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`hypo run`: Algorithm 1 over a stream file read slice by slice, printing every tick's
    answer set (or, with --changes, what changed)."""
    if getattr(args, "report", None):  # before the first tick, not after the whole stream
        try:
            check_writable(args.report)
        except OSError as e:
            reason = e.strerror or str(e)
            if isinstance(e, IsADirectoryError):
                reason = "is a directory (give the HTML file's name)"
            elif isinstance(e, FileExistsError):  # makedirs met a file on the way
                reason = "a part of its folder is a file, not a directory"
            raise HypoError(f"--report {args.report}: {reason}") from None
    cp = compile_file(args.program, args.query, args.modular, args.windows)
    for w in cp.warnings:
        print(w.format(), file=err)
    with open_stream(args.stream) as fh:
        return _run(args, cp, StreamReader(fh, cp, stream_name(args.stream), args.max_gap), out,
                    err, prefetch=args.stream != STDIN and os.path.isfile(args.stream))


def _run(args, cp, reader: StreamReader, out: TextIO, err: TextIO,
         prefetch: bool = False) -> int:
    # a regular file's next slices are parsed on a thread while a tick runs
    feed = Prefetched(reader, threaded=prefetch)
    try:
        return _run_ticks(args, cp, reader, feed, out, err)
    finally:
        feed.close()


def _run_ticks(args, cp, reader: StreamReader, feed: Prefetched, out: TextIO,
               err: TextIO) -> int:
    sess = Session(cp, engine=args.engine, forget=not args.no_forget,
                   backend=default_backend(args.backend) if args.backend else None)
    feed.prepare = sess.prepare_slice  # the reading thread converts slices ahead
    tool = sess.row if sess.row is not None else sess.col.tool
    main_q = str(cp.main.atom)
    prev_hyp: dict = {}
    changes = Changes() if args.changes else None
    rep_data = RunReport(args, cp) if getattr(args, "report", None) else None
    duplicates = 0
    accepted = 0
    ahead = None  # the next slice or heartbeat read, once `fetch`
    fetch = True  # read it lazily: tick τ is answered once its own slice is complete
    live = reader.live  # a pipe, a FIFO: each tick's output is flushed at once
    tau = 0
    margin = None if args.no_skip or args.no_forget else quiet_margin(tool)
    pruner = Pruner(args, cp, sess, err) if wants_confidence(args) else None
    if pruner is not None and pruner.prunes:
        margin = None  # a replayed quiet stretch would rebuild pruned answers
    quiet = 0  # ticks in a row without facts that printed nothing
    while True:
        if args.until is not None and tau > args.until:
            break
        if fetch:
            ahead, fetch = next(feed, None), False
        while isinstance(ahead, Heartbeat) and ahead.tick <= tau:
            ahead = next(feed, None)  # the ticks before it are done: wait for more
        if args.until is None and ahead is None and tau > default_until(tool, reader):
            break
        if isinstance(ahead, Slice) and ahead.tick == tau:
            sl, fetch = ahead, True
        else:  # no fact at τ: the next slice is later, or a heartbeat says τ is complete
            sl = Slice(tau)
        for r in feed.take_rejected():
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
                objs = rep_data.confidences(tau, objs, pruner.conf.of)
            rep_data.tick(tau, len(sl), rep.duplicates, objs)
        if rep.duplicate_facts:
            for f, line in _duplicate_lines(sl.entries(), rep.duplicate_facts):
                print(f"{stream_name(args.stream)}:{line}: ignored (tick {tau}): duplicate: "
                      f"{f} had already arrived", file=err)
        duplicates += rep.duplicates
        accepted += len(sl) - rep.duplicates
        if args.format == "jsonl":
            if changes is not None:
                text = changes.update_text(tau, sess.keyed(args.all_queries, args.all)
                                           if pruner is None else pruner.keyed())
                silent = not text
            else:
                lines = (sess.lines(args.all_queries, args.all, args.ground) if pruner is None
                         else pruner.lines())
                silent = not lines
                if not lines:
                    lines = [json.dumps({"tick": tau, "query": main_q, "status": "none"})]
                text = "\n".join(lines) + "\n"
            if text:
                out.write(text)
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
        if live:
            out.flush()
        quiet = quiet + 1 if silent and not len(sl) else 0
        tau += 1
        if margin is not None and quiet >= margin:
            nxt = ahead.tick if ahead is not None else (
                args.until + 1 if args.until is not None else None)
            skip = quiet_stretch(margin, quiet, tau, nxt)
            if skip is not None:
                tau, prev_hyp = _skip_quiet(args, sess, changes, out, main_q, tau, *skip)
                quiet = 0
    if args.until is not None:  # the lines after --until are not answered, but still
        for _ in feed:  # checked: their rejections are reported (and make the exit code 1)
            pass
    for r in feed.take_rejected():
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
    if reader.heartbeats:
        ign += f", {reader.heartbeats} heartbeat(s)"
    if pruner is not None and pruner.prunes:
        ign += pruner.summary()
    why = f": {sess.unsupported}" if sess.unsupported and args.engine != "row" else ""
    print(f"processed ticks 0..{tau - 1} ({sess.executor} engine{why}): {accepted} facts accepted, "
          f"{duplicates} duplicates ignored, {len(reader.rejected)} rejected{ign}", file=err)
    if args.verbose:
        print(f"executor: {sess.why()}", file=err)
    return 1 if reader.rejected else 0


def _skip_quiet(args, sess: Session, changes, out: TextIO, main_q: str, tau: int, start: int,
                last: int) -> tuple[int, dict]:
    """Skip the quiet stretch τ..last in O(margin) (session.quiet_stretch): nothing can be
    printed there, so it is one line; S_last is rebuilt by a fresh executor replaying the
    ticks start..last, whose output is not shown.  Returns the next
    tick to run and the text view's hypothetical answers."""
    if args.format == "jsonl":
        if changes is None:
            out.write(json.dumps({"tick": tau, "query": main_q, "status": "none",
                                  "through": last}) + "\n")
    else:
        out.write(f"ticks {tau}..{last}: 0 fact(s), nothing to report (a quiet stretch, "
                  f"skipped)\n")
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
            _text_derived(out, o)
        else:
            cs = f"  [confidence {conf(o):.3f}]" if conf is not None else ""
            out.write(f"  {'pending':<15} {q}{atom}  needs {'; '.join(o['hypotheses'])}{cs}\n")
            _text_derived(out, o)
    for o in refuted:
        out.write(f"  {'refuted':<15} {format_atom_answer(o)}  (was: if "
                  f"{'; '.join(o['hypotheses'])})\n")


def _text_derived(out, o: dict) -> None:
    """Under an answer waiting on derived hypotheses (modular evaluation): what each of
    them waits for, one line per way it can still be derived."""
    for atom, ways in o.get("derived", {}).items():
        for w in ways[:3]:
            ev = f"; evidence: {'; '.join(w['evidence'])}" if w["evidence"] else ""
            need = "; ".join(w["hypotheses"]) or "nothing (decided this tick)"
            out.write(f"  {'':<15}   {atom} if {need}{ev}\n")
        if len(ways) > 3:
            out.write(f"  {'':<15}   {atom}: {len(ways) - 3} more ways (--format jsonl)\n")


def check(args: argparse.Namespace, out: TextIO, err: Optional[TextIO] = None) -> int:
    cp = compile_file(args.program, args.query, args.modular, args.windows)
    for w in cp.warnings:
        print(w.format(), file=err or sys.stderr)
    from reasoning.columnar.engine import row_by_row, too_long, unsupported

    why = unsupported(cp)
    if why is not None:  # answered alike by every `hypo run` executor; the lake: see init
        lake = ("`hypo lake init` refuses it" if too_long(cp) else
                "the lake unfolds its windows" if cp.windows else
                "so does the lake, whatever --executor says")
        print(f"{args.program}: note: {why}: `hypo run` answers it on the row engine whatever "
              f"--engine says, {lake}", file=err or sys.stderr)
    elif row_by_row(cp) is not None:  # the same answers on either executor
        print(f"{args.program}: note: {row_by_row(cp)}: `hypo run` (--engine auto) and the "
              f"lake run it on the row engine", file=err or sys.stderr)
    out.write(dumps(cp) + "\n" if args.format == "json" else describe_text(cp))
    return 0


def _version() -> str:
    """The installed package's version (pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hypo")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "(not installed)"


class _VersionAction(argparse.Action):
    """--version, looked up only when asked: importlib.metadata costs ~25 ms of every
    command's start."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser._print_message(f"hypo {_version()}\n", sys.stdout)
        parser.exit()


def _windows_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--windows", choices=WINDOW_MODES, default=None,
                   help="positive diamonds (docs/language.md): unfold (the default, or "
                        "$HYPO_WINDOWS) one rule per tick of the window; literal: one literal "
                        "on a time variable bound to the window (row engine)")


def _modular_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--modular", choices=MODES, default=None,
                   help="modular evaluation (docs/language.md): auto (the default, "
                        "$HYPO_MODULAR) unfolds every IDB literal unless P_Q would exceed "
                        "pre-processing's budgets; always keeps every IDB literal out of its "
                        "callers' templates (a derived hypothesis); never unfolds all")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hypo", description="Hypothetical answers to continuous "
                                "queries over data streams (Temporal Datalog with negation).")
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="show what the system made of a program")
    c.add_argument("program")
    c.add_argument("--query", help="the main query atom, e.g. 'OK(X, T)'")
    c.add_argument("--format", choices=["text", "json"], default="text")
    _modular_arg(c)
    _windows_arg(c)
    r = sub.add_parser("run", help="run a program over a JSON-lines stream")
    r.add_argument("program")
    r.add_argument("--stream", required=True,
                   help='JSON lines {"tick": 3, "fact": "Hot(wt1, 1)"} (`-`: standard input; '
                        'from a pipe each tick is answered once complete; a heartbeat '
                        '{"tick": 7} completes the ticks before 7)')
    r.add_argument("--query")
    _modular_arg(r)
    _windows_arg(r)
    r.add_argument("--until", type=tick_arg, help="last tick to process")
    r.add_argument("--format", choices=["text", "jsonl"], default="text")
    r.add_argument("--all-queries", action="store_true", help="also the auxiliary queries")
    r.add_argument("--all", action="store_true", help="also pending answers (no evidence yet)")
    r.add_argument("--ground", action="store_true", help="expand unbound variables over #domain")
    r.add_argument("--no-forget", action="store_true",
                   help="keep definite answers in the state (as the paper's S_τ does)")
    r.add_argument("--engine", choices=ENGINES, default="auto",
                   help="executor of Algorithm 1: row (the reference), columnar "
                        "(set-at-a-time) or auto (row until a slice is large)")
    r.add_argument("-v", "--verbose", action="store_true",
                   help="also say on stderr which executor ran and why")
    r.add_argument("--backend", choices=BACKENDS, default=None,
                   help="what runs the set-at-a-time plan: arrays (numpy columns, compiled "
                        "joins; the default) or polars ($HYPO_BACKEND sets the default)")
    r.add_argument("--no-skip", action="store_true",
                   help="print every tick of a quiet stretch (no facts, nothing to report) "
                        "instead of one line for it")
    r.add_argument("--max-gap", type=tick_arg, default=100_000, metavar="N",
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
                        "from an arrival model learned from the stream; docs/confidence.md)")
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


def tick_arg(text: str) -> int:
    """--until, --max-gap (and the lake's ticks): a natural number below 2⁶⁰, as ticks and
    times are."""
    from reasoning.stream.facts import MAX_TIME

    t = text.strip().replace("_", "")
    if not t.isdigit() or len(t) > 19 or int(t) >= MAX_TIME:
        raise argparse.ArgumentTypeError(f"expected a natural number below 2^60, got {text!r}")
    return int(t)


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
    except KeyboardInterrupt:  # Ctrl-C: what was printed stands
        print("hypo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `hypo run … | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except OSError as e:  # no file name: the output (a full disk under stdout)
        where = f"{e.filename}: " if e.filename else "writing the output: "
        print(f"hypo: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
