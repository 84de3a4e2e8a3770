/* The arrays executor's row kernels (kernels.py) in C: hash join, membership and
 * factorisation over keys (a key matrix, one int64 row of key values per table row, or the
 * key columns themselves: no matrix is built), and the
 * 128-bit-hash -> id index of kernels.HashIndex.  Built by setup.py at install time as the
 * extension reasoning.native._ckernels (importing it costs ~1 ms).  Each side's
 * row hashes are computed first, a column at a time; a slot keeps its row's hash, compared
 * before the keys, and the probe prefetches the slots of the rows ahead: 1.4-1.6x faster
 * than hashing and comparing row by row on 5·10^4-row sides (measured against that). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* the key of each row of a table: k int64 columns, given as a key matrix (n x k, C order)
 * or as a sequence of k columns; ok: NULL (every row) or a bool per row (False: a null key
 * that matches nothing) */
#define MAX_KEYS 64
typedef struct {
    int64_t n, k;
    const int64_t *col[MAX_KEYS];
    int64_t stride[MAX_KEYS];
    PyArrayObject *hold[MAX_KEYS + 1];
    int nhold;
    const npy_bool *ok;
} Keys;

static void keys_release(Keys *t)
{
    for (int i = 0; i < t->nhold; i++)
        Py_DECREF(t->hold[i]);
    t->nhold = 0;
}

static int keys_parse(PyObject *obj, PyObject *ok, Keys *t)
{
    t->nhold = 0;
    t->ok = NULL;
    if (PyArray_Check(obj) && PyArray_NDIM((PyArrayObject *)obj) == 2) {
        PyArrayObject *M = as_array(obj, NPY_INT64, 2);
        if (M == NULL)
            return -1;
        t->hold[t->nhold++] = M;
        t->n = PyArray_DIM(M, 0);
        t->k = PyArray_DIM(M, 1);
        if (t->k > MAX_KEYS) {
            PyErr_Format(PyExc_ValueError, "more than %d key columns", MAX_KEYS);
            return -1;
        }
        for (int64_t c = 0; c < t->k; c++) {
            t->col[c] = (const int64_t *)PyArray_DATA(M) + c;
            t->stride[c] = t->k;
        }
    } else {
        PyObject *seq = PySequence_Fast(obj, "keys: a key matrix or a sequence of columns");
        if (seq == NULL)
            return -1;
        Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
        if (k < 1 || k > MAX_KEYS) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "1 to %d key columns, got %zd", MAX_KEYS, k);
            return -1;
        }
        t->k = k;
        for (Py_ssize_t c = 0; c < k; c++) {
            PyArrayObject *a = as_array(PySequence_Fast_GET_ITEM(seq, c), NPY_INT64, 1);
            if (a == NULL) {
                Py_DECREF(seq);
                return -1;
            }
            t->hold[t->nhold++] = a;
            if (c == 0)
                t->n = PyArray_DIM(a, 0);
            else if (PyArray_DIM(a, 0) != t->n) {
                Py_DECREF(seq);
                PyErr_SetString(PyExc_ValueError, "key columns of different lengths");
                return -1;
            }
            t->col[c] = PyArray_DATA(a);
            t->stride[c] = 1;
        }
        Py_DECREF(seq);
    }
    if (ok != Py_None) {
        PyArrayObject *o = as_array(ok, NPY_BOOL, 1);
        if (o == NULL)
            return -1;
        t->hold[t->nhold++] = o;
        if (PyArray_DIM(o, 0) != t->n) {
            PyErr_SetString(PyExc_ValueError, "keys and their mask do not match");
            return -1;
        }
        t->ok = PyArray_DATA(o);
    }
    return 0;
}

#define KEY(t, c, i) ((t)->col[c][(i) * (t)->stride[c]])
#define ROW_OK(t, i) ((t)->ok == NULL || (t)->ok[i])

/* scratch memory reused across calls (the GIL is held throughout): a fresh malloc of a
 * large block may be a fresh mmap, whose first touch page-faults */
#define N_SCRATCH 5  /* 0 first, 1 nxt, 2 and 3 the row hashes, 4 the table */
#define SCRATCH_KEEP ((size_t)16 << 20)  /* larger blocks are returned after the call */
static void *scratch_mem[N_SCRATCH];
static size_t scratch_size[N_SCRATCH];

static void *scratch(int i, size_t bytes)
{
    if (bytes == 0)
        bytes = 8;
    if (scratch_size[i] < bytes) {
        free(scratch_mem[i]);
        scratch_mem[i] = malloc(bytes);
        scratch_size[i] = scratch_mem[i] ? bytes : 0;
    }
    return scratch_mem[i];
}

static void scratch_trim(void)
{
    for (int i = 0; i < N_SCRATCH; i++)
        if (scratch_size[i] > SCRATCH_KEEP) {
            free(scratch_mem[i]);
            scratch_mem[i] = NULL;
            scratch_size[i] = 0;
        }
}

/* every row's 64-bit hash: its values mixed column by column (a sequential pass over each
 * key column), then splitmix64's finaliser; a row that is not ok hashes as any other */
static uint64_t *row_hashes(const Keys *t, int buf)
{
    int64_t n = t->n;
    uint64_t *h = scratch(buf, sizeof(uint64_t) * n);
    if (h == NULL)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        h[i] = 0x9E3779B97F4A7C15ULL;
    for (int64_t c = 0; c < t->k; c++) {
        const int64_t *col = t->col[c];
        int64_t st = t->stride[c];
        if (st == 1) {
            for (int64_t i = 0; i < n; i++) {
                uint64_t x = (h[i] ^ (uint64_t)col[i]) * 0xBF58476D1CE4E5B9ULL;
                h[i] = x ^ (x >> 31);
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                uint64_t x = (h[i] ^ (uint64_t)col[i * st]) * 0xBF58476D1CE4E5B9ULL;
                h[i] = x ^ (x >> 31);
            }
        }
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = h[i];
        x ^= x >> 30;
        x *= 0x94D049BB133111EBULL;
        x ^= x >> 31;
        h[i] = x;
    }
    return h;
}

static inline int rows_equal(const Keys *a, int64_t i, const Keys *b, int64_t j)
{
    for (int64_t c = 0; c < a->k; c++)
        if (KEY(a, c, i) != KEY(b, c, j))
            return 0;
    return 1;
}

/* an open-addressing slot: a row's hash and the row (-1: empty) */
typedef struct {
    uint64_t hv;
    int64_t row;
} Slot;

#define SLOT_OF(h, bits) ((int64_t)((h) >> (64 - (bits))))
#define PREFETCH_AHEAD 8

/* the table over R's rows: slot -> first row of its key; nxt chains equal rows (row
 * order); *dup: whether any key has two rows */
static Slot *build_rows(const Keys *R, const uint64_t *hR, int bits, int64_t *nxt, int *dup)
{
    int64_t cap = (int64_t)1 << bits, mask = cap - 1;
    Slot *tab = scratch(4, sizeof(Slot) * cap);
    if (tab == NULL)
        return NULL;
    for (int64_t s = 0; s < cap; s++)
        tab[s].row = -1;
    int d = 0;
    for (int64_t j = R->n - 1; j >= 0; j--) {
        nxt[j] = -1;
        if (!ROW_OK(R, j))
            continue;
        uint64_t h = hR[j];
        int64_t s = SLOT_OF(h, bits);
        while (tab[s].row != -1 && !(tab[s].hv == h && rows_equal(R, tab[s].row, R, j)))
            s = (s + 1) & mask;
        nxt[j] = tab[s].row;
        d |= nxt[j] != -1;
        tab[s].hv = h;
        tab[s].row = j;
    }
    *dup = d;
    return tab;
}

/* per row of L: the first row of R equal to it (-1: none); the slots of the rows ahead are
 * prefetched (the table is larger than the caches for 10^5-row sides) */
static void probe_rows(const Keys *L, const uint64_t *hL, const Keys *R, const Slot *tab,
                       int bits, int64_t *out)
{
    int64_t mask = ((int64_t)1 << bits) - 1, n = L->n;
    for (int64_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n)
            __builtin_prefetch(&tab[SLOT_OF(hL[i + PREFETCH_AHEAD], bits)]);
        out[i] = -1;
        if (!ROW_OK(L, i))
            continue;
        uint64_t h = hL[i];
        int64_t s = SLOT_OF(h, bits);
        while (tab[s].row != -1) {
            if (tab[s].hv == h && rows_equal(R, tab[s].row, L, i)) {
                out[i] = tab[s].row;
                break;
            }
            s = (s + 1) & mask;
        }
    }
}

/* the parsed (L, okl, R, okr) of join_rows / member_rows; first[i]: L's row i's first match
 * in R, nxt: R's chains, dup: whether R has a repeated key */
typedef struct {
    Keys L, R;
    int64_t *first, *nxt;
    int dup;
} Sides;

static void sides_release(Sides *s)
{
    keys_release(&s->L);
    keys_release(&s->R);
    scratch_trim();
}

static int sides_match(PyObject *L, PyObject *okl, PyObject *R, PyObject *okr, int bits,
                       Sides *s)
{
    s->first = s->nxt = NULL;
    s->L.nhold = s->R.nhold = 0;
    s->dup = 0;
    if (keys_parse(L, okl, &s->L) < 0 || keys_parse(R, okr, &s->R) < 0)
        return -1;
    if (s->L.k != s->R.k) {
        PyErr_SetString(PyExc_ValueError, "the two sides' keys have different widths");
        return -1;
    }
    s->first = scratch(0, sizeof(int64_t) * s->L.n);
    s->nxt = scratch(1, sizeof(int64_t) * s->R.n);
    uint64_t *hR = NULL, *hL = NULL;
    Slot *tab = NULL;
    if (s->first && s->nxt && (hR = row_hashes(&s->R, 2)) != NULL &&
        (hL = row_hashes(&s->L, 3)) != NULL)
        tab = build_rows(&s->R, hR, bits, s->nxt, &s->dup);
    if (tab == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    probe_rows(&s->L, hL, &s->R, tab, bits, s->first);
    return 0;
}

static PyObject *join_rows(PyObject *self, PyObject *args)
{
    PyObject *L, *okl, *R, *okr;
    int bits, left_outer;
    if (!PyArg_ParseTuple(args, "OOOOip", &L, &okl, &R, &okr, &bits, &left_outer))
        return NULL;
    Sides s;
    PyObject *res = NULL;
    PyArrayObject *li = NULL, *ri = NULL;
    if (sides_match(L, okl, R, okr, bits, &s) < 0)
        goto done;
    const int64_t *first = s.first, *nxt = s.nxt;
    /* R's chains: followed only when R repeats a key (else each has one row) */
#define NEXT(j) (s.dup ? nxt[j] : -1)
    int64_t m = 0, n = s.L.n;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = first[i];
        if (j == -1) {
            m += left_outer;
            continue;
        }
        for (; j != -1; j = NEXT(j))
            m++;
    }
    li = new_i64(m);
    ri = li ? new_i64(m) : NULL;
    if (ri == NULL)
        goto done;
    int64_t *pl = PyArray_DATA(li), *pr = PyArray_DATA(ri);
    m = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = first[i];
        if (j == -1) {
            if (left_outer) {
                pl[m] = i;
                pr[m++] = -1;
            }
            continue;
        }
        for (; j != -1; j = NEXT(j)) {
            pl[m] = i;
            pr[m++] = j;
        }
    }
#undef NEXT
    res = PyTuple_Pack(2, (PyObject *)li, (PyObject *)ri);
done:
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
    Sides s;
    PyObject *res = NULL;
    if (sides_match(L, okl, R, okr, bits, &s) < 0)
        goto done;
    npy_intp n = s.L.n;
    res = PyArray_SimpleNew(1, &n, NPY_BOOL);
    if (res == NULL)
        goto done;
    npy_bool *out = PyArray_DATA((PyArrayObject *)res);
    for (int64_t i = 0; i < s.L.n; i++)
        out[i] = s.first[i] != -1;
done:
    sides_release(&s);
    return res;
}

static PyObject *factorize_rows(PyObject *self, PyObject *args)
{
    PyObject *Mo;
    int bits;
    if (!PyArg_ParseTuple(args, "Oi", &Mo, &bits))
        return NULL;
    Keys t;
    Slot *table = NULL;
    int64_t *first = NULL;
    uint64_t *hv = NULL;
    PyArrayObject *gid = NULL, *fa = NULL;
    PyObject *res = NULL;
    if (PyArray_Check(Mo) && PyArray_NDIM((PyArrayObject *)Mo) != 2) {
        t.nhold = 0;
        PyErr_SetString(PyExc_ValueError, "expected a key matrix or a sequence of columns");
        goto done;
    }
    if (keys_parse(Mo, Py_None, &t) < 0)
        goto done;
    int64_t n = t.n, cap = (int64_t)1 << bits, mask = cap - 1;
    table = scratch(4, sizeof(Slot) * cap);  /* slot -> (hash, first row of its group) */
    first = scratch(0, sizeof(int64_t) * n);
    hv = row_hashes(&t, 2);
    if (table == NULL || first == NULL || hv == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    gid = new_i64(n);
    if (gid == NULL)
        goto done;
    int64_t *g_of = PyArray_DATA(gid);
    for (int64_t s = 0; s < cap; s++)
        table[s].row = -1;
    int64_t g = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n)
            __builtin_prefetch(&table[SLOT_OF(hv[i + PREFETCH_AHEAD], bits)]);
        uint64_t h = hv[i];
        int64_t s = SLOT_OF(h, bits);
        while (table[s].row != -1 && !(table[s].hv == h && rows_equal(&t, table[s].row, &t, i)))
            s = (s + 1) & mask;
        if (table[s].row == -1) {
            table[s].hv = h;
            table[s].row = i;
            first[g] = i;
            g_of[i] = g++;
        } else {
            g_of[i] = g_of[table[s].row];
        }
    }
    fa = new_i64(g);
    if (fa == NULL)
        goto done;
    int64_t *pf = PyArray_DATA(fa);
    for (int64_t i = 0; i < g; i++)
        pf[i] = first[i];
    res = PyTuple_Pack(2, (PyObject *)gid, (PyObject *)fa);
done:
    scratch_trim();
    Py_XDECREF(gid);
    Py_XDECREF(fa);
    keys_release(&t);
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

/* ------------------------------------------------------------------ stream lines
 * scan_facts(lines, max_line, exact) -> None | (ticks, ts, pred_ids, preds, nargs, flat, dx)
 * The fields of a block of stream lines when every one is written exactly as json.dumps
 * writes a canonical fact line (stream._BLOCK_EXACT:
 *   {"tick": N, "fact": "Pred(a1, ..., an, T)"}  with an optional "\n"),
 * None as soon as one is not (or is longer than max_line characters): the caller parses
 * that block the general way.  ticks: int64 per line; ts: the last argument as int64 when
 * it is 1-18 digits, else -1; pred_ids: int32 index into preds (the names, in order of
 * first appearance); nargs: int32, the arguments before the last; flat: those arguments'
 * texts, line after line; dx: int64, exact[`Pred(a1,...,an`] for a line whose ts < tick
 * when that key is in the dict `exact`, else -1. */
static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

#define SCAN_MAX_PREDS 64

static PyObject *scan_facts(PyObject *self, PyObject *args)
{
    PyObject *lines, *exact;
    Py_ssize_t max_line;
    if (!PyArg_ParseTuple(args, "O!nO!", &PyList_Type, &lines, &max_line, &PyDict_Type,
                          &exact))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(lines);
    int use_exact = PyDict_GET_SIZE(exact) > 0;
    PyArrayObject *ticks = new_i64(n), *ts = new_i64(n), *dx = new_i64(n);
    npy_intp dims[1] = {n};
    PyArrayObject *pid = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT32);
    PyArrayObject *na = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT32);
    PyObject *preds = PyList_New(0), *flat = PyList_New(0), *res = NULL;
    const char *pname[SCAN_MAX_PREDS];
    Py_ssize_t plen[SCAN_MAX_PREDS];
    int np_ = 0, last = -1;
    char *kbuf = NULL;
    Py_ssize_t kcap = 0;
    if (!ticks || !ts || !dx || !pid || !na || !preds || !flat)
        goto fail;
    int64_t *TK = (int64_t *)PyArray_DATA(ticks), *TS = (int64_t *)PyArray_DATA(ts),
            *DX = (int64_t *)PyArray_DATA(dx);
    int32_t *PI = (int32_t *)PyArray_DATA(pid), *NA = (int32_t *)PyArray_DATA(na);
    static const char head[] = "{\"tick\": ";
    static const char mid[] = ", \"fact\": \"";
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_GET_ITEM(lines, i);
        if (!PyUnicode_Check(o) || !PyUnicode_IS_COMPACT_ASCII(o))
            goto none;
        Py_ssize_t len = PyUnicode_GET_LENGTH(o);
        if (len > max_line)
            goto none;
        const char *s = (const char *)PyUnicode_DATA(o);
        const char *e = s + len;
        if (e > s && e[-1] == '\n')
            e--;
        const char *p = s;
        if (e - p < 9 || memcmp(p, head, 9) != 0)
            goto none;
        p += 9;
        /* the tick: 0 or [1-9][0-9]{0,17} */
        const char *q = p;
        while (q < e && is_digit(*q))
            q++;
        if (q == p || q - p > 18 || (*p == '0' && q - p > 1))
            goto none;
        int64_t tk = 0;
        for (const char *r = p; r < q; r++)
            tk = tk * 10 + (*r - '0');
        p = q;
        if (e - p < 11 || memcmp(p, mid, 11) != 0)
            goto none;
        p += 11;
        /* the predicate: [A-Za-z][A-Za-z0-9_]* then "(" */
        q = p;
        if (q >= e || !((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
            goto none;
        while (q < e && is_word(*q))
            q++;
        if (q >= e || *q != '(')
            goto none;
        Py_ssize_t pl = q - p;
        int k = -1;
        if (last >= 0 && plen[last] == pl && memcmp(pname[last], p, pl) == 0)
            k = last;
        else {
            for (int j = 0; j < np_; j++)
                if (plen[j] == pl && memcmp(pname[j], p, pl) == 0) {
                    k = j;
                    break;
                }
            if (k < 0) {
                if (np_ == SCAN_MAX_PREDS)
                    goto none;
                PyObject *nm = PyUnicode_FromStringAndSize(p, pl);
                if (nm == NULL || PyList_Append(preds, nm) < 0) {
                    Py_XDECREF(nm);
                    goto fail;
                }
                Py_DECREF(nm);
                pname[np_] = p; /* (the line outlives the scan: lines holds it) */
                plen[np_] = pl;
                k = np_++;
            }
        }
        last = k;
        const char *pstart = p;
        p = q + 1;
        /* the arguments: ID (", " ID)* then ')"}' ; ID = [a-z][A-Za-z0-9_]* | [0-9]+ */
        if (e - p < 3 || memcmp(e - 3, ")\"}", 3) != 0)
            goto none;
        const char *end = e - 3;
        int cnt = 0;
        const char *a0 = NULL, *a1 = NULL;
        for (;;) {
            q = p;
            if (q < end && is_lower(*q)) {
                q++;
                while (q < end && is_word(*q))
                    q++;
            }
            else if (q < end && is_digit(*q)) {
                while (q < end && is_digit(*q))
                    q++;
            }
            else
                goto none;
            if (q == end) {
                a0 = p;
                a1 = q;
                break;
            }
            if (end - q < 2 || q[0] != ',' || q[1] != ' ')
                goto none;
            PyObject *v = PyUnicode_New(q - p, 127);
            if (v == NULL)
                goto fail;
            memcpy(PyUnicode_DATA(v), p, q - p);
            if (PyList_Append(flat, v) < 0) {
                Py_DECREF(v);
                goto fail;
            }
            Py_DECREF(v);
            cnt++;
            p = q + 2;
        }
        /* the last argument: the time, when 1-18 digits */
        int64_t t = -1;
        if (a1 - a0 <= 18 && is_digit(*a0)) {
            t = 0;
            for (const char *r = a0; r < a1; r++) {
                if (!is_digit(*r)) {
                    t = -1;
                    break;
                }
                t = t * 10 + (*r - '0');
            }
        }
        TK[i] = tk;
        TS[i] = t;
        PI[i] = k;
        NA[i] = cnt;
        DX[i] = -1;
        if (use_exact && t >= 0 && t < tk) {
            /* the key `Pred(a1,...,an` of Delays.exact: the arguments joined by "," */
            Py_ssize_t need = a0 - pstart;
            if (need > kcap) {
                char *nb = realloc(kbuf, need);
                if (nb == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                kbuf = nb;
                kcap = need;
            }
            Py_ssize_t m = 0;
            for (const char *r = pstart; r < a0; r++) {
                if (*r == ' ' && r > pstart && r[-1] == ',')
                    continue;
                kbuf[m++] = *r;
            }
            if (m > 0 && kbuf[m - 1] == ',')
                m--; /* (no trailing comma: `Pred(a1,a2`; `Pred(` for no argument) */
            PyObject *key = PyUnicode_FromStringAndSize(kbuf, m);
            if (key == NULL)
                goto fail;
            PyObject *got = PyDict_GetItemWithError(exact, key);
            Py_DECREF(key);
            if (got == NULL && PyErr_Occurred())
                goto fail;
            if (got != NULL) {
                long long d = PyLong_AsLongLong(got);
                if (d == -1 && PyErr_Occurred())
                    goto fail;
                DX[i] = d;
            }
        }
    }
    res = Py_BuildValue("(OOOOOOO)", ticks, ts, pid, preds, na, flat, dx);
    goto fail; /* (releases the references the tuple now holds) */
none:
    res = Py_None;
    Py_INCREF(res);
fail:
    free(kbuf);
    Py_XDECREF(ticks);
    Py_XDECREF(ts);
    Py_XDECREF(dx);
    Py_XDECREF(pid);
    Py_XDECREF(na);
    Py_XDECREF(preds);
    Py_XDECREF(flat);
    return res;
}

/* ------------------------------------------------------------------ row formatter
 * format_rows(spec, scols, icols, vals, ev, dl, dlnull, tick, ng, lists)
 *     -> None | (skeys, lines, akeys, sts)
 * The text bodies of rows.py-style plain rows, rowformat.compile_row_program's spec run a
 * row at a time (the same bytes as the compiled Python formatter, tested against it):
 *   spec = (lits, outs, statuses, names): lits a tuple of programs (one a literal of the
 *   template), outs the programs of the sort key, line and answer key, statuses the
 *   (pending, hypothetical, definite) str objects; a program is a tuple of items
 *   (kind, a, b): 0 static text a; 1 string column a; 2 int column a plus b; 4 the
 *   deadline (null when dlnull); 5 the status; 6 the evidence list; 7 the hypotheses list;
 *   8 the tick; 10 the exclusions' object, 11 the answer key's exclusion items
 *   (rowformat.exclusions: names is a tuple of (JSON of the printed name, variable) sorted
 *   by name; ng the rows' nogood-list ids into lists, whose entries hold string ids — a
 *   tuple of ints, or an int64 array — of `v:c` texts, sorted and distinct, single-variable
 *   and bare: else None).
 * scols: int64 arrays of ids into vals (the interned strings); icols: int64 arrays; ev,
 * dl: int64 arrays; dlnull: bool array.  The evidence is the literals of the row's mask
 * (bit j: literal j), sorted and distinct; the hypotheses the others' texts less those.
 * None when a string is null or not bare ([a-z][A-Za-z0-9_]* or -?[0-9]+): the caller
 * renders those rows another way. */
typedef struct {
    char *p;
    Py_ssize_t n, cap;
} fbuf;

static int fb_grow(fbuf *b, Py_ssize_t n)
{
    Py_ssize_t c = b->cap ? b->cap : 1024;
    while (c < b->n + n)
        c *= 2;
    char *q = realloc(b->p, c);
    if (q == NULL)
        return -1;
    b->p = q;
    b->cap = c;
    return 0;
}

static inline int fb_put(fbuf *b, const char *s, Py_ssize_t n)
{
    if (b->n + n > b->cap && fb_grow(b, n) < 0)
        return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

static const char DIGIT_PAIRS[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline int fb_int(fbuf *b, long long v)
{
    char tmp[24];
    int i = 24;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    while (u >= 100) { /* two digits a step */
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        tmp[--i] = DIGIT_PAIRS[d + 1];
        tmp[--i] = DIGIT_PAIRS[d];
    }
    if (u >= 10) {
        unsigned d = (unsigned)u * 2;
        tmp[--i] = DIGIT_PAIRS[d + 1];
        tmp[--i] = DIGIT_PAIRS[d];
    }
    else
        tmp[--i] = (char)('0' + u);
    if (v < 0)
        tmp[--i] = '-';
    return fb_put(b, tmp + i, 24 - i);
}

static int bare_text(const char *s, Py_ssize_t n)
{
    if (n == 0)
        return 0;
    if (is_lower(s[0])) {
        for (Py_ssize_t i = 1; i < n; i++)
            if (!is_word(s[i]))
                return 0;
        return 1;
    }
    Py_ssize_t i = s[0] == '-';
    if (i == n)
        return 0;
    for (; i < n; i++)
        if (!is_digit(s[i]))
            return 0;
    return 1;
}

#define FMT_MAX_LITS 16
#define FMT_MAX_COLS 32

typedef struct {
    int kind;
    Py_ssize_t a;
    long long b;
    const char *text;
    Py_ssize_t tlen;
} fitem;

typedef struct {
    fitem *it;
    Py_ssize_t n;
} fprog;

static int parse_prog(PyObject *t, fprog *out)
{
    if (!PyTuple_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "a program is a tuple");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    out->it = calloc(n ? n : 1, sizeof(fitem));
    out->n = n;
    if (out->it == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(t, i);
        if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) != 3) {
            PyErr_SetString(PyExc_TypeError, "an item is (kind, a, b)");
            return -1;
        }
        fitem *f = &out->it[i];
        f->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(x, 0));
        if (f->kind == 0) {
            PyObject *a = PyTuple_GET_ITEM(x, 1);
            if (!PyUnicode_Check(a) || !PyUnicode_IS_COMPACT_ASCII(a)) {
                PyErr_SetString(PyExc_ValueError, "a static text is an ASCII str");
                return -1;
            }
            f->text = (const char *)PyUnicode_DATA(a);
            f->tlen = PyUnicode_GET_LENGTH(a);
        }
        else {
            f->a = PyLong_AsSsize_t(PyTuple_GET_ITEM(x, 1));
            f->b = PyLong_AsLongLong(PyTuple_GET_ITEM(x, 2));
        }
        if (PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* the texts of literals idx[0..k) (offsets lo/ln into lb) sorted, distinct, less those
 * equal to a text of ex[0..ke), as a JSON list */
static int put_list(fbuf *b, const char *lb, const Py_ssize_t *lo, const Py_ssize_t *ln,
                    int *idx, int k, const int *ex, int ke)
{
    for (int i = 1; i < k; i++) { /* insertion sort by text */
        int x = idx[i], j = i - 1;
        while (j >= 0) {
            int y = idx[j];
            Py_ssize_t m = ln[x] < ln[y] ? ln[x] : ln[y];
            int c = memcmp(lb + lo[x], lb + lo[y], m);
            if (c > 0 || (c == 0 && ln[x] >= ln[y]))
                break;
            idx[j + 1] = y;
            j--;
        }
        idx[j + 1] = x;
    }
    if (fb_put(b, "[", 1) < 0)
        return -1;
    int first = 1;
    for (int i = 0; i < k; i++) {
        int x = idx[i];
        if (i > 0 && ln[x] == ln[idx[i - 1]] &&
            memcmp(lb + lo[x], lb + lo[idx[i - 1]], ln[x]) == 0)
            continue;
        int skip = 0;
        for (int j = 0; j < ke && !skip; j++)
            skip = ln[ex[j]] == ln[x] && memcmp(lb + lo[ex[j]], lb + lo[x], ln[x]) == 0;
        if (skip)
            continue;
        if ((!first && fb_put(b, ", ", 2) < 0) || fb_put(b, "\"", 1) < 0 ||
            fb_put(b, lb + lo[x], ln[x]) < 0 || fb_put(b, "\"", 1) < 0)
            return -1;
        first = 0;
    }
    return fb_put(b, "]", 1);
}

#define FMT_MAX_NAMES 32

/* the exclusions of a row (rowformat.exclusions) into xo (the object) and xk (the answer
 * key's items): 0, -1 (memory), or 1 when the row's list is not what this prints */
static int put_exclusions(fbuf *xo, fbuf *xk, PyObject *entry, PyObject *vals,
                          Py_ssize_t nvals, int nn, const char **jn, const Py_ssize_t *jl,
                          const long *jv)
{
    xo->n = xk->n = 0;
    Py_ssize_t m = 0;
    const int64_t *arr = NULL;
    if (PyTuple_Check(entry))
        m = PyTuple_GET_SIZE(entry);
    else if (PyArray_Check(entry) && PyArray_TYPE((PyArrayObject *)entry) == NPY_INT64 &&
             PyArray_NDIM((PyArrayObject *)entry) == 1 &&
             PyArray_IS_C_CONTIGUOUS((PyArrayObject *)entry)) {
        m = PyArray_DIM((PyArrayObject *)entry, 0);
        arr = (const int64_t *)PyArray_DATA((PyArrayObject *)entry);
    }
    else
        return 1;
    if (m == 0)
        return fb_put(xo, "{}", 2);
    Py_ssize_t rs[FMT_MAX_NAMES], re[FMT_MAX_NAMES];
    for (int j = 0; j < nn; j++)
        rs[j] = re[j] = -1;
    const char *pt = NULL;
    Py_ssize_t pn = 0;
    int cur = -1;
    for (Py_ssize_t i = 0; i < m; i++) {
        long long id;
        if (arr != NULL)
            id = arr[i];
        else {
            PyObject *x = PyTuple_GET_ITEM(entry, i);
            if (!PyLong_Check(x))
                return 1;
            id = PyLong_AsLongLong(x);
            if (id == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 1;
            }
        }
        if (id < 0 || id >= nvals)
            return 1;
        PyObject *v = PyList_GET_ITEM(vals, id);
        if (!PyUnicode_Check(v) || !PyUnicode_IS_COMPACT_ASCII(v))
            return 1;
        const char *t = (const char *)PyUnicode_DATA(v);
        Py_ssize_t tn = PyUnicode_GET_LENGTH(v);
        if (pt != NULL) { /* strictly increasing: sorted and distinct */
            Py_ssize_t k = pn < tn ? pn : tn;
            int c = memcmp(pt, t, k);
            if (c > 0 || (c == 0 && pn >= tn))
                return 1;
        }
        pt = t;
        pn = tn;
        Py_ssize_t d = 0;
        long var = 0;
        while (d < tn && is_digit(t[d]) && d < 9)
            var = var * 10 + (t[d++] - '0');
        if (d == 0 || d >= tn || t[d] != ':' || !bare_text(t + d + 1, tn - d - 1))
            return 1;
        if (cur < 0 || jv[cur] != var) {
            cur = -1;
            for (int j = 0; j < nn; j++)
                if (jv[j] == var) {
                    cur = j;
                    break;
                }
            if (cur < 0 || rs[cur] >= 0)
                return 1; /* a variable not printed, or its run split (not sorted) */
            rs[cur] = i;
        }
        re[cur] = i + 1;
    }
    int first = 1;
    if (fb_put(xo, "{", 1) < 0)
        return -1;
    for (int j = 0; j < nn; j++) {
        if (rs[j] < 0)
            continue;
        Py_ssize_t at = xo->n;
        if ((!first && fb_put(xo, ", ", 2) < 0) || fb_put(xo, jn[j], jl[j]) < 0 ||
            fb_put(xo, ": [", 3) < 0)
            return -1;
        for (Py_ssize_t i = rs[j]; i < re[j]; i++) {
            long long id = arr != NULL ? arr[i] : PyLong_AsLongLong(PyTuple_GET_ITEM(entry, i));
            PyObject *v = PyList_GET_ITEM(vals, id);
            const char *t = (const char *)PyUnicode_DATA(v);
            Py_ssize_t tn = PyUnicode_GET_LENGTH(v), d = 0;
            while (t[d] != ':')
                d++;
            if ((i > rs[j] && fb_put(xo, ", ", 2) < 0) || fb_put(xo, "\"", 1) < 0 ||
                fb_put(xo, t + d + 1, tn - d - 1) < 0 || fb_put(xo, "\"", 1) < 0)
                return -1;
        }
        if (fb_put(xo, "]", 1) < 0)
            return -1;
        /* the answer key's item: [name, [...]] (the same list text) */
        Py_ssize_t li = at + (first ? 0 : 2) + jl[j] + 2;
        if ((!first && fb_put(xk, ", ", 2) < 0) || fb_put(xk, "[", 1) < 0 ||
            fb_put(xk, jn[j], jl[j]) < 0 || fb_put(xk, ", ", 2) < 0 ||
            fb_put(xk, xo->p + li, xo->n - li) < 0 || fb_put(xk, "]", 1) < 0)
            return -1;
        first = 0;
    }
    return fb_put(xo, "}", 1);
}

static PyObject *format_rows(PyObject *self, PyObject *args)
{
    PyObject *spec, *scols, *icols, *vals, *evo, *dlo, *dno, *ngo, *lists;
    long long tick;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOOLOO", &PyTuple_Type, &spec, &PyTuple_Type, &scols,
                          &PyTuple_Type, &icols, &PyList_Type, &vals, &evo, &dlo, &dno, &tick,
                          &ngo, &lists))
        return NULL;
    PyObject *res = NULL, *outl[4] = {NULL, NULL, NULL, NULL};
    PyArrayObject *sa[FMT_MAX_COLS] = {0}, *ia[FMT_MAX_COLS] = {0};
    PyArrayObject *eva = NULL, *dla = NULL, *dna = NULL, *nga = NULL;
    fprog lits[FMT_MAX_LITS], outs[3];
    int nl = 0, no = 0;
    fbuf lb = {0}, ob = {0}, eb = {0}, xo = {0}, xk = {0};
    const char *jn[FMT_MAX_NAMES];
    Py_ssize_t jl[FMT_MAX_NAMES];
    long jv[FMT_MAX_NAMES];
    int nn = -1; /* names: -1 none (the program prints no exclusions) */
    Py_ssize_t ns = PyTuple_GET_SIZE(scols), ni = PyTuple_GET_SIZE(icols);
    if (PyTuple_GET_SIZE(spec) != 4 || ns > FMT_MAX_COLS || ni > FMT_MAX_COLS) {
        PyErr_SetString(PyExc_ValueError, "format_rows: bad spec or too many columns");
        return NULL;
    }
    PyObject *tl = PyTuple_GET_ITEM(spec, 0), *to = PyTuple_GET_ITEM(spec, 1),
             *tst = PyTuple_GET_ITEM(spec, 2);
    if (!PyTuple_Check(tl) || !PyTuple_Check(to) || PyTuple_GET_SIZE(to) != 3 ||
        !PyTuple_Check(tst) || PyTuple_GET_SIZE(tst) != 3 ||
        PyTuple_GET_SIZE(tl) > FMT_MAX_LITS) {
        PyErr_SetString(PyExc_ValueError, "format_rows: bad spec");
        return NULL;
    }
    PyObject *tn_ = PyTuple_GET_ITEM(spec, 3);
    if (tn_ != Py_None) {
        if (!PyTuple_Check(tn_) || PyTuple_GET_SIZE(tn_) > FMT_MAX_NAMES ||
            !PyList_Check(lists)) {
            PyErr_SetString(PyExc_ValueError, "format_rows: bad names or lists");
            return NULL;
        }
        nn = (int)PyTuple_GET_SIZE(tn_);
        for (int j = 0; j < nn; j++) {
            PyObject *x = PyTuple_GET_ITEM(tn_, j);
            if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) != 2 ||
                !PyUnicode_Check(PyTuple_GET_ITEM(x, 0)) ||
                !PyUnicode_IS_COMPACT_ASCII(PyTuple_GET_ITEM(x, 0))) {
                PyErr_SetString(PyExc_ValueError, "format_rows: a name is (ASCII JSON, var)");
                return NULL;
            }
            jn[j] = (const char *)PyUnicode_DATA(PyTuple_GET_ITEM(x, 0));
            jl[j] = PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(x, 0));
            jv[j] = PyLong_AsLong(PyTuple_GET_ITEM(x, 1));
            if (jv[j] == -1 && PyErr_Occurred())
                return NULL;
        }
    }
    for (; nl < PyTuple_GET_SIZE(tl); nl++)
        if (parse_prog(PyTuple_GET_ITEM(tl, nl), &lits[nl]) < 0) {
            nl++;
            goto done;
        }
    for (; no < 3; no++)
        if (parse_prog(PyTuple_GET_ITEM(to, no), &outs[no]) < 0) {
            no++;
            goto done;
        }
    eva = as_array(evo, NPY_INT64, 1);
    dla = as_array(dlo, NPY_INT64, 1);
    dna = as_array(dno, NPY_BOOL, 1);
    if (!eva || !dla || !dna)
        goto done;
    npy_intp n = PyArray_DIM(eva, 0);
    if (PyArray_DIM(dla, 0) != n || PyArray_DIM(dna, 0) != n)
        goto badlen;
    if (nn >= 0) {
        nga = as_array(ngo, NPY_INT64, 1);
        if (!nga)
            goto done;
        if (PyArray_DIM(nga, 0) != n)
            goto badlen;
    }
    for (int side = 0; side < 2; side++) { /* the string columns, then the int ones */
        PyObject *t = side ? icols : scols;
        PyArrayObject **out = side ? ia : sa;
        for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(t); c++) {
            out[c] = as_array(PyTuple_GET_ITEM(t, c), NPY_INT64, 1);
            if (!out[c])
                goto done;
            if (PyArray_DIM(out[c], 0) != n)
                goto badlen;
        }
    }
    /* (items name columns and literals by index: checked once) */
    for (int g = 0; g < nl + 3; g++) {
        fprog *pg = g < nl ? &lits[g] : &outs[g - nl];
        for (Py_ssize_t i = 0; i < pg->n; i++) {
            fitem *f = &pg->it[i];
            if ((f->kind == 1 && (f->a < 0 || f->a >= ns)) ||
                (f->kind == 2 && (f->a < 0 || f->a >= ni)) || f->kind < 0 || f->kind > 11 ||
                f->kind == 3 || f->kind == 9 || (nn < 0 && f->kind >= 10) ||
                (g < nl && f->kind > 2)) {
                PyErr_SetString(PyExc_ValueError, "format_rows: bad item");
                goto done;
            }
        }
    }
    for (int k = 0; k < 4; k++)
        if ((outl[k] = PyList_New(n)) == NULL)
            goto done;
    const int64_t *EV = (const int64_t *)PyArray_DATA(eva), *DL = (const int64_t *)PyArray_DATA(dla);
    const npy_bool *DN = (const npy_bool *)PyArray_DATA(dna);
    Py_ssize_t nvals = PyList_GET_SIZE(vals);
    int64_t full = nl == 0 ? 0 : (int64_t)((1ULL << nl) - 1);
    Py_ssize_t lo[FMT_MAX_LITS], ln[FMT_MAX_LITS];
    int ins[FMT_MAX_LITS], outs_[FMT_MAX_LITS];
    const char *sp[FMT_MAX_COLS];
    Py_ssize_t sl[FMT_MAX_COLS];
    char tickt[24];
    int tickn = snprintf(tickt, sizeof tickt, "%lld", tick);
    int uses_lists = 0;
    for (int g = 0; g < 3; g++)
        for (Py_ssize_t i = 0; i < outs[g].n; i++)
            uses_lists |= outs[g].it[i].kind == 6 || outs[g].it[i].kind == 7;
    for (npy_intp r = 0; r < n; r++) {
        /* the row's strings: each looked up and checked once */
        for (Py_ssize_t c = 0; c < ns; c++) {
            int64_t id = ((const int64_t *)PyArray_DATA(sa[c]))[r];
            if (id < 0 || id >= nvals)
                goto none;
            PyObject *v = PyList_GET_ITEM(vals, id);
            if (!PyUnicode_Check(v) || !PyUnicode_IS_COMPACT_ASCII(v))
                goto none;
            sp[c] = (const char *)PyUnicode_DATA(v);
            sl[c] = PyUnicode_GET_LENGTH(v);
            if (!bare_text(sp[c], sl[c]))
                goto none;
        }
        /* the literals' texts */
        lb.n = 0;
        for (int j = 0; j < nl; j++) {
            lo[j] = lb.n;
            for (Py_ssize_t i = 0; i < lits[j].n; i++) {
                fitem *f = &lits[j].it[i];
                if (f->kind == 0) {
                    if (fb_put(&lb, f->text, f->tlen) < 0)
                        goto nomem;
                }
                else if (f->kind == 1) {
                    if (fb_put(&lb, sp[f->a], sl[f->a]) < 0)
                        goto nomem;
                }
                else if (fb_int(&lb, ((const int64_t *)PyArray_DATA(ia[f->a]))[r] + f->b) < 0)
                    goto nomem;
            }
            ln[j] = lb.n - lo[j];
        }
        int64_t m = EV[r];
        int ki = 0, ko = 0;
        for (int j = 0; j < nl; j++) {
            if (m >> j & 1)
                ins[ki++] = j;
            else
                outs_[ko++] = j;
        }
        int st = m == full ? 2 : m ? 1 : 0;
        PyObject *sto = PyTuple_GET_ITEM(tst, st);
        if (nn >= 0) {
            int64_t lid = ((const int64_t *)PyArray_DATA(nga))[r];
            int rc;
            if (lid < 0) { /* (a null list: no exclusion) */
                xo.n = xk.n = 0;
                rc = fb_put(&xo, "{}", 2);
            }
            else if (lid >= PyList_GET_SIZE(lists))
                goto none;
            else
                rc = put_exclusions(&xo, &xk, PyList_GET_ITEM(lists, lid), vals, nvals, nn, jn,
                                    jl, jv);
            if (rc < 0)
                goto nomem;
            if (rc > 0)
                goto none;
        }
        /* the evidence and hypotheses lists, once a row */
        Py_ssize_t evn = 0;
        eb.n = 0;
        if (uses_lists) {
            int tmp[FMT_MAX_LITS];
            memcpy(tmp, ins, sizeof(int) * ki);
            if (put_list(&eb, lb.p, lo, ln, tmp, ki, NULL, 0) < 0)
                goto nomem;
            evn = eb.n;
            memcpy(tmp, outs_, sizeof(int) * ko);
            if (put_list(&eb, lb.p, lo, ln, tmp, ko, ins, ki) < 0)
                goto nomem;
        }
        for (int g = 0; g < 3; g++) {
            ob.n = 0;
            fprog *pg = &outs[g];
            for (Py_ssize_t i = 0; i < pg->n; i++) {
                fitem *f = &pg->it[i];
                int rc = 0;
                switch (f->kind) {
                case 0:
                    rc = fb_put(&ob, f->text, f->tlen);
                    break;
                case 1:
                    rc = fb_put(&ob, sp[f->a], sl[f->a]);
                    break;
                case 2:
                    rc = fb_int(&ob, ((const int64_t *)PyArray_DATA(ia[f->a]))[r] + f->b);
                    break;
                case 4:
                    rc = DN[r] ? fb_put(&ob, "null", 4) : fb_int(&ob, DL[r]);
                    break;
                case 5:
                    rc = fb_put(&ob, PyUnicode_DATA(sto), PyUnicode_GET_LENGTH(sto));
                    break;
                case 6:
                    rc = fb_put(&ob, eb.p, evn);
                    break;
                case 7:
                    rc = fb_put(&ob, eb.p + evn, eb.n - evn);
                    break;
                case 8:
                    rc = fb_put(&ob, tickt, tickn);
                    break;
                case 10:
                    rc = fb_put(&ob, xo.p, xo.n);
                    break;
                case 11:
                    rc = fb_put(&ob, xk.p, xk.n);
                    break;
                }
                if (rc < 0)
                    goto nomem;
            }
            PyObject *sobj = PyUnicode_New(ob.n, 127);
            if (sobj == NULL)
                goto done;
            memcpy(PyUnicode_DATA(sobj), ob.p, ob.n);
            PyList_SET_ITEM(outl[g], r, sobj);
        }
        Py_INCREF(sto);
        PyList_SET_ITEM(outl[3], r, sto);
    }
    res = PyTuple_Pack(4, outl[0], outl[1], outl[2], outl[3]);
    goto done;
badlen:
    PyErr_SetString(PyExc_ValueError, "format_rows: columns of different lengths");
    goto done;
nomem:
    PyErr_NoMemory();
    goto done;
none:
    res = Py_None;
    Py_INCREF(res);
done:
    for (int k = 0; k < 4; k++)
        Py_XDECREF(outl[k]);
    for (int j = 0; j < nl; j++)
        free(lits[j].it);
    for (int j = 0; j < no; j++)
        free(outs[j].it);
    for (Py_ssize_t c = 0; c < FMT_MAX_COLS; c++) {
        Py_XDECREF(sa[c]);
        Py_XDECREF(ia[c]);
    }
    Py_XDECREF(eva);
    Py_XDECREF(dla);
    Py_XDECREF(dna);
    Py_XDECREF(nga);
    free(xo.p);
    free(xk.p);
    free(lb.p);
    free(ob.p);
    free(eb.p);
    return res;
}

/* ------------------------------------------------------------------ deadlines
 * Step 1's deadlines of a template's rows (engine._finish), fused: for each positive
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
    PyArrayObject *a = as_array(o, NPY_INT64, 1);
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

static PyObject *deadlines(PyObject *self, PyObject *args)
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
            PyArrayObject *a = as_array(io, NPY_INT64, 1), *b;
            if (a == NULL)
                goto done;
            hold[nh++] = a;
            if ((b = as_array(dn, NPY_INT64, 1)) == NULL)
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
        PyArrayObject *exp = new_i64(n), *dlp = new_i64(n);
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

/* ------------------------------------------------------------------ string signatures
 * str_sigs(strs, skip=0) -> None | (k1, k2): a 128-bit signature (two 64-bit halves) of
 * each string's UTF-8 bytes (after the first `skip`), for the index from signatures to string ids (arrays._intern_strs,
 * kernels.HashIndex) — the strings' own memory is read once, in order, where a dict look-up
 * per string costs three cache misses on a cold table (~450 ns a string inside a tick).
 * None when an item is not a str (the caller takes the dict).  Two multiply-xor lanes with
 * different seeds over 8-byte words, each finished by murmur3's fmix64. */
static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static PyObject *str_sigs(PyObject *self, PyObject *args)
{
    PyObject *lst;
    Py_ssize_t skip = 0;
    if (!PyArg_ParseTuple(args, "O!|n", &PyList_Type, &lst, &skip))
        return NULL;
    if (skip < 0) {
        PyErr_SetString(PyExc_ValueError, "str_sigs: skip < 0");
        return NULL;
    }
    npy_intp n = PyList_GET_SIZE(lst);
    for (npy_intp i = 0; i < n; i++)
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(lst, i)))
            Py_RETURN_NONE;
    PyArrayObject *a1 = new_i64(n), *a2 = new_i64(n);
    if (a1 == NULL || a2 == NULL) {
        Py_XDECREF(a1);
        Py_XDECREF(a2);
        return NULL;
    }
    uint64_t *o1 = (uint64_t *)PyArray_DATA(a1), *o2 = (uint64_t *)PyArray_DATA(a2);
    for (npy_intp i = 0; i < n; i++) {
        Py_ssize_t len;
        const char *p = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(lst, i), &len);
        if (p == NULL) {  /* (a lone surrogate: not encodable) */
            Py_DECREF(a1);
            Py_DECREF(a2);
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (skip) {  /* the bytes after the first `skip` (the caller's ASCII prefix) */
            Py_ssize_t k = skip < len ? skip : len;
            p += k;
            len -= k;
        }
        uint64_t h1 = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)len * 0xA0761D6478BD642FULL);
        uint64_t h2 = 0xC2B2AE3D27D4EB4FULL ^ ((uint64_t)len * 0xE7037ED1A0B428DBULL);
        Py_ssize_t j = 0;
        for (; j + 8 <= len; j += 8) {
            uint64_t w;
            memcpy(&w, p + j, 8);
            h1 = (h1 ^ w) * 0x100000001B3ULL;
            h1 ^= h1 >> 31;
            h2 = (h2 ^ (w * 0x9FB21C651E98DF25ULL)) * 0xD6E8FEB86659FD93ULL;
            h2 ^= h2 >> 29;
        }
        if (j < len) {
            uint64_t w = 0;
            memcpy(&w, p + j, (size_t)(len - j));
            h1 = (h1 ^ w) * 0x100000001B3ULL;
            h1 ^= h1 >> 31;
            h2 = (h2 ^ (w * 0x9FB21C651E98DF25ULL)) * 0xD6E8FEB86659FD93ULL;
            h2 ^= h2 >> 29;
        }
        o1[i] = fmix64(h1);
        o2[i] = fmix64(h2 ^ 0x5851F42D4C957F2DULL);
    }
    return Py_BuildValue("(NN)", a1, a2);
}

/* ------------------------------------------------------------------ changed lines
 * join_lines(texts, rows, heads, which, skip) -> None | str
 * `hypo run --changes`' output of a tick as one str: for each k, heads[which[k]] then
 * texts[rows[k]] after its first `skip` characters, then "\n" (changes.py: each line's
 * `{"tick": τ, ` prefix replaced by its head, without a str a line).  texts, heads: lists
 * of str; rows, which: lists of int.  None when a str is not compact ASCII (the caller
 * writes those lines in Python). */
static PyObject *join_lines(PyObject *self, PyObject *args)
{
    PyObject *texts, *rows, *heads, *which;
    Py_ssize_t skip;
    if (!PyArg_ParseTuple(args, "O!O!O!O!n", &PyList_Type, &texts, &PyList_Type, &rows,
                          &PyList_Type, &heads, &PyList_Type, &which, &skip))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(rows), nt = PyList_GET_SIZE(texts),
               nh = PyList_GET_SIZE(heads);
    if (PyList_GET_SIZE(which) != n || skip < 0) {
        PyErr_SetString(PyExc_ValueError, "join_lines: rows and which differ, or skip < 0");
        return NULL;
    }
    for (Py_ssize_t j = 0; j < nh; j++) {
        PyObject *h = PyList_GET_ITEM(heads, j);
        if (!PyUnicode_Check(h) || !PyUnicode_IS_COMPACT_ASCII(h))
            Py_RETURN_NONE;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t k = 0; k < n; k++) { /* checked and measured once */
        Py_ssize_t r = PyLong_AsSsize_t(PyList_GET_ITEM(rows, k)),
                   w = PyLong_AsSsize_t(PyList_GET_ITEM(which, k));
        if ((r == -1 || w == -1) && PyErr_Occurred())
            return NULL;
        if (r < 0 || r >= nt || w < 0 || w >= nh) {
            PyErr_SetString(PyExc_IndexError, "join_lines: a row or head out of range");
            return NULL;
        }
        PyObject *t = PyList_GET_ITEM(texts, r);
        if (!PyUnicode_Check(t) || !PyUnicode_IS_COMPACT_ASCII(t))
            Py_RETURN_NONE;
        Py_ssize_t tl = PyUnicode_GET_LENGTH(t);
        total += PyUnicode_GET_LENGTH(PyList_GET_ITEM(heads, w)) + (tl > skip ? tl - skip : 0)
                 + 1;
    }
    PyObject *out = PyUnicode_New(total, 127);
    if (out == NULL)
        return NULL;
    char *o = (char *)PyUnicode_DATA(out);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *t = PyList_GET_ITEM(texts, PyLong_AsSsize_t(PyList_GET_ITEM(rows, k)));
        PyObject *h = PyList_GET_ITEM(heads, PyLong_AsSsize_t(PyList_GET_ITEM(which, k)));
        Py_ssize_t hl = PyUnicode_GET_LENGTH(h), tl = PyUnicode_GET_LENGTH(t);
        memcpy(o, PyUnicode_DATA(h), hl);
        o += hl;
        if (tl > skip) {
            memcpy(o, (const char *)PyUnicode_DATA(t) + skip, tl - skip);
            o += tl - skip;
        }
        *o++ = '\n';
    }
    return out;
}

/* ------------------------------------------------------------------ shown deadlines
 * render_deadlines(ev, dlp, dlp_null, unb, full, tau, lits) -> (dl, dl_null, bad, needs):
 * render.Renderer.deadlines' first pass (Explainer.deadline) fused.  A row is definite
 * when ev == full.  For each negated literal j of lits (bit, t or None, toff, r) open
 * (bit j of ev clear) at t_j = t + toff: after τ it bounds the deadline by t_j + r, or
 * makes it unknown when r < 0 (no static horizon); at or before τ the row needs the
 * negated predicate's own deadline (needs).  dl = the greatest of τ, dlp (unless null)
 * and the bounds; null when definite or unknown (unb, or an open literal without
 * horizon); bad: unknown and not definite.  Sums wrap as numpy's int64 arithmetic. */
static PyObject *render_deadlines(PyObject *self, PyObject *args)
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
    PyArrayObject *dl = as_array(dlo, NPY_INT64, 1), *dn, *un;
    if (dl == NULL)
        goto done;
    hold[nh++] = dl;
    if ((dn = as_array(dno, NPY_BOOL, 1)) == NULL)
        goto done;
    hold[nh++] = dn;
    if ((un = as_array(uno, NPY_BOOL, 1)) == NULL)
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
        PyArrayObject *o = new_i64(n);
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

static PyMethodDef methods[] = {
    {"join_rows", join_rows, METH_VARARGS,
     "join_rows(L, okl, R, okr, bits, left_outer) -> (li, ri)"},
    {"member_rows", member_rows, METH_VARARGS, "member_rows(L, okl, R, okr, bits) -> bool[]"},
    {"factorize_rows", factorize_rows, METH_VARARGS, "factorize_rows(M, bits) -> (gid, first)"},
    {"hash_lookup", hash_lookup, METH_VARARGS, "hash_lookup(k1, k2, t1, t2, tv, bits) -> ids"},
    {"hash_insert", hash_insert, METH_VARARGS,
     "hash_insert(k1, k2, v, t1, t2, tv, bits) -> number of new keys"},
    {"format_rows", format_rows, METH_VARARGS,
     "format_rows(spec, scols, icols, vals, ev, dl, dlnull, tick, ng, lists) -> None | "
     "(skeys, lines, akeys, sts)"},
    {"scan_facts", scan_facts, METH_VARARGS,
     "scan_facts(lines, max_line, exact) -> None | (ticks, ts, pred_ids, preds, nargs, "
     "flat, dx)"},
    {"str_sigs", str_sigs, METH_VARARGS, "str_sigs(strs, skip=0) -> None | (k1, k2)"},
    {"join_lines", join_lines, METH_VARARGS,
     "join_lines(texts, rows, heads, which, skip) -> None | str"},
    {"render_deadlines", render_deadlines, METH_VARARGS,
     "render_deadlines(ev, dlp, dlp_null, unb, full, tau, lits) -> (dl, null, bad, needs)"},
    {"deadlines", deadlines, METH_VARARGS,
     "deadlines(ev, lits) -> (exp, dlp, null, any_null)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, HK_STR(HK_NAME),
                                    "hypo's row kernels (kernels.py)", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC HK_CAT(PyInit_, HK_NAME)(void)
{
    import_array();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "takes_columns", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
