/* The row formatter: the text bodies of plain answer rows from compiled row programs. */
#include "_ck_common.h"

/* format_rows(spec, scols, icols, vals, ev, dl, dlnull, tick, ng, lists)
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
    if (hk_is_lower(s[0])) {
        for (Py_ssize_t i = 1; i < n; i++)
            if (!hk_is_word(s[i]))
                return 0;
        return 1;
    }
    Py_ssize_t i = s[0] == '-';
    if (i == n)
        return 0;
    for (; i < n; i++)
        if (!hk_is_digit(s[i]))
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
        while (d < tn && hk_is_digit(t[d]) && d < 9)
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

PyObject *hk_format_rows(PyObject *self, PyObject *args)
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
    eva = hk_as_array(evo, NPY_INT64, 1);
    dla = hk_as_array(dlo, NPY_INT64, 1);
    dna = hk_as_array(dno, NPY_BOOL, 1);
    if (!eva || !dla || !dna)
        goto done;
    npy_intp n = PyArray_DIM(eva, 0);
    if (PyArray_DIM(dla, 0) != n || PyArray_DIM(dna, 0) != n)
        goto badlen;
    if (nn >= 0) {
        nga = hk_as_array(ngo, NPY_INT64, 1);
        if (!nga)
            goto done;
        if (PyArray_DIM(nga, 0) != n)
            goto badlen;
    }
    for (int side = 0; side < 2; side++) { /* the string columns, then the int ones */
        PyObject *t = side ? icols : scols;
        PyArrayObject **out = side ? ia : sa;
        for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(t); c++) {
            out[c] = hk_as_array(PyTuple_GET_ITEM(t, c), NPY_INT64, 1);
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
