/* Sequential steps of the trace viewer's derived TPU lines, in C (tputui/analysis/_derive).
 *
 * Both are exact replays of a Python reference in tputui/analysis (tests compare them):
 *
 *   std_sort(ranks: int64 buffer) -> bytes (int64 positions)
 *       the order libstdc++'s std::sort leaves the input in (stdsort.py: introsort with a
 *       median-of-three pivot, heap sort past the depth limit, insertion sort of 16-runs).
 *   pair_offload(label, kind, start, end: int64 buffers, max_rows) -> bytes (int64 triples)
 *       XProf's HostOffloadEventProcessor (trace_events._OffloadRows): kind 1 queues a
 *       copy-start under its label, kind 2 pairs a copy-done with the oldest queued start of
 *       its label and packs the pair onto the row whose end is lowest (the last such row on
 *       ties) when that row is free by the start, else onto a new row (at most max_rows; past
 *       that, the last row). Returns (start index, done index, row) per pair.
 *
 * Neither touches Python objects while it runs, so the GIL is released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define THRESHOLD 16

static inline void swap2(int64_t *r, int64_t *p, Py_ssize_t i, Py_ssize_t j) {
    int64_t t = r[i]; r[i] = r[j]; r[j] = t;
    t = p[i]; p[i] = p[j]; p[j] = t;
}

static void adjust_heap(int64_t *r, int64_t *p, Py_ssize_t first, Py_ssize_t hole, Py_ssize_t len,
                        int64_t vr, int64_t vp) {
    Py_ssize_t top = hole, child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (r[first + child] < r[first + child - 1]) child--;
        r[first + hole] = r[first + child]; p[first + hole] = p[first + child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        r[first + hole] = r[first + child - 1]; p[first + hole] = p[first + child - 1];
        hole = child - 1;
    }
    Py_ssize_t parent = (hole - 1) / 2;
    while (hole > top && r[first + parent] < vr) {
        r[first + hole] = r[first + parent]; p[first + hole] = p[first + parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    r[first + hole] = vr; p[first + hole] = vp;
}

static void heap_sort(int64_t *r, int64_t *p, Py_ssize_t first, Py_ssize_t last) {
    Py_ssize_t n = last - first;
    if (n >= 2) {
        Py_ssize_t parent = (n - 2) / 2;
        for (;;) {
            adjust_heap(r, p, first, parent, n, r[first + parent], p[first + parent]);
            if (parent == 0) break;
            parent--;
        }
    }
    while (last - first > 1) {
        last--;
        int64_t vr = r[last], vp = p[last];
        r[last] = r[first]; p[last] = p[first];
        adjust_heap(r, p, first, 0, last - first, vr, vp);
    }
}

static Py_ssize_t partition_pivot(int64_t *r, int64_t *p, Py_ssize_t first, Py_ssize_t last) {
    Py_ssize_t mid = first + (last - first) / 2, a = first + 1, b = mid, c = last - 1;
    if (r[a] < r[b]) {
        if (r[b] < r[c]) swap2(r, p, first, b);
        else if (r[a] < r[c]) swap2(r, p, first, c);
        else swap2(r, p, first, a);
    } else if (r[a] < r[c]) swap2(r, p, first, a);
    else if (r[b] < r[c]) swap2(r, p, first, c);
    else swap2(r, p, first, b);
    int64_t pivot = r[first];
    Py_ssize_t lo = first + 1, hi = last;
    for (;;) {
        while (r[lo] < pivot) lo++;
        hi--;
        while (pivot < r[hi]) hi--;
        if (!(lo < hi)) return lo;
        swap2(r, p, lo, hi);
        lo++;
    }
}

static void introsort_loop(int64_t *r, int64_t *p, Py_ssize_t first, Py_ssize_t last, long depth) {
    while (last - first > THRESHOLD) {
        if (depth == 0) {
            heap_sort(r, p, first, last);
            return;
        }
        depth--;
        Py_ssize_t cut = partition_pivot(r, p, first, last);
        introsort_loop(r, p, cut, last, depth);
        last = cut;
    }
}

static void unguarded_linear_insert(int64_t *r, int64_t *p, Py_ssize_t last) {
    int64_t vr = r[last], vp = p[last];
    Py_ssize_t nxt = last - 1;
    while (vr < r[nxt]) {
        r[last] = r[nxt]; p[last] = p[nxt];
        last = nxt;
        nxt--;
    }
    r[last] = vr; p[last] = vp;
}

static void insertion_sort(int64_t *r, int64_t *p, Py_ssize_t first, Py_ssize_t last) {
    if (first == last) return;
    for (Py_ssize_t i = first + 1; i < last; i++) {
        if (r[i] < r[first]) {
            int64_t vr = r[i], vp = p[i];
            memmove(r + first + 1, r + first, (size_t)(i - first) * sizeof(int64_t));
            memmove(p + first + 1, p + first, (size_t)(i - first) * sizeof(int64_t));
            r[first] = vr; p[first] = vp;
        } else {
            unguarded_linear_insert(r, p, i);
        }
    }
}

static PyObject *std_sort(PyObject *self, PyObject *args) {
    Py_buffer in;
    if (!PyArg_ParseTuple(args, "y*", &in)) return NULL;
    Py_ssize_t n = in.len / (Py_ssize_t)sizeof(int64_t);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    int64_t *r = n ? malloc((size_t)n * sizeof(int64_t)) : NULL;
    if (!out || (n && !r)) {
        free(r);
        Py_XDECREF(out);
        PyBuffer_Release(&in);
        return PyErr_NoMemory();
    }
    int64_t *p = (int64_t *)PyBytes_AS_STRING(out);
    if (n) memcpy(r, in.buf, (size_t)n * sizeof(int64_t));
    PyBuffer_Release(&in);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) p[i] = i;
    if (n >= 2) {
        long lg = 0;
        for (Py_ssize_t m = n; m > 1; m >>= 1) lg++;  /* bit_length(n) - 1 */
        introsort_loop(r, p, 0, n, 2 * lg);
        if (n > THRESHOLD) {
            insertion_sort(r, p, 0, THRESHOLD);
            for (Py_ssize_t i = THRESHOLD; i < n; i++) unguarded_linear_insert(r, p, i);
        } else {
            insertion_sort(r, p, 0, n);
        }
    }
    Py_END_ALLOW_THREADS
    free(r);
    return out;
}

static PyObject *pair_offload(PyObject *self, PyObject *args) {
    Py_buffer lb, kb, sb, eb;
    Py_ssize_t max_rows;
    if (!PyArg_ParseTuple(args, "y*y*y*y*n", &lb, &kb, &sb, &eb, &max_rows)) return NULL;
    Py_ssize_t n = lb.len / (Py_ssize_t)sizeof(int64_t);
    PyObject *result = NULL;
    if (kb.len != lb.len || sb.len != lb.len || eb.len != lb.len || max_rows < 1) {
        PyErr_SetString(PyExc_ValueError, "pair_offload: arrays of unequal length or max_rows < 1");
        goto done;
    }
    const int64_t *label = lb.buf, *kind = kb.buf, *start = sb.buf, *end = eb.buf;
    int64_t nlabels = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* Labels are codes of the events' names: fewer than the events (one queue each). */
        if (label[i] < 0 || label[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "pair_offload: a label outside 0..len - 1");
            goto done;
        }
        if (label[i] + 1 > nlabels) nlabels = label[i] + 1;
    }
    /* Rows are only ever opened by pairs: never more than n, whatever max_rows allows. */
    if (max_rows > n + 1) max_rows = n + 1;
    /* Per label a FIFO of queued starts, as a linked list through `next` (indices of events). */
    int64_t *head = malloc((size_t)(nlabels + 1) * sizeof(int64_t));
    int64_t *tail = malloc((size_t)(nlabels + 1) * sizeof(int64_t));
    int64_t *next = malloc((size_t)(n + 1) * sizeof(int64_t));
    int64_t *frontier = malloc((size_t)max_rows * sizeof(int64_t));
    int64_t *pairs = malloc((size_t)(n + 1) * 3 * sizeof(int64_t));
    Py_ssize_t npairs = 0;
    if (!head || !tail || !next || !frontier || !pairs) {
        PyErr_NoMemory();
        goto cleanup;
    }
    Py_BEGIN_ALLOW_THREADS
    for (int64_t l = 0; l < nlabels; l++) head[l] = tail[l] = -1;
    Py_ssize_t rows = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t l = label[i];
        if (kind[i] == 1) {
            next[i] = -1;
            if (tail[l] >= 0) next[tail[l]] = i; else head[l] = i;
            tail[l] = i;
            continue;
        }
        if (kind[i] != 2 || head[l] < 0) continue;
        int64_t first = head[l];
        head[l] = next[first];
        if (head[l] < 0) tail[l] = -1;
        int64_t s = start[first], e = end[i], best = s;
        Py_ssize_t pick = -1;
        for (Py_ssize_t k = 0; k < rows; k++) {
            if (frontier[k] <= best) { pick = k; best = frontier[k]; }
        }
        if (pick == -1) {
            if (rows < max_rows) frontier[rows++] = e;
            pick = rows - 1;
        }
        if (frontier[pick] < e) frontier[pick] = e;
        pairs[3 * npairs] = first;
        pairs[3 * npairs + 1] = i;
        pairs[3 * npairs + 2] = pick;
        npairs++;
    }
    Py_END_ALLOW_THREADS
    result = PyBytes_FromStringAndSize((const char *)pairs, npairs * 3 * (Py_ssize_t)sizeof(int64_t));
cleanup:
    free(head); free(tail); free(next); free(frontier); free(pairs);
done:
    PyBuffer_Release(&lb); PyBuffer_Release(&kb); PyBuffer_Release(&sb); PyBuffer_Release(&eb);
    return result;
}

static PyMethodDef methods[] = {
    {"std_sort", std_sort, METH_VARARGS, "std_sort(ranks) -> int64 positions in libstdc++ std::sort's order"},
    {"pair_offload", pair_offload, METH_VARARGS,
     "pair_offload(label, kind, start, end, max_rows) -> int64 (start index, done index, row) triples"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_derive", NULL, -1, methods};

PyMODINIT_FUNC PyInit__derive(void) { return PyModule_Create(&module); }
