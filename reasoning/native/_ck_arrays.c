/* The kernels' numpy arrays: an argument converted on the way in, an int64 result out. */
#include "_ck_common.h"

PyArrayObject *hk_as_array(PyObject *o, int type, int ndim)
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

PyArrayObject *hk_new_i64(npy_intp n)
{
    return (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_INT64);
}
