/* The deadline kernels: step 1's deadlines of a template's rows and the shown deadlines. */
#include "_ck_common.h"

/* Step 1's deadlines of a template's rows (engine._finish), fused: for each positive
 * literal j with a bound time, e_j = t_j + toff_j + δ_j, null where bit j of ev is set
 * (the literal is evidence); exp = the least e_j, dlp = the greatest (null where every
 * e_j is).  δ_j is the greatest δ of the #delay patterns the atom meets, looked up by one
 * argument's string id in dense tables (-1: no pattern), with the patterns that need no
 * look-up as `cst` (-1: none); a ground atom takes the default d0 only when it meets no
 * pattern, an atom with an unbound argument the greatest of d0 and its patterns
 * (delays.py, analysis.Delays).  Sums wrap as numpy's int64 arithmetic does.
 *   lits: [(bit, t or None, toff, cst, ground, d0, [(ids, dense), ...]), ...]  */
#define DL_MAX_LITS 64
#define DL_MAX_GROUPS 8
typedef struct {
    int64_t bit, toff, cst, d0;
    int ground, ng;
    const int64_t *t;
    const int64_t *ids[DL_MAX_GROUPS];
    const int64_t *dense[DL_MAX_GROUPS];
    int64_t ndense[DL_MAX_GROUPS];
} DlLit;

/* an int64 column, its array kept in hold[*nh] (NULL with the error set) */
static PyArrayObject *held_i64(PyObject *o, PyArrayObject **hold, int *nh)
{
    PyArrayObject *a = hk_as_array(o, NPY_INT64, 1);
    if (a != NULL)
        hold[(*nh)++] = a;
    return a;
}

/* an optional int64 column of n rows (None: *out = NULL), its array kept in hold[*nh];
 * -1 with the error set */
static int opt_i64(PyObject *o, npy_intp n, const char *who, PyArrayObject **hold, int *nh,
                   const int64_t **out)
{
    *out = NULL;
    if (o == Py_None)
        return 0;
    PyArrayObject *a = held_i64(o, hold, nh);
    if (a == NULL)
        return -1;
    if (PyArray_DIM(a, 0) != n) {
        PyErr_Format(PyExc_ValueError, "%s: time column length", who);
        return -1;
    }
    *out = (const int64_t *)PyArray_DATA(a);
    return 0;
}

/* a literal's bit of an evidence mask: 0..62, else -1 with the error set */
static int lit_bit(long long bit, const char *who)
{
    if (bit >= 0 && bit <= 62)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: literal bit out of range", who);
    return -1;
}

PyObject *hk_deadlines(PyObject *self, PyObject *args)
{
    PyObject *evo, *lits;
    if (!PyArg_ParseTuple(args, "OO!", &evo, &PyList_Type, &lits))
        return NULL;
    PyArrayObject *hold[DL_MAX_LITS * (1 + 2 * DL_MAX_GROUPS) + 1];
    int nh = 0;
    PyObject *res = NULL;
    PyArrayObject *ev = held_i64(evo, hold, &nh);
    if (ev == NULL)
        return NULL;
    npy_intp n = PyArray_DIM(ev, 0);
    Py_ssize_t nl = PyList_GET_SIZE(lits);
    DlLit L[DL_MAX_LITS];
    if (nl > DL_MAX_LITS) {
        PyErr_SetString(PyExc_ValueError, "deadlines: too many literals");
        goto done;
    }
    for (Py_ssize_t i = 0; i < nl; i++) {
        PyObject *it = PyList_GET_ITEM(lits, i), *to, *groups;
        DlLit *l = &L[i];
        long long bit, toff, cst, d0;
        int ground;
        if (!PyArg_ParseTuple(it, "LOLLpLO!", &bit, &to, &toff, &cst, &ground, &d0,
                              &PyList_Type, &groups))
            goto done;
        if (lit_bit(bit, "deadlines") < 0 || opt_i64(to, n, "deadlines", hold, &nh, &l->t) < 0)
            goto done;
        l->bit = bit; l->toff = toff; l->cst = cst; l->ground = ground; l->d0 = d0;
        l->ng = (int)PyList_GET_SIZE(groups);
        if (l->ng > DL_MAX_GROUPS) {
            PyErr_SetString(PyExc_ValueError, "deadlines: too many look-ups");
            goto done;
        }
        for (int g = 0; g < l->ng; g++) {
            PyObject *io, *dn;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(groups, g), "OO", &io, &dn))
                goto done;
            PyArrayObject *a = hk_as_array(io, NPY_INT64, 1), *b;
            if (a == NULL)
                goto done;
            hold[nh++] = a;
            if ((b = hk_as_array(dn, NPY_INT64, 1)) == NULL)
                goto done;
            hold[nh++] = b;
            if (PyArray_DIM(a, 0) != n) {
                PyErr_SetString(PyExc_ValueError, "deadlines: id column length");
                goto done;
            }
            l->ids[g] = (const int64_t *)PyArray_DATA(a);
            l->dense[g] = (const int64_t *)PyArray_DATA(b);
            l->ndense[g] = PyArray_DIM(b, 0);
        }
    }
    {
        PyArrayObject *exp = hk_new_i64(n), *dlp = hk_new_i64(n);
        PyArrayObject *nul = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_BOOL);
        if (exp == NULL || dlp == NULL || nul == NULL) {
            Py_XDECREF(exp); Py_XDECREF(dlp); Py_XDECREF(nul);
            goto done;
        }
        const int64_t *e = (const int64_t *)PyArray_DATA(ev);
        int64_t *xo = (int64_t *)PyArray_DATA(exp), *xd = (int64_t *)PyArray_DATA(dlp);
        npy_bool *xn = (npy_bool *)PyArray_DATA(nul);
        int64_t any_null = 0;
        for (npy_intp r = 0; r < n; r++) {
            int have = 0;
            int64_t lo = 0, hi = 0;
            for (Py_ssize_t i = 0; i < nl; i++) {
                const DlLit *l = &L[i];
                if ((e[r] >> l->bit) & 1)
                    continue;
                int64_t best = l->cst;  /* -1: no pattern met yet (every δ is >= 0) */
                for (int g = 0; g < l->ng; g++) {
                    int64_t id = l->ids[g][r];
                    if (id >= 0 && id < l->ndense[g]) {
                        int64_t d = l->dense[g][id];
                        if (d > best)
                            best = d;
                    }
                }
                int64_t d = l->ground ? (best >= 0 ? best : l->d0)
                                      : (best > l->d0 ? best : l->d0);
                uint64_t s = (uint64_t)(l->t ? l->t[r] : 0) + (uint64_t)l->toff + (uint64_t)d;
                int64_t v = (int64_t)s;
                if (!have) {
                    lo = hi = v;
                    have = 1;
                } else {
                    if (v < lo) lo = v;
                    if (v > hi) hi = v;
                }
            }
            xo[r] = have ? lo : 0;
            xd[r] = have ? hi : 0;
            xn[r] = !have;
            any_null |= !have;
        }
        res = Py_BuildValue("(NNNO)", exp, dlp, nul, any_null ? Py_True : Py_False);
    }
done:
    for (int i = 0; i < nh; i++)
        Py_DECREF(hold[i]);
    return res;
}

/* render_deadlines(ev, dlp, dlp_null, unb, full, tau, lits) -> (dl, dl_null, bad, needs):
 * render.Renderer.deadlines' first pass (Explainer.deadline) fused.  A row is definite
 * when ev == full.  For each negated literal j of lits (bit, t or None, toff, r) open
 * (bit j of ev clear) at t_j = t + toff: after τ it bounds the deadline by t_j + r, or
 * makes it unknown when r < 0 (no static horizon); at or before τ the row needs the
 * negated predicate's own deadline (needs).  dl = the greatest of τ, dlp (unless null)
 * and the bounds; null when definite or unknown (unb, or an open literal without
 * horizon); bad: unknown and not definite.  Sums wrap as numpy's int64 arithmetic. */
PyObject *hk_render_deadlines(PyObject *self, PyObject *args)
{
    PyObject *evo, *dlo, *dno, *uno, *lits;
    long long full, tau;
    if (!PyArg_ParseTuple(args, "OOOOLLO!", &evo, &dlo, &dno, &uno, &full, &tau,
                          &PyList_Type, &lits))
        return NULL;
    PyArrayObject *hold[4 + DL_MAX_LITS];
    int nh = 0;
    PyObject *res = NULL;
    PyArrayObject *ev = held_i64(evo, hold, &nh);
    if (ev == NULL)
        return NULL;
    npy_intp n = PyArray_DIM(ev, 0);
    PyArrayObject *dl = hk_as_array(dlo, NPY_INT64, 1), *dn, *un;
    if (dl == NULL)
        goto done;
    hold[nh++] = dl;
    if ((dn = hk_as_array(dno, NPY_BOOL, 1)) == NULL)
        goto done;
    hold[nh++] = dn;
    if ((un = hk_as_array(uno, NPY_BOOL, 1)) == NULL)
        goto done;
    hold[nh++] = un;
    if (PyArray_DIM(dl, 0) != n || PyArray_DIM(dn, 0) != n || PyArray_DIM(un, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "render_deadlines: column lengths");
        goto done;
    }
    Py_ssize_t nl = PyList_GET_SIZE(lits);
    if (nl > DL_MAX_LITS) {
        PyErr_SetString(PyExc_ValueError, "render_deadlines: too many literals");
        goto done;
    }
    int64_t bits[DL_MAX_LITS], toffs[DL_MAX_LITS], rs[DL_MAX_LITS];
    const int64_t *ts[DL_MAX_LITS];
    for (Py_ssize_t i = 0; i < nl; i++) {
        PyObject *to;
        long long bit, toff, r;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(lits, i), "LOLL", &bit, &to, &toff, &r))
            goto done;
        if (lit_bit(bit, "render_deadlines") < 0 ||
            opt_i64(to, n, "render_deadlines", hold, &nh, &ts[i]) < 0)
            goto done;
        bits[i] = bit; toffs[i] = toff; rs[i] = r;
    }
    {
        PyArrayObject *o = hk_new_i64(n);
        PyArrayObject *on = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_BOOL);
        PyArrayObject *ob = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_BOOL);
        PyArrayObject *oq = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_BOOL);
        if (o == NULL || on == NULL || ob == NULL || oq == NULL) {
            Py_XDECREF(o); Py_XDECREF(on); Py_XDECREF(ob); Py_XDECREF(oq);
            goto done;
        }
        const int64_t *E = PyArray_DATA(ev), *D = PyArray_DATA(dl);
        const npy_bool *DN = PyArray_DATA(dn), *U = PyArray_DATA(un);
        int64_t *O = PyArray_DATA(o);
        npy_bool *ON = PyArray_DATA(on), *OB = PyArray_DATA(ob), *OQ = PyArray_DATA(oq);
        for (npy_intp row = 0; row < n; row++) {
            int definite = E[row] == full, unknown = U[row] != 0, needs = 0;
            int64_t best = DN[row] || D[row] < tau ? tau : D[row];
            for (Py_ssize_t i = 0; i < nl; i++) {
                if ((E[row] >> bits[i]) & 1)
                    continue;
                int64_t t = (int64_t)((uint64_t)(ts[i] ? ts[i][row] : 0) + (uint64_t)toffs[i]);
                if (t > tau) {
                    if (rs[i] < 0)
                        unknown = 1;
                    else {
                        int64_t b = (int64_t)((uint64_t)t + (uint64_t)rs[i]);
                        if (b > best)
                            best = b;
                    }
                }
                else
                    needs = 1;
            }
            O[row] = definite || unknown ? 0 : best;
            ON[row] = definite || unknown;
            OB[row] = unknown && !definite;
            OQ[row] = needs && !definite;
        }
        res = Py_BuildValue("(NNNN)", o, on, ob, oq);
    }
done:
    for (int i = 0; i < nh; i++)
        Py_DECREF(hold[i]);
    return res;
}
