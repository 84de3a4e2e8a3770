"""`hypo run` / `hypo check` contract: output formats, stream validation, exit codes."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reasoning.cli.main import main
from tests import helpers
from tests.helpers import EXAMPLES, ROOT

TDL = str(EXAMPLES / "wind_turbines.tdl")
STREAM = str(EXAMPLES / "wind_turbines.jsonl")
pytestmark = pytest.mark.usefixtures("engine")  # every `hypo run` with both executors


def run(argv, capsys):
    if argv and argv[0] == "run" and "--engine" not in argv:
        argv = list(argv) + ["--engine", helpers.ENGINE]
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_issue_example_line_with_ground(capsys):
    rc, out, _ = run(["run", TDL, "--stream", STREAM, "--format", "jsonl", "--ground"], capsys)
    assert rc == 0
    want = {"tick": 3, "query": "OK(X, T)", "status": "definite",
            "substitution": {"X": "wt3", "T": 1}, "excluded": {},
            "evidence": ["not Shdn(wt3, 2)"], "hypotheses": [], "deadline": None}
    assert want in [json.loads(l) for l in out.splitlines()]


def test_every_tick_appears_and_until(capsys):
    rc, out, _ = run(["run", TDL, "--stream", STREAM, "--format", "jsonl", "--until", "10"], capsys)
    ticks = {json.loads(l)["tick"] for l in out.splitlines()}
    assert ticks == set(range(11))
    assert {"tick": 0, "query": "OK(X, T)", "status": "none"} in [json.loads(l) for l in out.splitlines()]


def test_all_queries_and_pending(capsys):
    _, out, _ = run(["run", TDL, "--stream", STREAM, "--format", "jsonl", "--until", "3",
                     "--all-queries", "--all"], capsys)
    objs = [json.loads(l) for l in out.splitlines()]
    assert any(o["query"] == "Shdn(X, T)" and o["status"] == "hypothetical" for o in objs)
    assert any(o["status"] == "pending" for o in objs)
    hyp = [o for o in objs if o["status"] == "hypothetical"]
    assert all(o["deadline"] is not None and o["evidence"] for o in hyp)


def test_text_format_shows_hypotheses_deadlines_and_refutations(capsys):
    rc, out, err = run(["run", TDL, "--stream", STREAM, "--query", "Shdn(X, T)"], capsys)
    assert rc == 0
    assert "hypothetical    Shdn(wt2, 2)  if Hot(wt2, 1); Hot(wt2, 2)  [decided by tick 5" in out
    assert "refuted         Shdn(wt2, 2)" in out
    assert "definite        Shdn(wt1, 2)  because Hot(wt1, 0); Hot(wt1, 1); Hot(wt1, 2)" in out
    assert "5 facts accepted, 0 duplicates ignored, 0 rejected" in err


BAD_LINES = [
    ('{"tick": 0, "fact": "Hot(wt1, 0)"}', None),
    ('{"tick": 0, "fact": "Hot(wt1, 0)"}', "duplicate"),
    ('{"tick": 1, "fact": "Hot(wt1 1)"}', "expected one of"),
    ("not json at all", "invalid JSON"),
    ('{"tick": 1, "time": 1}', 'expected an object with "tick" and "fact"'),
    ('{"tick": -1, "fact": "Hot(wt1, 0)"}', "natural number"),
    ('{"tick": true, "fact": "Hot(wt1, 0)"}', "natural number"),
    ('{"tick": 1, "fact": 5}', '"fact" must be a string'),
    ('{"tick": 1, "fact": "Cold(wt1, 1)"}', "unknown predicate Cold"),
    ('{"tick": 1, "fact": "Shdn(wt1, 1)"}', "IDB"),
    ('{"tick": 1, "fact": "Hot(wt1, x, 1)"}', "takes 2 arguments, got 3"),
    ('{"tick": 1, "fact": "Hot(wt1, 5)"}', "after its arrival tick"),
    ('{"tick": 9, "fact": "Hot(wt1, 1)"}', "late"),
    ('{"tick": 1, "fact": "Hot(X, 1)"}', "ground"),
    ('{"tick": 1, "fact": "' + "x" * 70000 + '"}', "longer than"),
    ('\udcff\udcfe garbage', "invalid JSON"),
]


def test_bad_stream_lines_are_reported_with_reasons(tmp_path, capsys):
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(l for l, _ in BAD_LINES) + "\n", encoding="utf-8", errors="surrogateescape")
    rc, out, err = run(["run", TDL, "--stream", str(p), "--format", "jsonl"], capsys)
    assert rc == 1
    lines = err.splitlines()
    for no, (_, reason) in enumerate(BAD_LINES, 1):
        if reason is None:
            continue
        hit = [l for l in lines if l.startswith(f"{p}:{no}:")]
        assert hit and reason in hit[0], (no, reason, hit)
    assert "1 facts accepted, 1 duplicates ignored, 14 rejected" in lines[-1]


def test_program_errors_exit_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.tdl"
    bad.write_text("#query OK(X, T).\nOK(X, T) :- Hot(X, T\n")
    for argv in (["check", str(bad)], ["run", str(bad), "--stream", STREAM],
                 ["check", str(tmp_path / "missing.tdl")],
                 ["run", TDL, "--stream", str(tmp_path / "missing.jsonl")]):
        p = subprocess.run([sys.executable, "-m", "reasoning.cli.main", *argv], cwd=ROOT,
                           capture_output=True, text=True)
        assert p.returncode == 2, (argv, p.stderr)
        assert "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "reasoning.cli.main", "check", str(bad)], cwd=ROOT,
                       capture_output=True, text=True)
    assert f"{bad}:2:21: error: unexpected end of input" in p.stderr and "^" in p.stderr


def test_query_override_error_points_at_argument(capsys):
    rc, _, err = run(["check", TDL, "--query", "Hot(X, T)"], capsys)
    assert rc == 2 and "Hot" in err
    assert err.startswith("--query:1:1: error: --query must name") and "#query OK" not in err
    rc, _, err = run(["check", TDL, "--query", "OK(X, Y, T)"], capsys)
    assert rc == 2 and err.startswith("--query:1:1:") and "OK(X, Y, T)" in err


SHARED = """#query P(X, T).
#delay A = 0.
#delay Other = 1.
#delay B(x, T) = 1.
P(X, T) :- A(X, T).
"""


def test_facts_of_declared_unused_predicates_are_ignored_not_rejected(tmp_path, capsys):
    """Issue 10: a stream shared by several programs: facts of a predicate this program
    declares (#delay) but does not use are accepted and counted as ignored (exit 0); an
    undeclared one is a rejection with a "did you mean"; `hypo check` warns at the
    declaration."""
    prog = tmp_path / "p.tdl"
    prog.write_text(SHARED)
    s = tmp_path / "s.jsonl"
    s.write_text('{"tick": 0, "fact": "A(a, 0)"}\n{"tick": 0, "fact": "Other(a, 0)"}\n'
                 '{"tick": 1, "fact": "B(a, 1)"}\n{"tick": 1, "fact": "Other(0)"}\n')
    rc, out, err = run(["run", str(prog), "--stream", str(s), "--format", "jsonl"], capsys)
    assert rc == 0, err
    assert "p.tdl:3:8: warning: #delay names Other, which no rule uses" in err
    assert "1 facts accepted, 0 duplicates ignored, 0 rejected, 3 ignored (B 1, Other 2" in err
    assert json.loads(out.splitlines()[0])["status"] == "definite"
    s.write_text('{"tick": 0, "fact": "a(a, 0)"}\n{"tick": 0, "fact": "B(a, b, 0)"}\n')
    rc, out, err = run(["run", str(prog), "--stream", str(s), "--format", "jsonl"], capsys)
    assert rc == 1
    assert "unknown predicate a (EDB predicates: A) — did you mean A?" in err
    assert "B takes 2 arguments, got 3" in err
    rc, out, err = run(["check", str(prog)], capsys)
    assert rc == 0 and err.count("warning:") == 2


def test_report_does_not_change_the_output(capsys, tmp_path):
    """`--report FILE` writes the lifecycle report and prints exactly what the run prints
    without it (the browser test, tests/test_report_browser.py, opens the file)."""
    argv = ["run", TDL, "--stream", STREAM, "--query", "Shdn(X, T)", "--format", "jsonl",
            "--changes"]
    rc0, out0, err0 = run(argv, capsys)
    path = tmp_path / "r.html"
    rc, out, err = run(argv + ["--report", str(path)], capsys)
    assert (rc, out, err) == (rc0, out0, err0)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and '<svg id="timeline"' in html
    assert ('confirmed: <b id="kpi-confirmed">1</b>' in html
            and 'refuted: <b id="kpi-refuted">4</b>' in html)
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary file left


def test_a_report_that_cannot_be_written_fails_before_the_first_tick(capsys, tmp_path):
    """Issue 44.9: `--report` into a folder that cannot be made or written is refused before
    any tick runs (nothing printed, exit 2, one line naming the path and the reason); a
    folder that does not exist yet is made."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for bad, why in ((blocker / "r.html", "is a file, not a directory"),
                     (tmp_path, "is a directory"),
                     ("/proc/no-such-dir/r.html", "No such file or directory")):
        rc, out, err = run(["run", TDL, "--stream", STREAM, "--report", str(bad)], capsys)
        assert (rc, out) == (2, "") and err.count("\n") == 1, (bad, err)
        assert err.startswith(f"hypo: error: --report {bad}: ") and why in err, err
    made = tmp_path / "new" / "sub" / "r.html"
    rc, out, err = run(["run", TDL, "--stream", STREAM, "--report", str(made)], capsys)
    assert rc == 0 and made.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in made.parent.iterdir()] == ["r.html"]  # the probe left nothing


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="POSIX FIFOs")
def test_ctrl_c_while_waiting_on_a_fifo_stops_with_one_line(tmp_path):
    """A stream that is a FIFO is read in the main thread (a prefetch thread blocked in a
    read would keep the file from closing: Ctrl-C hung); Ctrl-C prints one line, exit 130."""
    import os
    import signal
    import time

    fifo = str(tmp_path / "live.jsonl")
    os.mkfifo(fifo)
    p = subprocess.Popen([sys.executable, "-m", "reasoning.cli.main", "run", TDL, "--stream", fifo],
                         cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    writer = open(fifo, "w")  # a producer that has sent nothing yet
    try:
        writer.write(json.dumps({"tick": 0, "fact": "Hot(wt1, 0)"}) + "\n")
        writer.flush()
        time.sleep(2.0)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
        writer.close()
    assert p.returncode == 130
    assert err.decode().strip().splitlines()[-1] == "hypo: interrupted"


def test_stream_from_standard_input_and_byte_order_marks(tmp_path):
    """`--stream -` reads standard input (reported as <stdin>:LINE); a byte-order mark at
    the start of a program or of a stream file (Windows editors write one) is not an error."""
    prog = tmp_path / "p.tdl"
    prog.write_bytes("\ufeff#query Q(X, T).\r\nQ(X, T) :- A(X, T).\r\n".encode("utf-8"))
    stream = '{"tick": 0, "fact": "A(a, 0)"}\n{"tick": 0, "fact": "A(a, 0)"}\nbad\n'
    for engine in ("row", "columnar"):
        p = subprocess.run([sys.executable, "-m", "reasoning.cli.main", "run", str(prog), "--stream",
                            "-", "--format", "jsonl", "--engine", engine], input=stream,
                           capture_output=True, text=True, cwd=str(ROOT))
        assert p.returncode == 1, p.stderr  # one line rejected
        assert json.loads(p.stdout.splitlines()[0])["substitution"] == {"X": "a", "T": 0}
        assert "<stdin>:3: rejected" in p.stderr and "<stdin>:2: ignored" in p.stderr
    bom = tmp_path / "s.jsonl"
    bom.write_bytes(b'\xef\xbb\xbf{"tick": 0, "fact": "A(b, 0)"}\n')
    p = subprocess.run([sys.executable, "-m", "reasoning.cli.main", "run", str(prog), "--stream",
                        str(bom), "--format", "jsonl"], capture_output=True, text=True,
                       cwd=str(ROOT))
    assert p.returncode == 0 and '"X": "b"' in p.stdout, p.stderr


def test_an_unreadable_program_is_named_without_a_position(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"{tmp_path}: error: cannot read program")


def test_a_template_past_the_columnar_limit_runs_on_the_row_engine(tmp_path, capsys):
    """63 positive literals (evidence is an int64 bit mask): --engine columnar runs the row
    engine and says why on its summary line; auto stays on the row engine even on slices
    past its hand-over threshold (and says why too); all three print the same."""
    from reasoning.run.session import AUTO_THRESHOLD

    body = ", ".join(f"A{i}(X, T)" for i in range(63))
    prog = tmp_path / "wide.tdl"
    prog.write_text(f"#query Q(X, T).\nQ(X, T) :- {body}.\n")
    lines = [json.dumps({"tick": 0, "fact": f"A{i}(d{k}, 0)"})
             for k in range(AUTO_THRESHOLD // 60 + 1) for i in range(63)]
    stream = tmp_path / "s.jsonl"
    stream.write_text("\n".join(lines) + "\n")
    argv = ["run", str(prog), "--stream", str(stream), "--format", "jsonl"]
    outs = []
    for engine in ("row", "auto", "columnar"):
        assert main(argv + ["--engine", engine]) == 0
        out, err = capsys.readouterr()
        outs.append(out)
        assert ("(row engine: a template of Q(X, T) has 63 literals" in err) \
            == (engine != "row"), err  # auto wanted to hand over: it says why it did not
    assert outs[0] == outs[1] == outs[2]
    assert outs[0].count('"status": "definite"') == len(lines) // 63


def test_auto_hands_over_at_the_programs_crossover_and_v_says_why(tmp_path, capsys):
    """`auto` hands over at 240 × templates / literals facts a slice, within 20..300, a
    family of templates evaluated together counting as 4 at most (issue 45.3: a window
    program of 25 templates stayed on the row engine at 120 facts a slice, 6× slower); `-v`
    says which executor ran and why, on every --engine."""
    from reasoning.language.compiler import compile_file, compile_program
    from reasoning.run.session import auto_threshold
    from reasoning.semantics.patterns import compile_templates

    def at(cp):
        return auto_threshold(compile_templates(cp.queries))

    windows = ("#query P3(X, T).\n"
               "P1(X, T) :- Diamondminus[0,3] E1(X, T), Boxminus[0,1] E2(X, T).\n"
               "P2(X, T) :- Diamondminus[0,2] P1(X, T), E3(X, T).\n"
               "P3(X, T) :- Boxminus[0,2] P2(X, T).\n")
    assert at(compile_file(TDL)) == 120  # 2 templates, 4 literals
    assert at(compile_file(str(EXAMPLES / "malfunction.tdl"))) == 80  # 1 template, 3 literals
    assert at(compile_program(windows, "w.tdl")) == 20  # 25 templates (one family), 211 lits
    assert at(compile_program("#query P(X, T).\nP(X, T) :- " + ", ".join(
        f"E{i}(X, T)" for i in range(40)) + ".\n", "l.tdl")) == 20  # the floor
    assert at(compile_program("#query P(T).\nP(T) :- E(T), F(T).\n", "s.tdl")) == 120

    prog = tmp_path / "w.tdl"
    prog.write_text(windows)
    stream = tmp_path / "s.jsonl"
    rows = [{"tick": 0, "fact": f"E{e}(c{i}, 0)"} for e in (1, 2, 3) for i in range(5)]
    rows += [{"tick": 1, "fact": f"E{e}(c{i}, 1)"} for e in (1, 2, 3) for i in range(10)]
    stream.write_text("".join(json.dumps(r) + "\n" for r in rows))
    outs = {}
    for engine in ("auto", "row", "columnar"):
        rc, outs[engine], err = run(["run", str(prog), "--stream", str(stream), "-v",
                                     "--engine", engine], capsys)
        assert rc == 0
        line = err.splitlines()[-1]
        if engine == "auto":
            assert line == ("executor: columnar engine from tick 1 (auto: the row engine until a "
                            "slice of ≥ 20 facts, the crossover for 25 template(s), 25 of them "
                            "evaluated together, of 211 literal(s); tick 1 had 30)"), line
        else:
            assert line == f"executor: {engine} engine (--engine {engine})", line
    assert outs["auto"] == outs["row"] == outs["columnar"]
    rc, _, err = run(["run", TDL, "--stream", STREAM, "-v", "--engine", "auto"], capsys)
    assert err.splitlines()[-1].endswith("of 4 literal(s); no slice had as many)"), err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("hypo 0.")


def test_both_in_process_backends_print_the_same(capsys):
    """`--backend arrays|polars` runs the set-at-a-time plan on numpy columns or on Polars:
    every option prints the same bytes (Example 13, all queries, pending, changes)."""
    outs = {}
    for backend in ("arrays", "polars"):
        got = []
        for extra in ([], ["--all-queries", "--all"], ["--changes"], ["--format", "text"]):
            fmt = [] if "--format" in extra else ["--format", "jsonl"]
            assert main(["run", TDL, "--stream", STREAM, "--engine", "columnar",
                         "--backend", backend] + fmt + extra) == 0
            got.append(capsys.readouterr().out)
        outs[backend] = got
    assert outs["arrays"] == outs["polars"]
    with pytest.raises(SystemExit) as e:
        main(["run", TDL, "--stream", STREAM, "--backend", "numpy"])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("changes", [[], ["--changes"]])
def test_a_run_on_the_arrays_executor_never_imports_polars(changes, engine):
    """Importing Polars costs ~0.2 s of `hypo run`'s start: the arrays executor, the C
    scanner's blocks, the row formatters and --changes need none of it (backend.py imports it
    at its first use).  In a fresh interpreter; the output is the same bytes as here."""
    if engine != "columnar":
        pytest.skip("the columnar executor's property")
    argv = ["run", TDL, "--stream", STREAM, "--format", "jsonl", "--engine", "columnar"]
    code = ("import sys\nfrom reasoning.cli.main import main\n"
            f"rc = main({argv + ['--backend', 'arrays'] + changes!r})\n"
            "sys.stderr.write('POLARS %s' % ('polars' in sys.modules))\nsys.exit(rc)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert p.stderr.endswith("POLARS False"), p.stderr[-300:]
    want = subprocess.run([sys.executable, "-m", "reasoning.cli.main"] + argv
                          + ["--backend", "polars"] + changes,
                          capture_output=True, text=True, cwd=ROOT)
    assert p.stdout == want.stdout
