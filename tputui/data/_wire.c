/* Fast XSpace wire decoder: serialized tensorflow.profiler.XSpace -> flat columns.
 *
 * One pass over the protobuf wire format of the fixed XSpace schema (see
 * protos/xplane.proto), appending every event, stat and metadata entry to growable
 * column buffers. Python (tputui/data/wire.py) wraps the buffers as numpy arrays.
 * Strings are returned as (offset, length) into the input buffer; Python slices them.
 *
 *   scan(buf) -> (planes [(offset, length, name_bytes)], hostnames, errors, warnings)
 *   decode_planes(buf, [(offset, length), ...]) -> {column name: bytes}
 *
 * Any malformed input raises ValueError with the byte offset; nothing is trusted.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *data;
    size_t len, cap;
} Col;

static int col_reserve(Col *c, size_t extra) {
    if (c->len + extra <= c->cap) return 0;
    size_t cap = c->cap ? c->cap : 4096;
    while (cap < c->len + extra) cap *= 2;
    char *d = realloc(c->data, cap);
    if (!d) return -1;
    c->data = d;
    c->cap = cap;
    return 0;
}

static inline int push_i64(Col *c, int64_t v) {
    if (col_reserve(c, 8)) return -1;
    memcpy(c->data + c->len, &v, 8);
    c->len += 8;
    return 0;
}

static inline int push_i32(Col *c, int32_t v) {
    if (col_reserve(c, 4)) return -1;
    memcpy(c->data + c->len, &v, 4);
    c->len += 4;
    return 0;
}

static inline int push_u8(Col *c, uint8_t v) {
    if (col_reserve(c, 1)) return -1;
    c->data[c->len++] = (char)v;
    return 0;
}

/* Stats of one owner kind: owner row, stat metadata id, kind, value, length. */
typedef struct {
    Col owner, mid, kind, val, len;
} StatCols;

enum { K_NONE = 0, K_DOUBLE, K_UINT64, K_INT64, K_STR, K_BYTES, K_REF };

typedef struct {
    const uint8_t *base; /* start of the whole buffer (offsets are relative to it) */
    const char *error;
    size_t error_at;
    Col plane_id, plane_name_off, plane_name_len;
    Col line_plane, line_id, line_display_id, line_ts, line_dur, line_name_off, line_name_len,
        line_dname_off, line_dname_len, line_first, line_count;
    Col ev_line, ev_mid, ev_off, ev_occ, ev_dur;
    Col em_plane, em_id, em_name_off, em_name_len, em_dname_off, em_dname_len, em_meta_off, em_meta_len;
    Col emc_owner, emc_id;
    Col sm_plane, sm_id, sm_name_off, sm_name_len, sm_desc_off, sm_desc_len;
    StatCols es, ms, ps;
    int64_t n_planes, n_lines, n_events, n_em;
} Dec;

#define FAIL(d, p, msg) do { (d)->error = (msg); (d)->error_at = (size_t)((p) - (d)->base); return -1; } while (0)
#define OOM(d, p) FAIL(d, p, "out of memory")

static inline int read_varint(Dec *d, const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    int shift = 0;
    while (p < end) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
        shift += 7;
        if (shift >= 70) FAIL(d, p, "varint too long");
    }
    FAIL(d, p, "truncated varint");
}

/* Reads a length-delimited field's bounds: [*start, *stop). */
static inline int read_len(Dec *d, const uint8_t **pp, const uint8_t *end, const uint8_t **start,
                           const uint8_t **stop) {
    uint64_t n;
    if (read_varint(d, pp, end, &n)) return -1;
    if (n > (uint64_t)(end - *pp)) FAIL(d, *pp, "length runs past the end of its message (truncated file?)");
    *start = *pp;
    *stop = *pp + n;
    *pp = *stop;
    return 0;
}

static int skip_field(Dec *d, const uint8_t **pp, const uint8_t *end, int wire) {
    uint64_t tmp;
    const uint8_t *a, *b;
    switch (wire) {
    case 0: return read_varint(d, pp, end, &tmp);
    case 1:
        if (end - *pp < 8) FAIL(d, *pp, "truncated fixed64");
        *pp += 8;
        return 0;
    case 2: return read_len(d, pp, end, &a, &b);
    case 5:
        if (end - *pp < 4) FAIL(d, *pp, "truncated fixed32");
        *pp += 4;
        return 0;
    default: FAIL(d, *pp, "invalid wire type");
    }
}

#define TAG_LOOP(d, p, end, field, wire)                 \
    while (p < end) {                                     \
        uint64_t _tag;                                    \
        if (read_varint(d, &p, end, &_tag)) return -1;    \
        int field = (int)(_tag >> 3), wire = (int)(_tag & 7); \
        if (field == 0) FAIL(d, p, "field number 0");

#define TAG_LOOP_END }

static int parse_stat(Dec *d, StatCols *sc, int64_t owner, const uint8_t *p, const uint8_t *end) {
    int64_t mid = 0, val = 0, len = 0;
    uint8_t kind = K_NONE;
    uint64_t v;
    const uint8_t *a, *b;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 1 && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            mid = (int64_t)v;
        } else if (field == 2 && wire == 1) {
            if (end - p < 8) FAIL(d, p, "truncated double");
            memcpy(&val, p, 8);
            p += 8;
            kind = K_DOUBLE;
            len = 0;
        } else if ((field == 3 || field == 4 || field == 7) && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            val = (int64_t)v;
            kind = field == 3 ? K_UINT64 : field == 4 ? K_INT64 : K_REF;
            len = 0;
        } else if ((field == 5 || field == 6) && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            val = (int64_t)(a - d->base);
            len = (int64_t)(b - a);
            kind = field == 5 ? K_STR : K_BYTES;
        } else if (skip_field(d, &p, end, wire)) {
            return -1;
        }
    TAG_LOOP_END
    if (push_i64(&sc->owner, owner) || push_i64(&sc->mid, mid) || push_u8(&sc->kind, kind) ||
        push_i64(&sc->val, val) || push_i64(&sc->len, len))
        OOM(d, p);
    return 0;
}

static int parse_event(Dec *d, int32_t line, const uint8_t *p, const uint8_t *end) {
    int64_t idx = d->n_events;
    int64_t mid = 0, off = 0, occ = 0, dur = 0;
    uint64_t v;
    const uint8_t *a, *b;
    TAG_LOOP(d, p, end, field, wire)
        if (wire == 0 && (field == 1 || field == 2 || field == 3 || field == 5)) {
            if (read_varint(d, &p, end, &v)) return -1;
            if (field == 1) mid = (int64_t)v;
            else if (field == 2) { off = (int64_t)v; occ = 0; }  /* oneof: last wins */
            else if (field == 3) dur = (int64_t)v;
            else { occ = (int64_t)v; off = 0; }
        } else if (field == 4 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (parse_stat(d, &d->es, idx, a, b)) return -1;
        } else if (skip_field(d, &p, end, wire)) {
            return -1;
        }
    TAG_LOOP_END
    if (push_i32(&d->ev_line, line) || push_i64(&d->ev_mid, mid) || push_i64(&d->ev_off, off) ||
        push_i64(&d->ev_occ, occ) || push_i64(&d->ev_dur, dur))
        OOM(d, p);
    d->n_events++;
    return 0;
}

static int parse_line(Dec *d, int32_t plane, const uint8_t *p, const uint8_t *end) {
    int32_t idx = (int32_t)d->n_lines;
    int64_t id = 0, display_id = 0, ts = 0, dur = 0;
    int64_t name_off = 0, name_len = 0, dname_off = 0, dname_len = 0;
    int64_t first = d->n_events;
    uint64_t v;
    const uint8_t *a, *b;
    d->n_lines++; /* reserve the row index: events refer to it before the row is written */
    TAG_LOOP(d, p, end, field, wire)
        if (wire == 0 && (field == 1 || field == 10 || field == 3 || field == 9)) {
            if (read_varint(d, &p, end, &v)) return -1;
            if (field == 1) id = (int64_t)v;
            else if (field == 10) display_id = (int64_t)v;
            else if (field == 3) ts = (int64_t)v;
            else dur = (int64_t)v;
        } else if (wire == 2 && (field == 2 || field == 11)) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (field == 2) { name_off = a - d->base; name_len = b - a; }
            else { dname_off = a - d->base; dname_len = b - a; }
        } else if (field == 4 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (parse_event(d, idx, a, b)) return -1;
        } else if (skip_field(d, &p, end, wire)) {
            return -1;
        }
    TAG_LOOP_END
    if (push_i32(&d->line_plane, plane) || push_i64(&d->line_id, id) || push_i64(&d->line_display_id, display_id) ||
        push_i64(&d->line_ts, ts) || push_i64(&d->line_dur, dur) || push_i64(&d->line_name_off, name_off) ||
        push_i64(&d->line_name_len, name_len) || push_i64(&d->line_dname_off, dname_off) ||
        push_i64(&d->line_dname_len, dname_len) || push_i64(&d->line_first, first) ||
        push_i64(&d->line_count, d->n_events - first))
        OOM(d, p);
    return 0;
}

static int parse_event_metadata(Dec *d, int32_t plane, int64_t key, const uint8_t *p, const uint8_t *end) {
    int64_t idx = d->n_em;
    int64_t id = 0, name_off = 0, name_len = 0, dname_off = 0, dname_len = 0, meta_off = 0, meta_len = 0;
    uint64_t v;
    const uint8_t *a, *b;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 1 && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            id = (int64_t)v;
        } else if (wire == 2 && (field == 2 || field == 4 || field == 3)) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (field == 2) { name_off = a - d->base; name_len = b - a; }
            else if (field == 4) { dname_off = a - d->base; dname_len = b - a; }
            else { meta_off = a - d->base; meta_len = b - a; }
        } else if (field == 5 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (parse_stat(d, &d->ms, idx, a, b)) return -1;
        } else if (field == 6 && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            if (push_i64(&d->emc_owner, idx) || push_i64(&d->emc_id, (int64_t)v)) OOM(d, p);
        } else if (field == 6 && wire == 2) { /* packed child ids */
            if (read_len(d, &p, end, &a, &b)) return -1;
            while (a < b) {
                if (read_varint(d, &a, b, &v)) return -1;
                if (push_i64(&d->emc_owner, idx) || push_i64(&d->emc_id, (int64_t)v)) OOM(d, p);
            }
        } else if (skip_field(d, &p, end, wire)) {
            return -1;
        }
    TAG_LOOP_END
    if (push_i32(&d->em_plane, plane) || push_i64(&d->em_id, id ? id : key) || push_i64(&d->em_name_off, name_off) ||
        push_i64(&d->em_name_len, name_len) || push_i64(&d->em_dname_off, dname_off) ||
        push_i64(&d->em_dname_len, dname_len) || push_i64(&d->em_meta_off, meta_off) ||
        push_i64(&d->em_meta_len, meta_len))
        OOM(d, p);
    d->n_em++;
    return 0;
}

static int parse_stat_metadata(Dec *d, int32_t plane, int64_t key, const uint8_t *p, const uint8_t *end) {
    int64_t id = 0, name_off = 0, name_len = 0, desc_off = 0, desc_len = 0;
    uint64_t v;
    const uint8_t *a, *b;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 1 && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            id = (int64_t)v;
        } else if (wire == 2 && (field == 2 || field == 3)) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (field == 2) { name_off = a - d->base; name_len = b - a; }
            else { desc_off = a - d->base; desc_len = b - a; }
        } else if (skip_field(d, &p, end, wire)) {
            return -1;
        }
    TAG_LOOP_END
    if (push_i32(&d->sm_plane, plane) || push_i64(&d->sm_id, id ? id : key) || push_i64(&d->sm_name_off, name_off) ||
        push_i64(&d->sm_name_len, name_len) || push_i64(&d->sm_desc_off, desc_off) || push_i64(&d->sm_desc_len, desc_len))
        OOM(d, p);
    return 0;
}

/* A map<int64, Message> entry: key = 1, value = 2. */
static int parse_map_entry(Dec *d, int32_t plane, int is_event_md, const uint8_t *p, const uint8_t *end) {
    int64_t key = 0;
    const uint8_t *vs = NULL, *ve = NULL;
    uint64_t v;
    const uint8_t *a, *b;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 1 && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            key = (int64_t)v;
        } else if (field == 2 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            vs = a;
            ve = b;
        } else if (skip_field(d, &p, end, wire)) {
            return -1;
        }
    TAG_LOOP_END
    if (!vs) vs = ve = end; /* an entry without value: an empty message */
    return is_event_md ? parse_event_metadata(d, plane, key, vs, ve) : parse_stat_metadata(d, plane, key, vs, ve);
}

static int parse_plane(Dec *d, const uint8_t *p, const uint8_t *end) {
    int32_t idx = (int32_t)d->n_planes;
    int64_t id = 0, name_off = 0, name_len = 0;
    uint64_t v;
    const uint8_t *a, *b;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 1 && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            id = (int64_t)v;
        } else if (field == 2 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            name_off = a - d->base;
            name_len = b - a;
        } else if (field == 3 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (parse_line(d, idx, a, b)) return -1;
        } else if ((field == 4 || field == 5) && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (parse_map_entry(d, idx, field == 4, a, b)) return -1;
        } else if (field == 6 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (parse_stat(d, &d->ps, idx, a, b)) return -1;
        } else if (skip_field(d, &p, end, wire)) {
            return -1;
        }
    TAG_LOOP_END
    if (push_i64(&d->plane_id, id) || push_i64(&d->plane_name_off, name_off) || push_i64(&d->plane_name_len, name_len))
        OOM(d, p);
    d->n_planes++;
    return 0;
}

static void raise_decode_error(Dec *d) {
    PyErr_Format(PyExc_ValueError, "truncated or corrupt XSpace: %s at byte %zu", d->error, d->error_at);
}

/* scan(buf): the top level only; planes are returned as byte ranges plus their names. */
static PyObject *wire_scan(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    Dec d;
    memset(&d, 0, sizeof d);
    const uint8_t *base = view.buf, *p = base, *end = base + view.len;
    d.base = base;
    PyObject *planes = PyList_New(0), *lists[3] = {PyList_New(0), PyList_New(0), PyList_New(0)};
    PyObject *result = NULL;
    if (!planes || !lists[0] || !lists[1] || !lists[2]) goto done;
    while (p < end) {
        uint64_t tag;
        const uint8_t *a, *b;
        if (read_varint(&d, &p, end, &tag)) { raise_decode_error(&d); goto done; }
        int field = (int)(tag >> 3), wire = (int)(tag & 7);
        if (field == 0) { d.error = "field number 0"; d.error_at = p - base; raise_decode_error(&d); goto done; }
        if (wire == 2 && field >= 1 && field <= 4) {
            if (read_len(&d, &p, end, &a, &b)) { raise_decode_error(&d); goto done; }
            PyObject *item;
            if (field == 1) {
                /* the plane's name, for plane selection without a full parse */
                const uint8_t *q = a, *ns = a, *ne = a;
                while (q < b) {
                    uint64_t t2;
                    const uint8_t *x, *y;
                    if (read_varint(&d, &q, b, &t2)) { raise_decode_error(&d); goto done; }
                    if ((t2 >> 3) == 2 && (t2 & 7) == 2) {
                        if (read_len(&d, &q, b, &x, &y)) { raise_decode_error(&d); goto done; }
                        ns = x;
                        ne = y;
                    } else if (skip_field(&d, &q, b, (int)(t2 & 7))) {
                        raise_decode_error(&d);
                        goto done;
                    }
                }
                item = Py_BuildValue("(nny#)", (Py_ssize_t)(a - base), (Py_ssize_t)(b - a), (const char *)ns,
                                     (Py_ssize_t)(ne - ns));
                if (!item || PyList_Append(planes, item)) { Py_XDECREF(item); goto done; }
            } else {
                item = PyUnicode_DecodeUTF8((const char *)a, b - a, "replace");
                if (!item || PyList_Append(lists[field - 2], item)) { Py_XDECREF(item); goto done; }
            }
            Py_DECREF(item);
        } else if (skip_field(&d, &p, end, wire)) {
            raise_decode_error(&d);
            goto done;
        }
    }
    /* lists: [errors (2), warnings (3), hostnames (4)] -> (planes, hostnames, errors, warnings) */
    result = Py_BuildValue("(OOOO)", planes, lists[2], lists[0], lists[1]);
done:
    Py_XDECREF(planes);
    Py_XDECREF(lists[0]);
    Py_XDECREF(lists[1]);
    Py_XDECREF(lists[2]);
    PyBuffer_Release(&view);
    return result;
}

static void free_dec(Dec *d) {
    Col *cols = (Col *)&d->plane_id;
    size_t n = ((char *)&d->n_planes - (char *)&d->plane_id) / sizeof(Col);
    for (size_t i = 0; i < n; i++) free(cols[i].data);
}

static int put(PyObject *dict, const char *name, Col *c) {
    PyObject *b = PyBytes_FromStringAndSize(c->data ? c->data : "", (Py_ssize_t)c->len);
    if (!b) return -1;
    int r = PyDict_SetItemString(dict, name, b);
    Py_DECREF(b);
    return r;
}

static int put_stats(PyObject *dict, const char *prefix, StatCols *s) {
    char name[32];
    const char *suffix[] = {"owner", "mid", "kind", "val", "len"};
    Col *cols[] = {&s->owner, &s->mid, &s->kind, &s->val, &s->len};
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "%s_%s", prefix, suffix[i]);
        if (put(dict, name, cols[i])) return -1;
    }
    return 0;
}

/* decode_planes(buf, ranges): full parse of the selected planes. */
static PyObject *wire_decode_planes(PyObject *self, PyObject *args) {
    Py_buffer view;
    PyObject *ranges;
    if (!PyArg_ParseTuple(args, "y*O", &view, &ranges)) return NULL;
    Dec d;
    memset(&d, 0, sizeof d);
    d.base = view.buf;
    PyObject *out = NULL, *seq = PySequence_Fast(ranges, "ranges must be a sequence");
    if (!seq) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int failed = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t off, len;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "nn", &off, &len)) goto done;
        if (off < 0 || len < 0 || off + len > view.len) {
            PyErr_SetString(PyExc_ValueError, "plane range outside the buffer");
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS  /* the walk touches no Python objects: let the UI thread run */
        failed = parse_plane(&d, d.base + off, d.base + off + len);
        Py_END_ALLOW_THREADS
        if (failed) { raise_decode_error(&d); goto done; }
    }
    out = PyDict_New();
    if (!out) goto done;
#define PUT(name) if (put(out, #name, &d.name)) goto fail;
    PUT(plane_id) PUT(plane_name_off) PUT(plane_name_len)
    PUT(line_plane) PUT(line_id) PUT(line_display_id) PUT(line_ts) PUT(line_dur) PUT(line_name_off)
    PUT(line_name_len) PUT(line_dname_off) PUT(line_dname_len) PUT(line_first) PUT(line_count)
    PUT(ev_line) PUT(ev_mid) PUT(ev_off) PUT(ev_occ) PUT(ev_dur)
    PUT(em_plane) PUT(em_id) PUT(em_name_off) PUT(em_name_len) PUT(em_dname_off) PUT(em_dname_len)
    PUT(em_meta_off) PUT(em_meta_len) PUT(emc_owner) PUT(emc_id)
    PUT(sm_plane) PUT(sm_id) PUT(sm_name_off) PUT(sm_name_len) PUT(sm_desc_off) PUT(sm_desc_len)
#undef PUT
    if (put_stats(out, "es", &d.es) || put_stats(out, "ms", &d.ms) || put_stats(out, "ps", &d.ps)) goto fail;
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_XDECREF(seq);
    free_dec(&d);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"scan", wire_scan, METH_VARARGS, "scan(buf) -> (planes, hostnames, errors, warnings)"},
    {"decode_planes", wire_decode_planes, METH_VARARGS, "decode_planes(buf, ranges) -> {column: bytes}"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wire", "Fast XSpace wire decoder.", -1, methods};

PyMODINIT_FUNC PyInit__wire(void) { return PyModule_Create(&module); }
