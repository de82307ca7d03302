/* HighwayHash-64 (portable form) for Riegeli checksums: tputui.data._highway.hash64(buffer).
 * Riegeli hashes every block header, chunk header and chunk data with HighwayHash and a
 * fixed key; the Python fallback in highway.py is the reference these results are tested
 * against. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct { uint64_t v0[4], v1[4], mul0[4], mul1[4]; } HHState;

static const uint64_t kKey[4] = {0x2f696c6567656952ull, 0x0a7364726f636572ull,
                                 0x2f696c6567656952ull, 0x0a7364726f636572ull};

static void hh_reset(HHState *s) {
  static const uint64_t m0[4] = {0xdbe6d5d5fe4cce2full, 0xa4093822299f31d0ull,
                                 0x13198a2e03707344ull, 0x243f6a8885a308d3ull};
  static const uint64_t m1[4] = {0x3bd39e10cb0ef593ull, 0xc0acf169b5f18a8cull,
                                 0xbe5466cf34e90c6cull, 0x452821e638d01377ull};
  for (int i = 0; i < 4; i++) {
    s->mul0[i] = m0[i];
    s->mul1[i] = m1[i];
    s->v0[i] = m0[i] ^ kKey[i];
    s->v1[i] = m1[i] ^ ((kKey[i] >> 32) | (kKey[i] << 32));
  }
}

static void zipper_add(uint64_t v1, uint64_t v0, uint64_t *add1, uint64_t *add0) {
  *add0 += (((v0 & 0xff000000ull) | (v1 & 0xff00000000ull)) >> 24) |
           (((v0 & 0xff0000000000ull) | (v1 & 0xff000000000000ull)) >> 16) |
           (v0 & 0xff0000ull) | ((v0 & 0xff00ull) << 32) |
           ((v1 & 0xff00000000000000ull) >> 8) | (v0 << 56);
  *add1 += (((v1 & 0xff000000ull) | (v0 & 0xff00000000ull)) >> 24) |
           (v1 & 0xff0000ull) | ((v1 & 0xff0000000000ull) >> 16) |
           ((v1 & 0xff00ull) << 24) | ((v0 & 0xff000000000000ull) >> 8) |
           ((v1 & 0xffull) << 48) | (v0 & 0xff00000000000000ull);
}

static void hh_update(const uint64_t lanes[4], HHState *s) {
  for (int i = 0; i < 4; i++) {
    s->v1[i] += s->mul0[i] + lanes[i];
    s->mul0[i] ^= (s->v1[i] & 0xffffffffull) * (s->v0[i] >> 32);
    s->v0[i] += s->mul1[i];
    s->mul1[i] ^= (s->v0[i] & 0xffffffffull) * (s->v1[i] >> 32);
  }
  zipper_add(s->v1[1], s->v1[0], &s->v0[1], &s->v0[0]);
  zipper_add(s->v1[3], s->v1[2], &s->v0[3], &s->v0[2]);
  zipper_add(s->v0[1], s->v0[0], &s->v1[1], &s->v1[0]);
  zipper_add(s->v0[3], s->v0[2], &s->v1[3], &s->v1[2]);
}

static uint64_t read64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static void hh_packet(const uint8_t *p, HHState *s) {
  uint64_t lanes[4] = {read64(p), read64(p + 8), read64(p + 16), read64(p + 24)};
  hh_update(lanes, s);
}

static uint32_t rotl32(uint32_t x, unsigned c) { return c ? (x << c) | (x >> (32 - c)) : x; }

static void hh_remainder(const uint8_t *bytes, size_t size, HHState *s) {
  size_t size4 = size & 3;
  const uint8_t *rem = bytes + (size & ~(size_t)3);
  uint8_t packet[32] = {0};
  for (int i = 0; i < 4; i++) {
    s->v0[i] += ((uint64_t)size << 32) + size;
    uint32_t lo = (uint32_t)s->v1[i], hi = (uint32_t)(s->v1[i] >> 32);
    s->v1[i] = (uint64_t)rotl32(lo, (unsigned)size) | ((uint64_t)rotl32(hi, (unsigned)size) << 32);
  }
  memcpy(packet, bytes, (size_t)(rem - bytes));
  if (size & 16) {
    for (int i = 0; i < 4; i++) packet[28 + i] = rem[i + size4 - 4];
  } else if (size4) {
    packet[16] = rem[0];
    packet[17] = rem[size4 >> 1];
    packet[18] = rem[size4 - 1];
  }
  hh_packet(packet, s);
}

static uint64_t hh_finish64(HHState *s) {
  for (int n = 0; n < 4; n++) {
    uint64_t p[4];
    p[0] = (s->v0[2] >> 32) | (s->v0[2] << 32);
    p[1] = (s->v0[3] >> 32) | (s->v0[3] << 32);
    p[2] = (s->v0[0] >> 32) | (s->v0[0] << 32);
    p[3] = (s->v0[1] >> 32) | (s->v0[1] << 32);
    hh_update(p, s);
  }
  return s->v0[0] + s->v1[0] + s->mul0[0] + s->mul1[0];
}

/* The whole 32-byte packets of a long buffer, 4 lanes at once (AVX2, where the CPU has it: the
 * same arithmetic as hh_update, lane by lane; the zipper merge is one byte shuffle per 128-bit
 * half). Riegeli hashes every chunk's data: the scalar loop runs at ~1 GB/s, this at several. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HH_AVX2 1

__attribute__((target("avx2"))) static void hh_packets_avx2(const uint8_t *p, size_t n, HHState *s) {
  __m256i v0 = _mm256_loadu_si256((const __m256i *)s->v0), v1 = _mm256_loadu_si256((const __m256i *)s->v1);
  __m256i mul0 = _mm256_loadu_si256((const __m256i *)s->mul0), mul1 = _mm256_loadu_si256((const __m256i *)s->mul1);
  const __m256i zipper = _mm256_set_epi64x(0x070806090D0A040Bll, 0x000F010E05020C03ll, 0x070806090D0A040Bll,
                                           0x000F010E05020C03ll);
  for (size_t off = 0; off < n; off += 32) {
    __m256i packet = _mm256_loadu_si256((const __m256i *)(p + off)); /* little-endian lanes, as read64 */
    v1 = _mm256_add_epi64(v1, _mm256_add_epi64(mul0, packet));
    mul0 = _mm256_xor_si256(mul0, _mm256_mul_epu32(v1, _mm256_srli_epi64(v0, 32)));
    v0 = _mm256_add_epi64(v0, mul1);
    mul1 = _mm256_xor_si256(mul1, _mm256_mul_epu32(v0, _mm256_srli_epi64(v1, 32)));
    v0 = _mm256_add_epi64(v0, _mm256_shuffle_epi8(v1, zipper));
    v1 = _mm256_add_epi64(v1, _mm256_shuffle_epi8(v0, zipper));
  }
  _mm256_storeu_si256((__m256i *)s->v0, v0);
  _mm256_storeu_si256((__m256i *)s->v1, v1);
  _mm256_storeu_si256((__m256i *)s->mul0, mul0);
  _mm256_storeu_si256((__m256i *)s->mul1, mul1);
}
#endif

static void hh_packets(const uint8_t *p, size_t n, HHState *s) {
#ifdef HH_AVX2
  if (n >= 1024 && __builtin_cpu_supports("avx2")) {
    hh_packets_avx2(p, n, s);
    return;
  }
#endif
  for (size_t off = 0; off < n; off += 32) hh_packet(p + off, s);
}

static PyObject *hash64(PyObject *self, PyObject *args) {
  Py_buffer buf;
  if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
  HHState s;
  uint64_t h;
  Py_BEGIN_ALLOW_THREADS
  hh_reset(&s);
  const uint8_t *p = (const uint8_t *)buf.buf;
  size_t n = (size_t)buf.len, whole = n - n % 32;
  hh_packets(p, whole, &s);
  if (n % 32) hh_remainder(p + whole, n % 32, &s);
  h = hh_finish64(&s);
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&buf);
  return PyLong_FromUnsignedLongLong(h);
}

static PyMethodDef methods[] = {
    {"hash64", hash64, METH_VARARGS, "HighwayHash-64 of a buffer with Riegeli's key."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_highway", NULL, -1, methods};

PyMODINIT_FUNC PyInit__highway(void) { return PyModule_Create(&module); }
