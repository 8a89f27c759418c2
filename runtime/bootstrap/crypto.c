/* SHA-256, HMAC-SHA-256 and PBKDF2 (crypto.h). */
#include "crypto.h"

#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static inline uint32_t ror(uint32_t x, unsigned n) {
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const uint8_t p[SYMM__SHA256_BLOCK]) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ch + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

void symm__sha256_init(symm__sha256_ctx *s) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->total = 0;
    s->fill = 0;
}

void symm__sha256_update(symm__sha256_ctx *s, const void *data, size_t len) {
    const uint8_t *p = data;
    s->total += len;
    if (s->fill) {
        size_t k = SYMM__SHA256_BLOCK - s->fill < len ? SYMM__SHA256_BLOCK - s->fill : len;
        memcpy(s->buf + s->fill, p, k);
        s->fill += k;
        p += k;
        len -= k;
        if (s->fill < SYMM__SHA256_BLOCK) return;
        compress(s->h, s->buf);
        s->fill = 0;
    }
    for (; len >= SYMM__SHA256_BLOCK; p += SYMM__SHA256_BLOCK, len -= SYMM__SHA256_BLOCK)
        compress(s->h, p);
    if (len) memcpy(s->buf, p, len);
    s->fill = len;
}

void symm__sha256_final(symm__sha256_ctx *s, uint8_t out[SYMM__SHA256_BYTES]) {
    uint64_t bits = s->total * 8;
    s->buf[s->fill++] = 0x80;
    if (s->fill > SYMM__SHA256_BLOCK - 8) {
        memset(s->buf + s->fill, 0, SYMM__SHA256_BLOCK - s->fill);
        compress(s->h, s->buf);
        s->fill = 0;
    }
    memset(s->buf + s->fill, 0, SYMM__SHA256_BLOCK - 8 - s->fill);
    for (int i = 0; i < 8; i++) s->buf[SYMM__SHA256_BLOCK - 1 - i] = (uint8_t)(bits >> (8 * i));
    compress(s->h, s->buf);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
    symm__wipe(s, sizeof *s);
}

void symm__sha256(const void *data, size_t len, uint8_t out[SYMM__SHA256_BYTES]) {
    symm__sha256_ctx s;
    symm__sha256_init(&s);
    symm__sha256_update(&s, data, len);
    symm__sha256_final(&s, out);
}

void symm__hmac_init(symm__hmac *m, const void *key, size_t key_len) {
    uint8_t k[SYMM__SHA256_BLOCK], pad[SYMM__SHA256_BLOCK];
    memset(k, 0, sizeof k);
    if (key_len > SYMM__SHA256_BLOCK) symm__sha256(key, key_len, k);
    else if (key_len) memcpy(k, key, key_len);
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = k[i] ^ 0x36;
    symm__sha256_init(&m->inner);
    symm__sha256_update(&m->inner, pad, sizeof pad);
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = k[i] ^ 0x5c;
    symm__sha256_init(&m->outer);
    symm__sha256_update(&m->outer, pad, sizeof pad);
    symm__wipe(k, sizeof k);
    symm__wipe(pad, sizeof pad);
}

void symm__hmac_update(symm__hmac *m, const void *data, size_t len) {
    symm__sha256_update(&m->inner, data, len);
}

void symm__hmac_final(symm__hmac *m, uint8_t out[SYMM__SHA256_BYTES]) {
    uint8_t ih[SYMM__SHA256_BYTES];
    symm__sha256_final(&m->inner, ih);
    symm__sha256_update(&m->outer, ih, sizeof ih);
    symm__sha256_final(&m->outer, out);
    symm__wipe(ih, sizeof ih);
}

void symm__hmac_sha256(const void *key, size_t key_len, const void *msg, size_t len,
                       uint8_t out[SYMM__SHA256_BYTES]) {
    symm__hmac m;
    symm__hmac_init(&m, key, key_len);
    symm__hmac_update(&m, msg, len);
    symm__hmac_final(&m, out);
}

void symm__pbkdf2_sha256(const void *pw, size_t pw_len, const void *salt, size_t salt_len,
                         uint32_t iterations, uint8_t *out, size_t out_len) {
    /* The keyed state is made once and copied for every HMAC: the password
     * is hashed into the pads only once (same result, half the work). */
    symm__hmac keyed;
    symm__hmac_init(&keyed, pw, pw_len);
    for (uint32_t block = 1; out_len > 0; block++) {
        uint8_t ctr[4] = {(uint8_t)(block >> 24), (uint8_t)(block >> 16), (uint8_t)(block >> 8),
                          (uint8_t)block};
        uint8_t u[SYMM__SHA256_BYTES], t[SYMM__SHA256_BYTES];
        symm__hmac m = keyed;
        symm__hmac_update(&m, salt, salt_len);
        symm__hmac_update(&m, ctr, sizeof ctr);
        symm__hmac_final(&m, u);
        memcpy(t, u, sizeof t);
        for (uint32_t i = 1; i < iterations; i++) {
            m = keyed;
            symm__hmac_update(&m, u, sizeof u);
            symm__hmac_final(&m, u);
            for (size_t j = 0; j < sizeof t; j++) t[j] ^= u[j];
        }
        size_t k = out_len < sizeof t ? out_len : sizeof t;
        memcpy(out, t, k);
        out += k;
        out_len -= k;
        symm__wipe(u, sizeof u);
        symm__wipe(t, sizeof t);
    }
    symm__wipe(&keyed, sizeof keyed);
}

bool symm__ct_equal(const void *a, const void *b, size_t n) {
    const volatile uint8_t *x = a, *y = b;
    uint8_t diff = 0;
    for (size_t i = 0; i < n; i++) diff |= (uint8_t)(x[i] ^ y[i]);
    return diff == 0;
}

void symm__wipe(void *p, size_t n) {
    volatile uint8_t *v = p;
    for (size_t i = 0; i < n; i++) v[i] = 0;
}
