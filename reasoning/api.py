"""The Python API for embedding the reasoner (docs/api.md): compile a program, feed it one
slice D|τ a tick, read S_τ's answers as `hypo run --format jsonl` objects or an Arrow table.

    from reasoning import compile_program, Reasoner
    r = Reasoner(compile_program(text, file="turbines.tdl"))
    tick = r.feed(["Temp(wt1, high, 0)"])       # D|0; facts as text, tuples or Arrow
    tick.answers                                 # [{"query": …, "status": …, …}, …]

One Reasoner runs Algorithm 1 (002 §6) tick by tick on the chosen executor (run/session.py);
facts are validated exactly as `hypo run` validates stream lines (stream/facts.py), and a
refused fact is returned with its reason, never dropped in silence.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from reasoning.language.compiler import CompiledProgram, compile_file, compile_program
from reasoning.language.declared import IGNORED
from reasoning.language.errors import HypoError, ProgramError
from reasoning.run.session import ENGINES, Session
from reasoning.semantics.patterns import Fact
from reasoning.stream.facts import Rejection, parse_fact_text, structured_fact, validate

# the JSONL answer object's fields, in the order an Arrow table of answers has them
ANSWER_FIELDS = ("tick", "query", "status", "substitution", "evidence", "hypotheses",
                 "excluded", "deadline")


@dataclass
class Tick:
    """What one call of Reasoner.feed did: the tick τ, how many facts of D|τ were accepted,
    those refused (with their reasons) or ignored (declared by `#delay`, used by no rule),
    and S_τ's answers (main query; definite and hypothetical, as `hypo run` prints them)."""

    tick: int
    accepted: int
    rejected: list[Rejection] = field(default_factory=list)
    ignored: int = 0
    answers: list[dict] = field(default_factory=list)


class Reasoner:
    """One continuous query over a stream, fed a slice a tick (Algorithm 1 of 002 §6).

    executor: "row" (the reference executor), "columnar" (set at a time) or "auto" (row,
    handing over to columnar at the first slice past the program's crossover, 20–300 facts:
    session.auto_threshold), as `hypo run --engine`.
    """

    def __init__(self, program: CompiledProgram | str, executor: str = "auto",
                 all_queries: bool = False, include_pending: bool = False):
        if isinstance(program, str):
            program = compile_program(program)
        if executor not in ENGINES:
            raise ValueError(f"unknown executor {executor!r}: one of {', '.join(ENGINES)}")
        self.program = program
        self.all_queries = all_queries
        self.include_pending = include_pending
        self._session = Session(program, engine=executor)

    @property
    def tick(self) -> int:
        """The last tick fed (-1 before the first)."""
        return self._session.tau

    @property
    def executor(self) -> str:
        """The executor running now: "row" or "columnar" (auto may have handed over)."""
        return self._session.executor

    def feed(self, facts: Any = (), tick: Optional[int] = None) -> Tick:
        """Run tick τ (default: the next one) on the slice `facts`, and return its answers.

        facts: fact texts ("Temp(wt1, high, 3)", the time last), tuples (pred, args, time),
        dicts {"pred", "args", "time"}, or a pyarrow Table with either a `fact` column of
        texts or `pred`, `args` and `time` columns.  A fact's time may be before τ (a late
        fact within its delay δ).  Ticks between the last one fed and τ run with no facts.
        """
        tau = self.tick + 1 if tick is None else tick
        if isinstance(tau, bool) or not isinstance(tau, int) or tau <= self.tick:
            raise ValueError(f"tick {tau!r} must be an integer after the last tick fed "
                             f"({self.tick})")
        for t in range(self.tick + 1, tau):
            self._session.step([], t)
        ok: list[Fact] = []
        rejected: list[Rejection] = []
        ignored = 0
        for no, (f, why, text) in enumerate(_facts(facts, self.program), start=1):
            if f is not None and why is None:
                why = validate(self.program, f, tau)
            if why == IGNORED:
                ignored += 1
            elif why is not None:
                rejected.append(Rejection(why, text, tau, no, "<feed>"))
            else:
                ok.append(f)
        rep = self._session.step(ok, tau)
        return Tick(tau, rep.accepted, rejected, ignored, self.answers())

    def answers(self, all_queries: Optional[bool] = None,
                include_pending: Optional[bool] = None) -> list[dict]:
        """S_τ's answers as the `hypo run --format jsonl` objects (tick, query, status,
        substitution, evidence, hypotheses, excluded, deadline, …)."""
        if self.tick < 0:
            return []
        return self._session.objects(self.all_queries if all_queries is None else all_queries,
                                     self.include_pending if include_pending is None
                                     else include_pending)

    def answers_arrow(self, all_queries: Optional[bool] = None,
                      include_pending: Optional[bool] = None):
        """answers() as a pyarrow Table: ANSWER_FIELDS as columns (substitution, evidence,
        hypotheses and excluded as JSON text, as the lake's answers table keeps them)."""
        import json

        import pyarrow as pa

        objs = self.answers(all_queries, include_pending)
        cols: dict[str, list] = {k: [] for k in ANSWER_FIELDS}
        for o in objs:
            for k in ANSWER_FIELDS:
                v = o.get(k)
                cols[k].append(v if k in ("tick", "query", "status", "deadline")
                               else json.dumps(v, ensure_ascii=False, sort_keys=True))
        types = {"tick": pa.int64(), "deadline": pa.int64()}
        return pa.table({k: pa.array(v, type=types.get(k, pa.string())) for k, v in cols.items()})


def _facts(facts: Any, cp: CompiledProgram) -> Iterable[tuple[Optional[Fact], Optional[str], str]]:
    """(fact, why refused, text) of each input fact, whatever its form."""
    if hasattr(facts, "column_names") and hasattr(facts, "to_pylist"):  # a pyarrow Table
        facts = facts.to_pylist()
        facts = [r["fact"] if set(r) == {"fact"} else r for r in facts]
    if isinstance(facts, (str, bytes)):
        raise TypeError("facts: give a list of fact texts, not one string")
    for x in facts:
        if isinstance(x, str):
            try:
                yield parse_fact_text(x, cp), None, x
            except ProgramError as e:
                yield None, e.message, x
        elif isinstance(x, dict):
            f, why = structured_fact(x)
            yield f, why, repr(x)
        elif isinstance(x, (tuple, list)) and len(x) == 3:
            pred, args, t = x
            args = [args] if isinstance(args, str) else list(args)
            f, why = structured_fact({"pred": pred, "args": args, "time": t})
            yield f, why, repr(tuple(x))
        else:
            yield None, "a fact is a text, a (pred, args, time) tuple or a dict", repr(x)


__all__ = ["compile_program", "compile_file", "CompiledProgram", "Reasoner", "Tick",
           "Rejection", "ProgramError", "HypoError", "ANSWER_FIELDS"]
