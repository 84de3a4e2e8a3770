#!/usr/bin/env python3
"""Land a JSON-lines stream as per-tick slices, the way a producer would for the DAG.

    python scripts/land_stream.py examples/wind_turbines.jsonl --lake lake [--until 8]

Each line {"tick": τ, ...} is copied verbatim into <lake>/landing/tick=<τ>/<name>.jsonl; then
an empty _READY marker is written in every tick=<τ>/ for τ in 0..until, including ticks with
no lines (the producer's explicit "this slice is empty").  The data file is written before
the marker (atomically, by rename), so a sensor never sees _READY before the data.

Idempotent: landing the same stream again changes nothing; a different content for an
already landed tick is refused (land it in a fresh lake).  Only the standard library.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

READY = "_READY"


def split(path: str) -> tuple[dict[int, list[str]], list[str]]:
    """Lines per tick, and the errors (line without a natural-number "tick")."""
    by: dict[int, list[str]] = {}
    errors = []
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                t = json.loads(line).get("tick")
            except (ValueError, AttributeError):
                t = None
            if isinstance(t, bool) or not isinstance(t, int) or t < 0:
                errors.append(f"{path}:{no}: no natural-number \"tick\" in {line.strip()[:80]}")
                continue
            by.setdefault(t, []).append(line if line.endswith("\n") else line + "\n")
    return by, errors


def _write_atomic(path: str, text: str) -> None:
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def land(stream: str, lake: str, until: int | None = None, name: str | None = None) -> dict:
    by, errors = split(stream)
    if errors:
        raise SystemExit("land_stream: " + "\n".join(errors))
    last = max(by, default=-1)
    until = last if until is None else until
    if until < last:
        raise SystemExit(f"land_stream: --until {until} is before the stream's last tick {last}")
    name = name or os.path.splitext(os.path.basename(stream))[0] + ".jsonl"
    landed = unchanged = empty = 0
    for tau in range(until + 1):
        d = os.path.join(lake, "landing", f"tick={tau}")
        os.makedirs(d, exist_ok=True)
        target = os.path.join(d, name)
        text = "".join(by.get(tau, []))
        ready = os.path.join(d, READY)
        if os.path.exists(ready):
            have = open(target, encoding="utf-8").read() if os.path.exists(target) else ""
            if have != text:
                raise SystemExit(f"land_stream: {d} was already landed with other content; "
                                 f"use a fresh lake (or remove {d})")
            unchanged += 1
            continue
        if text:
            _write_atomic(target, text)
            landed += 1
        else:
            empty += 1
        _write_atomic(ready, "")
    return {"lake": os.path.abspath(lake), "ticks": until + 1, "landed": landed, "empty": empty,
            "unchanged": unchanged}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("stream", help='JSON lines with a "tick" field')
    p.add_argument("--lake", default=os.environ.get("HYPO_LAKE") or "lake")
    p.add_argument("--until", type=int, help="declare ticks up to this one (empty ones too); "
                   "default: the stream's last tick")
    p.add_argument("--name", help="data file name in each tick dir (default: <stream>.jsonl)")
    a = p.parse_args(argv)
    r = land(a.stream, a.lake, a.until, a.name)
    print(f"landed {a.stream} into {r['lake']}/landing: ticks 0..{r['ticks'] - 1} "
          f"({r['landed']} with data, {r['empty']} declared empty, {r['unchanged']} already there)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
