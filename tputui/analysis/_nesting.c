/* Linear-time event nesting for tputui.analysis.nesting (the numpy versions there are the
 * fallback and the test oracle).
 *
 * parents(start, end, out): events sorted by start, then longest first; out[i] = the nearest
 *   earlier event whose end >= end[i] (XProf's AncestorStack), -1 for roots. One stack walk.
 * depths(parent, out): out[i] = number of ancestors of i, parent[i] = -1 for roots; parents
 *   may come before or after their children in the arrays.
 * spread_min(parent, label, order): label[i] = min(label[i], label[parent[i]]) for i in `order`
 *   (None: 0..n-1), in one pass: every parent must come before its children in that order, so a
 *   root's label reaches its deepest descendant in the same pass. Returns whether a label changed.
 *
 * Buffers are C-contiguous int64 (spread_min's parent and label int32; checked); no numpy headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

/* A C-contiguous buffer of signed integers of `bytes` (4 or 8) each; a TypeError otherwise. */
static int get_ints(PyObject *obj, Py_buffer *view, int writable, int bytes, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    char f = view->format ? view->format[0] : 0;
    int ok = view->itemsize == bytes && (!f || f == 'l' || (bytes == 8 ? f == 'q' : f == 'i'));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s must be an int%d array", what, bytes * 8);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int get_i64(PyObject *obj, Py_buffer *view, int writable, const char *what) {
    return get_ints(obj, view, writable, 8, what);
}

static int get_i32(PyObject *obj, Py_buffer *view, int writable, const char *what) {
    return get_ints(obj, view, writable, 4, what);
}

static PyObject *parents(PyObject *self, PyObject *args) {
    PyObject *so, *eo, *oo;
    Py_buffer sv, ev, ov;
    if (!PyArg_ParseTuple(args, "OOO", &so, &eo, &oo)) return NULL;
    if (get_i64(so, &sv, 0, "start") < 0) return NULL;
    if (get_i64(eo, &ev, 0, "end") < 0) { PyBuffer_Release(&sv); return NULL; }
    if (get_i64(oo, &ov, 1, "out") < 0) { PyBuffer_Release(&sv); PyBuffer_Release(&ev); return NULL; }
    Py_ssize_t n = sv.len / 8;
    PyObject *result = NULL;
    if (ev.len / 8 != n || ov.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "start, end and out must have the same length");
        goto done;
    }
    const int64_t *end = (const int64_t *)ev.buf;
    int64_t *out = (int64_t *)ov.buf;
    int64_t *stack = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!stack) { PyErr_NoMemory(); goto done; }
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        while (top > 0 && end[stack[top - 1]] < end[i]) top--;
        out[i] = top > 0 ? stack[top - 1] : -1;
        stack[top++] = i;
    }
    Py_END_ALLOW_THREADS
    free(stack);
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&sv);
    PyBuffer_Release(&ev);
    PyBuffer_Release(&ov);
    return result;
}

static PyObject *depths(PyObject *self, PyObject *args) {
    PyObject *po, *oo;
    Py_buffer pv, ov;
    if (!PyArg_ParseTuple(args, "OO", &po, &oo)) return NULL;
    if (get_i64(po, &pv, 0, "parent") < 0) return NULL;
    if (get_i64(oo, &ov, 1, "out") < 0) { PyBuffer_Release(&pv); return NULL; }
    Py_ssize_t n = pv.len / 8;
    PyObject *result = NULL;
    if (ov.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "parent and out must have the same length");
        goto done;
    }
    const int64_t *parent = (const int64_t *)pv.buf;
    int64_t *out = (int64_t *)ov.buf;
    int64_t *path = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!path) { PyErr_NoMemory(); goto done; }
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) out[i] = -1;  /* -1: not known yet */
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        if (out[i] >= 0) continue;
        /* Walk up to a known node (or a root), then fill the path back down. */
        Py_ssize_t len = 0;
        int64_t a = i;
        while (a >= 0) {
            /* a cycle or an out-of-range parent: checked before out[a] is read */
            if (len >= n || a >= n) { bad = 1; break; }
            if (out[a] >= 0) break;
            path[len++] = a;
            a = parent[a];
        }
        if (bad) break;
        int64_t d = a >= 0 ? out[a] : -1;
        while (len > 0) out[path[--len]] = ++d;
    }
    Py_END_ALLOW_THREADS
    free(path);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "parent links form a cycle or leave the array");
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&pv);
    PyBuffer_Release(&ov);
    return result;
}

static PyObject *spread_min(PyObject *self, PyObject *args) {
    PyObject *po, *lo, *oo;
    Py_buffer pv, lv, ov;
    if (!PyArg_ParseTuple(args, "OOO", &po, &lo, &oo)) return NULL;
    if (get_i32(po, &pv, 0, "parent") < 0) return NULL;
    if (get_i32(lo, &lv, 1, "label") < 0) { PyBuffer_Release(&pv); return NULL; }
    int has_order = oo != Py_None;
    if (has_order && get_i64(oo, &ov, 0, "order") < 0) { PyBuffer_Release(&pv); PyBuffer_Release(&lv); return NULL; }
    Py_ssize_t n = pv.len / 4, m = has_order ? ov.len / 8 : n;
    PyObject *result = NULL;
    if (lv.len / 4 != n) {
        PyErr_SetString(PyExc_ValueError, "parent and label must have the same length");
        goto done;
    }
    const int32_t *parent = (const int32_t *)pv.buf;
    const int64_t *order = has_order ? (const int64_t *)ov.buf : NULL;
    int32_t *label = (int32_t *)lv.buf;
    int bad = 0, changed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < m; k++) {
        int64_t i = order ? order[k] : k;
        if (i < 0 || i >= n) { bad = 1; break; }
        int32_t p = parent[i];
        if (p < 0) continue;
        if (p >= n) { bad = 1; break; }
        if (label[p] < label[i]) { label[i] = label[p]; changed = 1; }
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "order or parent leaves the array");
        goto done;
    }
    result = PyBool_FromLong(changed);
done:
    PyBuffer_Release(&pv);
    PyBuffer_Release(&lv);
    if (has_order) PyBuffer_Release(&ov);
    return result;
}

static PyMethodDef methods[] = {
    {"parents", parents, METH_VARARGS, "parents(start, end, out): nesting parent of sorted intervals."},
    {"depths", depths, METH_VARARGS, "depths(parent, out): number of ancestors of each node."},
    {"spread_min", spread_min, METH_VARARGS, "spread_min(parent, label, order): parents' smaller labels, top down."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_nesting", "Linear-time event nesting.", -1, methods};

PyMODINIT_FUNC PyInit__nesting(void) { return PyModule_Create(&module); }
