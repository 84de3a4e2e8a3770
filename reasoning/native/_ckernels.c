/* The extension module reasoning.native._ckernels: its method table and its PyInit. */
/* hypo's C row kernels (kernels.py picks them, or their numpy stand-ins), a unit a job:
 * _ck_join.c (hash join, membership, factorisation), _ck_hashindex.c (kernels.HashIndex),
 * _ck_scan.c (scan_facts), _ck_format.c (format_rows), _ck_deadlines.c (deadlines,
 * render_deadlines), _ck_strsigs.c (str_sigs), _ck_lines.c (join_lines); _ck_arrays.c and
 * _ck_common.h what they share.  Built by setup.py at install time (importing it costs
 * ~1 ms); HK_NAME names the module (setup.py: _ckernels). */
#define HK_MODULE_UNIT /* the one unit that defines numpy's API table and imports it */
#include "_ck_common.h"

#ifndef HK_NAME
#define HK_NAME _ckernels
#endif
#define HK_STR2(x) #x
#define HK_STR(x) HK_STR2(x)
#define HK_CAT2(a, b) a##b
#define HK_CAT(a, b) HK_CAT2(a, b)

static PyMethodDef methods[] = {
    /* _ck_join.c */
    {"join_rows", hk_join_rows, METH_VARARGS,
     "join_rows(L, okl, R, okr, bits, left_outer) -> (li, ri)"},
    {"member_rows", hk_member_rows, METH_VARARGS,
     "member_rows(L, okl, R, okr, bits) -> bool[]"},
    {"factorize_rows", hk_factorize_rows, METH_VARARGS,
     "factorize_rows(M, bits) -> (gid, first)"},
    /* _ck_hashindex.c */
    {"hash_lookup", hk_hash_lookup, METH_VARARGS,
     "hash_lookup(k1, k2, t1, t2, tv, bits) -> ids"},
    {"hash_insert", hk_hash_insert, METH_VARARGS,
     "hash_insert(k1, k2, v, t1, t2, tv, bits) -> number of new keys"},
    /* _ck_format.c */
    {"format_rows", hk_format_rows, METH_VARARGS,
     "format_rows(spec, scols, icols, vals, ev, dl, dlnull, tick, ng, lists) -> None | "
     "(skeys, lines, akeys, sts)"},
    /* _ck_scan.c */
    {"scan_facts", hk_scan_facts, METH_VARARGS,
     "scan_facts(lines, max_line, exact) -> None | (ticks, ts, pred_ids, preds, nargs, "
     "flat, dx)"},
    /* _ck_strsigs.c */
    {"str_sigs", hk_str_sigs, METH_VARARGS, "str_sigs(strs, skip=0) -> None | (k1, k2)"},
    /* _ck_lines.c */
    {"join_lines", hk_join_lines, METH_VARARGS,
     "join_lines(texts, rows, heads, which, skip) -> None | str"},
    /* _ck_deadlines.c */
    {"render_deadlines", hk_render_deadlines, METH_VARARGS,
     "render_deadlines(ev, dlp, dlp_null, unb, full, tau, lits) -> (dl, null, bad, needs)"},
    {"deadlines", hk_deadlines, METH_VARARGS,
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
