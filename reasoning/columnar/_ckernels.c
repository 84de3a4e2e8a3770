/* The arrays executor's row kernels (kernels.py) in C: hash join, membership and
 * factorisation over key matrices (one int64 row of key values per table row), and the
 * 128-bit-hash -> id index of kernels.HashIndex.  The same algorithms as kernels.py's numba
 * code (same slots, same row order of results), built by cbuild.py; importing it costs
 * ~1 ms where numba's start-up (import, target, cached kernels) costs 0.7-1 s. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef HK_NAME
#define HK_NAME _ckernels
#endif
#define HK_STR2(x) #x
#define HK_STR(x) HK_STR2(x)
#define HK_CAT2(a, b) a##b
#define HK_CAT(a, b) HK_CAT2(a, b)

/* an input array as a C-contiguous array of the given type (a new reference; NULL + error) */
static PyArrayObject *as_array(PyObject *o, int type, int ndim)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OTF(o, type, NPY_ARRAY_IN_ARRAY);
    if (a == NULL)
        return NULL;
    if (PyArray_NDIM(a) != ndim) {
        PyErr_Format(PyExc_ValueError, "expected a %d-d array, got %d-d", ndim,
                     PyArray_NDIM(a));
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

static PyArrayObject *new_i64(npy_intp n)
{
    return (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_INT64);
}

/* each row's home slot: its values mixed, then splitmix64's finaliser (high bits) */
static inline int64_t row_slot(const int64_t *row, int64_t k, int bits)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int64_t c = 0; c < k; c++) {
        h = (h ^ (uint64_t)row[c]) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    h ^= h >> 30;
    h *= 0x94D049BB133111EBULL;
    h ^= h >> 31;
    return (int64_t)(h >> (64 - bits));
}

static inline int rows_equal(const int64_t *a, const int64_t *b, int64_t k)
{
    for (int64_t c = 0; c < k; c++)
        if (a[c] != b[c])
            return 0;
    return 1;
}

/* open-addressing table over R's rows: slot -> first row; nxt chains equal rows (row order) */
static int build_rows(const int64_t *R, int64_t n, int64_t k, const npy_bool *ok, int bits,
                      int64_t **head_out, int64_t *nxt)
{
    int64_t cap = (int64_t)1 << bits, mask = cap - 1;
    int64_t *head = malloc(sizeof(int64_t) * cap);
    if (head == NULL)
        return -1;
    for (int64_t s = 0; s < cap; s++)
        head[s] = -1;
    for (int64_t j = n - 1; j >= 0; j--) {
        nxt[j] = -1;
        if (!ok[j])
            continue;
        const int64_t *row = R + j * k;
        int64_t s = row_slot(row, k, bits);
        while (head[s] != -1 && !rows_equal(R + head[s] * k, row, k))
            s = (s + 1) & mask;
        nxt[j] = head[s];
        head[s] = j;
    }
    *head_out = head;
    return 0;
}

/* per row of L: the first row of R equal to it (-1: none) */
static void probe_rows(const int64_t *L, int64_t n, int64_t k, const npy_bool *ok,
                       const int64_t *R, const int64_t *head, int bits, int64_t *out)
{
    int64_t mask = ((int64_t)1 << bits) - 1;
    for (int64_t i = 0; i < n; i++) {
        out[i] = -1;
        if (!ok[i])
            continue;
        const int64_t *row = L + i * k;
        int64_t s = row_slot(row, k, bits);
        while (head[s] != -1) {
            if (rows_equal(R + head[s] * k, row, k)) {
                out[i] = head[s];
                break;
            }
            s = (s + 1) & mask;
        }
    }
}

/* the parsed arguments (L, okl, R, okr) of join_rows / member_rows */
typedef struct {
    PyArrayObject *L, *okl, *R, *okr;
    int64_t nl, nr, k;
} Sides;

static void sides_release(Sides *s)
{
    Py_XDECREF(s->L);
    Py_XDECREF(s->okl);
    Py_XDECREF(s->R);
    Py_XDECREF(s->okr);
}

static int sides_parse(PyObject *L, PyObject *okl, PyObject *R, PyObject *okr, Sides *s)
{
    s->L = as_array(L, NPY_INT64, 2);
    s->okl = s->L ? as_array(okl, NPY_BOOL, 1) : NULL;
    s->R = s->okl ? as_array(R, NPY_INT64, 2) : NULL;
    s->okr = s->R ? as_array(okr, NPY_BOOL, 1) : NULL;
    if (s->okr == NULL)
        return -1;
    s->nl = PyArray_DIM(s->L, 0);
    s->nr = PyArray_DIM(s->R, 0);
    s->k = PyArray_DIM(s->L, 1);
    if (PyArray_DIM(s->R, 1) != s->k || PyArray_DIM(s->okl, 0) != s->nl
        || PyArray_DIM(s->okr, 0) != s->nr) {
        PyErr_SetString(PyExc_ValueError, "key matrices and masks do not match");
        return -1;
    }
    return 0;
}

/* first[i]: L's row i's first match in R; nxt: R's chains (arrays of nl and nr entries) */
static int first_matches(Sides *s, int bits, int64_t *first, int64_t *nxt)
{
    int64_t *head;
    const int64_t *R = PyArray_DATA(s->R);
    if (build_rows(R, s->nr, s->k, PyArray_DATA(s->okr), bits, &head, nxt) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    probe_rows(PyArray_DATA(s->L), s->nl, s->k, PyArray_DATA(s->okl), R, head, bits, first);
    free(head);
    return 0;
}

static PyObject *join_rows(PyObject *self, PyObject *args)
{
    PyObject *L, *okl, *R, *okr;
    int bits, left_outer;
    if (!PyArg_ParseTuple(args, "OOOOip", &L, &okl, &R, &okr, &bits, &left_outer))
        return NULL;
    Sides s = {0};
    PyObject *res = NULL;
    int64_t *first = NULL, *nxt = NULL;
    PyArrayObject *li = NULL, *ri = NULL;
    if (sides_parse(L, okl, R, okr, &s) < 0)
        goto done;
    first = malloc(sizeof(int64_t) * (s.nl ? s.nl : 1));
    nxt = malloc(sizeof(int64_t) * (s.nr ? s.nr : 1));
    if (first == NULL || nxt == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (first_matches(&s, bits, first, nxt) < 0)
        goto done;
    int64_t m = 0;
    for (int64_t i = 0; i < s.nl; i++) {
        int64_t j = first[i];
        if (j == -1) {
            m += left_outer;
            continue;
        }
        for (; j != -1; j = nxt[j])
            m++;
    }
    li = new_i64(m);
    ri = li ? new_i64(m) : NULL;
    if (ri == NULL)
        goto done;
    int64_t *pl = PyArray_DATA(li), *pr = PyArray_DATA(ri);
    m = 0;
    for (int64_t i = 0; i < s.nl; i++) {
        int64_t j = first[i];
        if (j == -1) {
            if (left_outer) {
                pl[m] = i;
                pr[m++] = -1;
            }
            continue;
        }
        for (; j != -1; j = nxt[j]) {
            pl[m] = i;
            pr[m++] = j;
        }
    }
    res = PyTuple_Pack(2, (PyObject *)li, (PyObject *)ri);
done:
    free(first);
    free(nxt);
    Py_XDECREF(li);
    Py_XDECREF(ri);
    sides_release(&s);
    return res;
}

static PyObject *member_rows(PyObject *self, PyObject *args)
{
    PyObject *L, *okl, *R, *okr;
    int bits;
    if (!PyArg_ParseTuple(args, "OOOOi", &L, &okl, &R, &okr, &bits))
        return NULL;
    Sides s = {0};
    PyObject *res = NULL;
    int64_t *first = NULL, *nxt = NULL;
    if (sides_parse(L, okl, R, okr, &s) < 0)
        goto done;
    first = malloc(sizeof(int64_t) * (s.nl ? s.nl : 1));
    nxt = malloc(sizeof(int64_t) * (s.nr ? s.nr : 1));
    if (first == NULL || nxt == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (first_matches(&s, bits, first, nxt) < 0)
        goto done;
    npy_intp n = s.nl;
    res = PyArray_SimpleNew(1, &n, NPY_BOOL);
    if (res == NULL)
        goto done;
    npy_bool *out = PyArray_DATA((PyArrayObject *)res);
    for (int64_t i = 0; i < s.nl; i++)
        out[i] = first[i] != -1;
done:
    free(first);
    free(nxt);
    sides_release(&s);
    return res;
}

static PyObject *factorize_rows(PyObject *self, PyObject *args)
{
    PyObject *Mo;
    int bits;
    if (!PyArg_ParseTuple(args, "Oi", &Mo, &bits))
        return NULL;
    PyArrayObject *Ma = as_array(Mo, NPY_INT64, 2);
    if (Ma == NULL)
        return NULL;
    const int64_t *M = PyArray_DATA(Ma);
    int64_t n = PyArray_DIM(Ma, 0), k = PyArray_DIM(Ma, 1);
    int64_t cap = (int64_t)1 << bits, mask = cap - 1;
    int64_t *table = malloc(sizeof(int64_t) * cap), *rep = malloc(sizeof(int64_t) * cap);
    int64_t *first = malloc(sizeof(int64_t) * (n ? n : 1));
    PyArrayObject *gid = NULL, *fa = NULL;
    PyObject *res = NULL;
    if (table == NULL || rep == NULL || first == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    gid = new_i64(n);
    if (gid == NULL)
        goto done;
    int64_t *g_of = PyArray_DATA(gid);
    for (int64_t s = 0; s < cap; s++)
        table[s] = -1;
    int64_t g = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t *row = M + i * k;
        int64_t s = row_slot(row, k, bits);
        while (table[s] != -1 && !rows_equal(M + rep[s] * k, row, k))
            s = (s + 1) & mask;
        if (table[s] == -1) {
            table[s] = g;
            rep[s] = i;
            first[g++] = i;
        }
        g_of[i] = table[s];
    }
    fa = new_i64(g);
    if (fa == NULL)
        goto done;
    int64_t *pf = PyArray_DATA(fa);
    for (int64_t i = 0; i < g; i++)
        pf[i] = first[i];
    res = PyTuple_Pack(2, (PyObject *)gid, (PyObject *)fa);
done:
    free(table);
    free(rep);
    free(first);
    Py_XDECREF(gid);
    Py_XDECREF(fa);
    Py_DECREF(Ma);
    return res;
}

/* HashIndex's arrays: keys (k1, k2), table (t1, t2, tv) */
typedef struct {
    PyArrayObject *k1, *k2, *t1, *t2, *tv;
} HashArgs;

static int hash_parse(PyObject *k1, PyObject *k2, PyObject *t1, PyObject *t2, PyObject *tv,
                      int bits, HashArgs *h)
{
    PyObject *in[2] = {k1, k2}, *tab[3] = {t1, t2, tv};
    PyArrayObject **kin[2] = {&h->k1, &h->k2}, **ktab[3] = {&h->t1, &h->t2, &h->tv};
    for (int i = 0; i < 2; i++)
        if ((*kin[i] = as_array(in[i], NPY_INT64, 1)) == NULL)
            return -1;
    for (int i = 0; i < 3; i++) {  /* the table is written in place: no conversion */
        PyArrayObject *a = (PyArrayObject *)tab[i];
        if (!PyArray_Check(tab[i]) || PyArray_TYPE(a) != NPY_INT64 || PyArray_NDIM(a) != 1
            || !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISWRITEABLE(a)
            || PyArray_DIM(a, 0) != ((npy_intp)1 << bits)) {
            PyErr_SetString(PyExc_ValueError, "hash table arrays: writable int64 of 2**bits");
            return -1;
        }
        Py_INCREF(tab[i]);
        *ktab[i] = a;
    }
    if (PyArray_DIM(h->k2, 0) != PyArray_DIM(h->k1, 0)) {
        PyErr_SetString(PyExc_ValueError, "hash keys do not match");
        return -1;
    }
    return 0;
}

static void hash_release(HashArgs *h)
{
    Py_XDECREF(h->k1);
    Py_XDECREF(h->k2);
    Py_XDECREF(h->t1);
    Py_XDECREF(h->t2);
    Py_XDECREF(h->tv);
}

static PyObject *hash_lookup(PyObject *self, PyObject *args)
{
    PyObject *k1, *k2, *t1, *t2, *tv;
    int bits;
    if (!PyArg_ParseTuple(args, "OOOOOi", &k1, &k2, &t1, &t2, &tv, &bits))
        return NULL;
    HashArgs h = {0};
    PyArrayObject *out = NULL;
    if (hash_parse(k1, k2, t1, t2, tv, bits, &h) < 0)
        goto done;
    int64_t n = PyArray_DIM(h.k1, 0), mask = ((int64_t)1 << bits) - 1;
    const int64_t *a = PyArray_DATA(h.k1), *b = PyArray_DATA(h.k2);
    const int64_t *T1 = PyArray_DATA(h.t1), *T2 = PyArray_DATA(h.t2), *TV = PyArray_DATA(h.tv);
    out = new_i64(n);
    if (out == NULL)
        goto done;
    int64_t *o = PyArray_DATA(out);
    for (int64_t i = 0; i < n; i++) {
        int64_t s = (int64_t)((uint64_t)a[i] >> (64 - bits));
        o[i] = -1;
        while (TV[s] != -1) {
            if (T1[s] == a[i] && T2[s] == b[i]) {
                o[i] = TV[s];
                break;
            }
            s = (s + 1) & mask;
        }
    }
done:
    hash_release(&h);
    return (PyObject *)out;
}

static PyObject *hash_insert(PyObject *self, PyObject *args)
{
    PyObject *k1, *k2, *v, *t1, *t2, *tv;
    int bits;
    if (!PyArg_ParseTuple(args, "OOOOOOi", &k1, &k2, &v, &t1, &t2, &tv, &bits))
        return NULL;
    HashArgs h = {0};
    PyArrayObject *va = NULL;
    PyObject *res = NULL;
    if (hash_parse(k1, k2, t1, t2, tv, bits, &h) < 0)
        goto done;
    if ((va = as_array(v, NPY_INT64, 1)) == NULL)
        goto done;
    int64_t n = PyArray_DIM(h.k1, 0), mask = ((int64_t)1 << bits) - 1, added = 0;
    if (PyArray_DIM(va, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "hash keys and values do not match");
        goto done;
    }
    const int64_t *a = PyArray_DATA(h.k1), *b = PyArray_DATA(h.k2), *V = PyArray_DATA(va);
    int64_t *T1 = PyArray_DATA(h.t1), *T2 = PyArray_DATA(h.t2), *TV = PyArray_DATA(h.tv);
    for (int64_t i = 0; i < n; i++) {
        int64_t s = (int64_t)((uint64_t)a[i] >> (64 - bits));
        while (TV[s] != -1 && !(T1[s] == a[i] && T2[s] == b[i]))
            s = (s + 1) & mask;
        added += TV[s] == -1;
        T1[s] = a[i];
        T2[s] = b[i];
        TV[s] = V[i];
    }
    res = PyLong_FromLongLong(added);
done:
    Py_XDECREF(va);
    hash_release(&h);
    return res;
}

static PyMethodDef methods[] = {
    {"join_rows", join_rows, METH_VARARGS,
     "join_rows(L, okl, R, okr, bits, left_outer) -> (li, ri)"},
    {"member_rows", member_rows, METH_VARARGS, "member_rows(L, okl, R, okr, bits) -> bool[]"},
    {"factorize_rows", factorize_rows, METH_VARARGS, "factorize_rows(M, bits) -> (gid, first)"},
    {"hash_lookup", hash_lookup, METH_VARARGS, "hash_lookup(k1, k2, t1, t2, tv, bits) -> ids"},
    {"hash_insert", hash_insert, METH_VARARGS,
     "hash_insert(k1, k2, v, t1, t2, tv, bits) -> number of new keys"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, HK_STR(HK_NAME),
                                    "hypo's row kernels (kernels.py)", -1, methods};

PyMODINIT_FUNC HK_CAT(PyInit_, HK_NAME)(void)
{
    import_array();
    return PyModule_Create(&module);
}
