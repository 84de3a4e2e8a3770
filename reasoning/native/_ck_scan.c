/* The stream fact scanner: the fields of a block of canonically written fact lines. */
#include "_ck_common.h"

/* scan_facts(lines, max_line, exact) -> None | (ticks, ts, pred_ids, preds, nargs, flat, dx)
 * The fields of a block of stream lines when every one is written exactly as json.dumps
 * writes a canonical fact line (stream._BLOCK_EXACT:
 *   {"tick": N, "fact": "Pred(a1, ..., an, T)"}  with an optional "\n"),
 * None as soon as one is not (or is longer than max_line characters): the caller parses
 * that block the general way.  ticks: int64 per line; ts: the last argument as int64 when
 * it is 1-18 digits, else -1; pred_ids: int32 index into preds (the names, in order of
 * first appearance); nargs: int32, the arguments before the last; flat: those arguments'
 * texts, line after line; dx: int64, exact[`Pred(a1,...,an`] for a line whose ts < tick
 * when that key is in the dict `exact`, else -1. */

#define SCAN_MAX_PREDS 64

PyObject *hk_scan_facts(PyObject *self, PyObject *args)
{
    PyObject *lines, *exact;
    Py_ssize_t max_line;
    if (!PyArg_ParseTuple(args, "O!nO!", &PyList_Type, &lines, &max_line, &PyDict_Type,
                          &exact))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(lines);
    int use_exact = PyDict_GET_SIZE(exact) > 0;
    PyArrayObject *ticks = hk_new_i64(n), *ts = hk_new_i64(n), *dx = hk_new_i64(n);
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
        while (q < e && hk_is_digit(*q))
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
        while (q < e && hk_is_word(*q))
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
            if (q < end && hk_is_lower(*q)) {
                q++;
                while (q < end && hk_is_word(*q))
                    q++;
            }
            else if (q < end && hk_is_digit(*q)) {
                while (q < end && hk_is_digit(*q))
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
        if (a1 - a0 <= 18 && hk_is_digit(*a0)) {
            t = 0;
            for (const char *r = a0; r < a1; r++) {
                if (!hk_is_digit(*r)) {
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
