"""`hypo lake …`: the lakehouse pipeline from the command line (calls jobs.lake only).

Exit codes: 0 success; 1 `verify` found damage; 2 a user mistake or a damaged lake (missing
lake, tick out of order, program mismatch, unreadable input, a missing or unreadable file
under the lake, …), reported as one line without a traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, TextIO

from reasoning.cli.main import tick_arg
from reasoning.language.errors import HypoError, ProgramError

USAGE_EXAMPLES = """examples:
  hypo lake init --program examples/wind_turbines.tdl
  hypo lake ingest examples/wind_turbines.jsonl          # rows carry their tick
  hypo lake ingest --tick 3 slice3.jsonl more.csv
  hypo lake run --from 0 --to 8
  hypo lake answers --tick 2
  hypo lake changes --from 0 --to 8                      # the change feed (hypo run --changes)
  hypo lake history 'OK(wt2, 1)'
  hypo lake status
  hypo lake report --from 0 --to 8 --out report.html      # one self-contained HTML file
  hypo lake verify [--deep]                              # logs, files, ticks log
  hypo lake vacuum --keep-state 1000                     # bounded storage (see --help)
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors: one line, exit 2
        raise _Usage(f"{message} (see `{self.prog} --help`)")


class _Usage(HypoError):
    pass


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lake", default=argparse.SUPPRESS,
                        help="lake directory (default: $HYPO_LAKE or ./lake)")
    p = _Parser(prog="hypo lake", description="The lakehouse pipeline: Delta tables of facts, "
                "state S_τ and answers, ticks computed on Spark.", parents=[common],
                epilog=USAGE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    i = sub.add_parser("init", parents=[common], help="create a lake for a program")
    i.add_argument("--program", required=True)
    i.add_argument("--query", help="the main query atom, e.g. 'Shdn(X, T)'")
    i.add_argument("--confidence", action="store_true",
                   help="give each answer its confidence in the answers table (an arrival "
                        "model learned from tick 0, computed on the driver; README "
                        "\"Confidence\")")
    i.add_argument("--modular", choices=["auto", "never", "always"],
                   help="modular evaluation (default $HYPO_MODULAR, else auto: as `hypo "
                        "run`); the lake keeps the predicates it chose (docs/language.md)")
    g = sub.add_parser("ingest", parents=[common], help="load JSONL/CSV/Parquet files into facts")
    g.add_argument("--tick", type=tick_arg, help="the slice (default: every row gives its tick)")
    g.add_argument("--master", help="Spark master (default local[2])")
    g.add_argument("--format", choices=["text", "json"], default="text")
    g.add_argument("--max-gap", type=tick_arg, default=100_000, metavar="N",
                   help="quarantine (far_tick) a row whose tick is more than N ticks after "
                        "the lake's previous fact tick, as `hypo run --max-gap` rejects it "
                        "(a guard against a wrong tick; default 100000); ingesting the same "
                        "files again with a larger N adds the rows it refused")
    g.add_argument("files", nargs="*")
    t = sub.add_parser("tick", parents=[common], help="compute tick τ")
    t.add_argument("tick", type=tick_arg)
    t.add_argument("--master")
    t.add_argument("--program", help="refuse to run unless the lake's program is this file")
    t.add_argument("--executor", choices=["auto", "spark", "local", "row"],
                   help="where Algorithm 1's plan runs: spark, local (Polars on the driver), "
                        "auto (local for small ticks; default, or $HYPO_LAKE_EXECUTOR), or "
                        "row (the row engine on the driver, the reference)")
    t.add_argument("--format", choices=["text", "json"], default="text")
    r = sub.add_parser("run", parents=[common], help="compute ticks a..b")
    r.add_argument("--from", dest="start", type=tick_arg)
    r.add_argument("--to", dest="end", type=tick_arg)
    r.add_argument("--master")
    r.add_argument("--program")
    r.add_argument("--executor", choices=["auto", "spark", "local", "row"])
    r.add_argument("--format", choices=["text", "json"], default="text")
    r.add_argument("--no-skip", action="store_true",
                   help="compute every tick of a quiet stretch (no facts, nothing to report) "
                        "instead of skipping it as `hypo run` does")
    a = sub.add_parser("answers", parents=[common], help="answers at a tick (time travel)")
    a.add_argument("--tick", type=tick_arg)
    a.add_argument("--status", choices=["definite", "hypothetical", "pending", "all"])
    a.add_argument("--format", choices=["jsonl", "text"], default="jsonl")
    c = sub.add_parser("changes", parents=[common],
                       help="what changed at ticks a..b (the change feed of `current`: "
                            "the lines of `hypo run --changes --format jsonl`)")
    c.add_argument("--from", dest="start", type=tick_arg, default=0)
    c.add_argument("--to", dest="end", type=tick_arg)
    h = sub.add_parser("history", parents=[common], help="the lifecycle of one answer")
    h.add_argument("atom", help="a ground instance of the query, e.g. 'OK(wt2, 1)'")
    h.add_argument("--format", choices=["text", "jsonl"], default="text")
    s = sub.add_parser("status", parents=[common], help="ticks, versions, counts, quarantine")
    s.add_argument("--format", choices=["text", "json"], default="text")
    rp = sub.add_parser("report", parents=[common],
                        help="the lifecycle report of ticks a..b as one self-contained HTML file")
    rp.add_argument("--from", dest="start", type=tick_arg, help="first tick (default 0)")
    rp.add_argument("--to", dest="end", type=tick_arg,
                    help="last tick (default: the last completed)")
    rp.add_argument("--out", help="the HTML file (default <lake>/reports/ticks=a-b.html)")
    v = sub.add_parser("verify", parents=[common],
                       help="check every table's log and files and the ticks log; exit 1 if "
                            "anything is damaged, with what to do")
    v.add_argument("--format", choices=["text", "json"], default="text")
    v.add_argument("--deep", action="store_true",
                   help="also decode every data file (damage inside a file whose size and "
                        "footer are intact); reads the whole lake")
    vc = sub.add_parser("vacuum", parents=[common],
                        help="bounded storage: remove old ticks' S_τ and delete files no recent "
                             "table version needs",
                        description="Remove the state partitions of all but the last N "
                        "completed ticks (--keep-state N: those ticks can no longer be re-run) "
                        "and the answers of all but the last M (--keep-answers M: answers, "
                        "history and report start there); facts and quarantine are kept. "
                        "Then delete from disk the files no table version of the last H hours "
                        "needs (Delta VACUUM; older versions can then no longer be read). Run "
                        "it between ticks: a tick committing meanwhile fails (run it again).")
    vc.add_argument("--keep-state", type=_positive, metavar="N",
                    help="keep S_τ of the last N completed ticks only (default: keep all)")
    vc.add_argument("--keep-answers", type=_positive, metavar="M",
                    help="keep the answers of the last M completed ticks only (answers, "
                         "history and report then start there; default: keep all)")
    vc.add_argument("--retain-hours", type=tick_arg, default=None, metavar="H",
                    help="delete files unused for H hours (default 168, a week; below 1 "
                         "only with --force)")
    vc.add_argument("--force", action="store_true",
                    help="allow --retain-hours below 1: only when no tick or ingest runs")
    vc.add_argument("--dry-run", action="store_true", help="say what would go, change nothing")
    vc.add_argument("--format", choices=["text", "json"], default="text")
    m = sub.add_parser("migrate", parents=[common],
                       help="convert a lake written by an earlier version to this layout")
    m.add_argument("--master")
    return p


def _positive(text: str) -> int:
    n = tick_arg(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return n


def _tick_line(s: dict) -> str:
    c = s["counts"]
    if "quiet_from" in c:
        return (f"ticks {c['quiet_from']}..{s['tick']}: 0 fact(s), nothing to report (a quiet "
                f"stretch, skipped; S_{s['tick']} rebuilt from tick {c['replayed_from']}: "
                f"{c['pending']} pending answer(s)); state {c['state_rows']} rows [state "
                f"v{s['state_version']}, answers v{s['answers_version']}]")
    return (f"tick {s['tick']}: {c['facts']} fact(s), {c['accepted']} accepted, "
            f"{c['rejected']} rejected, {c['duplicates']} duplicate(s)"
            f"{', ' + str(c['ignored']) + ' ignored' if c.get('ignored') else ''}; "
            f"{c['answers']} answer(s) "
            f"({c['definite']} definite, {c['hypothetical']} hypothetical, {c['pending']} pending); "
            f"state {c['state_rows']} rows [state v{s['state_version']}, answers "
            f"v{s['answers_version']}, {c.get('executor', '?')} executor{_spark_jobs(c)}"
            f"{' (derived literals)' if c.get('executor_why') else ''}]"
            + (f" (the same inputs as an earlier run: its commit(s) {', '.join(c['adopted'])}"
               f" kept)" if c.get("adopted") else ""))


def _spark_jobs(c: dict) -> str:
    """', 14 Spark jobs (14 stages, 40 tasks)' of a tick on Spark (jobs/tick/sparkjobs.py)."""
    if "spark_jobs" not in c:
        return ""
    return (f", {c['spark_jobs']} Spark job(s) ({c['spark_stages']} stage(s), "
            f"{c['spark_tasks']} task(s))")


def _answer_text(o: dict) -> str:
    from jobs.tick.job import format_atom

    atom = format_atom(o)
    if o["status"] == "definite":
        return f"  definite      {atom}   because {'; '.join(o['evidence']) or 'no premises'}"
    if o["status"] == "hypothetical":
        d = o["deadline"]
        when = f"decided by tick {d}" if d is not None else "no deadline (unbounded wait)"
        return (f"  hypothetical  {atom}   if {'; '.join(o['hypotheses'])}   [{when}; evidence: "
                f"{'; '.join(o['evidence'])}]")
    return f"  {o['status']:<14}{atom}   needs {'; '.join(o['hypotheses'])}"


def _ranges(xs: list[int], stretches=None) -> str:
    """'0..4, 7' of sorted ticks; a skipped quiet stretch [a, b] counts as all its ticks."""
    spans: list[list[int]] = []
    for lo, hi in sorted([(x, x) for x in xs] + [tuple(q) for q in stretches or ()]):
        if spans and lo <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    return ", ".join(str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in spans)


def _init(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake init`: create the lake (or find it already made for this program)."""
    from jobs import lake as api

    r = api.init(lake, args.program, args.query, args.confidence, args.modular)
    verb = ("created" if r["created"] else "restored (_hypo/program.json rewritten for the "
            "program its tables were made for)" if r.get("restored") else "already initialised")
    out.write(f"lake {r['lake']} {verb}: program sha256 {r['hash'][:12]}, query "
              f"{r['query']}{', with confidence' if r['confidence'] else ''}\n")
    return 0


def _ingest(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake ingest`: load a slice's files; a line of counts per batch."""
    from jobs import lake as api

    r = api.ingest(lake, args.tick, args.files, args.master, max_gap=args.max_gap)
    if args.format == "json":
        out.write(json.dumps(r, sort_keys=True) + "\n")
    elif r["skipped"]:
        out.write(f"batch {r['batch']}: already ingested, nothing to do\n")
    else:
        ticks = ", ".join(f"tick {t}: {n}" for t, n in r["by_tick"].items()) or "none"
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(r["reasons"].items()))
        beats = f", {r['heartbeats']} heartbeat(s)" if r.get("heartbeats") else ""
        out.write(f"batch {r['batch']}: {r['accepted']} fact row(s) ({ticks}), "
                  f"{r['rejected']} quarantined{' (' + reasons + ')' if reasons else ''}"
                  f"{beats}\n")
        if r.get("warning"):
            out.write(f"warning: {r['warning']}\n")
    return 0


def _tick(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake tick τ`: compute one tick; its summary line."""
    from jobs import lake as api

    s = api.run_tick(lake, args.tick, args.master, program=args.program,
                     executor=args.executor)
    out.write(json.dumps(s, sort_keys=True) + "\n" if args.format == "json"
              else _tick_line(s) + "\n")
    return 0


def _run(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake run`: compute ticks a..b (default: those due), a line per tick."""
    from jobs import lake as api

    start, end = args.start, args.end
    if start is None or end is None:
        s0, e0 = api.default_range(lake)
        start = s0 if start is None else start
        end = e0 if end is None else end
        if start > end:
            out.write(f"nothing to run: ticks up to {end} are complete\n")
            return 0
    for s in api.run_ticks(lake, start, end, args.master, program=args.program,
                           executor=args.executor, skip=not args.no_skip):
        out.write(json.dumps(s, sort_keys=True) + "\n" if args.format == "json"
                  else _tick_line(s) + "\n")
        out.flush()
    return 0


def _answers(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake answers`: the answers at a tick, as JSONL or text."""
    from jobs import lake as api
    from jobs.table.store import Lake

    objs = api.read_answers(lake, args.tick, args.status)
    tick = args.tick if args.tick is not None else Lake(lake).last_tick()
    if args.format == "jsonl":
        if not objs:
            out.write(json.dumps({"tick": tick, "query": Lake(lake).program_info.get("main"),
                                  "status": "none"}) + "\n")
        for o in objs:
            out.write(json.dumps(o, ensure_ascii=False) + "\n")
    else:
        out.write(f"tick {tick}: {len(objs)} answer(s)\n")
        for o in objs:
            out.write(_answer_text(o) + "\n")
    return 0


def _changes(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake changes`: the change feed of ticks a..b as `hypo run --changes` lines."""
    from jobs.errors import LakeError
    from jobs.table.current import changes
    from jobs.table.store import Lake

    end = args.end if args.end is not None else Lake(lake).require().last_tick()
    if args.start > end:
        raise LakeError(f"--from {args.start} is after --to {end}")
    for line in changes(lake, args.start, end):
        out.write(line + "\n")
    return 0


def _history(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake history ATOM`: the lifecycle of one answer."""
    from jobs import lake as api
    from jobs.table.store import Lake

    ev = api.history(lake, args.atom)
    if args.format == "jsonl":
        for e in ev:
            out.write(json.dumps(e, ensure_ascii=False) + "\n")
        return 0
    cut = Lake(lake).answers_from()
    since = (f" (answers before tick {cut} were removed by `hypo lake vacuum`)"
             if cut else "")
    if not ev:
        out.write(f"{args.atom}: no answer covers it at any completed tick{since}\n")
        return 0
    out.write(f"history of {args.atom}{since}:\n")
    for e in ev:
        how = "" if e["exact"] or e["status"] == "refuted" else \
            "  (covered by a schematic answer)"
        detail = ""
        if e["status"] == "definite":
            detail = f"   because {'; '.join(e['evidence'])}"
        elif e["status"] in ("hypothetical", "pending"):
            detail = f"   needs {'; '.join(e['hypotheses'])}"
            if e["evidence"]:
                detail += f"   evidence: {'; '.join(e['evidence'])}"
        out.write(f"  tick {e['tick']:<4} {e['status']:<13} {e['event']:<22} "
                  f"{e['answer']}{detail}{how}\n")
    return 0


def _report(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake report`: the lifecycle report as one HTML file."""
    from jobs.audit.report import write_report
    from jobs.table.store import Lake

    path = args.out
    if path is None:
        L = Lake(lake).require()
        end = args.end if args.end is not None else L.last_tick()
        path = os.path.join(L.root, "reports", f"ticks={args.start or 0}-{end}.html")
    r = write_report(lake, path, args.start, args.end)
    out.write(f"report of ticks {r['start']}..{r['end']}: {r['answers']} answer(s) "
              f"({r['confirmed']} confirmed, {r['refuted']} refuted, {r['open']} open; pending, "
              f"never announced: {r['pending_refuted']} refuted while pending, "
              f"{r['pending_open']} still pending), {r['bytes']} bytes -> {r['path']}\n")
    return 0


def _verify(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake verify`: exit 1 if anything is damaged, with what to do."""
    from jobs.maintenance.verify import verify

    r = verify(lake, deep=args.deep)
    if args.format == "json":
        out.write(json.dumps(r, sort_keys=True, indent=2) + "\n")
    else:
        for line in r["lines"]:
            out.write(f"damaged: {line}\n")
        tables = ", ".join(f"{k} v{c['version']} ({c['files']} file(s))"
                           for k, c in r["checked"].items())
        if r["ok"]:
            out.write(f"lake {r['lake']}: no damage found ({tables})\n")
        else:
            out.write(f"lake {r['lake']}: {len(r['lines'])} problem(s); fix them in the "
                      f"order listed, then run `hypo lake verify` again\n")
    return 0 if r["ok"] else 1


def _vacuum(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake vacuum`: bounded storage; what was (or would be) removed."""
    from jobs.maintenance.retention import RETAIN_HOURS, vacuum
    from jobs.table.store import rerun_scope

    h = RETAIN_HOURS if args.retain_hours is None else args.retain_hours
    r = vacuum(lake, args.keep_state, h, args.dry_run, args.force, args.keep_answers)
    if args.format == "json":
        out.write(json.dumps(r, sort_keys=True, indent=2) + "\n")
        return 0
    verb = "would remove" if args.dry_run else "removed"
    for kind, keep, what in (("state", args.keep_state, "S_τ"),
                             ("answers", args.keep_answers, "the answers")):
        k = r[kind]
        if keep is None and not k["removed_partitions"]:
            continue  # (an interrupted vacuum's leftovers are removed, and said)
        if k["removed_partitions"]:
            after = (rerun_scope(k["from"]) if kind == "state" else
                     f"answers, history and report start at tick {k['from']}")
            out.write(f"{kind}: {verb} {what} of {k['removed_partitions']} tick(s) before "
                      f"tick {k['from']} ({k['removed_rows']} rows); {after}\n")
        else:
            out.write(f"{kind}: nothing to remove ({what} kept from tick {k['from']}, last "
                      f"completed tick {r['last_tick']})\n")
    files = ", ".join(f"{k} {n}" for k, n in r["deleted_files"].items() if n)
    verb = "would delete" if args.dry_run else "deleted"
    out.write(f"files unused for {h} h: {verb} {sum(r['deleted_files'].values())} "
              f"({r['deleted_bytes']} bytes{'; ' + files if files else ''})\n")
    return 0


def _migrate(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake migrate`: convert a lake of the previous state layout."""
    from jobs import lake as api

    r = api.migrate(lake, args.master)
    out.write(r["message"] + "\n")
    return 0


def _status(args: argparse.Namespace, lake: Optional[str], out: TextIO) -> int:
    """`hypo lake status`: ticks, versions, counts, quarantine; exit 1 if files are missing."""
    from jobs import lake as api
    from jobs.table.store import rerun_advice, rerun_scope, rerunnable

    s = api.lake_status(lake)
    if args.format == "json":
        out.write(json.dumps(s, sort_keys=True, indent=2) + "\n")
        return 1 if s["missing_files"] else 0
    p = s["program"]
    out.write(f"lake {s['lake']}\n  program {p['file']} (sha256 {p['hash'][:12]}), query "
              f"{p['query']}{', with confidence' if p.get('confidence') else ''}\n")
    out.write(f"  last tick: {s['last_tick']}   completed: "
              f"{_ranges(s['completed_ticks'], s.get('quiet_stretches')) or 'none'}")
    if s.get("quiet_stretches"):
        out.write(f"   (skipped quiet stretches: "
                  f"{', '.join(f'{a}..{b}' for a, b in s['quiet_stretches'])})")
    if s["incomplete_ticks"]:
        out.write(f"   incomplete (re-run them): {_ranges(s['incomplete_ticks'])}")
    if s["stale_ticks"]:
        out.write(f"   stale (their S_τ-1 changed; re-run from {s['stale_ticks'][0]}): "
                  f"{_ranges(s['stale_ticks'])}")
    if s.get("late_facts"):
        late = s["late_facts"]
        first = s.get("late_rerun_from") or min(late)
        out.write("\n  late facts: " + ", ".join(f"tick {t}: {n} row(s)" for t, n in
                                                  sorted(late.items())) +
                  " ingested after the tick ran (its answers lack them); ")
        if rerunnable(first, s.get("state_from", 0)):
            out.write(f"re-run `hypo lake run --from {first} --to {s['last_tick']}`")
        else:
            out.write(f"S_{first - 1} was removed by `hypo lake vacuum`: "
                      + rerun_advice(first, s["state_from"], s["last_tick"]))
    if s.get("answers_from"):
        out.write(f"\n  answers kept from tick {s['answers_from']} (`hypo lake vacuum "
                  f"--keep-answers`)")
    if s.get("state_from"):
        out.write(f"\n  state kept from tick {s['state_from']} (`hypo lake vacuum "
                  f"--keep-state`): " + rerun_scope(s["state_from"]))
    out.write("\n  versions: " + ", ".join(f"{k} v{v}" for k, v in s["versions"].items()) + "\n")
    out.write("  rows (every partition tick=τ): " + ", ".join(
        f"{k} {v}" for k, v in s["rows"].items() if k != "ticks") + "\n")
    if s["last"]:
        c = s["last"]["counts"]
        out.write(f"  current (tick {s['last_tick']}, partition tick={s['last_tick']}): "
                  f"{c.get('answers', 0)} answers, "
                  f"{c.get('state_rows', 0)} state rows, digest state "
                  f"{s['last']['state_digest']} answers {s['last']['answers_digest']}\n")
    q = s["quarantine"]
    out.write(f"  quarantine: {q['total']} row(s)")
    if q["by_reason"]:
        out.write(" — " + ", ".join(f"{k} {v}" for k, v in q["by_reason"].items()))
    out.write("\n")
    if s["missing_files"]:
        out.write("  DAMAGED: files missing under the lake — " + ", ".join(
            f"{k} {n}" for k, n in s["missing_files"].items()) + "; run `hypo lake verify` "
            "for which and what to do\n")
        return 1
    return 0


COMMANDS = {
    "init": _init, "ingest": _ingest, "tick": _tick, "run": _run,
    "answers": _answers, "changes": _changes, "history": _history, "report": _report,
    "verify": _verify, "vacuum": _vacuum, "migrate": _migrate, "status": _status,
}  # sub-command -> handler (its parser: build_parser)


def _dispatch(args: argparse.Namespace, out: TextIO) -> int:
    handler = COMMANDS.get(args.cmd)
    return 2 if handler is None else handler(args, getattr(args, "lake", None), out)


def main(argv: Optional[list[str]] = None, out: Optional[TextIO] = None,
         err: Optional[TextIO] = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        return _dispatch(args, out)
    except ProgramError as e:
        print(e.format(), file=err)
        return 2
    except HypoError as e:
        print(f"hypo lake: error: {e}", file=err)
        return 2
    except BrokenPipeError:  # `hypo lake answers … | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"hypo lake: error: {where}{e.strerror or e}", file=err)
        return 2
    except Exception as e:  # a delta-rs or pyarrow error on a damaged lake: one line, no trace
        from jobs.errors import library_error

        if not library_error(e):
            raise
        from jobs.tick.spark import connect_lost

        lost = connect_lost(e)
        if lost:
            print(f"hypo lake: error: {lost}", file=err)
            return 2
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        print(f"hypo lake: error: {type(e).__name__}: {first}; run `hypo lake verify` to check "
              f"the lake", file=err)
        return 2
    except KeyboardInterrupt:
        print("hypo lake: interrupted", file=err)
        return 130


if __name__ == "__main__":
    sys.exit(main())
