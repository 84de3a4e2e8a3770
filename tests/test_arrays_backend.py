"""The arrays executor (reasoning/columnar/backends/arrays/) against the Polars one, which
test_columnar.py checks against the row engine: every relational operation on random frames
with nulls (Polars' semantics are the contract), then the whole plan on random programs —
the same S_τ and the same printed lines at every tick, with the interned tables swept at
every opportunity — and bounded interned tables over a long run."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from reasoning.columnar.backends.arrays import frame, intern, signatures
from reasoning.native import kernels
from reasoning.columnar.backends.arrays import ArraysBackend
from reasoning.columnar.backends.polars import PolarsBackend
from reasoning.columnar.layout import BOOL, INT, OBJ, STRLIST
from reasoning.language.compiler import compile_program
from reasoning.run.session import Session
from tests.gen import cases
from tests.helpers import budget
from tests.test_columnar import _key, _until

P, A = PolarsBackend(), ArraysBackend()
SCHEMA = {"x": OBJ, "y": INT, "b": BOOL, "l": STRLIST}
RSCHEMA = {"x2": OBJ, "y2": INT, "z": INT}

objs = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "0:a", "*[[1, 2]]", "é\n"]))
ints = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([2 ** 62, -(2 ** 62)]))
# list elements whose text order is not their order of arrival (the arrays backend keeps a
# rank of the string ids by their UTF-8 across calls): 1- to 4-byte characters, a NUL, a bare
# prefix
lists = st.one_of(st.none(), st.lists(st.sampled_from(
    ["0:a", "0:b", "1:c", "*x", "0:é", "0:Z", "0:a\x00", "0:", "0:a0", "1:ß", "0:ÿ", "0:Ā",
     "0:\U0001F600", "0:\uffff"]), max_size=5))
rows = st.lists(st.fixed_dictionaries({"x": objs, "y": ints, "b": st.one_of(
    st.none(), st.booleans()), "l": lists}), max_size=8)
rrows = st.lists(st.fixed_dictionaries({"x2": objs, "y2": ints, "z": ints}), max_size=6)


def canon(B, df) -> list:
    """The rows of a frame, order-free (list values as tuples)."""
    out = []
    for r in B.rows(df):
        out.append(tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                for k, v in r.items())))
    return sorted(out, key=repr)


def both(fn, left, right=None, ls=SCHEMA, rs=RSCHEMA):
    """fn(backend, left frame[, right frame]) on both backends: the same rows."""
    got = []
    for B in (P, A):
        args = [B.from_rows(left, ls)] + ([B.from_rows(right, rs)] if right is not None
                                          else [])
        got.append(canon(B, fn(B, *args)))
    assert got[0] == got[1]


OPS = settings(max_examples=budget(150), deadline=None,
               suppress_health_check=[HealthCheck.too_slow])


@OPS
@given(rows, st.integers(0, 8))
def test_expressions_filter_and_columns_as_polars(left, which):
    def fn(B, df):
        c = B.col
        conds = [
            c("y") > B.lit(0, INT),
            (c("y") == B.lit(1, INT)) | B.is_null(c("x")),
            c("b") & (c("y") != B.lit(2, INT)),
            ~c("b") | (c("x") == B.lit("a", OBJ)),
            B.any_of([c("b"), B.is_null(c("y"))]),
            B.all_of([B.not_null(c("x")), c("y") >= B.lit(-1, INT)]),
            B.list_contains(c("l"), B.concat_str([B.lit("0:", OBJ), c("x")])),
            B.list_any_prefix(c("l"), "*"),
            B.has_bit(B.coalesce([c("y"), B.lit(5, INT)]), 0),
        ]
        df = B.filter(df, conds[which])
        return B.with_columns(df, {
            "s": c("y") + B.lit(1, INT),
            "lo": B.least([c("y"), B.lit(1, INT)]),
            "hi": B.greatest([c("y"), B.null(INT)]),
            "w": B.when(c("b"), c("x"), B.lit("n", OBJ)),
            "n": B.list_len(c("l")),
            "m": B.pmod(c("y"), 3),
            "norm": B.list_norm(B.list_concat(c("l"), B.list_prefix(B.str_list(["b", "a"]),
                                                                    "0:"))),
            "dp": B.list_drop_prefix(c("l"), "0:"),
            "sp": B.list_strip_prefix(c("l"), "0:"),
            "bits": B.bit_or(B.set_bit(c("y"), 3), B.lit(1, INT)),
            # a literal operand is a 0-d column on the arrays backend, on either side
            "r": B.lit(2, INT) - c("y"),
            "lt": c("x") < B.lit("b", OBJ),
            "gt": B.lit(1, INT) < c("y"),
            "tb": B.lit(True, BOOL) & c("b"),
            "fb": c("b") | B.lit(False, BOOL),
            "eqs": B.lit("a", OBJ) != c("x"),
        })
    both(fn, left)


@OPS
@given(rows, rrows, st.sampled_from(["inner", "left", "semi", "anti"]), st.booleans(),
       st.integers(0, 2))
def test_joins_as_polars(left, right, how, nulls_equal, n_keys):
    """(n_keys = 0: the cross product — issue 44's ground templates join on no column.)"""
    def fn(B, df, R):
        lk, rk = ["x", "y"][:n_keys], ["x2", "y2"][:n_keys]
        if n_keys == 2 and how == "inner":  # an expression key
            lk = ["x", B.col("y") + B.lit(1, INT)]
        return B.join(df, R, lk, rk, how=how, nulls_equal=nulls_equal)
    both(fn, left, right)


@OPS
@given(rows)
def test_unique_group_by_and_explode_as_polars(left):
    both(lambda B, df: B.unique(df), left)
    both(lambda B, df: B.unique(df, ["x", "l"]), left)
    both(lambda B, df: B.group_agg(df, ["x"], {
        "any": B.agg_any(B.col("b")), "sum": B.agg_sum(B.col("y")),
        "max": B.agg_max(B.col("y")), "min": B.agg_min(B.col("y"))}), left)

    def distinct(B, df):  # sorted afterwards: the aggregate's order is free
        g = B.group_agg(df, ["y"], {"d": B.agg_distinct(B.col("x"))})
        return B.select(g, [B.col("y"), B.alias(B.list_norm(B.col("d")), "d")])
    both(distinct, left)
    both(lambda B, df: B.explode(B.select(df, [B.col("y"), B.col("l")]), "l"), left)


@pytest.mark.parametrize("impl", ["c", "numpy"])
def test_kernels_give_the_pairs_of_a_nested_loop(impl, monkeypatch):
    """Each implementation of the row kernels (C, numpy) against a nested loop."""
    import numpy as np

    if impl != "numpy":
        code = kernels.implementation(impl)
        if code is None:
            pytest.skip(f"the {impl} kernels are not available here")
        monkeypatch.setattr(kernels, "_impl", code)
    monkeypatch.setattr(kernels, "COMPILED", impl != "numpy")
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 300):
        for k in (1, 2):
            L = rng.integers(-2, 4, (n, k)).astype(np.int64)
            R = rng.integers(-2, 4, (max(n // 2, 1), k)).astype(np.int64)
            okl, okr = rng.random(n) < 0.9, rng.random(R.shape[0]) < 0.9
            eq = [[bool(okl[i] and okr[j] and (L[i] == R[j]).all()) for j in range(len(R))]
                  for i in range(n)]
            cols = [L[:, i].copy() for i in range(k)], [R[:, i].copy() for i in range(k)]
            for outer in (False, True):
                want = [(i, j) for i in range(n) for j in range(len(R)) if eq[i][j]]
                if outer:
                    want += [(i, -1) for i in range(n) if not any(eq[i])]
                li, ri = kernels.join_rows(L, okl, R, okr, outer)
                assert sorted(zip(li.tolist(), ri.tolist())) == sorted(want)
                li, ri = kernels.join_rows(cols[0], okl, cols[1], okr, outer)  # as columns
                assert sorted(zip(li.tolist(), ri.tolist())) == sorted(want)
            assert kernels.member_rows(L, okl, R, okr).tolist() == [any(e) for e in eq]
            gid, first = kernels.factorize_rows(L)
            rows = [tuple(r) for r in L.tolist()]
            assert [rows[f] for f in first] == list(dict.fromkeys(rows))
            assert all(rows[first[g]] == r for g, r in zip(gid.tolist(), rows))


def test_c_kernels_read_any_key_layout_and_refuse_bad_ones():
    """The C kernels give the numpy kernels' pairs and groups whatever the keys' form (a
    matrix, the key columns, None for "every row ok", int32, a strided view), and refuse
    keys of different widths, no key column or a mask of another length."""
    import numpy as np

    c = kernels.implementation("c")
    if c is None:
        pytest.skip("needs the C kernels")

    def pairs(got):
        return sorted(zip(got[0].tolist(), got[1].tolist()))

    rng = np.random.default_rng(5)
    for n in (0, 1, 5, 200, 3000):
        for k in (1, 3):
            L = rng.integers(-3, 5, (n, k)).astype(np.int64)
            R = rng.integers(-3, 5, (n // 2 + 1, k)).astype(np.int64)
            okl, okr = rng.random(n) < 0.8, rng.random(R.shape[0]) < 0.8
            bits = kernels._table_bits(R.shape[0])
            lk, rk = kernels._dense(L, okl, R, okr)
            Lc, Rc = [L[:, i].copy() for i in range(k)], [R[:, i].copy() for i in range(k)]
            for outer in (False, True):
                want = pairs(kernels.join_index(lk, rk, outer))
                assert pairs(c.join_rows(L, okl, R, okr, bits, outer)) == want
                assert pairs(c.join_rows(Lc, okl, Rc, okr, bits, outer)) == want
            want_m = kernels.member(lk, rk).tolist()
            assert c.member_rows(L, okl, R, okr, bits).tolist() == want_m
            assert c.member_rows(Lc, okl, Rc, okr, bits).tolist() == want_m
            ones = np.ones(R.shape[0], bool)
            assert c.member_rows(Lc, okl, Rc, None, bits).tolist() == \
                c.member_rows(L, okl, R, ones, bits).tolist()
            fb = kernels._table_bits(max(n, 1))
            gid, first = c.factorize_rows(L, fb)
            rows = [tuple(r) for r in L.tolist()]
            assert [rows[f] for f in first.tolist()] == list(dict.fromkeys(rows))
            assert [g.tolist() for g in c.factorize_rows(Lc, fb)] == [gid.tolist(), first.tolist()]
    W = rng.integers(0, 4, (50, 4)).astype(np.int32)  # int32, and a strided view below
    V = W.astype(np.int64)
    b = kernels._table_bits(50)
    ok = np.ones(50, bool)
    assert pairs(c.join_rows(W[:, ::2], ok, W[:, ::2], ok, b, False)) == \
        pairs(c.join_rows(V[:, ::2].copy(), ok, V[:, ::2].copy(), ok, b, False))
    with pytest.raises(ValueError):
        c.join_rows(V, ok, V[:, :3], ok, b, False)  # key widths differ
    with pytest.raises(ValueError):
        c.factorize_rows(V[:, 0], b)  # not a matrix
    with pytest.raises(ValueError):
        c.join_rows([V[:, 0], V[:10, 1]], None, [V[:, 0], V[:, 1]], None, b, False)
    with pytest.raises(ValueError):
        c.member_rows([], None, [], None, b)  # no key column
    with pytest.raises(ValueError):
        c.member_rows([V[:, 0]], ok[:3], [V[:, 0]], None, b)  # mask of another length


@pytest.mark.parametrize("impl", ["c"])
def test_hash_index_is_a_dict(impl, monkeypatch):
    """HashIndex (the compiled implementation) against a dict, across its growth."""
    import numpy as np

    code = kernels.implementation(impl)
    if code is None:
        pytest.skip(f"the {impl} kernels are not available here")
    monkeypatch.setattr(kernels, "_impl", code)
    rng = np.random.default_rng(7)
    idx, want = kernels.HashIndex(), {}
    for step in range(30):
        k1 = rng.integers(-2**63, 2**63 - 1, 200, dtype=np.int64, endpoint=True)
        k1[:50] = rng.integers(-5, 5, 50)  # collisions on the home slot, and repeats
        k2 = rng.integers(0, 3, 200).astype(np.int64)
        got = idx.lookup(k1, k2).tolist()
        assert got == [want.get((a, b), -1) for a, b in zip(k1.tolist(), k2.tolist())]
        v = np.arange(step * 200, step * 200 + 200, dtype=np.int64)
        idx.insert(k1, k2, v)
        for a, b, x in zip(k1.tolist(), k2.tolist(), v.tolist()):
            want[(a, b)] = x
        assert idx.n == len(want)
    if impl == "c":  # the C code checks the table it writes into
        with pytest.raises(ValueError):
            code.hash_insert(k1, k2, v, idx.t1[:-1], idx.t2, idx.tv, idx.bits)


def _both_backends(cp, stream: dict, ticks: int, answers: bool = False,
                   pending: tuple = (True,)):
    """Run the stream on the Polars and the arrays backend: every tick's lines (with and/or
    without pending answers) and, with `answers`, S_τ the same.  (The two sessions.)"""
    a = Session(cp, engine="columnar", backend=PolarsBackend())
    b = Session(cp, engine="columnar", backend=ArraysBackend())
    for tau in range(ticks):
        fs = stream.get(tau, [])
        a.step(fs, tau)
        b.step(fs, tau)
        if answers:
            assert sorted(map(_key, a.answers())) == sorted(map(_key, b.answers())), tau
        for pend in pending:
            assert a.lines(True, pend) == b.lines(True, pend), (tau, pend)
    return a, b


@pytest.fixture
def sweep_always(monkeypatch):
    monkeypatch.setattr(intern, "SWEEP_FLOOR", 0)
    monkeypatch.setattr(intern, "STRING_SWEEP_SCALE", 1)


@settings(max_examples=budget(60, "columnar"), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(cases(negation=True, multi_time=True), st.booleans())
def test_random_programs_same_run_on_both_backends(sweep_always, case, forget):
    cp = compile_program(case.text, "<gen>")
    a = Session(cp, engine="columnar", forget=forget, backend=PolarsBackend())
    b = Session(cp, engine="columnar", forget=forget, backend=ArraysBackend())
    for tau in range(_until(cp, case) + 1):
        fs = case.stream.get(tau, [])
        ra, rb = a.step(fs, tau), b.step(fs, tau)
        assert ra.duplicates == rb.duplicates
        assert sorted(map(_key, a.answers())) == sorted(map(_key, b.answers())), tau
        assert a.new_definite_keys() == b.new_definite_keys(), tau
        for aq in (False, True):
            for pend in (False, True):
                assert a.lines(aq, pend) == b.lines(aq, pend), (tau, aq, pend)
        assert ra.state_size == rb.state_size, tau


_FORMATTED = [0, 0]  # rows formatted: by either formatter, by the C one


@settings(max_examples=budget(60, "columnar"), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(cases(negation=True, multi_time=True), st.booleans(), st.sampled_from([0, 10 ** 9]),
       st.booleans())
def test_the_compiled_row_formatter_prints_the_plans_lines(monkeypatch, case, forget, most,
                                                           c_format):
    """Every new row that the object builder would take (a tick's few) goes to the compiled
    row formatter (rowformat.py) instead, or — `most` 0 — only those of one- and
    two-literal templates; rows without exclusions to its C twin (_ckernels.c format_rows)
    when c_format: the lines are the Polars backend's string plan's, byte for byte,
    whatever the program (literals with constants and unbound variables, offsets, every
    evidence mask, deadlines)."""
    from reasoning.columnar.render import formatted, objects

    monkeypatch.setattr(objects, "PYTHON_NEW_ROWS", 0)
    monkeypatch.setattr(formatted, "FORMAT_MAX_ROWS", most)
    monkeypatch.setattr(formatted, "C_FORMAT", c_format)
    cp = compile_program(case.text, "<gen>")
    a = Session(cp, engine="columnar", forget=forget, backend=PolarsBackend())
    b = Session(cp, engine="columnar", forget=forget, backend=ArraysBackend())
    for tau in range(_until(cp, case) + 1):
        fs = case.stream.get(tau, [])
        a.step(fs, tau)
        b.step(fs, tau)
        for aq in (False, True):
            for pend in (False, True):
                assert a.lines(aq, pend) == b.lines(aq, pend), (tau, aq, pend)
    _FORMATTED[0] += b.renderer.stats["formatted"]
    _FORMATTED[1] += b.renderer.stats["formatted_c"]


def test_the_row_formatter_ran():
    """(The property test above rendered rows through the formatter at all.)"""
    if _FORMATTED[0] == 0:
        pytest.skip("run with the property test above")
    from reasoning.native import kernels

    assert _FORMATTED[0] > _FORMATTED[1] > (0 if kernels.IMPL == "c" else -1)


def test_row_formatter_on_escapes_and_many_literals(monkeypatch):
    """Values that need JSON escapes (a quote, a backslash, a control character) go to the
    string plan; a five-literal template takes the formatter's general branch."""
    from reasoning.columnar.render import objects

    monkeypatch.setattr(objects, "PYTHON_NEW_ROWS", 0)
    text = ("#query Q(X, T).\n"
            "Q(X, T) :- A(X, T), B(X, T+1), C(X, T+2), not D(X, T+1), E(X, c, T).\n")
    cp = compile_program(text, "<t>")
    from reasoning.semantics.patterns import Fact as F

    odd = ['q"x', "t\tb", "back\\slash"]
    stream = {0: [F("A", (x,), 0) for x in ["a", "b", *odd]]
              + [F("E", (x, "c"), 0) for x in ["a", *odd]],
              1: [F("B", (x,), 1) for x in ["a", "b", odd[1]]] + [F("D", ("b",), 1)],
              2: [F("C", (x,), 2) for x in ["a", odd[0]]]}
    _, b = _both_backends(cp, stream, 5, pending=(False, True))
    assert b.renderer.stats["formatted"] > 0


def test_interned_tables_stay_bounded_over_a_long_run(monkeypatch):
    """Each tick brings new constants; the sweep frees those no frame holds any more and
    reuses their ids, so the tables do not grow with the stream (bounded state, 002 §6) —
    and every line printed after a sweep is the Polars backend's (the renderer's copy of
    the string table follows the reused ids)."""
    monkeypatch.setattr(intern, "SWEEP_FLOOR", 2000)
    monkeypatch.setattr(intern, "STRING_SWEEP_SCALE", 1)
    cp = compile_program("#query P(X, T).\n#delay E = 0.\nP(X, T) :- E(X, T), E(X, T+1).\n",
                         "<gen>")
    from reasoning.semantics.patterns import Fact

    s = Session(cp, engine="columnar", backend=ArraysBackend())
    ref = Session(cp, engine="columnar", backend=PolarsBackend())
    sizes = []
    for tau in range(400):
        facts = [Fact("E", (f"d{tau}-{i}",), tau) for i in range(50)] + \
            [Fact("E", (f"d{tau - 1}-{i}",), tau) for i in range(0, 50, 7)]
        s.step(facts, tau)
        ref.step(facts, tau)
        sizes.append(len(intern._SYM.ids))
        assert s.lines(True, True) == ref.lines(True, True), tau
    assert max(sizes[-100:]) < 4 * 2000 + 200, sizes[-5:]


LONG = st.lists(st.sampled_from([f"0:d{i}" for i in range(90)] + ["*y", "1:é"]),
                min_size=60, max_size=150)


@OPS
@given(st.lists(st.one_of(st.none(), LONG, st.lists(st.sampled_from(["0:a", "0:d7"]),
                                                    max_size=3)), min_size=1, max_size=4),
       st.lists(st.sampled_from([f"d{i}" for i in range(90)]), max_size=120))
def test_long_lists_as_polars(ls, extra):
    """Lists of LONG_LIST elements or more are held as arrays (intern.ListTable): the list
    operations and a join on the list column still give Polars' rows."""
    left = [{"x": None, "y": i, "b": None, "l": v} for i, v in enumerate(ls)]

    def fn(B, df):
        c = B.col
        df = B.with_columns(df, {
            "norm": B.list_norm(B.list_concat(c("l"), B.list_prefix(B.str_list(extra), "0:"))),
            "dp": B.list_drop_prefix(c("l"), "0:"),
            "sp": B.list_strip_prefix(c("l"), "0:"),
            "n": B.list_len(c("l")),
            "any": B.list_any_prefix(c("l"), "*"),
            "has": B.list_contains(c("l"), B.lit("0:d3", OBJ)),
        })
        df = B.with_columns(df, {"nn": B.list_norm(c("norm"))})
        same = B.filter(df, c("nn") == c("norm"))
        return B.join(same, B.unique(B.select(df, [c("norm")])), ["norm"], ["norm"], "semi")
    both(fn, left)


def test_a_large_schematic_answer_on_both_backends(monkeypatch):
    """The turbines program over 300 devices: the schematic OK(X, T) answer excludes more
    devices than LONG_LIST, so its lists are arrays on the arrays backend — same answers and
    lines as Polars at every tick, with the interned tables swept at every chance (the
    string ids an array-held list holds stay)."""
    import random

    monkeypatch.setattr(intern, "SWEEP_FLOOR", 0)
    monkeypatch.setattr(intern, "STRING_SWEEP_SCALE", 1)

    from reasoning.semantics.patterns import Fact

    rnd = random.Random(5)
    text = ("#query OK(X, T).\n#delay Hot = 1.\nFlag(X, T) :- Hot(X, T).\n"
            "Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).\n"
            "Shdn(X, T+1) :- Cool(X, T), Flag(X, T+1).\nOK(X, T-1) :- not Shdn(X, T).\n")
    cp = compile_program(text, "<gen>")
    a = Session(cp, engine="columnar", backend=PolarsBackend())
    b = Session(cp, engine="columnar", backend=ArraysBackend())
    for tau in range(14):
        facts = [Fact("Hot", (f"wt{i}",), t) for i in range(300) for t in (tau - 1, tau)
                 if t >= 0 and rnd.random() < 0.4]
        facts = list(dict.fromkeys(facts))
        a.step(facts, tau)
        b.step(facts, tau)
        assert sorted(map(_key, a.answers())) == sorted(map(_key, b.answers())), tau
        assert a.lines(True, True) == b.lines(True, True), tau
    assert max(len(x) for x in intern._LST.vals if x is not None) >= intern.LONG_LIST


@OPS
@given(st.lists(st.tuples(st.lists(st.one_of(st.integers(-2, 5), st.none()), min_size=60,
                                   max_size=70), st.sampled_from(["tuple", "array", "np"])),
                min_size=1, max_size=12))
def test_list_table_gives_one_id_per_content(items):
    """intern.ListTable: a list arriving as a tuple, as an array (long ones are held as
    arrays) or as a tuple of numpy ints (read from an array) gets the id of its content,
    and decodes to it as Python values."""
    import numpy as np

    T = intern.ListTable()
    seen: dict = {}
    for xs, form in items:
        if None not in xs and form == "array":
            x = np.array(xs, dtype=np.int64)
        elif form == "np":
            x = tuple(None if e is None else np.int64(e) for e in xs)
        else:
            x = tuple(xs)
        i = T.id(x)
        assert seen.setdefault(tuple(xs), i) == i
        got = intern._tuple(T.vals[i])
        assert got == tuple(xs) and all(e is None or type(e) is int for e in got)
        assert T.encode([x, None]).tolist() == [i, -1]
    assert len(set(seen.values())) == len(seen)


def test_long_string_lists_convert_to_polars():
    """A string-list column holding long (array-held) lists beside short, empty and null
    ones converts to the same Polars column as its Python values (polars_io._long_strlists)."""
    import numpy as np
    import polars as pl

    from reasoning.columnar.backends.arrays.frame import Col, Frame

    long1 = [f"x:{i}" for i in range(100)]
    long2 = [f"é{i}\x00" for i in range(70, 0, -1)]
    values = [long1, None, ["a", "b"], [], long2, long1]
    ids = []
    for v in values:
        if v is None:
            ids.append(-1)
        else:
            ids.append(intern._LST.id(np.array([intern._SYM.id(x) for x in v], np.int64)))
    m = np.array([v is None for v in values])
    fr = Frame({"l": Col(np.array(ids, np.int64), m, STRLIST)}, len(values))
    got = A.to_polars(fr)["l"]
    assert got.to_list() == values
    assert got.dtype == pl.List(pl.String)


def test_encode_gives_the_ids_one_by_one_would():
    """Symbols.encode (a tick's new strings in one go) against Symbols.id one value at a
    time: the same ids — freed ids reused in the same order after a sweep — and tables."""
    import random

    import numpy as np

    from reasoning.columnar.backends.arrays.intern import Symbols

    for seed in range(200):
        rnd = random.Random(seed)
        a, b = Symbols(strings=True), Symbols(strings=True)
        for _ in range(6):
            xs = [f"s{rnd.randint(0, 40)}" for _ in range(rnd.randint(0, 30))]
            xs = [None if rnd.random() < 0.1 else x for x in xs]
            assert a.encode(xs).tolist() == [-1 if x is None else b.id(x) for x in xs]
            assert (a.vals, a.ids, a.free, a.reused) == (b.vals, b.ids, b.free, b.reused)
            if a.vals and rnd.random() < 0.5:
                live = np.array(sorted(rnd.sample(range(len(a.vals)), len(a.vals) // 2)),
                                np.int64)
                assert a.sweep(live) == b.sweep(live)


_NG_GOOD = st.tuples(st.sampled_from([0, 1, 2]),
                     st.sampled_from(["a", "b7", "wt_1", "12", "-3"])).map(lambda t: f"{t[0]}:{t[1]}")
_NG_ODD = st.sampled_from(["0:", "0:x y", '0:q"', "*[[0, 1]]", '*[[0, "a"], [1, "b"]]', "9:a",
                           "0:é"])
_NG_LIST = st.tuples(st.lists(_NG_GOOD, max_size=80),
                     st.one_of(st.none(), st.none(), st.none(), st.none(), _NG_ODD),
                     st.integers(0, 80)).map(
    lambda t: t[0] if t[1] is None else t[0][:t[2]] + [t[1]] + t[0][t[2]:])


@settings(max_examples=200, deadline=None)
@given(st.lists(_NG_LIST, min_size=1, max_size=6), st.booleans(),
       st.lists(st.integers(0, 3), min_size=6, max_size=6))
def test_the_c_row_formatter_prints_exclusions_as_the_python_one(lists, norm, masks):
    """Rows with nogood lists (short tuples and long arrays; sorted and distinct or not;
    bare or not; `*` items; variables not printed): the C formatter prints what the compiled
    Python formatter prints (rowformat.exclusions), or declines the batch where the Python
    one raises Unformattable or sorts the list first."""
    import numpy as np

    from reasoning.columnar.render.rowformat import (Unformattable, compile_row_formatter,
                                              compile_row_program)

    if kernels.IMPL != "c":
        pytest.skip("no C kernels")
    cp = compile_program("#query Q(X, Y, Z, T).\nQ(X, Y, Z, T) :- A(X, T), not B(Y, Z, T).\n",
                         "<t>")
    tp = next(t for t in Session(cp, engine="columnar").col.templates if t.qid == 0)
    P = frozenset(v for v in range(len(tp.names)) if tp.names[v] in ("X", "T"))
    names = sorted((tp.names[v], v) for v in range(len(tp.names)) if v not in P)
    printed = [v for _, v in names]  # (the generated `k:c` name the k-th of them)
    lists = [[f"{printed[int(x[0]) % len(printed)]}{x[1:]}" if x[:1] in "012" and x[1:2] == ":"
              else x for x in lst] for lst in lists]
    ngl = [sorted(set(x)) if norm else x for x in lists]
    n = len(ngl)
    sv = sorted(P)
    cols = [[f"d{i}" for i in range(n)] if tp.names[v] == "X" else list(range(n)) for v in sv]
    ev = [masks[i] % 4 for i in range(n)]
    dl = [None if i % 2 else 5 + i for i in range(n)]
    py = compile_row_formatter(tp, P, "Q(X, Y, Z, T)", names)
    try:
        want = py(cols, ev, dl, ngl, 7)
    except Unformattable:
        want = None
    spec, svars, ivars = compile_row_program(tp, P, "Q(X, Y, Z, T)", names)
    vals = sorted({s for x in ngl for s in x} | set(cols[sv.index(svars[0])]))
    sid = {s: i for i, s in enumerate(vals)}
    lsts = [tuple(sid[s] for s in x) if len(x) < 64 else np.array([sid[s] for s in x], np.int64)
            for x in ngl]
    got = kernels._impl.format_rows(
        spec, tuple(np.array([sid[x] for x in cols[sv.index(v)]], np.int64) for v in svars),
        tuple(np.array(cols[sv.index(v)], np.int64) for v in ivars), vals,
        np.array(ev, np.int64), np.array([d or 0 for d in dl], np.int64),
        np.array([d is None for d in dl]), 7, np.arange(n, dtype=np.int64), lsts)
    sorted_distinct = all(list(x) == sorted(set(x)) for x in ngl)
    event("C printed" if got is not None else "C declined")
    if got is None:
        assert want is None or not sorted_distinct
    else:
        assert want is not None and tuple(got) == tuple(want)
    if want is not None and sorted_distinct:
        assert got is not None


def test_the_c_row_formatter_writes_integers_as_python():
    """Times and deadlines are written as str(int) writes them, at every magnitude and sign
    (two digits a step)."""
    import numpy as np

    if kernels.IMPL != "c":
        pytest.skip("no C kernels")
    v = np.array([0, 7, 9, 10, 99, 100, 101, 12345, 10 ** 17, -1, -10, -100, 2 ** 62,
                  2 ** 63 - 1, -2 ** 63], np.int64)
    n = v.size
    item = ((2, 0, 0),)
    spec = ((), (item, item, item), ("pending", "hypothetical", "definite"), None)
    got = kernels._impl.format_rows(spec, (), (v,), [], np.zeros(n, np.int64),
                                    np.zeros(n, np.int64), np.zeros(n, bool), 5, None, [])
    assert got[0] == got[1] == got[2] == [str(x) for x in v.tolist()]


# _finish calls: all, those the fused deadline kernel took; the renderer's fused deadlines:
# frames, those with rows waiting for a negated predicate's deadline
_FUSED = [0, 0, 0, 0]


@settings(max_examples=budget(40, "columnar"), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(cases(negation=True, multi_time=True), st.lists(st.sampled_from([
    "#delay J(a, Y, T) = {j}.", "#delay J(X, b, T) = {j}.", "#delay J(a, b, T) = {j}.",
    "#delay E2(c, T) = {e2}.", "#delay E1(b, T) = {e1}."]), max_size=4, unique=True),
    st.integers(1, 3))
def test_fused_deadlines_as_the_expressions(monkeypatch, case, extra, more):
    """Step 1's deadlines and the window's t + δ from the fused C kernel
    (ArraysBackend.deadlines), and the printed deadlines (render_deadlines), are the
    expressions' (the Polars backend's), with instance delays looked up by one argument
    (fused), by two (the kernel declines), ground and not: every tick's S_τ and lines.
    Each extra pattern's δ is the default's plus `more`, so the stream stays within δ."""
    text = case.text
    dflt = {}
    for line in text.splitlines():
        if line.startswith("#delay ") and "(" not in line.split("=")[0]:
            dflt[line.split()[1]] = int(line.split("=")[1].strip(" ."))
    lines = [x.format(j=dflt.get("J", 0) + more, e1=dflt.get("E1", 0) + more,
                      e2=dflt.get("E2", 0) + more) for x in extra
             if f"{x.split()[1].split('(')[0]}(" in text.split("#domain")[-1]]
    text = "\n".join(lines) + "\n" + text
    real = ArraysBackend.deadlines

    def counted(self, df, lits, *names):
        got = real(self, df, lits, *names)
        _FUSED[0] += 1
        _FUSED[1] += got is not None
        return got
    monkeypatch.setattr(ArraysBackend, "deadlines", counted)
    shown = ArraysBackend.render_deadlines

    def counted_shown(self, df, full, tau, lits):
        got = shown(self, df, full, tau, lits)
        _FUSED[2] += got is not None
        _FUSED[3] += got is not None and got[1] is not None
        return got
    monkeypatch.setattr(ArraysBackend, "render_deadlines", counted_shown)
    cp = compile_program(text, "<gen>")
    _both_backends(cp, case.stream, _until(cp, case) + 1, answers=True)


def test_the_fused_deadlines_ran():
    """(The property test above reached the fused kernel.)"""
    if _FUSED[0] == 0:
        pytest.skip("run with the property test above")
    assert (_FUSED[1] > 0 and _FUSED[2] > _FUSED[3] > 0) or kernels.IMPL != "c"


def test_deadlines_looked_up_by_two_arguments_take_the_expressions():
    """A #delay pattern with two constants met by two bound arguments is not a dense
    look-up: the kernel declines, the expressions give the Polars backend's answers."""
    text = ("#query P(X, T).\n#delay J = 1.\n#delay J(a, b, T) = 3.\n#delay J(c, Y, T) = 2.\n"
            "P(X, T+1) :- J(X, Y, T), J(Y, X, T+1).\n")
    cp = compile_program(text, "<t>")
    from reasoning.columnar.delays import COL
    plan = Session(cp, engine="columnar", backend=ArraysBackend()).col.dplans["J"]
    assert plan.lookup_spec(A, [(COL, "v0"), (COL, "v1")]) is None
    assert plan.lookup_spec(A, [(COL, "v0"), ("const", None)]) is not None
    from reasoning.semantics.patterns import Fact
    stream = {0: [Fact("J", ("a", "b"), 0), Fact("J", ("c", "a"), 0)],
              1: [Fact("J", ("b", "a"), 1), Fact("J", ("a", "c"), 0)],
              3: [Fact("J", ("a", "c"), 1)]}
    _both_backends(cp, stream, 6, answers=True)


@OPS
@given(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=1, max_size=12),
       st.lists(st.lists(st.integers(0, 11), max_size=12), min_size=1, max_size=4),
       st.sampled_from(["v", "m", "materialize", "nulls"]))
def test_lazy_gathers_are_the_eager_ones(vals, chains, read):
    """Frame.take gathers lazily (frame.LazyCol): a chain of takes, read by values, nulls
    or materialize at the end, gives the eager gathers' column, and becomes a plain Col."""
    import numpy as np

    fr = A.from_rows([{"y": v} for v in vals], {"y": INT})
    want_v, want_m = fr.cols["y"].v, fr.cols["y"].nulls()
    for ch in chains:
        idx = np.array([i % fr.n for i in ch] if fr.n else [], np.int64)
        fr = fr.take(idx, idx.size)
        want_v, want_m = want_v[idx], want_m[idx]
    c = fr.cols["y"]
    if read == "materialize":
        A.materialize(fr)
    got_m = c.nulls() if read != "v" else (c.v, c.nulls())[1]
    assert type(c) is frame.Col
    assert (got_m == want_m).all()
    assert (c.v[~want_m] == want_v[~want_m]).all()


@OPS
@given(st.lists(st.one_of(st.text(max_size=12), st.sampled_from(["wt1", "wt1 ", "", "é",
                                                               "a" * 8, "a" * 9, "\ud800"])),
                min_size=64, max_size=200))
def test_strings_interned_through_signatures_get_their_ids(xs):
    """from_columns interns a list of strings through str_sigs and a compiled index
    (signatures._intern_strs): the ids are the one-by-one encoder's, equal strings get equal
    signatures and distinct ones distinct; an item that is not a string falls back."""
    got = signatures._intern_strs(xs)
    if kernels.c_only("str_sigs") is None:
        assert got is None
        return
    if any(0xD800 <= ord(ch) <= 0xDFFF for x in xs for ch in x):
        assert got is None  # (not UTF-8: the dict path)
        return
    assert got is not None and got.v.tolist() == intern._SYM.encode(xs).tolist()
    k1, k2 = kernels.c_only("str_sigs")(xs)
    sig = {}
    for x, a, b in zip(xs, k1.tolist(), k2.tolist()):
        assert sig.setdefault(x, (a, b)) == (a, b)
    assert len(set(sig.values())) == len(sig)
    assert signatures._intern_strs(xs[:-1] + [None]) is None
    assert signatures._intern_strs(xs[:10]) is None  # (short: the dict path)


@settings(max_examples=budget(150), deadline=None)
@given(rrows, st.booleans())
def test_by_table_and_expand_keys_are_the_join_with_a_table_of_the_keys(rs, two):
    """step1_family's look-ups per distinct key — _by_table (a table of fn's values joined
    back, on both backends) and expand_keys — against the generic path on Polars, as sets
    of rows: fn of the keys gives None, one tuple or several (INT keys, nulls among them)."""
    from reasoning.columnar.step1_family import _by_table, _expand

    keys = ["y2", "z"] if two else ["z"]

    def one(*kv):
        h = hash(kv) % 5
        return (None, h) if h == 0 else (h, -h)

    def many(*kv):
        h = hash(kv) % 3
        return [(i, None if i == 1 else h) for i in range(h)]
    for fn, run in ((one, _by_table), (many, _expand)):
        got = []
        for B in (P, A):
            df = run(B, B.from_rows(rs, RSCHEMA), keys, ["p", "q"], fn)
            got.append(None if df is None else canon(B, df))
        assert got[0] == got[1]


@OPS
@given(rows, st.lists(st.integers(-2, 3), unique=True, max_size=4), st.booleans(),
       st.booleans())
def test_split_by_gives_each_values_rows_in_order_read_or_not(left, values, some, lazy):
    """split_by (a family's per-template frames: parts made on first read, SplitPart) as a
    filter per value, in order; a part kept unread by materialize reads the same rows later,
    over a source whose columns were gathered lazily (a filter's) and a column subset."""
    from reasoning.columnar.backends.arrays.frame import SplitPart

    cols = ["y", "l"] if some else None
    src = A.from_rows(left, SCHEMA)
    if lazy:
        src = A.filter(src, A.is_null(A.col("b")) | A.col("b"))
    key = A.coalesce([A.col("y"), A.lit(0, INT)])
    src = A.with_columns(src, {"k": key})
    parts = A.split_by(src, "k", values, cols)
    kept = {v: A.materialize(f) for v, f in parts.items()}
    for v, f in kept.items():
        assert type(f) is SplitPart
        want = A.filter(src, A.col("k") == A.lit(v, INT))
        want = A.select_cols(want, cols or list(A.columns(src)))
        assert A.columns(f) == A.columns(want)
        assert A.rows(f) == A.rows(want)


@settings(max_examples=budget(150), deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 20), st.integers(-9, 9)),
                                   max_size=6, unique_by=lambda p: p[0]),
                          st.integers(-3, 3)), min_size=1, max_size=5),
       st.lists(st.tuples(st.integers(0, 4), st.integers(0, (1 << 21) - 1)), max_size=40))
def test_span_by_key_is_finish_s_look_up_per_template_and_evidence(tpls, rows):
    """span_by_key (step1_family._finish on the arrays backend: the least and greatest
    deadline offset of a template's open positive literals, a byte of ev at a time) against
    the generic look-up per distinct (template, ev) on Polars; none open: null."""
    from reasoning.columnar.layout import INT
    from reasoning.columnar.step1_family import Family, _by_table, _span

    tids = tuple(2 * n + 5 for n in range(len(tpls)))
    fam = Family(tids, (), 0, (), (), tuple(tuple(o) for o, _ in tpls),
                 tuple(lo for _, lo in tpls))
    recs = [{"_tid": tids[n % len(tids)], "ev": ev} for n, ev in rows]
    sch = {"_tid": INT, "ev": INT}
    names = ["_dmin", "_dmax", "_lo"]
    got = [canon(P, _by_table(P, P.from_rows(recs, sch), ["_tid", "ev"], names, _span(fam))),
           canon(A, A.span_by_key(A.from_rows(recs, sch), "_tid", fam.tids, fam.offs,
                                  fam.lows, "ev", names))]
    assert got[0] == got[1]


@settings(max_examples=budget(150), deadline=None)
@given(st.lists(st.lists(st.integers(0, 11), max_size=6), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 3), st.sampled_from("abc"), st.integers(0, 4),
                          st.integers(0, 63), st.booleans(),
                          st.one_of(st.none(), st.integers(0, 8))), max_size=30),
       st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 4),
                          st.integers(0, (1 << 12) - 1), st.integers(0, (1 << 12) - 1)),
                max_size=12, unique_by=lambda u: u[:2]),
       st.integers(0, 6))
def test_wake_family_is_the_join_look_ups_and_filters(shapes, arows, urows, tau):
    """wake_family (step1_family's wake-up on the arrays backend: one pass) against the
    generic left join with the bindings, per-(template, shapes) bits and filters on
    Polars: the same kept and woken rows (nulls in exp, nogoods, unmatched rows)."""
    from types import SimpleNamespace

    from reasoning.columnar.layout import META_KINDS
    from reasoning.columnar.step1_family import Family, _wake

    masks = [{s: sum(1 << j for j, x in enumerate(sh) if x == s) for s in set(sh)}
             for sh in shapes]
    tids = tuple(2 * n + 1 for n in range(len(masks)))
    fam = Family(tids, ("v0", "v1"), 0, (), tuple(masks), (), ())
    sch = {"_tid": INT, "v0": INT, "v1": OBJ, **META_KINDS}
    recs = [{"_tid": tids[n % len(tids)], "v0": t, "v1": x, "ev": ev,
             "ng": ["0:a"] if ng else [], "exp": exp, "dlp": exp, "unb": False, "born": 0}
            for n, x, t, ev, ng, exp in arows]
    urecs = [{"v1": x, "v0": t, "_pd": pd, "_pw": pw} for x, t, pd, pw in urows]
    usch = {"v1": OBJ, "v0": INT, "_pd": INT, "_pw": INT}
    got = []
    for B in (P, A):
        kept, woken = _wake(SimpleNamespace(B=B), fam, B.from_rows(recs, sch),
                            B.from_rows(urecs, usch), tau)
        got.append((canon(B, kept), canon(B, woken)))
    assert got[0] == got[1]


@settings(max_examples=budget(150), deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.sampled_from(["a", "b", None]),
                                             st.integers(0, 9)), max_size=5),
                          st.lists(st.tuples(st.integers(-3, 3), st.integers(1, 1 << 20)),
                                   min_size=1, max_size=4)), min_size=1, max_size=3))
def test_shifted_moves_each_binding_to_each_shape_of_its_atom(atoms):
    """shifted (step1_family._bindings on the arrays backend): every row of an atom's seed
    bindings once per (offset, bit) of its shapes, the time less the offset — as the rows
    written out one by one."""
    sch = {"v0": INT, "v1": OBJ}
    dfs = [A.from_rows([{"v0": t, "v1": x} for x, t in rows], sch) for rows, _ in atoms]
    got = A.shifted(dfs, "v0", [sh for _, sh in atoms], ["v0", "v1"])
    want = [(t - o, x, b) for rows, sh in atoms for x, t in rows for o, b in sh]
    assert sorted(((r["v0"], r["v1"], r["_pd"]) for r in A.rows(got)), key=repr) == \
        sorted(want, key=repr)
