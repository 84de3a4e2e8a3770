"""How likely a hypothetical answer is (002 §8 "confidence levels"): an arrival model learned
from the stream, per EDB predicate and per `#delay` instance pattern, and the confidence of
an answer object (the dicts `hypo run --format jsonl` prints) at tick τ.

The model (ArrivalModel), per pattern key (pred, i) — i the index of the `#delay` instance
pattern that gives the atom its δ, -1 for the predicate's default:

  delays     counts of d = arrival tick − fact time (0..δ) of every fact that arrived;
             F(k) = P(d ≤ k | it arrives), Laplace-smoothed (+1 per value of 0..δ);
  arrives    a = P(an expected atom arrives at all).  Expected atoms are the ground positive
             hypotheses of announced answers (any query, pending included): each is followed
             from its first announcement, at k0 = τ − t ticks after its time, until it
             arrives (success) or its deadline t + δ passes (failure).  An atom first seen at
             k0 ≥ 0 had not arrived by then, so a is fitted by matching moments —
             Σ g(a, k0) = Σ successes with g(a, k) = a(1 − F(k)) / (1 − a F(k)) — with two
             pseudo-observations at the predicate's estimate (the predicate's own: at 1/2).

The confidence of an answer at τ (answer_confidence), hypotheses assumed independent:

  positive  P(arrives by t + δ | not by τ) = a (1 − F(τ − t)) / (1 − a F(τ − t)); a
            hypothesis with an unbound query variable gives 0 (this schematic answer is
            never confirmed as such: an instance with the variable bound is a new answer);
  negated   not p(c̄, t), p an EDB predicate: 1 − the above; p an auxiliary query: the
            product, over its current answers (pending included) that match p(c̄, t) with
            the constants substituted, of (1 − their confidence); an unbound query variable
            matches only an unbound one (a bound instance only adds an exclusion);
  derived   a derived hypothesis of modular evaluation: 1 − Π over the ways the object's
            `derived` lists of (1 − P(the way's hypotheses)); a narrowed window
            `Diamondminus[a,b] A(c̄, t)`: 1 − Π over its ticks s of (1 − P(A(c̄, s))).

Definite answers have confidence 1.  Limits (docs/confidence.md): independence of the
hypotheses; auxiliary answers not yet in S_τ (their instant still ahead) are not counted;
the rates are not conditioned on the answer's evidence (bursts make them so).
"""
from __future__ import annotations

import functools
import itertools
import json
import re
from collections import defaultdict
from typing import Iterable, Optional

from reasoning.language.metric import parse_window, window_ticks

PRIOR_A = 0.5  # P(arrives) before any expected atom was decided
PRIOR_WEIGHT = 2.0  # pseudo-observations (Laplace): 1 success, 1 failure at the prior


_SIMPLE = re.compile(r"(not )?([A-Za-z_]\w*)\(((?:[A-Za-z_0-9-]\w*, )*)(-?\d+)\)")


@functools.lru_cache(maxsize=1 << 16)
def parse_hyp(s: str):
    """'not Shdn(X, 3)' -> (negated, pred, ((is_var, name), ...), t or None): a regular
    expression for the rendered form with names, integers and a constant time, the
    program's parser otherwise (quoted strings, time variables)."""
    m = _SIMPLE.fullmatch(s)
    if m is not None:
        args = tuple((x[0].isupper() or x[0] == "_", x) for x in m.group(3).split(", ")[:-1])
        return m.group(1) is not None, m.group(2), args, int(m.group(4))
    return _parse_hyp_slow(s)


def _parse_hyp_slow(s: str):
    from reasoning.language.metric import parse_aux
    from reasoning.language.parser import parse_atom

    neg = s.startswith("not ")
    body = s[4:] if neg else s
    aux = parse_aux(body)  # a metric operator printed for its auxiliary predicate
    if aux is not None:
        pred, terms, time = aux
        body = f"{pred}({', '.join((*terms, time))})"
    a = parse_atom(body)
    args = tuple((True, x.name) if hasattr(x, "name") else (False, str(x.value))
                 for x in a.args)
    t = None
    if a.time is not None and a.time.var is None:
        t = a.time.offset
    return neg, a.pred, args, t


@functools.lru_cache(maxsize=256)
def query_shape(query: str):
    """'Shdn(X, T)' -> (pred, arg var names or None, time var name or None)."""
    from reasoning.language.parser import parse_atom

    a = parse_atom(query)
    names = tuple(getattr(x, "name", None) for x in a.args)
    tv = a.time.var if a.time is not None else None
    return a.pred, names, tv


class _Stats:
    """One pattern key's counts: arrival delays, and expected atoms by k0 (-1: future)."""

    __slots__ = ("delays", "n", "succ", "a")

    def __init__(self, dmax: int):
        self.delays = [0] * (dmax + 1)
        self.n: dict = defaultdict(int)
        self.succ: dict = defaultdict(int)
        self.a: dict = {}  # context -> (model version, estimate)


_US = "\x1f"


def _pack(atom: tuple) -> str:
    """(pred, args, t) as one string: pred US t US args… (ArrivalModel.dump)."""
    return _US.join((atom[0], str(atom[2]), *atom[1]))


def _unpack(text: str) -> tuple:
    p, t, *args = text.split(_US)
    return p, tuple(args), int(t)


class ArrivalModel:
    """Per pattern key: arrival-delay counts and P(arrives), learned online (module doc)."""

    def __init__(self, delays, edb: Iterable[str]):
        self.delays = delays
        self.edb = frozenset(edb)
        self.stats: dict = {}
        self._key: dict = {}
        self.waiting: dict = {}  # (pred, args, t) -> (key, k0, arrived?)
        self.expiry: dict = defaultdict(list)  # deadline -> atoms
        self.arrived: set = set()  # recent arrived atoms (the previous instants' context)
        self._arrived_t: dict = defaultdict(list)
        self.keep = max([delays.max(p) for p in self.edb] or [0]) + 3
        self.version = 0  # bumped by every update: cached estimates older than it are stale

    # ---------------------------------------------------------------- pattern keys
    def key(self, pred: str, args: tuple) -> tuple:
        """(pred, index of the instance pattern giving δ, -1 for the default)."""
        k = self._key.get((pred, args))
        if k is None:
            k = self._key[(pred, args)] = (pred, self.delays.governing(pred, args))
        return k

    def _st(self, key: tuple) -> _Stats:
        s = self.stats.get(key)
        if s is None:
            s = self.stats[key] = _Stats(self.delays.max(key[0]))
        return s

    # ---------------------------------------------------------------- learning
    def observe_fact(self, pred: str, args: tuple, t: int, tau: int) -> None:
        """A fact arrived at τ: its delay, and an expected atom's success."""
        d = tau - t
        for key in (self.key(pred, args), (pred, None)):
            s = self._st(key)
            if 0 <= d < len(s.delays):
                s.delays[d] += 1
        self.version += 1
        self.arrived.add((pred, args, t))
        self._arrived_t[t].append((pred, args, t))
        w = self.waiting.get((pred, args, t))
        if w is not None:
            self.waiting[(pred, args, t)] = (w[0], w[1], True)

    def expect(self, pred: str, args: tuple, t: int, tau: int) -> None:
        """A ground positive hypothesis announced at τ (not arrived by τ)."""
        atom = (pred, args, t)
        if atom in self.waiting or pred not in self.edb:
            return
        dl = t + self.delays.ground(pred, args)
        if dl <= tau:
            return
        self.waiting[atom] = (self.key(pred, args), max(tau - t, -1), False)
        self.expiry[dl].append(atom)

    def end_tick(self, tau: int) -> None:
        """Expected atoms whose deadline is τ are decided (arrived or not), with their
        context: whether the previous instant p(c̄, t − 1) arrived."""
        for atom in self.expiry.pop(tau, ()):
            w = self.waiting.pop(atom, None)
            if w is not None:
                pred, args, t = atom
                self._decide(pred, w[0], w[1], w[2], (pred, args, t - 1) in self.arrived)
        for t in [t for t in self._arrived_t if t < tau - self.keep]:
            for atom in self._arrived_t.pop(t):
                self.arrived.discard(atom)

    def _decide(self, pred: str, key: tuple, k0: int, ok: bool, ctx: bool) -> None:
        for k in (key, (pred, None)):
            s = self._st(k)
            for c in (ctx, None):
                s.n[(c, k0)] += 1
                if ok:
                    s.succ[(c, k0)] += 1
        self.version += 1

    # ---------------------------------------------------------------- estimates
    def cdf(self, key: tuple, k: int) -> float:
        """F(k) = P(d ≤ k | arrives), Laplace-smoothed over 0..δ of the key."""
        if k < 0:
            return 0.0
        s = self._st(key)
        dl = self._delta_of(key)
        if k >= dl:
            return 1.0
        c = s.delays[:dl + 1]
        return (sum(c[:k + 1]) + k + 1) / (sum(c) + dl + 1)

    def _delta_of(self, key: tuple) -> int:
        pred, i = key
        if i is None:
            return self.delays.max(pred)
        if i < 0:
            return self.delays.default.get(pred, 0)
        return self.delays.patterns[pred][i].delay

    def arrives(self, key: tuple, ctx: Optional[bool] = None) -> float:
        """a = P(an expected atom of this key arrives at all), given whether the previous
        instant of the same atom arrived (ctx; None: either)."""
        s = self._st(key)
        hit = s.a.get(ctx)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        if key[1] is None:
            prior = PRIOR_A if ctx is None else self.arrives(key, None)
        else:
            prior = self.arrives((key[0], None), ctx)
        obs = [(k0, n, s.succ.get((c, k0), 0)) for (c, k0), n in s.n.items() if c == ctx]
        target = PRIOR_WEIGHT * prior + sum(x for _, _, x in obs)
        Fs = [(n, self.cdf(key, k0)) for k0, n, _ in obs]

        def moment(a: float) -> float:
            tot = PRIOR_WEIGHT * a
            for n, F in Fs:
                den = 1.0 - a * F
                tot += n * (a * (1.0 - F) / den if den > 1e-12 else 0.0)
            return tot

        lo, hi = 0.0, 1.0
        if moment(1.0) <= target:
            a = 1.0
        else:
            for _ in range(40):
                mid = (lo + hi) / 2
                if moment(mid) < target:
                    lo = mid
                else:
                    hi = mid
            a = (lo + hi) / 2
        a = min(max(a, 1e-6), 1.0 - 1e-6)
        s.a[ctx] = (self.version, a)
        return a

    def p_by_deadline(self, pred: str, args: tuple, t: Optional[int], tau: int,
                      ctx: Optional[bool] = None) -> float:
        """P(p(args, t) arrives by t + δ | it had not arrived by τ, and ctx)."""
        key = self.key(pred, args)
        a = self.arrives(key, ctx)
        if t is None:
            return a
        k = tau - t
        if k >= self.delays.ground(pred, args):
            return 0.0
        F = self.cdf(key, k)
        return a * (1.0 - F) / (1.0 - a * F)

    # ---------------------------------------------------------------- persistence
    def dump(self) -> dict:
        """The learned counts and the atoms still followed, as JSON-able data (the lake keeps
        it in S_τ, one `model` row, so a tick continues the previous tick's model).  Atoms
        are packed as one string each (`pred US t US arg1 US arg2 …`, US = \\x1f; a followed
        atom prefixed with its pattern index, k0 and whether it arrived): strings are not
        tracked by the garbage collector, lists per atom made it scan the driver's heap."""
        return {
            "stats": [[k[0], k[1], s.delays, [[c, k0, n] for (c, k0), n in s.n.items()],
                       [[c, k0, n] for (c, k0), n in s.succ.items()]]
                      for k, s in self.stats.items()],
            "waiting": [f"{w[0][1]}{_US}{w[1]}{_US}{int(w[2])}{_US}{_pack(a)}"
                        for a, w in self.waiting.items()],
            "expiry": [[dl, [_pack(a) for a in atoms]] for dl, atoms in self.expiry.items()
                       if atoms],
            "arrived": [_pack(a) for t in sorted(self._arrived_t) for a in self._arrived_t[t]],
        }

    def load(self, d: dict) -> None:
        """Continue from `dump()`'s data (estimates are recomputed from the counts)."""
        for pred, i, delays, n, succ in d.get("stats", ()):
            s = self._st((pred, i))
            for j, c in enumerate(delays[:len(s.delays)]):
                s.delays[j] = c
            for c, k0, v in n:
                s.n[(c, k0)] = v
            for c, k0, v in succ:
                s.succ[(c, k0)] = v
        for w in d.get("waiting", ()):
            i, k0, ok, a = w.split(_US, 3)
            atom = _unpack(a)
            self.waiting[atom] = ((atom[0], int(i)), int(k0), ok == "1")
        for dl, atoms in d.get("expiry", ()):
            self.expiry[dl].extend(map(_unpack, atoms))
        for a in d.get("arrived", ()):
            atom = _unpack(a)
            self.arrived.add(atom)
            self._arrived_t[atom[2]].append(atom)
        self.version += 1

    def summary(self) -> list[dict]:
        """Per key: δ, arrivals, expected atoms decided, a, mean delay (the report's table)."""
        out = []
        for key, s in sorted(self.stats.items(), key=lambda kv: (kv[0][0], kv[0][1] is not None,
                                                                 kv[0][1] or 0)):
            n = sum(s.delays)
            pat = "*" if key[1] is None else (
                "default" if key[1] < 0 else self._pattern_text(key))
            out.append({"pred": key[0], "pattern": pat, "delta": self._delta_of(key),
                        "arrived": n,
                        "expected": sum(v for (c, _), v in s.n.items() if c is None),
                        "confirmed": sum(v for (c, _), v in s.succ.items() if c is None),
                        "p_after_arrived": round(self.arrives(key, True), 3),
                        "p_after_missing": round(self.arrives(key, False), 3),
                        "p_arrives": round(self.arrives(key), 3),
                        "mean_delay": round(sum(d * c for d, c in enumerate(s.delays)) / n, 2)
                        if n else None})
        return out

    def _pattern_text(self, key: tuple) -> str:
        d = self.delays.patterns[key[0]][key[1]]
        return f"{key[0]}({', '.join('_' if p is None else p for p in d.pattern)}, T)"


class Confidence:
    """The confidences of one tick's answer objects, and the model's update from that tick."""

    def __init__(self, cp):
        self.cp = cp
        self.model = ArrivalModel(cp.delays, cp.analysis.edb)
        self.tau = -1
        self._aux: dict = {}
        self._memo: dict = {}

    def observe(self, tau: int, facts, objs: list[dict]) -> None:
        """Tick τ: the facts of D|τ (Fact objects) and S_τ's objects (all queries, pending
        included); afterwards `of` gives confidences at τ."""
        m = self.model
        for f in facts:
            if f.pred in m.edb:
                m.observe_fact(f.pred, f.args, f.time, tau)
        for o in objs:
            if o["status"] == "definite":
                continue
            derived = o.get("derived", {})
            for h in o["hypotheses"]:
                if h not in derived:
                    self._expect(h, tau)
            for ways in derived.values():  # (modular evaluation: what derived atoms wait on)
                for w in ways:
                    for h in w["hypotheses"]:
                        self._expect(h, tau)
        m.end_tick(tau)
        self.tau = tau
        aux: dict = defaultdict(list)
        for o in objs:
            if o["status"] != "definite":
                aux[query_shape(o["query"])[0]].append(o)
        self._aux = aux
        idx: dict = defaultdict(list)  # (pred, time or None, bound args or None) -> answers
        for pred, os_ in aux.items():
            for o in os_:
                _, qnames, qtv = query_shape(o["query"])
                sub = o["substitution"]
                idx[(pred, sub.get(qtv) if qtv else None,
                     tuple(None if n not in sub else str(sub[n]) for n in qnames
                           if n is not None))].append(o)
        self._aux_idx = idx
        self._memo = {}

    def _narrowed(self, w):
        """A narrowed window's EDB operand: (pred, ground args, the window's ticks), None
        if the operand is no ground EDB atom."""
        op, lo, hi, operand = w
        neg, pred, args, t = parse_hyp(operand)
        if pred not in self.model.edb or t is None or any(v for v, _ in args):
            return None
        return pred, tuple(x for _, x in args), window_ticks(op, lo, hi, t)

    def _expect(self, h: str, tau: int) -> None:
        """A printed hypothesis' ground positive EDB atoms are expected (a narrowed window:
        each instance of its operand in it)."""
        w = parse_window(h)  # (a lifted diamond narrowed to its open ticks, as a derived
        if w is not None:  # atom's way prints it: not an atom of the program)
            got = self._narrowed(w)
            for s in got[2] if got is not None else ():
                self.model.expect(got[0], got[1], s, tau)
            return
        neg, pred, args, t = parse_hyp(h)
        if neg or t is None or any(v for v, _ in args):
            return
        self.model.expect(pred, tuple(x for _, x in args), t, tau)

    def dump(self) -> str:
        """The model as JSON text (the lake's `model` state row)."""
        return json.dumps(self.model.dump(), separators=(",", ":"), ensure_ascii=False)

    def load(self, text: str) -> None:
        """Continue the model `dump()` wrote (the previous tick's)."""
        self.model.load(json.loads(text))

    def of(self, obj: dict) -> float:
        """The confidence of an answer object at the current tick (module doc)."""
        if obj["status"] == "definite":
            return 1.0
        return self._conf(obj, {}, 0)

    def _conf(self, obj: dict, bind: dict, depth: int) -> float:
        query = obj.get("query")  # (None: a way of a derived atom, every variable existential)
        mk = (query, tuple(sorted(obj["substitution"].items(), key=str)),
              tuple(obj["hypotheses"]), tuple(sorted(bind.items())))
        c = self._memo.get(mk)
        if c is not None:
            return c
        qvars: set = set()
        if query is not None:
            _, qnames, qtv = query_shape(query)
            qvars = {n for n in qnames if n} | ({qtv} if qtv else set())
        m = self.model
        derived = obj.get("derived", {})
        pos = set()
        for h in obj["hypotheses"]:
            if h in derived or parse_window(h):
                continue
            neg, pred, args, t = parse_hyp(h)
            if not neg and t is not None:
                pos.add((pred, tuple(bind.get(x) if v else x for v, x in args), t))
        c = 1.0
        for h in obj["hypotheses"]:
            if h in derived:  # modular evaluation: some way of the atom proves it
                c *= self._derived(derived[h], depth) if depth < 16 else 1.0
                if c == 0.0:
                    break
                continue
            w = parse_window(h)
            if w is not None:  # a lifted diamond's open ticks: some operand instance arrives
                c *= self._window(w, pos)
                continue
            neg, pred, args, t = parse_hyp(h)
            vals = []
            unbound_q = False
            exist = False
            for isvar, x in args:
                if isvar and x in bind:
                    vals.append(bind[x])
                elif isvar:
                    vals.append(None)
                    if x in qvars:
                        unbound_q = True
                    else:
                        exist = True
                else:
                    vals.append(x)
            if not neg:
                if unbound_q:
                    c = 0.0
                    break
                if pred in m.edb:
                    if exist:
                        c *= m.arrives((pred, None))
                    else:
                        c *= self._positive(pred, tuple(vals), t, pos)
                continue
            if pred in m.edb:
                if None not in vals:
                    c *= 1.0 - m.p_by_deadline(pred, tuple(vals), t, self.tau)
                continue
            if depth < 16:
                c *= self._not_refuted(pred, vals, t, depth)
            if c == 0.0:
                break
        self._memo[mk] = c
        return c

    def _derived(self, ways: list, depth: int) -> float:
        """P(a derived hypothesis is proven): 1 − Π over the ways its predicate may still
        prove it (the object's `derived`: evidence and hypotheses) of (1 − P(the way's
        hypotheses all hold)), the ways taken as independent."""
        q = 1.0
        for w in ways:
            q *= 1.0 - self._conf({"substitution": {}, "hypotheses": w["hypotheses"]}, {},
                                  depth + 1)
            if q == 0.0:
                break
        return 1.0 - q

    def _window(self, w, pos: set) -> float:
        """P(some instance of a diamond's operand in its window arrives): `Diamondminus[0,6]
        C(a, 10)` is C(a, s) for s in 4..10 (an operand that is no EDB atom counts 1)."""
        got = self._narrowed(w)
        if got is None:
            return 1.0
        q = 1.0
        for s in got[2]:
            q *= 1.0 - self._positive(got[0], got[1], s, pos)
        return 1.0 - q

    def _positive(self, pred: str, args: tuple, t: Optional[int], pos: set) -> float:
        """P(a positive hypothesis arrives by its deadline), by the chain rule over the
        answer's hypotheses: conditioned on its previous instant having arrived when that one
        arrived or is itself a hypothesis (all must arrive), on its having not when its
        deadline passed, else a mixture weighted by its chance of still arriving."""
        m, tau = self.model, self.tau
        if t is None:
            return m.p_by_deadline(pred, args, t, tau)
        prev = (pred, args, t - 1)
        if prev in m.arrived or prev in pos:
            return m.p_by_deadline(pred, args, t, tau, True)
        if t - 1 + m.delays.ground(pred, args) <= tau:
            return m.p_by_deadline(pred, args, t, tau, False)
        q = m.p_by_deadline(pred, args, t - 1, tau)
        return (q * m.p_by_deadline(pred, args, t, tau, True)
                + (1 - q) * m.p_by_deadline(pred, args, t, tau, False))

    def _candidates(self, pred: str, vals: list, t: Optional[int]):
        """The auxiliary answers that may match p(vals, t): by index (each bound argument
        of an answer equals the hypothesis' constant there; its time is t or unbound)."""
        if t is None:
            return self._aux.get(pred, ())
        aux = self._aux.get(pred)
        if not aux:
            return ()
        _, qnames, _ = query_shape(aux[0]["query"])
        opts = [((v, None) if v is not None else (None,))
                for n, v in zip(qnames, vals) if n is not None]
        out = []
        for tk in (t, None):
            for combo in itertools.product(*opts):
                out.extend(self._aux_idx.get((pred, tk, combo), ()))
        return out

    def _not_refuted(self, pred: str, vals: list, t: Optional[int], depth: int) -> float:
        """P(no current answer of the auxiliary query p matching p(vals, t) is confirmed)."""
        p = 1.0
        for o in self._candidates(pred, vals, t):
            _, qnames, qtv = query_shape(o["query"])
            sub = o["substitution"]
            if t is not None and qtv is not None and qtv in sub and sub[qtv] != t:
                continue
            bind = {}
            ok = True
            for name, v in zip(qnames, vals):
                if name is None:
                    continue
                have = sub.get(name)
                if have is not None:
                    if v is None or str(have) != v:
                        ok = False
                        break
                elif v is not None:
                    if v in [str(x) for x in o["excluded"].get(name, ())]:
                        ok = False
                        break
                    bind[name] = v
            if not ok:
                continue
            if t is not None and qtv is not None and qtv not in sub:
                bind[qtv] = str(t)
            p *= 1.0 - self._conf(o, bind, depth + 1)
            if p == 0.0:
                break
        return p


def with_confidence(obj: dict, c: float) -> dict:
    """The object with "confidence" (3 decimals) as its last key."""
    out = dict(obj)
    out["confidence"] = round(c, 3)
    return out


def line_with_confidence(obj: dict, c: float) -> str:
    return json.dumps(with_confidence(obj, c), ensure_ascii=False)
