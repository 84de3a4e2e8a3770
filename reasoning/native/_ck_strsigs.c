/* String signatures: a 128-bit hash of each str of a list, for the string index. */
#include "_ck_common.h"

/* str_sigs(strs, skip=0) -> None | (k1, k2): a 128-bit signature (two 64-bit halves) of
 * each string's UTF-8 bytes (after the first `skip`), for the index from signatures to
 * string ids (arrays._intern_strs, kernels.HashIndex) — the strings' own memory is read
 * once, in order, where a dict look-up per string costs three cache misses on a cold table
 * (~450 ns a string inside a tick).
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

PyObject *hk_str_sigs(PyObject *self, PyObject *args)
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
    PyArrayObject *a1 = hk_new_i64(n), *a2 = hk_new_i64(n);
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
