/* Fast XSpace wire decoder: serialized tensorflow.profiler.XSpace -> flat columns.
 *
 * One pass over the protobuf wire format of the fixed XSpace schema (see
 * protos/xplane.proto), appending every event, stat and metadata entry to growable
 * column buffers. Python (tputui/data/wire.py) wraps the buffers as numpy arrays.
 * Strings are returned as (offset, length) into the input buffer; Python slices them.
 *
 *   scan(buf) -> (planes [(offset, length, name_bytes)], hostnames, errors, warnings)
 *   decode_planes(buf, [(offset, length), ...], threads=1, keep_ids=None, lines=1) -> {column name: bytes}
 *     keep_ids (sorted int64 buffer): only the events whose metadata id is one of them (the others
 *     are located and stepped over, not checked); lines=0: no lines (located, not checked), for
 *     the planes' metadata alone
 *   count_lines(buf, [(offset, length), ...], threads=1) -> bytes (per line: plane, id, times, events, stats)
 *   intern_strings(buf, kind, value, lens, str_kind, strings, index): str stat values -> rows in strings
 *   memory_pool(limit) -> int: released column mappings kept for the next decode, up to limit bytes (0: none)
 *
 * Any malformed input raises ValueError with the byte offset; nothing is trusted.
 *
 * Semantics are protobuf's (upb's, which Python's protobuf uses and tputui's reference path
 * calls): a file is accepted exactly when protobuf accepts it, with the same content (for a
 * full decode; planes left out by a plane selection are only located, not checked):
 *   - field keys: at most 5 bytes, at most 2^32 - 1, field number >= 1; lengths: at most 5 bytes;
 *   - unknown fields of every wire type are skipped, groups (3/4) included, nested at most
 *     100 - (message depth) deep; an end-group key outside its group is an error;
 *   - string fields must be valid UTF-8 (bytes fields need not);
 *   - a map entry with any field other than key (1, varint) and value (2, bytes) is dropped
 *     (upb keeps it as an unknown field of the plane); a value given twice in one entry is
 *     the merge of both (= parsing them one after the other); of entries with the same key the
 *     last one wins (done in wire.py from the em_key / sm_key columns).
 * tests/test_wire_semantics.py checks this against protobuf on a seeded mutation corpus.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <pthread.h>

typedef struct {
    char *data;
    size_t len, cap;
} Col;

/* Columns from MAP_FROM on live in a mapping of their own, grown with mremap: the kernel moves
 * the pages instead of copying them, so a column that doubles never exists twice (with glibc's
 * big blocks kept on its heap, as one-shot commands ask for in data/allocator.py, realloc copies:
 * decoding 320 MB peaked ~300 MB higher). Smaller columns use malloc. */
#if defined(MREMAP_MAYMOVE) && defined(MAP_ANONYMOUS)
#define MAP_FROM ((size_t)1 << 20)
#else
#define MAP_FROM ((size_t)-1)  /* no mremap here: every column is malloc'd */
#endif
#define PAGE ((size_t)4096)

/* A pool of released column mappings, on while a riegeli merge decodes record after record
 * (memory_pool(limit)): a new column takes a pooled mapping instead of fresh pages, which the
 * kernel would zero (and a VM may have to fault in from its host) for every record. Off (limit 0),
 * a released mapping is unmapped at once. */
#define POOL_SLOTS 128
static struct { char *data; size_t cap; } pool[POOL_SLOTS];
static int pool_n;
static size_t pool_bytes, pool_limit;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* The smallest pooled mapping of at least `need` bytes (its size in *cap), or NULL. */
static char *pool_take(size_t need, size_t *cap) {
    char *d = NULL;
    pthread_mutex_lock(&pool_lock);
    int best = -1;
    for (int i = 0; i < pool_n; i++)
        if (pool[i].cap >= need && (best < 0 || pool[i].cap < pool[best].cap)) best = i;
    if (best >= 0) {
        d = pool[best].data;
        *cap = pool[best].cap;
        pool_bytes -= pool[best].cap;
        pool[best] = pool[--pool_n];
    }
    pthread_mutex_unlock(&pool_lock);
    return d;
}

static int pool_give(char *data, size_t cap) {
    int kept = 0;
    pthread_mutex_lock(&pool_lock);
    if (pool_n < POOL_SLOTS && pool_bytes + cap <= pool_limit) {
        pool[pool_n].data = data;
        pool[pool_n++].cap = cap;
        pool_bytes += cap;
        kept = 1;
    }
    pthread_mutex_unlock(&pool_lock);
    return kept;
}

static void col_release(char *data, size_t cap) {
    if (!data) return;
#if defined(MREMAP_MAYMOVE) && defined(MAP_ANONYMOUS)
    if (cap >= MAP_FROM) {
        if (!pool_give(data, cap)) munmap(data, cap);
        return;
    }
#endif
    free(data);
}

#if defined(__GNUC__)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define NOINLINE __attribute__((noinline))
#else
#define LIKELY(x) (x)
#define NOINLINE
#endif
NOINLINE static int col_grow(Col *c, size_t extra) {
    size_t cap = c->cap ? c->cap : 4096;
    while (cap < c->len + extra) cap *= 2;
    char *d;
#if defined(MREMAP_MAYMOVE) && defined(MAP_ANONYMOUS)
    if (cap >= MAP_FROM) {
        size_t pooled;
        if ((d = pool_take(cap, &pooled)) != NULL) {  /* pages in use before: no zeroing, no faults */
            if (c->len) memcpy(d, c->data, c->len);
            col_release(c->data, c->cap);
            c->data = d;
            c->cap = pooled;
            return 0;
        }
        if (c->cap >= MAP_FROM) {
            d = mremap(c->data, c->cap, cap, MREMAP_MAYMOVE);
            if (d == MAP_FAILED) return -1;
        } else {
            d = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (d == MAP_FAILED) return -1;
            if (c->len) memcpy(d, c->data, c->len);
            free(c->data);
        }
#ifdef MADV_HUGEPAGE
        /* Written once from start to end: 2 MB pages fault 512x less often (where transparent
         * huge pages are enabled for madvise). */
        madvise(d, cap, MADV_HUGEPAGE);
#endif
        c->data = d;
        c->cap = cap;
        return 0;
    }
#endif
    d = realloc(c->data, cap);
    if (!d) return -1;
    c->data = d;
    c->cap = cap;
    return 0;
}

/* Room for `extra` more bytes: the check inline (it runs for every value pushed), the growth
 * out of line (kept out of the pushes' code, the check stays a compare and a branch). */
static inline int col_reserve(Col *c, size_t extra) {
    if (LIKELY(c->len + extra <= c->cap)) return 0;
    return col_grow(c, extra);
}

/* A finished column handed to Python without a copy: a buffer object owning the malloc'd
 * block (numpy views it with frombuffer, writable; the block is freed with the last view). */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t len;
    size_t cap;  /* what col_release needs to know how it was allocated */
} ColBuf;

static char empty_col[8];

static int colbuf_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    ColBuf *b = (ColBuf *)self;
    return PyBuffer_FillInfo(view, self, b->data ? b->data : empty_col, b->len, 0, flags);
}

static void colbuf_dealloc(PyObject *self) {
    col_release(((ColBuf *)self)->data, ((ColBuf *)self)->cap);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs colbuf_as_buffer = {colbuf_getbuffer, NULL};

static PyTypeObject ColBufType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tputui.data._wire.Column",
    .tp_basicsize = sizeof(ColBuf),
    .tp_dealloc = colbuf_dealloc,
    .tp_as_buffer = &colbuf_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One decoded column (a buffer; read it with numpy.frombuffer).",
};

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
    Col em_plane, em_id, em_key, em_name_off, em_name_len, em_dname_off, em_dname_len, em_meta_off, em_meta_len;
    Col emc_owner, emc_id;
    Col sm_plane, sm_id, sm_key, sm_name_off, sm_name_len, sm_desc_off, sm_desc_len;
    StatCols es, ms, ps;
    Col segs; /* scratch: the value pieces of the map entry being parsed */
    int64_t n_planes, n_lines, n_events, n_em;
    int plane0_id_seen, plane0_name_seen; /* did the first plane part decoded here give an id, a name */
    const int64_t *keep_mid; /* decode_planes' keep_ids (ascending), NULL: every event */
    Py_ssize_t n_keep;
    int skip_lines;
} Dec;

#define FAIL(d, p, msg) do { (d)->error = (msg); (d)->error_at = (size_t)((p) - (d)->base); return -1; } while (0)
#define OOM(d, p) FAIL(d, p, "out of memory")

static inline int read_varint(Dec *d, const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    int shift = 0;
    while (p < end) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;  /* bits past 64 in a 10th byte are dropped, as upb does */
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

/* A field key: at most 5 bytes and 32 bits (a field number needs 29). */
static inline int read_key(Dec *d, const uint8_t **pp, const uint8_t *end, uint32_t *field, int *wire) {
    const uint8_t *start = *pp;
    uint64_t t;
    if (read_varint(d, pp, end, &t)) return -1;
    if (*pp - start > 5 || t > UINT32_MAX) FAIL(d, start, "field key out of range");
    *field = (uint32_t)(t >> 3);
    *wire = (int)(t & 7);
    return 0;
}

/* A field key of a message: also field number >= 1 (inside an unknown group protobuf lets 0 pass). */
static inline int read_tag(Dec *d, const uint8_t **pp, const uint8_t *end, uint32_t *field, int *wire) {
    const uint8_t *start = *pp;
    if (read_key(d, pp, end, field, wire)) return -1;
    if (*field == 0) FAIL(d, start, "field number 0");
    return 0;
}

/* Reads a length-delimited field's bounds: [*start, *stop). */
static inline int read_len(Dec *d, const uint8_t **pp, const uint8_t *end, const uint8_t **start,
                           const uint8_t **stop) {
    const uint8_t *at = *pp;
    uint64_t n;
    if (read_varint(d, pp, end, &n)) return -1;
    if (*pp - at > 5 || n >= INT32_MAX) FAIL(d, at, "length out of range");
    if (n > (uint64_t)(end - *pp)) FAIL(d, *pp, "length runs past the end of its message (truncated file?)");
    *start = *pp;
    *stop = *pp + n;
    *pp = *stop;
    return 0;
}

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), as protobuf
 * requires of string fields and Python's decoder of str. */
static int utf8_ok(const uint8_t *s, const uint8_t *e) {
    while (s < e) {
        while (e - s >= 8) { /* ASCII runs, 8 bytes at a time */
            uint64_t w;
            memcpy(&w, s, 8);
            if (w & 0x8080808080808080ULL) break;
            s += 8;
        }
        if (s >= e) break;
        uint8_t c = *s;
        if (c < 0x80) {
            s++;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (e - s < 2 || (s[1] & 0xC0) != 0x80) return 0;
            s += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (e - s < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
            if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0)) return 0;
            s += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (e - s < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
            if ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90)) return 0;
            s += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* A string field's bounds, checked to be UTF-8. */
static inline int read_str(Dec *d, const uint8_t **pp, const uint8_t *end, const uint8_t **start,
                           const uint8_t **stop) {
    if (read_len(d, pp, end, start, stop)) return -1;
    if (!utf8_ok(*start, *stop)) FAIL(d, *start, "string field is not valid UTF-8");
    return 0;
}

/* Skips one unknown field whose key was just read. `budget` is how many groups may still
 * nest here (protobuf's depth limit, 100, less the depth of the enclosing message). */
static int skip_field(Dec *d, const uint8_t **pp, const uint8_t *end, uint32_t field, int wire, int budget) {
    uint64_t tmp;
    const uint8_t *a, *b;
    switch (wire) {
    case 0: return read_varint(d, pp, end, &tmp);
    case 1:
        if (end - *pp < 8) FAIL(d, *pp, "truncated fixed64");
        *pp += 8;
        return 0;
    case 2: return read_len(d, pp, end, &a, &b);
    case 3:
        if (budget < 1) FAIL(d, *pp, "groups nested too deep");
        while (*pp < end) {
            uint32_t f;
            int w;
            if (read_key(d, pp, end, &f, &w)) return -1;
            if (w == 4) {
                if (f != field) FAIL(d, *pp, "end-group key does not match its group");
                return 0;
            }
            if (skip_field(d, pp, end, f, w, budget - 1)) return -1;
        }
        FAIL(d, *pp, "truncated group");
    case 4: FAIL(d, *pp, "end-group key outside a group");
    case 5:
        if (end - *pp < 4) FAIL(d, *pp, "truncated fixed32");
        *pp += 4;
        return 0;
    default: FAIL(d, *pp, "invalid wire type");
    }
}

/* Message depths (protobuf counts them for its limit on nested groups). */
enum { DEPTH_LIMIT = 100, D_SPACE = 0, D_PLANE = 1, D_LINE = 2, D_ENTRY = 2, D_EVENT = 3, D_META = 3 };

#define TAG_LOOP(d, p, end, field, wire)                   \
    while (p < end) {                                       \
        uint32_t field;                                     \
        int wire;                                           \
        if (read_tag(d, &p, end, &field, &wire)) return -1;

#define TAG_LOOP_END }

#define SKIP(d, p, end, field, wire, depth) \
    if (skip_field(d, &p, end, field, wire, DEPTH_LIMIT - (depth))) return -1;

/* One XStat at message depth `depth`; sc == NULL checks it without keeping it. */
static int parse_stat(Dec *d, StatCols *sc, int64_t owner, const uint8_t *p, const uint8_t *end, int depth) {
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
            if (field == 5 ? read_str(d, &p, end, &a, &b) : read_len(d, &p, end, &a, &b)) return -1;
            val = (int64_t)(a - d->base);
            len = (int64_t)(b - a);
            kind = field == 5 ? K_STR : K_BYTES;
        } else {
            SKIP(d, p, end, field, wire, depth)
        }
    TAG_LOOP_END
    if (sc && (push_i64(&sc->owner, owner) || push_i64(&sc->mid, mid) || push_u8(&sc->kind, kind) ||
               push_i64(&sc->val, val) || push_i64(&sc->len, len)))
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
            if (parse_stat(d, &d->es, idx, a, b, D_EVENT + 1)) return -1;
        } else {
            SKIP(d, p, end, field, wire, D_EVENT)
        }
    TAG_LOOP_END
    if (push_i32(&d->ev_line, line) || push_i64(&d->ev_mid, mid) || push_i64(&d->ev_off, off) ||
        push_i64(&d->ev_occ, occ) || push_i64(&d->ev_dur, dur))
        OOM(d, p);
    d->n_events++;
    return 0;
}

/* The metadata id of the event in [p, end), the last one given as protobuf reads it; the other
 * fields are stepped over (an event the filter drops is located, not checked). */
static int event_mid(Dec *d, const uint8_t *p, const uint8_t *end, int64_t *mid) {
    uint64_t v;
    *mid = 0;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 1 && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            *mid = (int64_t)v;
        } else {
            SKIP(d, p, end, field, wire, D_EVENT)
        }
    TAG_LOOP_END
    return 0;
}

static int keeps(const Dec *d, int64_t mid) {
    Py_ssize_t lo = 0, hi = d->n_keep;
    while (lo < hi) {
        Py_ssize_t m = lo + (hi - lo) / 2;
        if (d->keep_mid[m] < mid) lo = m + 1;
        else hi = m;
    }
    return lo < d->n_keep && d->keep_mid[lo] == mid;
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
            if (read_str(d, &p, end, &a, &b)) return -1;
            if (field == 2) { name_off = a - d->base; name_len = b - a; }
            else { dname_off = a - d->base; dname_len = b - a; }
        } else if (field == 4 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            int64_t mid;
            if (d->keep_mid && event_mid(d, a, b, &mid)) return -1;
            if ((!d->keep_mid || keeps(d, mid)) && parse_event(d, idx, a, b)) return -1;
        } else {
            SKIP(d, p, end, field, wire, D_LINE)
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

/* A map value given in several pieces is parsed piece after piece into one message (that is
 * protobuf's merge); `emit` = 0 checks it without keeping it (an entry upb drops). */
typedef struct {
    const uint8_t *start, *stop;
} Seg;

static int parse_event_metadata(Dec *d, int32_t plane, int64_t key, const Seg *segs, size_t nsegs, int emit) {
    int64_t idx = d->n_em;
    int64_t id = 0, name_off = 0, name_len = 0, dname_off = 0, dname_len = 0, meta_off = 0, meta_len = 0;
    uint64_t v;
    const uint8_t *a, *b;
    for (size_t i = 0; i < nsegs; i++) {
        const uint8_t *p = segs[i].start, *end = segs[i].stop;
        TAG_LOOP(d, p, end, field, wire)
            if (field == 1 && wire == 0) {
                if (read_varint(d, &p, end, &v)) return -1;
                id = (int64_t)v;
            } else if (wire == 2 && (field == 2 || field == 4)) {
                if (read_str(d, &p, end, &a, &b)) return -1;
                if (field == 2) { name_off = a - d->base; name_len = b - a; }
                else { dname_off = a - d->base; dname_len = b - a; }
            } else if (wire == 2 && field == 3) {
                if (read_len(d, &p, end, &a, &b)) return -1;
                meta_off = a - d->base;
                meta_len = b - a;
            } else if (field == 5 && wire == 2) {
                if (read_len(d, &p, end, &a, &b)) return -1;
                if (parse_stat(d, emit ? &d->ms : NULL, idx, a, b, D_META + 1)) return -1;
            } else if (field == 6 && wire == 0) {
                if (read_varint(d, &p, end, &v)) return -1;
                if (emit && (push_i64(&d->emc_owner, idx) || push_i64(&d->emc_id, (int64_t)v))) OOM(d, p);
            } else if (field == 6 && wire == 2) { /* packed child ids */
                if (read_len(d, &p, end, &a, &b)) return -1;
                while (a < b) {
                    if (read_varint(d, &a, b, &v)) return -1;
                    if (emit && (push_i64(&d->emc_owner, idx) || push_i64(&d->emc_id, (int64_t)v))) OOM(d, p);
                }
            } else {
                SKIP(d, p, end, field, wire, D_META)
            }
        TAG_LOOP_END
    }
    if (!emit) return 0;
    if (push_i32(&d->em_plane, plane) || push_i64(&d->em_id, id ? id : key) || push_i64(&d->em_key, key) ||
        push_i64(&d->em_name_off, name_off) || push_i64(&d->em_name_len, name_len) ||
        push_i64(&d->em_dname_off, dname_off) || push_i64(&d->em_dname_len, dname_len) ||
        push_i64(&d->em_meta_off, meta_off) || push_i64(&d->em_meta_len, meta_len))
        FAIL(d, d->base, "out of memory");
    d->n_em++;
    return 0;
}

static int parse_stat_metadata(Dec *d, int32_t plane, int64_t key, const Seg *segs, size_t nsegs, int emit) {
    int64_t id = 0, name_off = 0, name_len = 0, desc_off = 0, desc_len = 0;
    uint64_t v;
    const uint8_t *a, *b;
    for (size_t i = 0; i < nsegs; i++) {
        const uint8_t *p = segs[i].start, *end = segs[i].stop;
        TAG_LOOP(d, p, end, field, wire)
            if (field == 1 && wire == 0) {
                if (read_varint(d, &p, end, &v)) return -1;
                id = (int64_t)v;
            } else if (wire == 2 && (field == 2 || field == 3)) {
                if (read_str(d, &p, end, &a, &b)) return -1;
                if (field == 2) { name_off = a - d->base; name_len = b - a; }
                else { desc_off = a - d->base; desc_len = b - a; }
            } else {
                SKIP(d, p, end, field, wire, D_META)
            }
        TAG_LOOP_END
    }
    if (!emit) return 0;
    if (push_i32(&d->sm_plane, plane) || push_i64(&d->sm_id, id ? id : key) || push_i64(&d->sm_key, key) ||
        push_i64(&d->sm_name_off, name_off) || push_i64(&d->sm_name_len, name_len) ||
        push_i64(&d->sm_desc_off, desc_off) || push_i64(&d->sm_desc_len, desc_len))
        FAIL(d, d->base, "out of memory");
    return 0;
}

/* A map<int64, Message> entry: key = 1, value = 2 (both optional). */
static int parse_map_entry(Dec *d, int32_t plane, int is_event_md, const uint8_t *p, const uint8_t *end) {
    int64_t key = 0;
    int unknown = 0;
    uint64_t v;
    const uint8_t *a, *b;
    d->segs.len = 0;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 1 && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            key = (int64_t)v;
        } else if (field == 2 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            Seg seg = {a, b};
            if (col_reserve(&d->segs, sizeof seg)) OOM(d, p);
            memcpy(d->segs.data + d->segs.len, &seg, sizeof seg);
            d->segs.len += sizeof seg;
        } else {
            unknown = 1;
            SKIP(d, p, end, field, wire, D_ENTRY)
        }
    TAG_LOOP_END
    /* The value is parsed (and must be valid) even when the entry is then dropped. */
    const Seg *segs = (const Seg *)d->segs.data;
    size_t n = d->segs.len / sizeof(Seg);
    return is_event_md ? parse_event_metadata(d, plane, key, segs, n, !unknown)
                       : parse_stat_metadata(d, plane, key, segs, n, !unknown);
}

static int parse_plane(Dec *d, const uint8_t *p, const uint8_t *end) {
    int32_t idx = (int32_t)d->n_planes;
    int64_t id = 0, name_off = 0, name_len = 0;
    int id_seen = 0, name_seen = 0;
    uint64_t v;
    const uint8_t *a, *b;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 1 && wire == 0) {
            if (read_varint(d, &p, end, &v)) return -1;
            id = (int64_t)v;
            id_seen = 1;
        } else if (field == 2 && wire == 2) {
            if (read_str(d, &p, end, &a, &b)) return -1;
            name_off = a - d->base;
            name_len = b - a;
            name_seen = 1;
        } else if (field == 3 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (!d->skip_lines && parse_line(d, idx, a, b)) return -1;
        } else if ((field == 4 || field == 5) && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (parse_map_entry(d, idx, field == 4, a, b)) return -1;
        } else if (field == 6 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (parse_stat(d, &d->ps, idx, a, b, D_PLANE + 1)) return -1;
        } else {
            SKIP(d, p, end, field, wire, D_PLANE)
        }
    TAG_LOOP_END
    if (push_i64(&d->plane_id, id) || push_i64(&d->plane_name_off, name_off) || push_i64(&d->plane_name_len, name_len))
        OOM(d, p);
    if (idx == 0) {
        d->plane0_id_seen = id_seen;
        d->plane0_name_seen = name_seen;
    }
    d->n_planes++;
    return 0;
}

static void raise_decode_error(Dec *d) {
    PyErr_Format(PyExc_ValueError, "truncated or corrupt XSpace: %s at byte %zu", d->error, d->error_at);
}

/* The name of the plane in [p, end) (last one wins, as in a full parse), its other fields
 * skipped and checked as far as the top level of the plane goes. */
static int plane_name(Dec *d, const uint8_t *p, const uint8_t *end, const uint8_t **ns, const uint8_t **ne) {
    *ns = *ne = p;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 2 && wire == 2) {
            if (read_str(d, &p, end, ns, ne)) return -1;
        } else {
            SKIP(d, p, end, field, wire, D_PLANE)
        }
    TAG_LOOP_END
    return 0;
}

/* The top level of an XSpace: plane ranges and names into `planes`, the repeated strings
 * (errors = 2, warnings = 3, hostnames = 4) into lists[0..2]. -1 with d->error set, or -2
 * with a Python exception set. */
static int scan_space(Dec *d, const uint8_t *p, const uint8_t *end, PyObject *planes, PyObject **lists) {
    const uint8_t *a, *b, *ns, *ne;
    TAG_LOOP(d, p, end, field, wire)
        if (wire == 2 && field >= 1 && field <= 4) {
            PyObject *item;
            if (field == 1) {
                if (read_len(d, &p, end, &a, &b) || plane_name(d, a, b, &ns, &ne)) return -1;
                item = Py_BuildValue("(nny#)", (Py_ssize_t)(a - d->base), (Py_ssize_t)(b - a), (const char *)ns,
                                     (Py_ssize_t)(ne - ns));
            } else {
                if (read_str(d, &p, end, &a, &b)) return -1;
                item = PyUnicode_DecodeUTF8((const char *)a, b - a, NULL);
            }
            if (!item) return -2;
            int failed = PyList_Append(field == 1 ? planes : lists[field - 2], item);
            Py_DECREF(item);
            if (failed) return -2;
        } else {
            SKIP(d, p, end, field, wire, D_SPACE)
        }
    TAG_LOOP_END
    return 0;
}

/* scan(buf): the top level only; planes are returned as byte ranges plus their names. */
static PyObject *wire_scan(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    Dec d;
    memset(&d, 0, sizeof d);
    d.base = view.buf;
    PyObject *planes = PyList_New(0), *lists[3] = {PyList_New(0), PyList_New(0), PyList_New(0)};
    PyObject *result = NULL;
    if (planes && lists[0] && lists[1] && lists[2]) {
        int r = scan_space(&d, d.base, d.base + view.len, planes, lists);
        if (r == -1) raise_decode_error(&d);
        /* lists: [errors (2), warnings (3), hostnames (4)] -> (planes, hostnames, errors, warnings) */
        if (r == 0) result = Py_BuildValue("(OOOO)", planes, lists[2], lists[0], lists[1]);
    }
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
    for (size_t i = 0; i < n; i++) col_release(cols[i].data, cols[i].cap);
}

static int put(PyObject *dict, const char *name, Col *c) {
    ColBuf *b = PyObject_New(ColBuf, &ColBufType);
    if (!b) return -1;
    if (c->data && c->len < c->cap) {  /* give back the growth slack: no later view can reach it */
#if defined(MREMAP_MAYMOVE) && defined(MAP_ANONYMOUS)
        if (c->cap >= MAP_FROM) {
            /* Shrunk in place, to whole pages, and kept a mapping (col_release tells by cap);
             * kept whole while pooling (the next record's column of this size takes it). */
            size_t keep = (c->len + PAGE - 1) / PAGE * PAGE;
            if (keep < MAP_FROM) keep = MAP_FROM;
            pthread_mutex_lock(&pool_lock);
            int pooling = pool_limit > 0;
            pthread_mutex_unlock(&pool_lock);
            if (!pooling && keep < c->cap && mremap(c->data, c->cap, keep, 0) != MAP_FAILED) c->cap = keep;
        } else
#endif
        {
            char *d = realloc(c->data, c->len ? c->len : 1);
            if (d) {
                c->data = d;
                c->cap = c->len ? c->len : 1;
            }
        }
    }
    b->data = c->data;  /* the buffer object owns it now */
    b->len = (Py_ssize_t)c->len;
    b->cap = c->cap;
    c->data = NULL;
    c->len = c->cap = 0;
    int r = PyDict_SetItemString(dict, name, (PyObject *)b);
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

/* Item i of a ranges sequence as (offset, length) inside a buffer of buflen bytes; -1 with a
 * Python error set otherwise. */
static int plane_range(PyObject *seq, Py_ssize_t i, Py_ssize_t buflen, Py_ssize_t *off, Py_ssize_t *len) {
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "nn", off, len)) return -1;
    if (*off < 0 || *len < 0 || *off > buflen || *len > buflen - *off) { /* no off + len: it can overflow */
        PyErr_SetString(PyExc_ValueError, "plane range outside the buffer");
        return -1;
    }
    return 0;
}

/* --- decode_planes on two threads ---------------------------------------------------------------
 * The selected bytes are cut in two near their middle, at a boundary between two top-level fields
 * of a plane when the middle falls inside one (a plane message is the concatenation of its fields,
 * so both parts parse as planes). Each half is decoded into columns of its own on its own thread;
 * then the second half's rows are appended to the first's, their references to planes, lines,
 * events and event metadata moved by the first half's counts, and a cut plane's two rows made one
 * (its id and name: the last given, as in one parse). The result is the one-thread decode's, errors
 * included: the first half's error wins, and either half sees the bytes a one-thread walk would. */
typedef struct {
    const uint8_t *start, *stop;
    Py_ssize_t index; /* which of the selected ranges (a cut plane's two parts share it) */
} Span;

/* One half's walk: its spans decoded into d's columns, or (`count`) their lines counted into `out`. */
typedef struct {
    Dec d;
    Col out;
    const Span *spans;
    Py_ssize_t n;
    int count, failed;
} Half;

static int count_plane(Dec *d, Col *out, int64_t plane, const uint8_t *p, const uint8_t *end);

static void *walk_half(void *arg) {
    Half *h = arg;
    for (Py_ssize_t i = 0; i < h->n && !h->failed; i++) {
        const Span *s = &h->spans[i];
        h->failed = h->count ? count_plane(&h->d, &h->out, (int64_t)s->index, s->start, s->stop)
                             : parse_plane(&h->d, s->start, s->stop);
    }
    return NULL;
}

/* Where in plane [p, end) to cut for a cut near `target`: the first field boundary at or after it,
 * or `end` when none is found (or the fields do not parse: the decode then reports why). */
static const uint8_t *field_cut(const uint8_t *base, const uint8_t *p, const uint8_t *end, const uint8_t *target) {
    Dec scratch;
    memset(&scratch, 0, sizeof scratch);
    scratch.base = base;
    Dec *d = &scratch;
    while (p < end && p < target) {
        uint32_t field;
        int wire;
        if (read_tag(d, &p, end, &field, &wire) || skip_field(d, &p, end, field, wire, DEPTH_LIMIT - D_PLANE))
            return end;
    }
    return p < end ? p : end;
}

/* Appends column b (elements of `width` bytes, the first `skip` of them left out) to column a,
 * adding `add` to each element (row references); b is released. */
static int append_col(Col *a, Col *b, size_t skip, int width, int64_t add) {
    size_t from = skip * (size_t)width, n = b->len > from ? b->len - from : 0;
    int r = 0;
    if (n) {
        if (col_reserve(a, n)) r = -1;
        else {
            char *dst = a->data + a->len, *src = b->data + from;
            if (add == 0) memcpy(dst, src, n);
            else if (width == 4)
                for (size_t i = 0; i < n / 4; i++) ((int32_t *)dst)[i] = ((int32_t *)src)[i] + (int32_t)add;
            else
                for (size_t i = 0; i < n / 8; i++) ((int64_t *)dst)[i] = ((int64_t *)src)[i] + add;
            a->len += n;
        }
    }
    col_release(b->data, b->cap);
    b->data = NULL;
    b->len = b->cap = 0;
    return r;
}

/* Every column but the planes' own: its width and which count of the first half moves its values. */
enum { MOVED_BY_NONE, MOVED_BY_PLANES, MOVED_BY_LINES, MOVED_BY_EVENTS, MOVED_BY_EM };
#define JC(col, width, by) {offsetof(Dec, col), width, MOVED_BY_##by}
static const struct {
    size_t at;
    int width, by;
} JOINED[] = {
    JC(line_plane, 4, PLANES), JC(line_id, 8, NONE), JC(line_display_id, 8, NONE), JC(line_ts, 8, NONE),
    JC(line_dur, 8, NONE), JC(line_name_off, 8, NONE), JC(line_name_len, 8, NONE), JC(line_dname_off, 8, NONE),
    JC(line_dname_len, 8, NONE), JC(line_first, 8, EVENTS), JC(line_count, 8, NONE),
    JC(ev_line, 4, LINES), JC(ev_mid, 8, NONE), JC(ev_off, 8, NONE), JC(ev_occ, 8, NONE), JC(ev_dur, 8, NONE),
    JC(em_plane, 4, PLANES), JC(em_id, 8, NONE), JC(em_key, 8, NONE), JC(em_name_off, 8, NONE),
    JC(em_name_len, 8, NONE), JC(em_dname_off, 8, NONE), JC(em_dname_len, 8, NONE), JC(em_meta_off, 8, NONE),
    JC(em_meta_len, 8, NONE), JC(emc_owner, 8, EM), JC(emc_id, 8, NONE),
    JC(sm_plane, 4, PLANES), JC(sm_id, 8, NONE), JC(sm_key, 8, NONE), JC(sm_name_off, 8, NONE),
    JC(sm_name_len, 8, NONE), JC(sm_desc_off, 8, NONE), JC(sm_desc_len, 8, NONE),
    JC(es.owner, 8, EVENTS), JC(es.mid, 8, NONE), JC(es.kind, 1, NONE), JC(es.val, 8, NONE), JC(es.len, 8, NONE),
    JC(ms.owner, 8, EM), JC(ms.mid, 8, NONE), JC(ms.kind, 1, NONE), JC(ms.val, 8, NONE), JC(ms.len, 8, NONE),
    JC(ps.owner, 8, PLANES), JC(ps.mid, 8, NONE), JC(ps.kind, 1, NONE), JC(ps.val, 8, NONE), JC(ps.len, 8, NONE),
};
#undef JC

/* Second half b appended to first half a (see above); `cut` = 1 when b starts inside a's last plane. */
static int join_halves(Dec *a, Dec *b, int cut) {
    int64_t planes = a->n_planes - cut;
    if (cut && b->n_planes) { /* one plane in two parts: the last id and name given win */
        int64_t last = a->n_planes - 1;
        if (b->plane0_id_seen) ((int64_t *)a->plane_id.data)[last] = ((int64_t *)b->plane_id.data)[0];
        if (b->plane0_name_seen) {
            ((int64_t *)a->plane_name_off.data)[last] = ((int64_t *)b->plane_name_off.data)[0];
            ((int64_t *)a->plane_name_len.data)[last] = ((int64_t *)b->plane_name_len.data)[0];
        }
    }
    size_t skip = cut ? 1 : 0;
    int r = append_col(&a->plane_id, &b->plane_id, skip, 8, 0) |
            append_col(&a->plane_name_off, &b->plane_name_off, skip, 8, 0) |
            append_col(&a->plane_name_len, &b->plane_name_len, skip, 8, 0);
    const int64_t moved[] = {0, planes, a->n_lines, a->n_events, a->n_em};
    for (size_t i = 0; i < sizeof JOINED / sizeof *JOINED; i++)
        r |= append_col((Col *)((char *)a + JOINED[i].at), (Col *)((char *)b + JOINED[i].at), 0, JOINED[i].width,
                        moved[JOINED[i].by]);
    a->n_planes = planes + b->n_planes;
    a->n_lines += b->n_lines;
    a->n_events += b->n_events;
    a->n_em += b->n_em;
    return r ? -1 : 0;
}

/* The two halves' spans, cut near the middle of the selected bytes; returns 1 when a plane was cut. */
static int split_spans(const uint8_t *base, const Span *all, Py_ssize_t n, Span *first, Py_ssize_t *n_first,
                       Span *second, Py_ssize_t *n_second) {
    size_t total = 0, seen = 0;
    for (Py_ssize_t i = 0; i < n; i++) total += (size_t)(all[i].stop - all[i].start);
    Py_ssize_t k = 0;
    while (k < n - 1 && seen + (size_t)(all[k].stop - all[k].start) <= total / 2) seen += (size_t)(all[k].stop - all[k].start), k++;
    const uint8_t *cut = field_cut(base, all[k].start, all[k].stop, all[k].start + (total / 2 - seen));
    *n_first = *n_second = 0;
    for (Py_ssize_t i = 0; i < k; i++) first[(*n_first)++] = all[i];
    if (cut > all[k].start) first[(*n_first)++] = (Span){all[k].start, cut, all[k].index};
    int cut_plane = cut > all[k].start && cut < all[k].stop;
    if (cut < all[k].stop || all[k].start == all[k].stop) second[(*n_second)++] = (Span){cut, all[k].stop, all[k].index};
    for (Py_ssize_t i = k + 1; i < n; i++) second[(*n_second)++] = all[i];
    return cut_plane;
}

/* The selected ranges of `seq` walked into h[0] (one thread) or h[0] and h[1] (two, cut by
 * split_spans); the GIL is released meanwhile. Returns whether a plane was cut, or -1 with a Python
 * error when a range is bad. h[i].failed tells of a walk's error. */
static int walk(Py_buffer *view, PyObject *seq, int threads, Half h[2]) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const uint8_t *base = view->buf;
    h[0].d.base = h[1].d.base = base;
    Span *spans = PyMem_Malloc(sizeof(Span) * (size_t)(3 * n + 2)); /* the ranges, then room for both halves */
    if (!spans) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t off, len;
        if (plane_range(seq, i, view->len, &off, &len)) { PyMem_Free(spans); return -1; }
        spans[i] = (Span){base + off, base + off + len, i};
    }
    int cut = 0;
    Py_BEGIN_ALLOW_THREADS  /* the walk touches no Python objects: let other threads run */
    if (threads >= 2 && n > 0) {
        cut = split_spans(base, spans, n, spans + n, &h[0].n, spans + 2 * n + 1, &h[1].n);
        h[0].spans = spans + n;
        h[1].spans = spans + 2 * n + 1;
        pthread_t t;
        int started = pthread_create(&t, NULL, walk_half, &h[1]) == 0;
        walk_half(&h[0]);
        if (started) pthread_join(t, NULL);
        else walk_half(&h[1]);
    } else {
        h[0].spans = spans;
        h[0].n = n;
        walk_half(&h[0]);
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(spans);
    return cut;
}

static void free_halves(Half h[2]) {
    for (int i = 0; i < 2; i++) {
        col_release(h[i].out.data, h[i].out.cap);  /* a big count lives in a mapping (col_reserve) */
        free_dec(&h[i].d);
    }
}

/* decode_planes(buf, ranges, threads=1, keep_ids=None, lines=1): full parse of the selected planes
 * (threads: 1 or 2), or of their events with the metadata ids keep_ids, or (lines=0) of all but
 * their lines. */
static PyObject *wire_decode_planes(PyObject *self, PyObject *args) {
    Py_buffer view, keep = {0};
    PyObject *ranges, *keep_ids = Py_None;
    int threads = 1, lines = 1;
    if (!PyArg_ParseTuple(args, "y*O|iOp", &view, &ranges, &threads, &keep_ids, &lines)) return NULL;
    Half h[2];
    memset(h, 0, sizeof h);
    PyObject *out = NULL, *seq = NULL;
    if (keep_ids != Py_None) {
        if (PyObject_GetBuffer(keep_ids, &keep, PyBUF_C_CONTIGUOUS) < 0) goto done;
        const int64_t *ids = keep.buf;
        Py_ssize_t n = keep.len / 8;
        int sorted = keep.len % 8 == 0;
        for (Py_ssize_t i = 1; sorted && i < n; i++) sorted = ids[i - 1] < ids[i];
        if (!sorted) {
            PyErr_SetString(PyExc_ValueError, "keep_ids must be ascending int64 values");
            goto done;
        }
        for (int i = 0; i < 2; i++) {
            h[i].d.keep_mid = n ? ids : (const int64_t *)empty_col;  /* non-NULL: filtering, even to none */
            h[i].d.n_keep = n;
        }
    }
    for (int i = 0; i < 2; i++) h[i].d.skip_lines = !lines;
    seq = PySequence_Fast(ranges, "ranges must be a sequence");
    if (!seq) goto done;
    int cut = walk(&view, seq, threads, h);
    if (cut < 0) goto done;
    if (!h[0].failed && !h[1].failed && h[1].n && join_halves(&h[0].d, &h[1].d, cut)) {
        h[0].failed = 1;
        h[0].d.error = "out of memory";
        h[0].d.error_at = 0;
    }
    if (h[0].failed || h[1].failed) {
        raise_decode_error(h[0].failed ? &h[0].d : &h[1].d);
        goto done;
    }
    Dec *d = &h[0].d;
    out = PyDict_New();
    if (!out) goto done;
#define PUT(name) if (put(out, #name, &d->name)) goto fail;
    PUT(plane_id) PUT(plane_name_off) PUT(plane_name_len)
    PUT(line_plane) PUT(line_id) PUT(line_display_id) PUT(line_ts) PUT(line_dur) PUT(line_name_off)
    PUT(line_name_len) PUT(line_dname_off) PUT(line_dname_len) PUT(line_first) PUT(line_count)
    PUT(ev_line) PUT(ev_mid) PUT(ev_off) PUT(ev_occ) PUT(ev_dur)
    PUT(em_plane) PUT(em_id) PUT(em_key) PUT(em_name_off) PUT(em_name_len) PUT(em_dname_off) PUT(em_dname_len)
    PUT(em_meta_off) PUT(em_meta_len) PUT(emc_owner) PUT(emc_id)
    PUT(sm_plane) PUT(sm_id) PUT(sm_key) PUT(sm_name_off) PUT(sm_name_len) PUT(sm_desc_off) PUT(sm_desc_len)
#undef PUT
    if (put_stats(out, "es", &d->es) || put_stats(out, "ms", &d->ms) || put_stats(out, "ps", &d->ps)) goto fail;
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_XDECREF(seq);
    free_halves(h);
    if (keep.obj) PyBuffer_Release(&keep);
    PyBuffer_Release(&view);
    return out;
}

/* Skips a varint without its value: where 8 bytes remain, one load finds the first byte with its
 * top bit clear (the varint's last); else, or past 8 bytes, the byte-by-byte reader. */
static inline int skip_varint(Dec *d, const uint8_t **pp, const uint8_t *end) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (end - *pp >= 8) {
        uint64_t w;
        memcpy(&w, *pp, 8);
        uint64_t last = ~w & 0x8080808080808080ULL;
        if (last) {
            *pp += (__builtin_ctzll(last) >> 3) + 1;
            return 0;
        }
    }
#endif
    uint64_t v;
    return read_varint(d, pp, end, &v);
}

/* --- count_lines: where a riegeli merge puts each line, before anything is decoded ---------------
 * One row per line of the selected planes: (plane index in `ranges`, line id, timestamp_ns,
 * duration_ps, events, event stats), the last value of a field winning as in a full parse. Events
 * are walked field by field, their stats only located (a full decode checks them), so a merge can
 * give every line of every record its final place in the merged columns first. */
static int count_event(Dec *d, const uint8_t *p, const uint8_t *end, int64_t *stats) {
    const uint8_t *a, *b;
    /* Events are most of a profile: their one-byte keys of varints and of stats take a short path
     * (the same checks as the loop below, which takes every other key). */
    while (p < end && *p < 0x80 && *p >= 8 && ((*p & 7) == 0 || (*p & 7) == 2)) {
        uint8_t key = *p++;
        if ((key & 7) == 0) {
            if (skip_varint(d, &p, end)) return -1;
        } else {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (key >> 3 == 4) (*stats)++;
        }
    }
    TAG_LOOP(d, p, end, field, wire)
        if (field == 4 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            (*stats)++;
        } else if (wire == 0) {
            if (skip_varint(d, &p, end)) return -1;
        } else {
            SKIP(d, p, end, field, wire, D_EVENT)
        }
    TAG_LOOP_END
    return 0;
}

/* The walk reads a record front to back but is slowed by waiting on memory (the hardware prefetcher
 * falls behind its short hops): asking for the bytes 2 KB ahead of each event made counting an
 * 80 MB record ~30% faster; the decoder, with more work per byte, gained nothing from it. */
#define COUNT_PREFETCH 2048
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif
static int count_line(Dec *d, Col *out, int64_t plane, const uint8_t *p, const uint8_t *end) {
    int64_t row[6] = {plane, 0, 0, 0, 0, 0};
    uint64_t v;
    const uint8_t *a, *b;
    TAG_LOOP(d, p, end, field, wire)
        if (wire == 0 && (field == 1 || field == 3 || field == 9)) {
            if (read_varint(d, &p, end, &v)) return -1;
            row[field == 1 ? 1 : field == 3 ? 2 : 3] = (int64_t)v;
        } else if (field == 4 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (end - b > COUNT_PREFETCH) PREFETCH(b + COUNT_PREFETCH);
            if (count_event(d, a, b, &row[5])) return -1;
            row[4]++;
        } else {
            SKIP(d, p, end, field, wire, D_LINE)
        }
    TAG_LOOP_END
    if (col_reserve(out, sizeof row)) OOM(d, p);
    memcpy(out->data + out->len, row, sizeof row);
    out->len += sizeof row;
    return 0;
}

static int count_plane(Dec *d, Col *out, int64_t plane, const uint8_t *p, const uint8_t *end) {
    const uint8_t *a, *b;
    TAG_LOOP(d, p, end, field, wire)
        if (field == 3 && wire == 2) {
            if (read_len(d, &p, end, &a, &b)) return -1;
            if (count_line(d, out, plane, a, b)) return -1;
        } else {
            SKIP(d, p, end, field, wire, D_PLANE)
        }
    TAG_LOOP_END
    return 0;
}

/* count_lines(buf, ranges, threads=1) -> bytes of int64 rows (plane, line id, timestamp_ns,
 * duration_ps, events, event stats), one per line; two threads cut the bytes as decode_planes does. */
static PyObject *wire_count_lines(PyObject *self, PyObject *args) {
    Py_buffer view;
    PyObject *ranges;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "y*O|i", &view, &ranges, &threads)) return NULL;
    Half h[2];
    memset(h, 0, sizeof h);
    h[0].count = h[1].count = 1;
    PyObject *result = NULL, *seq = PySequence_Fast(ranges, "ranges must be a sequence");
    if (!seq || walk(&view, seq, threads, h) < 0) goto done;
    if (h[0].failed || h[1].failed) {
        raise_decode_error(h[0].failed ? &h[0].d : &h[1].d);
        goto done;
    }
    /* A cut plane's rows just follow each other: the halves' rows concatenate to one thread's. */
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(h[0].out.len + h[1].out.len));
    if (result) {
        char *to = PyBytes_AS_STRING(result);
        if (h[0].out.len) memcpy(to, h[0].out.data, h[0].out.len);
        if (h[1].out.len) memcpy(to + h[0].out.len, h[1].out.data, h[1].out.len);
    }
done:
    Py_XDECREF(seq);
    free_halves(h);
    PyBuffer_Release(&view);
    return result;
}

/* intern_strings(buf, kind, value, lens, str_kind, strings, index) -> None
 * Stat values of kind `str_kind` hold (offset, length) of UTF-8 text in `buf`: each becomes its row
 * in `strings` (a list of str), found through `index` (str -> row) or appended to both. A profile
 * repeats a few texts over many stats (31 texts in 60,000 stats of a TPU host), so the text of each
 * stat is made and looked up here rather than by a Python loop. */
static PyObject *wire_intern_strings(PyObject *self, PyObject *args) {
    Py_buffer buf, kind, value, lens;
    int str_kind;
    PyObject *strings, *index, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*w*y*iO!O!", &buf, &kind, &value, &lens, &str_kind,
                          &PyList_Type, &strings, &PyDict_Type, &index)) return NULL;
    Py_ssize_t n = kind.len;
    if (value.len != n * 8 || lens.len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "intern_strings: kind, value and lens differ in length");
        goto done;
    }
    const uint8_t *k = kind.buf, *text = buf.buf;
    int64_t *v = value.buf;
    const int64_t *len = lens.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (k[i] != str_kind) continue;
        int64_t off = v[i], m = len[i];
        if (off < 0 || m < 0 || off > buf.len || m > buf.len - off) {
            PyErr_SetString(PyExc_ValueError, "intern_strings: a text lies outside the buffer");
            goto done;
        }
        PyObject *s = PyUnicode_DecodeUTF8((const char *)text + off, (Py_ssize_t)m, NULL);
        if (!s) goto done;
        PyObject *row = PyDict_GetItemWithError(index, s);  /* borrowed */
        if (row) {
            v[i] = PyLong_AsLongLong(row);
        } else if (PyErr_Occurred()) {
            Py_DECREF(s);
            goto done;
        } else {
            Py_ssize_t at = PyList_GET_SIZE(strings);
            PyObject *j = PyLong_FromSsize_t(at);
            int bad = !j || PyDict_SetItem(index, s, j) < 0 || PyList_Append(strings, s) < 0;
            Py_XDECREF(j);
            if (bad) {
                Py_DECREF(s);
                goto done;
            }
            v[i] = at;
        }
        Py_DECREF(s);
        if (v[i] == -1 && PyErr_Occurred()) goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&kind);
    PyBuffer_Release(&value);
    PyBuffer_Release(&lens);
    return result;
}

/* memory_pool(limit) -> bytes pooled before the call: pool released column mappings up to `limit`
 * bytes; 0 unmaps the pooled ones and pools no more. */
static PyObject *wire_memory_pool(PyObject *self, PyObject *args) {
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "n", &limit)) return NULL;
    if (limit < 0) { PyErr_SetString(PyExc_ValueError, "limit must be >= 0"); return NULL; }
    pthread_mutex_lock(&pool_lock);
    size_t before = pool_bytes;
    pool_limit = (size_t)limit;
    while (pool_n && pool_bytes > pool_limit) {
        pool_n--;
        pool_bytes -= pool[pool_n].cap;
        munmap(pool[pool_n].data, pool[pool_n].cap);
    }
    pthread_mutex_unlock(&pool_lock);
    return PyLong_FromSize_t(before);
}

static PyMethodDef methods[] = {
    {"memory_pool", wire_memory_pool, METH_VARARGS, "memory_pool(limit) -> bytes pooled before: pool released column mappings up to limit bytes"},
    {"scan", wire_scan, METH_VARARGS, "scan(buf) -> (planes, hostnames, errors, warnings)"},
    {"decode_planes", wire_decode_planes, METH_VARARGS,
     "decode_planes(buf, ranges, threads=1, keep_ids=None, lines=1) -> {column: buffer}"},
    {"count_lines", wire_count_lines, METH_VARARGS,
     "count_lines(buf, ranges, threads=1) -> bytes: int64 rows (plane, line id, timestamp_ns, duration_ps, events, stats)"},
    {"intern_strings", wire_intern_strings, METH_VARARGS,
     "intern_strings(buf, kind, value, lens, str_kind, strings, index): str stat values -> rows in strings"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wire", "Fast XSpace wire decoder.", -1, methods};

PyMODINIT_FUNC PyInit__wire(void) {
    if (PyType_Ready(&ColBufType) < 0) return NULL;
    return PyModule_Create(&module);
}
