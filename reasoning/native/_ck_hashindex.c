/* The 128-bit-hash -> id index of kernels.HashIndex: look-up and insertion. */
#include "_ck_common.h"

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
        if ((*kin[i] = hk_as_array(in[i], NPY_INT64, 1)) == NULL)
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

PyObject *hk_hash_lookup(PyObject *self, PyObject *args)
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
    out = hk_new_i64(n);
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

PyObject *hk_hash_insert(PyObject *self, PyObject *args)
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
    if ((va = hk_as_array(v, NPY_INT64, 1)) == NULL)
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
