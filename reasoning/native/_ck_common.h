/* What the kernel units share: numpy's C API, array helpers, character classes, entry points. */
#ifndef HK_COMMON_H
#define HK_COMMON_H

/* numpy's C API table is one symbol for the whole extension: the module unit (_ckernels.c,
 * which defines HK_MODULE_UNIT first) defines it and fills it (import_array in PyInit);
 * every other unit sees it as extern (NO_IMPORT_ARRAY) */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL hk_ARRAY_API
#ifndef HK_MODULE_UNIT
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* the units' shared functions: hidden, the module exports only its PyInit */
#define HK_SHARED NPY_VISIBILITY_HIDDEN

/* _ck_arrays.c: an input array as a C-contiguous array of the given type (a new reference;
 * NULL + error); a new int64 array of n elements */
HK_SHARED PyArrayObject *hk_as_array(PyObject *o, int type, int ndim);
HK_SHARED PyArrayObject *hk_new_i64(npy_intp n);

/* the character classes of the bare texts the scanner and the formatter accept (inline:
 * they run in the hot loops) */
static inline int hk_is_lower(char c) { return c >= 'a' && c <= 'z'; }
static inline int hk_is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int hk_is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || hk_is_digit(c) || c == '_';
}

/* the kernels, a unit a job (the module's method table, _ckernels.c, says what each takes) */
HK_SHARED PyObject *hk_join_rows(PyObject *self, PyObject *args);       /* _ck_join.c */
HK_SHARED PyObject *hk_member_rows(PyObject *self, PyObject *args);     /* _ck_join.c */
HK_SHARED PyObject *hk_factorize_rows(PyObject *self, PyObject *args);  /* _ck_join.c */
HK_SHARED PyObject *hk_hash_lookup(PyObject *self, PyObject *args);     /* _ck_hashindex.c */
HK_SHARED PyObject *hk_hash_insert(PyObject *self, PyObject *args);     /* _ck_hashindex.c */
HK_SHARED PyObject *hk_scan_facts(PyObject *self, PyObject *args);      /* _ck_scan.c */
HK_SHARED PyObject *hk_format_rows(PyObject *self, PyObject *args);     /* _ck_format.c */
HK_SHARED PyObject *hk_deadlines(PyObject *self, PyObject *args);       /* _ck_deadlines.c */
HK_SHARED PyObject *hk_render_deadlines(PyObject *self, PyObject *args); /* _ck_deadlines.c */
HK_SHARED PyObject *hk_str_sigs(PyObject *self, PyObject *args);        /* _ck_strsigs.c */
HK_SHARED PyObject *hk_join_lines(PyObject *self, PyObject *args);      /* _ck_lines.c */

#endif
