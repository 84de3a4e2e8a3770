"""The `hypo run` lines of plain rows built by a Python function compiled once per template
and binding pattern (plan.py's string plan, specialised): a row whose every printed string
is its own JSON text between quotes (bare constants), whose nogoods are single-variable ones
(`excluded`) if any, and whose template prints no time constraint.  ~0.7 µs a row of a
one-literal template, against ~3 µs for the plan's Polars operations on a tick's ~10³ new
rows (their fixed cost dominates at that height).

The function returns the rows' sort keys, lines and answer keys of a given tick (its C twin,
_ck_format.c format_rows, runs compile_row_program's version of the same parts); explain.py's
objects are the reference (same bytes, tested against the row engine's output and the
Polars backend's)."""
from __future__ import annotations

import json
import re
from typing import Callable, Optional

from reasoning.semantics.explain import DEFINITE, HYPOTHETICAL, PENDING
from reasoning.language.metric import aux_template
from reasoning.language.syntax import Const, Time
from reasoning.columnar.layout import split_nogood_list

_BARE_LINES = re.compile(r"(?:(?:[a-z][A-Za-z0-9_]*|-?[0-9]+)\n)*")


def all_bare(values: list) -> bool:
    """Every value a bare name or number (plan.BARE), checked in one regex pass (a null
    or a non-string is none)."""
    try:
        return not values or _BARE_LINES.fullmatch("\n".join(values) + "\n") is not None
    except TypeError:
        return False


def _json_list(texts: list) -> str:
    """A JSON list of texts that need no escape."""
    return '["' + '", "'.join(texts) + '"]' if texts else "[]"


class Unformattable(Exception):
    """A row the formatter cannot print (an excluded constant that needs escapes, a
    nogood over several variables): the caller renders the rows another way."""


def exclusions(items, names: tuple) -> tuple[str, str]:
    """A row's nogoods (`v:c` texts) as its `excluded` JSON object and the items of its
    answer key's exclusions (plan.StringPlan._excluded_exprs), split by
    layout.split_nogood_list: names holds (JSON of the printed name, variable) sorted by
    name."""
    if not items:
        return "{}", ""
    by_var, combos = split_nogood_list(items)
    if combos or not by_var.keys() <= {v for _, v in names}:
        raise Unformattable("a nogood over several variables (or a bound one)")
    obj, key = [], []
    for jname, v in names:
        cs = by_var.get(v)
        if not cs:
            continue
        if not all_bare(cs):  # (a time value's exclusion, an int, is none either)
            raise Unformattable("an excluded constant needs escapes")
        jl = _json_list(cs)
        obj.append(f"{jname}: {jl}")
        key.append(f"[{jname}, {jl}]")
    return "{" + ", ".join(obj) + "}", ", ".join(key)


def row_parts(tp, P: frozenset, query_text: str, excluded: Optional[list] = None) -> dict:
    """The texts a plain row of template `tp` under binding pattern P prints, as lists of
    parts: static strings, or ("s", x) the value of object variable x, ("i", x, off) time
    variable x plus off, ("ds",) the deadline, ("st",) the status, ("evj",) / ("hyj",) the
    evidence / hypotheses JSON lists, ("xo",) / ("xk",) the exclusions' object and answer
    key items, ("tick",) the tick: {"lits": a list per literal (Renderer._literal), "skey",
    "line", "akey"}."""
    def literal(j: int) -> list:  # Renderer._literal
        lp = tp.lits[j]
        parts: list = ["" if lp.positive else "not "]

        def arg(isvar, x):
            if not isvar:
                parts.append(str(Const(x)))
            elif x in P:
                parts.append(("s", x))
            else:
                parts.append(tp.names[x])

        def time(d: int):
            if lp.tvar is None:
                parts.append(str(lp.toff + d))
            elif lp.tvar in P:
                parts.append(("i", lp.tvar, lp.toff + d))
            else:
                parts.append(str(Time(tp.names[lp.tvar], lp.toff + d)))

        pieces = aux_template(lp.pred)
        if pieces is not None:
            for p in pieces:
                if isinstance(p, str):
                    parts.append(p)
                elif p[0] == "a":
                    arg(*lp.args[p[1]])
                else:
                    time(p[1])
        else:
            parts.append(lp.pred + "(")
            for isvar, x in lp.args:
                arg(isvar, x)
                parts.append(", ")
            time(0)
            parts.append(")")
        return parts

    # the substitution's values, by printed name (Renderer._substitution)
    vals: dict = {}
    order: list = []
    for name, isvar, x, off in tp.qvars:
        if not isvar:
            v = [json.dumps(x, ensure_ascii=False)]
        elif x in P:
            v = [("i", x, off)] if x in tp.time_vars else ['"', ("s", x), '"']
        else:
            continue
        if name not in vals:
            order.append(name)
        vals[name] = v

    def sub(names: list) -> list:
        parts: list = ["{"]
        for i, name in enumerate(names):
            parts.append(("" if i == 0 else ", ") + json.dumps(name) + ": ")
            parts += vals[name]
        parts.append("}")
        return parts

    q = json.dumps(query_text, ensure_ascii=False)
    akey: list = ["[" + q + ", ["]
    for i, name in enumerate(sorted(order)):
        akey += [("" if i == 0 else ", ") + "[" + json.dumps(name) + ", ", *vals[name], "]"]
    if excluded is None:
        akey.append("], []]")
        xobj = "{}"
    else:
        akey += ["], [", ("xk",), "]]"]
        xobj = ("xo",)
    return {"lits": [literal(j) for j in range(len(tp.lits))],
            "skey": ['{"deadline": ', ("ds",), ', "evidence": ', ("evj",), ', "excluded": ',
                     xobj, ', "hypotheses": ', ("hyj",), f', "query": {q}, "status": "',
                     ("st",), '", "substitution": ', *sub(sorted(order)), ', "tick": ',
                     ("tick",), "}"],
            "line": ['{"tick": ', ("tick",), f', "query": {q}, "status": "', ("st",),
                     '", "substitution": ', *sub(order), ', "excluded": ', xobj,
                     ', "evidence": ', ("evj",), ', "hypotheses": ', ("hyj",),
                     ', "deadline": ', ("ds",), "}"],
            "akey": akey}


def compile_row_program(tp, P: frozenset, query_text: str,
                        excluded: Optional[list] = None) -> Optional[tuple]:
    """row_parts as the C row formatter's program (_ck_format.c format_rows): (spec, object
    variables of its string columns, time variables of its int columns), in column order;
    with `excluded` (as compile_row_formatter) the rows' exclusions are printed too.  None
    for what it does not print (more than 16 literals, 32 names, 32 string or 32 time
    columns; non-ASCII texts)."""
    parts = row_parts(tp, P, query_text, excluded)
    names = None if excluded is None else tuple(
        (json.dumps(name, ensure_ascii=False), v) for name, v in excluded)
    if len(parts["lits"]) > 16 or (names is not None and (
            len(names) > 32 or not all(j.isascii() for j, _ in names))):
        return None
    svars: list = []
    ivars: list = []

    def prog(ps: list) -> tuple:
        out = []
        for p in ps:
            if isinstance(p, str):
                if p and out and out[-1][0] == 0:  # adjacent texts: one item
                    out[-1] = (0, out[-1][1] + p, 0)
                elif p:
                    out.append((0, p, 0))
            elif p[0] == "s":
                if p[1] not in svars:
                    svars.append(p[1])
                out.append((1, svars.index(p[1]), 0))
            elif p[0] == "i":
                if p[1] not in ivars:
                    ivars.append(p[1])
                out.append((2, ivars.index(p[1]), p[2]))
            else:
                out.append(({"ds": 4, "st": 5, "evj": 6, "hyj": 7, "tick": 8, "xo": 10,
                             "xk": 11}[p[0]], 0, 0))
        return tuple(out)

    spec_parts = [prog(lit) for lit in parts["lits"]]
    heads = (prog(parts["skey"]), prog(parts["line"]), prog(parts["akey"]))
    if len(svars) > 32 or len(ivars) > 32:
        return None  # (the C formatter's columns: a 40-argument atom took it down, 44.3)
    statics = [p for ps in [*parts["lits"], parts["skey"], parts["line"], parts["akey"]]
               for p in ps if isinstance(p, str)]
    if not all(p.isascii() for p in statics):
        return None  # (static texts are copied as bytes: ASCII only)
    spec = (tuple(spec_parts), heads, (PENDING, HYPOTHETICAL, DEFINITE), names)
    return spec, svars, ivars


def compile_row_formatter(tp, P: frozenset, query_text: str,
                          excluded: Optional[list] = None) -> Callable:
    """f(columns, ev, dl, ng, tick) -> (sort keys, lines, answer keys, statuses) of tick
    `tick`, for rows of template `tp` under binding pattern P: `columns` holds, for each
    variable of sorted(P), its values as a list (strings for objects, integers for times);
    ev the evidence masks; dl the deadlines (None: null); with `excluded` — [(printed name,
    variable)] sorted by name, plan.StringPlan._exclusion_names — ng the rows' nogood lists
    (`v:c` texts; Unformattable is raised for one it cannot print), else None."""
    vs = sorted(P)

    def plus(name: str, off: int) -> str:
        return name if off == 0 else f"{name} + {off}" if off > 0 else f"{name} - {-off}"

    var = {x: f"v{x}" for x in vs}
    n = len(tp.lits)
    full = (1 << n) - 1
    parts = row_parts(tp, P, query_text, excluded)

    def concat(ps: list) -> str:
        """An f-string of static texts and expressions (names and integer arithmetic only:
        no quote or backslash inside the braces)."""
        def expr(p) -> str:
            if p[0] == "s":
                return var[p[1]]
            if p[0] == "i":
                return plus(var[p[1]], p[2])
            return p[0]
        text = "".join(p.replace("{", "{{").replace("}", "}}") if isinstance(p, str)
                       else "{" + expr(p) + "}" for p in ps)
        return "f" + repr(text)

    def json_list(items: list, minus) -> str:
        """The JSON list expression of the distinct texts of `items` (names), sorted, less
        those of `minus` (names, or None)."""
        if not items:
            return "'[]'"
        if len(items) == 1 and not minus:
            return f"f'[\"{{{items[0]}}}\"]'"
        got = "{" + ", ".join(items) + "}"
        if minus:
            got += " - {" + ", ".join(minus) + "}"
        return f"_jl(sorted({got}))"

    ng = ", g" if excluded is not None else ""
    lines = ["def fmt(columns, ev, dl, ng, tick):",
             "    skeys, lines, akeys, sts = [], [], [], []",
             "    sa, la, aa, ta = skeys.append, lines.append, akeys.append, sts.append",
             f"    for {''.join(var[x] + ', ' for x in vs)}e, d{ng} in zip(*columns, ev, dl"
             f"{', ng' if ng else ''}):"]
    if excluded is not None:
        lines.append("        xo, xk = _ex(g, NAMES)")
    for j in range(n):
        lines.append(f"        l{j} = {concat(parts['lits'][j])}")

    def status(m: int) -> str:
        return DEFINITE if m == full else HYPOTHETICAL if m else PENDING

    if n <= 4:  # a branch per evidence mask: the sets are known but for their order
        for m in range(1 << n):
            ins = [f"l{j}" for j in range(n) if m >> j & 1]
            outs = [f"l{j}" for j in range(n) if not m >> j & 1]
            lines.append(f"        {'if' if m == 0 else 'elif'} e == {m}:" if m < full
                         else "        else:")
            lines.append(f"            st, evj, hyj = {status(m)!r}, {json_list(ins, None)}, "
                         f"{json_list(outs, ins)}")
    else:
        ls = ", ".join(f"l{j}" for j in range(n))
        lines += [f"        if e == {full}:",
                  f"            st = {DEFINITE!r}",
                  "        elif e:",
                  f"            st = {HYPOTHETICAL!r}",
                  "        else:",
                  f"            st = {PENDING!r}",
                  f"        ls = ({ls},)",
                  f"        E = sorted({{ls[j] for j in range({n}) if e >> j & 1}})",
                  f"        H = sorted({{ls[j] for j in range({n}) if not e >> j & 1}}"
                  ".difference(E))",
                  "        evj, hyj = _jl(E), _jl(H)"]
    lines += ["        ds = 'null' if d is None else str(d)",
              "        sa(" + concat(parts["skey"]) + ")",
              "        la(" + concat(parts["line"]) + ")",
              "        aa(" + concat(parts["akey"]) + ")",
              "        ta(st)",
              "    return skeys, lines, akeys, sts"]
    src = "\n".join(lines)
    env: dict = {"_jl": _json_list, "_ex": exclusions, "NAMES": tuple(
        (json.dumps(name, ensure_ascii=False), v) for name, v in excluded or ())}
    exec(compile(src, f"<row formatter of {query_text}>", "exec"), env)  # noqa: S102
    fn = env["fmt"]
    fn.source = src
    return fn
