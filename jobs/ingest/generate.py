"""Generated turbine workloads (tests and bench/pipeline.py): the wind-turbine program of
examples/wind_turbines.tdl with one δ per device, and a stream where each reading arrives
within its device's delay."""
from __future__ import annotations

import json
import random

RULES = """Flag(X, T) :- Hot(X, T).
Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).
Shdn(X, T+1) :- Cool(X, T), Flag(X, T+1).
OK(X, T-1) :- not Shdn(X, T).
"""


def device(i: int, width: int = 2) -> str:
    return f"d{i:0{width}d}"


def turbine_program(delays: dict[str, int], query: str = "OK(X, T)", default: int = 0) -> str:
    lines = [f"% generated: {len(delays)} turbines with per-device delays", f"#query {query}.",
             f"#delay Hot = {default}."]
    lines += [f"#delay Hot({d}, T) = {k}." for d, k in sorted(delays.items()) if k != default]
    return "\n".join(lines) + "\n" + RULES


def turbine_stream(n_devices: int, n_times: int, p_hot: float = 0.5, max_delay: int = 3,
                   seed: int = 7, width: int = 2) -> tuple[dict[str, int], list[dict]]:
    """(per-device δ, stream rows {"tick", "fact"}) with arrival tick = time + U(0, δ)."""
    rnd = random.Random(seed)
    delays = {device(i, width): rnd.randint(0, max_delay) for i in range(n_devices)}
    rows = []
    for t in range(n_times):
        for d, k in delays.items():
            if rnd.random() < p_hot:
                rows.append({"tick": t + rnd.randint(0, k), "fact": f"Hot({d}, {t})"})
    rows.sort(key=lambda r: (r["tick"], r["fact"]))
    return delays, rows


def write_jsonl(rows: list[dict], path: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


SHAPES = [
    # a key exists (X everywhere)
    "A(X, T) :- p(X, T), q(X, T+1).\nB(X, T) :- p(X, T), not A(X, T).\n",
    "A(X, T+1) :- p(X, T), p(X, T+1).\nB(X, T) :- q(X, T), not A(X, T).\n",
    "A(X, T) :- q(X, T).\nB(X, T-1) :- not A(X, T), p(X, T-1).\n",
    # no key (Y breaks it): a single partition
    "A(X, T) :- p(X, T), q(Y, T).\nB(X, T) :- p(X, T), not A(X, T+1).\n",
]


def random_case(seed: int, n_devices: int = 4, n_times: int = 5) -> tuple[str, list[dict]]:
    """A small nonrecursive program with negation over EDB p/2, q/2 and a random stream for
    it (differential test: lake vs `hypo run`)."""
    rnd = random.Random(seed)
    dp, dq = rnd.randint(0, 2), rnd.randint(0, 2)
    body = SHAPES[seed % len(SHAPES)]
    program = f"#query B(X, T).\n#delay p = {dp}.\n#delay q = {dq}.\n" + body
    rows = []
    for t in range(n_times):
        for i in range(n_devices):
            for pred, d in (("p", dp), ("q", dq)):
                if rnd.random() < 0.45:
                    rows.append({"tick": t + rnd.randint(0, d), "fact": f"{pred}(c{i}, {t})"})
    rows.sort(key=lambda r: (r["tick"], r["fact"]))
    return program, rows
