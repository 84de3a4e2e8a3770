/* Changed lines: a tick's `hypo run --changes` output joined into one str. */
#include "_ck_common.h"

/* join_lines(texts, rows, heads, which, skip) -> None | str
 * `hypo run --changes`' output of a tick as one str: for each k, heads[which[k]] then
 * texts[rows[k]] after its first `skip` characters, then "\n" (changes.py: each line's
 * `{"tick": τ, ` prefix replaced by its head, without a str a line).  texts, heads: lists
 * of str; rows, which: lists of int.  None when a str is not compact ASCII (the caller
 * writes those lines in Python). */
PyObject *hk_join_lines(PyObject *self, PyObject *args)
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
