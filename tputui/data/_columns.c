/* Whole-column passes of the decoded frame, in C: numpy needs several full passes and
 * temporaries for each (the per-plane gather through an id table, then the selection by stat
 * name), which cost seconds at ten million stats.
 *
 * lookup(keys_plane, keys_id, plane, ids[, owner]) -> bytearray of int32 rows
 *     The row of each (plane, id) in the table (keys_plane, keys_id), -1 where absent; with
 *     `owner`, query i's plane is plane[owner[i]]. Same answer as xspace._lookup (its reference):
 *     a plane whose ids are dense (0 <= id < 4 * count + 1024) keeps the last row of a repeated
 *     id, a sparse plane the first.
 * group(keys, n) -> (bytearray int64 offsets[n + 2], bytearray int32 order); keys int32
 *     A stable counting sort: order[offsets[k]:offsets[k + 1]] are the rows with key k, in row
 *     order; key -1 (and anything outside 0..n-1) is bucket n.
 *
 * order_facts(first, count, occurrences, offset, duration) -> bytearray, a byte per line; int64
 *     Bit 1: the line's events are in XProf's order (by begin, then the longer first; an event
 *     with occurrences begins at 0); bit 2: the line holds such an event. What a riegeli merge
 *     keeps of each record's lines (xspace_merge._order_facts, whose numpy passes are the reference).
 *
 * nondecreasing(values) -> bool; int64
 * add_to_slices(column, first, count, add) -> None; int64, column changed in place
 *     column[first[i]:first[i] + count[i]] += add[i] for each slice i; OverflowError (the column
 *     partly changed) when a sum does not fit an int64.
 * remap_kinds(kind, value, str_kind, str_map, bytes_kind, bytes_map) -> None; uint8 / int64
 *     value[i] = str_map[value[i]] where kind[i] == str_kind (bytes likewise), value in place.
 *     The three are a riegeli merge's per-record fixes (xspace_merge._add), one pass each with no
 *     temporaries where numpy took a boolean mask, a gather and a scatter per kind and a slice
 *     operation per line.
 *
 * Inputs are any C-contiguous buffers of the stated widths (numpy arrays); the GIL is released
 * during the passes. Rows are int32 (tables of up to 2**31 - 1 rows): at ten million stats each
 * int64 column would cost 40 MB more.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int dense;
    int64_t n;       /* dense: table size; sorted: number of pairs */
    int64_t *table;  /* dense: id -> row (-1 absent) */
    int64_t *ids, *rows;  /* sorted by (id, row) */
} Table;

static int get(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->itemsize != itemsize && !(view->len == 0)) {
        /* numpy exports its itemsize; plain bytes objects say 1: accept those when divisible */
        if (!(view->itemsize == 1 && view->len % itemsize == 0)) {
            PyErr_Format(PyExc_TypeError, "%s: expected %zd-byte items", what, itemsize);
            PyBuffer_Release(view);
            return -1;
        }
    }
    return 0;
}

typedef struct { int64_t id, row; } Pair;

#define MAX_PLANES (1 << 20)

static int cmp_pair(const void *a, const void *b) {
    const Pair *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* Build one table per plane 0..n_planes-1. Returns 0, or -1 on allocation failure. */
static int build_tables(const int32_t *kp, const int64_t *kid, int64_t nk, Table *t, int64_t n_planes) {
    int64_t *count = calloc((size_t)n_planes + 1, sizeof(int64_t));
    int64_t *start = malloc(((size_t)n_planes + 1) * sizeof(int64_t));
    int64_t *fill = malloc(((size_t)n_planes + 1) * sizeof(int64_t));
    int64_t *rows = malloc((size_t)(nk ? nk : 1) * sizeof(int64_t));
    int ok = count && start && fill && rows;
    if (ok) {
        for (int64_t i = 0; i < nk; i++) count[kp[i]]++;
        int64_t s = 0;
        for (int64_t p = 0; p < n_planes; p++) { start[p] = fill[p] = s; s += count[p]; }
        for (int64_t i = 0; i < nk; i++) rows[fill[kp[i]]++] = i;
        for (int64_t p = 0; p < n_planes && ok; p++) {
            int64_t c = count[p], *r = rows + start[p];
            memset(&t[p], 0, sizeof(Table));
            if (c == 0) continue;
            int64_t lo = kid[r[0]], hi = lo;
            for (int64_t j = 1; j < c; j++) {
                int64_t v = kid[r[j]];
                if (v < lo) lo = v;
                if (v > hi) hi = v;
            }
            if (lo >= 0 && hi < 4 * c + 1024) {
                t[p].dense = 1;
                t[p].n = hi + 1;
                t[p].table = malloc((size_t)(hi + 1) * sizeof(int64_t));
                if (!t[p].table) { ok = 0; break; }
                for (int64_t j = 0; j <= hi; j++) t[p].table[j] = -1;
                for (int64_t j = 0; j < c; j++) t[p].table[kid[r[j]]] = r[j];  /* last wins */
            } else {
                Pair *pairs = malloc((size_t)c * sizeof(Pair));
                t[p].ids = malloc((size_t)c * sizeof(int64_t));
                t[p].rows = malloc((size_t)c * sizeof(int64_t));
                if (!pairs || !t[p].ids || !t[p].rows) { free(pairs); ok = 0; break; }
                for (int64_t j = 0; j < c; j++) { pairs[j].id = kid[r[j]]; pairs[j].row = r[j]; }
                qsort(pairs, (size_t)c, sizeof(Pair), cmp_pair);
                for (int64_t j = 0; j < c; j++) { t[p].ids[j] = pairs[j].id; t[p].rows[j] = pairs[j].row; }
                t[p].n = c;
                free(pairs);
            }
        }
    }
    free(count); free(start); free(fill); free(rows);
    return ok ? 0 : -1;
}

static void free_tables(Table *t, int64_t n) {
    if (!t) return;
    for (int64_t p = 0; p < n; p++) { free(t[p].table); free(t[p].ids); free(t[p].rows); }
    free(t);
}

static inline int64_t find(const Table *t, int64_t q) {
    if (t->dense) return (q >= 0 && q < t->n) ? t->table[q] : -1;
    int64_t lo = 0, hi = t->n;  /* first position with id >= q: the smallest row of that id */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (t->ids[mid] < q) lo = mid + 1; else hi = mid;
    }
    return (lo < t->n && t->ids[lo] == q) ? t->rows[lo] : -1;
}

static PyObject *columns_lookup(PyObject *self, PyObject *args) {
    PyObject *o_kp, *o_kid, *o_plane, *o_ids, *o_owner = Py_None;
    if (!PyArg_ParseTuple(args, "OOOO|O", &o_kp, &o_kid, &o_plane, &o_ids, &o_owner)) return NULL;
    Py_buffer kp = {0}, kid = {0}, plane = {0}, ids = {0}, owner = {0};
    PyObject *out = NULL;
    Table *tables = NULL;
    int64_t n_planes = 0;
    if (get(o_kp, &kp, 4, "keys_plane") || get(o_kid, &kid, 8, "keys_id") || get(o_plane, &plane, 4, "plane")
        || get(o_ids, &ids, 8, "ids") || (o_owner != Py_None && get(o_owner, &owner, 8, "owner")))
        goto done;
    int64_t nk = kid.len / 8, nq = ids.len / 8, np_ = plane.len / 4, no = owner.buf ? owner.len / 8 : 0;
    if (nk > INT32_MAX || nq > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "more than 2**31 - 1 rows"); goto done; }
    if (kp.len / 4 != nk) { PyErr_SetString(PyExc_ValueError, "keys_plane and keys_id differ in length"); goto done; }
    if (!owner.buf && np_ != nq) { PyErr_SetString(PyExc_ValueError, "plane and ids differ in length"); goto done; }
    if (owner.buf && no != nq) { PyErr_SetString(PyExc_ValueError, "owner and ids differ in length"); goto done; }
    const int32_t *kpp = kp.buf, *pl = plane.buf;
    const int64_t *kidp = kid.buf, *q = ids.buf, *ow = owner.buf;
    for (int64_t i = 0; i < nk; i++) {
        /* One table per plane index up to the largest: planes are a frame's few hundred at most. */
        if (kpp[i] < 0 || kpp[i] >= MAX_PLANES) {
            PyErr_SetString(PyExc_ValueError, "plane in keys outside 0..2**20 - 1");
            goto done;
        }
        if (kpp[i] >= n_planes) n_planes = (int64_t)kpp[i] + 1;
    }
    if (owner.buf)
        for (int64_t i = 0; i < nq; i++)
            if (ow[i] < 0 || ow[i] >= np_) { PyErr_SetString(PyExc_ValueError, "owner outside plane"); goto done; }
    out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(nq * 4));
    if (!out) goto done;
    int32_t *res = (int32_t *)PyByteArray_AS_STRING(out);
    tables = calloc((size_t)n_planes + 1, sizeof(Table));
    int failed = tables == NULL;
    Py_BEGIN_ALLOW_THREADS
    if (!failed) failed = build_tables(kpp, kidp, nk, tables, n_planes);
    if (!failed) {
        int64_t last_p = -2;
        const Table *t = NULL;
        for (int64_t i = 0; i < nq; i++) {
            int64_t p = owner.buf ? pl[ow[i]] : pl[i];
            if (p != last_p) { last_p = p; t = (p >= 0 && p < n_planes) ? &tables[p] : NULL; }
            res[i] = (int32_t)((t && t->n) ? find(t, q[i]) : -1);
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) { Py_CLEAR(out); PyErr_NoMemory(); }
done:
    free_tables(tables, n_planes);
    if (kp.buf) PyBuffer_Release(&kp);
    if (kid.buf) PyBuffer_Release(&kid);
    if (plane.buf) PyBuffer_Release(&plane);
    if (ids.buf) PyBuffer_Release(&ids);
    if (owner.buf) PyBuffer_Release(&owner);
    return out;
}

static PyObject *columns_group(PyObject *self, PyObject *args) {
    PyObject *o_keys;
    Py_ssize_t nb;
    if (!PyArg_ParseTuple(args, "On", &o_keys, &nb)) return NULL;
    /* Keys are int32: more buckets than that would only be empty (and their size could overflow). */
    if (nb < 0 || nb > INT32_MAX) { PyErr_SetString(PyExc_ValueError, "n must be in 0..2**31 - 1"); return NULL; }
    Py_buffer keys = {0};
    if (get(o_keys, &keys, 4, "keys")) return NULL;
    int64_t n = keys.len / 4;
    const int32_t *k = keys.buf;
    if (n > INT32_MAX) { PyBuffer_Release(&keys); PyErr_SetString(PyExc_OverflowError, "more than 2**31 - 1 rows"); return NULL; }
    PyObject *offs = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)((nb + 2) * 8));
    PyObject *order = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * 4));
    PyObject *result = NULL;
    int64_t *fill = malloc((size_t)(nb + 1) * sizeof(int64_t));
    if (offs && order && fill) {
        int64_t *o = (int64_t *)PyByteArray_AS_STRING(offs);
        int32_t *r = (int32_t *)PyByteArray_AS_STRING(order);
        Py_BEGIN_ALLOW_THREADS
        memset(o, 0, (size_t)(nb + 2) * 8);
        for (int64_t i = 0; i < n; i++) {
            int64_t b = (k[i] >= 0 && k[i] < nb) ? k[i] : nb;
            o[b + 1]++;
        }
        for (int64_t b = 0; b <= nb; b++) { o[b + 1] += o[b]; fill[b] = o[b]; }
        for (int64_t i = 0; i < n; i++) {
            int64_t b = (k[i] >= 0 && k[i] < nb) ? k[i] : nb;
            r[fill[b]++] = (int32_t)i;
        }
        Py_END_ALLOW_THREADS
        result = Py_BuildValue("(OO)", offs, order);
    } else {
        PyErr_NoMemory();
    }
    free(fill);
    Py_XDECREF(offs);
    Py_XDECREF(order);
    PyBuffer_Release(&keys);
    return result;
}

static PyObject *columns_order_facts(PyObject *self, PyObject *args) {
    Py_buffer first, count, occ, off, dur;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &first, &count, &occ, &off, &dur)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t lines = first.len / 8, n = occ.len / 8;
    if (count.len != first.len || off.len != occ.len || dur.len != occ.len) {
        PyErr_SetString(PyExc_ValueError, "order_facts: columns of different lengths");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, lines);
    if (!result) goto done;
    uint8_t *out = (uint8_t *)PyByteArray_AS_STRING(result);
    const int64_t *f = first.buf, *c = count.buf, *o = occ.buf, *b = off.buf, *d = dur.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t li = 0; li < lines; li++) {
        int64_t a = f[li], k = c[li];
        if (a < 0 || k < 0 || a > n || k > n - a) {
            bad = 1;
            break;
        }
        int sorted = 1, aggregated = 0;
        int64_t last_begin = 0, last_duration = 0;
        for (int64_t i = a; i < a + k; i++) {
            int64_t begin = o[i] > 0 ? 0 : b[i];
            aggregated |= o[i] > 0;
            if (i > a && (begin < last_begin || (begin == last_begin && d[i] > last_duration))) sorted = 0;
            last_begin = begin;
            last_duration = d[i];
        }
        out[li] = (uint8_t)(sorted | (aggregated << 1));
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        Py_CLEAR(result);
        PyErr_SetString(PyExc_ValueError, "order_facts: a line's events lie outside the columns");
    }
done:
    PyBuffer_Release(&first);
    PyBuffer_Release(&count);
    PyBuffer_Release(&occ);
    PyBuffer_Release(&off);
    PyBuffer_Release(&dur);
    return result;
}

static PyObject *columns_nondecreasing(PyObject *self, PyObject *args) {
    Py_buffer v;
    if (!PyArg_ParseTuple(args, "y*", &v)) return NULL;
    const int64_t *a = v.buf;
    Py_ssize_t n = v.len / 8, i = 1;
    Py_BEGIN_ALLOW_THREADS
    while (i < n && a[i] >= a[i - 1]) i++;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&v);
    return PyBool_FromLong(i >= n);
}

static PyObject *columns_add_to_slices(PyObject *self, PyObject *args) {
    Py_buffer col, first, count, add;
    if (!PyArg_ParseTuple(args, "w*y*y*y*", &col, &first, &count, &add)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = col.len / 8, slices = first.len / 8;
    if (count.len != first.len || add.len != first.len) {
        PyErr_SetString(PyExc_ValueError, "add_to_slices: first, count and add differ in length");
        goto done;
    }
    int64_t *c = col.buf;
    const int64_t *f = first.buf, *k = count.buf, *d = add.buf;
    int bad = 0;
    for (Py_ssize_t s = 0; s < slices; s++)
        if (f[s] < 0 || k[s] < 0 || f[s] > n || k[s] > n - f[s]) bad = 1;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "add_to_slices: a slice lies outside the column");
        goto done;
    }
    Py_ssize_t overflow_at = -1;
    Py_BEGIN_ALLOW_THREADS
    /* A sum past int64 (absurd offsets in a file) stops the pass: the column is then partly
     * moved, and the caller drops it. Checked per value, as the add: no second pass. */
    for (Py_ssize_t s = 0; s < slices && overflow_at < 0; s++) {
        int64_t *x = c + f[s], delta = d[s];
        if (delta > 0) {
            int64_t most = INT64_MAX - delta;
            for (int64_t i = 0; i < k[s]; i++) {
                if (x[i] > most) { overflow_at = f[s] + i; break; }
                x[i] += delta;
            }
        } else if (delta < 0) {
            int64_t least = INT64_MIN - delta;
            for (int64_t i = 0; i < k[s]; i++) {
                if (x[i] < least) { overflow_at = f[s] + i; break; }
                x[i] += delta;
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (overflow_at >= 0) {
        PyErr_Format(PyExc_OverflowError, "add_to_slices: value %zd overflows int64", overflow_at);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&col);
    PyBuffer_Release(&first);
    PyBuffer_Release(&count);
    PyBuffer_Release(&add);
    return result;
}

static PyObject *columns_remap_kinds(PyObject *self, PyObject *args) {
    Py_buffer kind, value, smap, bmap;
    int str_kind, bytes_kind;
    if (!PyArg_ParseTuple(args, "y*w*iy*iy*", &kind, &value, &str_kind, &smap, &bytes_kind, &bmap)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = kind.len, ns = smap.len / 8, nb = bmap.len / 8, bad_at = -1;
    if (value.len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "remap_kinds: kind and value differ in length");
        goto done;
    }
    const uint8_t *k = kind.buf;
    int64_t *v = value.buf;
    const int64_t *sm = smap.buf, *bm = bmap.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (k[i] == str_kind) {
            if (v[i] < 0 || v[i] >= ns) { bad_at = i; break; }
            v[i] = sm[v[i]];
        } else if (k[i] == bytes_kind) {
            if (v[i] < 0 || v[i] >= nb) { bad_at = i; break; }
            v[i] = bm[v[i]];
        }
    }
    Py_END_ALLOW_THREADS
    if (bad_at >= 0) {
        PyErr_Format(PyExc_IndexError, "remap_kinds: value %zd is outside its table", bad_at);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&kind);
    PyBuffer_Release(&value);
    PyBuffer_Release(&smap);
    PyBuffer_Release(&bmap);
    return result;
}

static PyMethodDef methods[] = {
    {"lookup", columns_lookup, METH_VARARGS, "lookup(keys_plane, keys_id, plane, ids[, owner]) -> bytearray int32"},
    {"group", columns_group, METH_VARARGS, "group(keys int32, n) -> (offsets int64, order int32) bytearrays"},
    {"order_facts", columns_order_facts, METH_VARARGS,
     "order_facts(first, count, occurrences, offset, duration) -> bytearray: per line 1 sorted | 2 aggregated"},
    {"nondecreasing", columns_nondecreasing, METH_VARARGS, "nondecreasing(values int64) -> bool"},
    {"add_to_slices", columns_add_to_slices, METH_VARARGS,
     "add_to_slices(column, first, count, add) -> None: column[first[i]:first[i] + count[i]] += add[i]"},
    {"remap_kinds", columns_remap_kinds, METH_VARARGS,
     "remap_kinds(kind, value, str_kind, str_map, bytes_kind, bytes_map) -> None: values of two kinds through their maps"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_columns", "Whole-column passes of the decoded frame.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__columns(void) { return PyModule_Create(&module); }
