/* The trace viewer export's JSON lines, in C (tputui/analysis/_trace_json).
 *
 * Exact replays of the reference in tputui/analysis/trace_json.py (tests compare the bytes):
 *
 *   events(pid, tid: uint32, start, dur: int64, name: int32 buffers, tails: bytes,
 *          tail_off: int64 buffer, lo, hi, complete) -> bytes
 *       `{"pid":P,"tid":T,"ts":US` (complete: `,"dur":US`) then tails[name] (the phase, name and
 *       `},\n`, see trace_json.event_tails) for each row in [lo, hi) whose duration is non-zero
 *       (complete) or zero (not complete), in row order.
 *   flows(src_pid, src_tid: uint32, src_ts: int64, dst_pid, dst_tid: uint32, dst_ts: int64,
 *         code: int64 buffers, tails: bytes, tail_off: int64 buffer, first_id) -> bytes
 *       per link k: `{"pid":..,"tid":..,"ts":US,"ph":"s","id":K,"bind_id":K` + tails[code[k]],
 *       then the same with `"ph":"f","bp":"e"` on the destination; K counts from first_id.
 *   counters(pid: uint32, name: int64, t: int64, value: float64 buffers, names: bytes,
 *            name_off: int64 buffer) -> bytes
 *       `{"pid":P,"name":NAME,"ph":"C","ts":US,"args":{"value":V}},\n` per sample; V is the
 *       integer when the value is one (below 2**63), else Python's repr of the float.
 *
 * US is picoseconds as microseconds text, trace_json.us_text: the shortest float text of ps / 1e6
 * (Python's repr: exact, <= 15 digits) below 10**15 ps, six fixed decimals from there on.
 * events and flows touch no Python object while they format, so the GIL is released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define FLOAT_EXACT_PS 1000000000000000ULL
#define US_MAX 28  /* sign, 20 digits, '.', 6 decimals */

static const char DIGITS2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static char *put_u64(char *p, uint64_t v) {
    char tmp[20];
    int n = 20;
    while (v >= 100) {  /* two digits a step */
        unsigned k = (unsigned)(v % 100) * 2;
        v /= 100;
        tmp[--n] = DIGITS2[k + 1];
        tmp[--n] = DIGITS2[k];
    }
    if (v >= 10) {
        tmp[--n] = DIGITS2[v * 2 + 1];
        tmp[--n] = DIGITS2[v * 2];
    } else {
        tmp[--n] = (char)('0' + v);
    }
    memcpy(p, tmp + n, (size_t)(20 - n));
    return p + (20 - n);
}

static char *put_i64(char *p, int64_t v) {
    if (v < 0) { *p++ = '-'; return put_u64(p, (uint64_t)0 - (uint64_t)v); }
    return put_u64(p, (uint64_t)v);
}

static char *put_us(char *p, int64_t ps) {
    uint64_t u = ps < 0 ? (uint64_t)0 - (uint64_t)ps : (uint64_t)ps;
    if (ps < 0) *p++ = '-';
    if (u == 0) { memcpy(p, "0.0", 3); return p + 3; }
    if (u < 100) {  /* repr switches to exponent form below 1e-4: 5e-06, 1.2e-05 */
        if (u < 10) { *p++ = (char)('0' + u); memcpy(p, "e-06", 4); return p + 4; }
        *p++ = (char)('0' + u / 10);
        if (u % 10) { *p++ = '.'; *p++ = (char)('0' + u % 10); }
        memcpy(p, "e-05", 4);
        return p + 4;
    }
    p = put_u64(p, u / 1000000);
    *p++ = '.';
    unsigned frac = (unsigned)(u % 1000000);
    memcpy(p, DIGITS2 + (frac / 10000) * 2, 2);
    memcpy(p + 2, DIGITS2 + (frac / 100 % 100) * 2, 2);
    memcpy(p + 4, DIGITS2 + (frac % 100) * 2, 2);
    int n = 6;
    if (u < FLOAT_EXACT_PS) {
        while (n > 1 && p[n - 1] == '0') n--;
    }
    return p + n;
}

static int get_buf(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len % itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected items of %zd bytes", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

#define NBUF 8
typedef struct { Py_buffer v[NBUF]; int n; } Bufs;

static void release(Bufs *b) {
    for (int i = 0; i < b->n; i++) PyBuffer_Release(&b->v[i]);
    b->n = 0;
}

/* The next buffer, of n items (n < 0: any length; its length is returned through *len). */
static const void *take(Bufs *b, PyObject *obj, Py_ssize_t itemsize, Py_ssize_t *len, const char *what) {
    Py_buffer *v = &b->v[b->n];
    if (get_buf(obj, v, itemsize, what) < 0) return NULL;
    b->n++;
    Py_ssize_t n = v->len / itemsize;
    if (*len >= 0 && n != *len) {
        PyErr_Format(PyExc_ValueError, "%s: %zd items, expected %zd", what, n, *len);
        return NULL;
    }
    *len = n;
    return v->buf;
}

/* Tail lengths in a blob, checked: offsets rise within the blob. */
static int check_offsets(const int64_t *off, Py_ssize_t n_off, Py_ssize_t blob_len, const char *what) {
    if (n_off < 1 || off[0] != 0) goto bad;
    for (Py_ssize_t i = 1; i < n_off; i++)
        if (off[i] < off[i - 1] || off[i] > blob_len) goto bad;
    return 0;
bad:
    PyErr_Format(PyExc_ValueError, "%s: offsets must rise from 0 within the blob", what);
    return -1;
}

static PyObject *finish(PyObject *out, char *start, char *end) {
    if (_PyBytes_Resize(&out, end - start) < 0) return NULL;
    return out;
}

static PyObject *events(PyObject *self, PyObject *args) {
    PyObject *po, *to, *so, *dob, *no, *tails, *oo;
    Py_ssize_t lo, hi;
    int complete;
    if (!PyArg_ParseTuple(args, "OOOOOSOnnp", &po, &to, &so, &dob, &no, &tails, &oo, &lo, &hi, &complete))
        return NULL;
    Bufs b = {.n = 0};
    Py_ssize_t n = -1, n_off = -1;
    const uint32_t *pid = take(&b, po, 4, &n, "pid");
    const uint32_t *tid = pid ? take(&b, to, 4, &n, "tid") : NULL;
    const int64_t *start = tid ? take(&b, so, 8, &n, "start") : NULL;
    const int64_t *dur = start ? take(&b, dob, 8, &n, "dur") : NULL;
    const int32_t *name = dur ? take(&b, no, 4, &n, "name") : NULL;
    const int64_t *off = name ? take(&b, oo, 8, &n_off, "tail_off") : NULL;
    if (!off || check_offsets(off, n_off, PyBytes_GET_SIZE(tails), "tail_off") < 0) { release(&b); return NULL; }
    if (lo < 0) lo = 0;
    if (hi > n) hi = n;
    const char *blob = PyBytes_AS_STRING(tails);
    Py_ssize_t ntails = n_off - 1, size = 0, bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = lo; i < hi; i++) {
        if ((dur[i] != 0) != complete) continue;
        int32_t k = name[i];
        if (k < 0 || k >= ntails) { bad = i; break; }
        size += 2 * 10 + 2 * US_MAX + 32 + (off[k + 1] - off[k]);
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "name id %d of row %zd has no tail", (int)name[bad], bad);
        release(&b);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (!out) { release(&b); return NULL; }
    char *o = PyBytes_AS_STRING(out), *p = o;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = lo; i < hi; i++) {
        if ((dur[i] != 0) != complete) continue;
        memcpy(p, "{\"pid\":", 7); p = put_u64(p + 7, pid[i]);
        memcpy(p, ",\"tid\":", 7); p = put_u64(p + 7, tid[i]);
        memcpy(p, ",\"ts\":", 6); p = put_us(p + 6, start[i]);
        if (complete) { memcpy(p, ",\"dur\":", 7); p = put_us(p + 7, dur[i]); }
        int32_t k = name[i];
        memcpy(p, blob + off[k], (size_t)(off[k + 1] - off[k]));
        p += off[k + 1] - off[k];
    }
    Py_END_ALLOW_THREADS
    release(&b);
    return finish(out, o, p);
}

static char *flow_head(char *p, uint32_t pid, uint32_t tid, int64_t ts, int finish_end, uint64_t id) {
    memcpy(p, "{\"pid\":", 7); p = put_u64(p + 7, pid);
    memcpy(p, ",\"tid\":", 7); p = put_u64(p + 7, tid);
    memcpy(p, ",\"ts\":", 6); p = put_us(p + 6, ts);
    if (finish_end) { memcpy(p, ",\"ph\":\"f\",\"bp\":\"e\"", 18); p += 18; }
    else { memcpy(p, ",\"ph\":\"s\"", 9); p += 9; }
    memcpy(p, ",\"id\":", 6); p = put_u64(p + 6, id);
    memcpy(p, ",\"bind_id\":", 11); p = put_u64(p + 11, id);
    return p;
}

static PyObject *flows(PyObject *self, PyObject *args) {
    PyObject *o[7], *tails, *oo;
    unsigned long long first_id;
    if (!PyArg_ParseTuple(args, "OOOOOOOSOK", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &tails, &oo,
                          &first_id))
        return NULL;
    Bufs b = {.n = 0};
    Py_ssize_t n = -1, n_off = -1;
    const uint32_t *sp = take(&b, o[0], 4, &n, "src_pid");
    const uint32_t *st = sp ? take(&b, o[1], 4, &n, "src_tid") : NULL;
    const int64_t *ss = st ? take(&b, o[2], 8, &n, "src_ts") : NULL;
    const uint32_t *dp = ss ? take(&b, o[3], 4, &n, "dst_pid") : NULL;
    const uint32_t *dt = dp ? take(&b, o[4], 4, &n, "dst_tid") : NULL;
    const int64_t *ds = dt ? take(&b, o[5], 8, &n, "dst_ts") : NULL;
    const int64_t *code = ds ? take(&b, o[6], 8, &n, "code") : NULL;
    const int64_t *off = code ? take(&b, oo, 8, &n_off, "tail_off") : NULL;
    if (!off || check_offsets(off, n_off, PyBytes_GET_SIZE(tails), "tail_off") < 0) { release(&b); return NULL; }
    Py_ssize_t ntails = n_off - 1, size = 0, bad = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = code[i];
        if (k < 0 || k >= ntails) { bad = i; break; }
        size += 2 * (2 * 10 + US_MAX + 2 * 20 + 64 + (off[k + 1] - off[k]));
    }
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "code %lld of link %zd has no tail", (long long)code[bad], bad);
        release(&b);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (!out) { release(&b); return NULL; }
    const char *blob = PyBytes_AS_STRING(tails);
    char *ob = PyBytes_AS_STRING(out), *p = ob;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = code[i];
        size_t len = (size_t)(off[k + 1] - off[k]);
        uint64_t id = first_id + (uint64_t)i;
        p = flow_head(p, sp[i], st[i], ss[i], 0, id);
        memcpy(p, blob + off[k], len); p += len;
        p = flow_head(p, dp[i], dt[i], ds[i], 1, id);
        memcpy(p, blob + off[k], len); p += len;
    }
    Py_END_ALLOW_THREADS
    release(&b);
    return finish(out, ob, p);
}

static PyObject *counters(PyObject *self, PyObject *args) {
    PyObject *po, *no, *to, *vo, *names, *oo;
    if (!PyArg_ParseTuple(args, "OOOOSO", &po, &no, &to, &vo, &names, &oo)) return NULL;
    Bufs b = {.n = 0};
    Py_ssize_t n = -1, n_off = -1;
    const uint32_t *pid = take(&b, po, 4, &n, "pid");
    const int64_t *name = pid ? take(&b, no, 8, &n, "name") : NULL;
    const int64_t *t = name ? take(&b, to, 8, &n, "t") : NULL;
    const double *value = t ? take(&b, vo, 8, &n, "value") : NULL;
    const int64_t *off = value ? take(&b, oo, 8, &n_off, "name_off") : NULL;
    if (!off || check_offsets(off, n_off, PyBytes_GET_SIZE(names), "name_off") < 0) { release(&b); return NULL; }
    Py_ssize_t nnames = n_off - 1, size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = name[i];
        if (k < 0 || k >= nnames) {
            PyErr_Format(PyExc_ValueError, "name %lld of sample %zd is not in names", (long long)k, i);
            release(&b);
            return NULL;
        }
        size += 10 + US_MAX + 40 + 64 + (off[k + 1] - off[k]);
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (!out) { release(&b); return NULL; }
    const char *blob = PyBytes_AS_STRING(names);
    char *ob = PyBytes_AS_STRING(out), *p = ob;
    for (Py_ssize_t i = 0; i < n; i++) {  /* repr of a non-integral value needs the GIL: kept */
        int64_t k = name[i];
        memcpy(p, "{\"pid\":", 7); p = put_u64(p + 7, pid[i]);
        memcpy(p, ",\"name\":", 8); p += 8;
        memcpy(p, blob + off[k], (size_t)(off[k + 1] - off[k])); p += off[k + 1] - off[k];
        memcpy(p, ",\"ph\":\"C\",\"ts\":", 15); p = put_us(p + 15, t[i]);
        memcpy(p, ",\"args\":{\"value\":", 17); p += 17;
        double v = value[i];
        if (isfinite(v) && v == floor(v) && fabs(v) < 9223372036854775808.0) {
            p = put_i64(p, (int64_t)v);
        } else {
            char *r = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
            if (!r) { Py_DECREF(out); release(&b); return NULL; }
            size_t len = strlen(r);
            if (len > 60) len = 60;  /* repr of a double is at most 24 characters */
            memcpy(p, r, len); p += len;
            PyMem_Free(r);
        }
        memcpy(p, "}},\n", 4); p += 4;
    }
    release(&b);
    return finish(out, ob, p);
}

static PyObject *us(PyObject *self, PyObject *arg) {
    long long ps = PyLong_AsLongLong(arg);
    if (ps == -1 && PyErr_Occurred()) return NULL;
    char buf[US_MAX + 4];
    char *end = put_us(buf, (int64_t)ps);
    return PyUnicode_FromStringAndSize(buf, end - buf);
}

static PyMethodDef methods[] = {
    {"events", events, METH_VARARGS, "JSON lines of the events of one phase in a row range."},
    {"flows", flows, METH_VARARGS, "JSON lines of flow links (a start and a finish each)."},
    {"counters", counters, METH_VARARGS, "JSON lines of counter samples."},
    {"us", us, METH_O, "Picoseconds as the export's microseconds text."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_trace_json", NULL, -1, methods};

PyMODINIT_FUNC PyInit__trace_json(void) { return PyModule_Create(&module); }
