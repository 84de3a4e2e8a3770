"""Shared test helpers: run the engine over a stream, canonical ground forms of answers."""
from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Optional

from reasoning.language.compiler import compile_file, compile_program
from reasoning.semantics.patterns import Fact
from reasoning.run.session import Session

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ENGINES = ("row", "columnar")
ENGINE = "row"  # the executor of run_ticks; the `engine` fixture (conftest.py) sets it
THOROUGH = os.environ.get("HYPO_THOROUGH") == "1"


def budget(n: int, engine: str = "row") -> int:
    """Examples of a property test: the set-at-a-time executor costs ~0.3 ms per relational
    operation on these tiny programs (~50× the row engine), so the default suite gives it a
    third of the row engine's examples; HYPO_THOROUGH=1 runs the full count on both, twice."""
    if THOROUGH:
        return 2 * n
    return n if engine != "columnar" else max(10, n // 3)


def run_ticks(cp, stream: dict[int, list[Fact]], until: int, forget: bool = True,
              all_queries: bool = False, include_pending: bool = False, ground: bool = False,
              engine: Optional[str] = None):
    """Yield (tick, session, answer objects) for ticks 0..until."""
    sess = Session(cp, engine=engine or ENGINE, forget=forget)
    for tau in range(until + 1):
        sess.step(stream.get(tau, []), tau)
        yield tau, sess, sess.objects(all_queries, include_pending, ground)


def canon(obj: dict) -> str:
    """`query | X=wt1, T=2 | E... | H...` with sorted parts (ground answers)."""
    sub = ", ".join(f"{k}={v}" for k, v in sorted(obj["substitution"].items()))
    return " | ".join([obj["query"], sub, ", ".join(sorted(obj["evidence"])),
                       ", ".join(sorted(obj["hypotheses"]))])


_VAR = re.compile(r"(?<![A-Za-z0-9_])([A-Z][A-Za-z0-9_]*)(?![A-Za-z0-9_(])")


def split_lits(s: str) -> list[str]:
    """Split `A(x, 1), not B(y, 2)` on the commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def expand_paper_line(line: str, domain: list[str]) -> set[str]:
    """Ground a schematic `query | θ | E | H` line over the domain (paper notation)."""
    q, theta, e, h = [p.strip() for p in line.split("|")]
    bound = {k.strip(): v.strip() for k, v in
             (kv.split("=") for kv in (x.strip() for x in theta.split(",")) if kv)}
    es, hs = split_lits(e), split_lits(h)
    free = sorted({m for lit in es + hs for m in _VAR.findall(lit)} - set(bound))
    qvars = set(_VAR.findall(q))
    out = set()
    for vals in itertools.product(domain, repeat=len(free)):
        env = {**bound, **dict(zip(free, vals))}

        def sub(lit: str) -> str:
            return _VAR.sub(lambda m: env.get(m.group(1), m.group(1)), lit)

        full = {k: v for k, v in env.items() if k in qvars}
        sub_s = ", ".join(f"{k}={v}" for k, v in sorted(full.items()))
        out.add(" | ".join([q, sub_s, ", ".join(sorted(map(sub, es))),
                            ", ".join(sorted(map(sub, hs)))]))
    return out


def read_golden_sections(path: Path) -> dict[str, list[str]]:
    """`[name]` sections of a golden file (lines starting with # are comments)."""
    out: dict[str, list[str]] = {}
    cur = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            cur = line[1:-1]
            out[cur] = []
        else:
            out[cur].append(line)
    return out


def facts(*items: tuple[int, str]) -> dict[int, list[Fact]]:
    """Stream from (tick, 'Pred(a, b, 3)') pairs (plain constants only)."""
    out: dict[int, list[Fact]] = {}
    for tick, text in items:
        name, rest = text.split("(", 1)
        parts = [p.strip() for p in rest.rstrip(")").split(",")]
        out.setdefault(tick, []).append(Fact(name.strip(), tuple(parts[:-1]), int(parts[-1])))
    return out


__all__ = ["compile_file", "compile_program", "run_ticks", "canon", "expand_paper_line",
           "read_golden_sections", "facts", "EXAMPLES", "ROOT"]
