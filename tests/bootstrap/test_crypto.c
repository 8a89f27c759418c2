/*
 * SHA-256, HMAC-SHA-256 and PBKDF2-HMAC-SHA-256 (runtime/bootstrap/crypto.c)
 * against published vectors: FIPS 180-2 appendix B (SHA-256; plus the empty
 * message and the 896-bit two-block message of the NIST examples), RFC 4231
 * section 4 (HMAC-SHA-256, test cases 1-7), RFC 7914 section 11
 * (PBKDF2-HMAC-SHA-256). Every vector is also hashed in pieces of every split
 * size, so the streaming code paths agree with the one-shot ones.
 */
#include <string.h>

#include "symm_test.h"
#include "bootstrap/crypto.h"

static void unhex(const char *hex, uint8_t *out, size_t n) {
    ASSERT_EQ(strlen(hex), 2 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        ASSERT_EQ(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

static void expect_hex(const uint8_t *got, const char *want_hex, size_t n, const char *what) {
    uint8_t want[128];
    unhex(want_hex, want, n);
    if (memcmp(got, want, n) != 0) {
        char text[257];
        for (size_t i = 0; i < n; i++) snprintf(text + 2 * i, 3, "%02x", got[i]);
        TEST_FAIL_("%s: got %s, expected %s", what, text, want_hex);
    }
}

static void sha_vector(const void *msg, size_t len, const char *hex, const char *what) {
    uint8_t d[SYMM__SHA256_BYTES];
    symm__sha256(msg, len, d);
    expect_hex(d, hex, sizeof d, what);
    /* In pieces: every piece size from 1 to 130 bytes. */
    for (size_t piece = 1; piece <= 130 && piece <= len + 1; piece++) {
        symm__sha256_ctx s;
        symm__sha256_init(&s);
        for (size_t off = 0; off < len; off += piece)
            symm__sha256_update(&s, (const uint8_t *)msg + off,
                                len - off < piece ? len - off : piece);
        symm__sha256_final(&s, d);
        expect_hex(d, hex, sizeof d, what);
    }
}

static void test_sha256(void) {
    sha_vector("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
               "FIPS 180-2 B.1");
    const char *b2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha_vector(b2, strlen(b2), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
               "FIPS 180-2 B.2");
    sha_vector("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnop"
                       "jklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    sha_vector(m896, strlen(m896),
               "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1", "896-bit");
    /* B.3: one million 'a', fed in 1000 pieces. */
    char *a = malloc(1000000);
    ASSERT_TRUE(a != NULL);
    memset(a, 'a', 1000000);
    uint8_t d[SYMM__SHA256_BYTES];
    symm__sha256(a, 1000000, d);
    expect_hex(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", 32,
               "FIPS 180-2 B.3");
    symm__sha256_ctx s;
    symm__sha256_init(&s);
    for (int i = 0; i < 1000; i++) symm__sha256_update(&s, a + i * 1000, 1000);
    symm__sha256_final(&s, d);
    expect_hex(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", 32,
               "FIPS 180-2 B.3 in pieces");
    free(a);
    /* Lengths around the padding boundary (55, 56, 63, 64 bytes) differ. */
    uint8_t prev[SYMM__SHA256_BYTES] = {0};
    for (size_t n = 50; n < 70; n++) {
        uint8_t msg[70];
        memset(msg, 'x', n);
        symm__sha256(msg, n, d);
        ASSERT_TRUE(memcmp(d, prev, sizeof d) != 0);
        memcpy(prev, d, sizeof d);
    }
}

static void hmac_vector(const uint8_t *key, size_t klen, const void *msg, size_t mlen,
                        const char *hex, size_t check_bytes, const char *what) {
    uint8_t d[SYMM__SHA256_BYTES];
    symm__hmac_sha256(key, klen, msg, mlen, d);
    expect_hex(d, hex, check_bytes, what);
    for (size_t piece = 1; piece <= mlen; piece += 7) {
        symm__hmac m;
        symm__hmac_init(&m, key, klen);
        for (size_t off = 0; off < mlen; off += piece)
            symm__hmac_update(&m, (const uint8_t *)msg + off,
                              mlen - off < piece ? mlen - off : piece);
        symm__hmac_final(&m, d);
        expect_hex(d, hex, check_bytes, what);
    }
}

static void test_hmac(void) {
    uint8_t key[131], msg[50];
    memset(key, 0x0b, 20);
    hmac_vector(key, 20, "Hi There", 8,
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", 32,
                "RFC 4231 case 1");
    hmac_vector((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", 32,
                "RFC 4231 case 2");
    memset(key, 0xaa, 20);
    memset(msg, 0xdd, 50);
    hmac_vector(key, 20, msg, 50,
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", 32,
                "RFC 4231 case 3");
    for (int i = 0; i < 25; i++) key[i] = (uint8_t)(i + 1);
    memset(msg, 0xcd, 50);
    hmac_vector(key, 25, msg, 50,
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", 32,
                "RFC 4231 case 4");
    memset(key, 0x0c, 20);
    hmac_vector(key, 20, "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b", 16,
                "RFC 4231 case 5 (first 128 bits)");
    memset(key, 0xaa, 131);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    hmac_vector(key, 131, m6, strlen(m6),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", 32,
                "RFC 4231 case 6");
    const char *m7 = "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the HMAC "
                     "algorithm.";
    hmac_vector(key, 131, m7, strlen(m7),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", 32,
                "RFC 4231 case 7");
}

static void test_pbkdf2(void) {
    uint8_t out[64];
    symm__pbkdf2_sha256("passwd", 6, "salt", 4, 1, out, sizeof out);
    expect_hex(out,
               "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
               "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783",
               64, "RFC 7914 PBKDF2 c=1");
    symm__pbkdf2_sha256("Password", 8, "NaCl", 4, 80000, out, sizeof out);
    expect_hex(out,
               "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
               "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d",
               64, "RFC 7914 PBKDF2 c=80000");
    /* A shorter output is the prefix of the longer one. */
    uint8_t short_out[20];
    symm__pbkdf2_sha256("Password", 8, "NaCl", 4, 80000, short_out, sizeof short_out);
    ASSERT_TRUE(memcmp(short_out, out, sizeof short_out) == 0);
}

static void test_ct_equal(void) {
    uint8_t a[32], b[32];
    memset(a, 7, sizeof a);
    memset(b, 7, sizeof b);
    ASSERT_TRUE(symm__ct_equal(a, b, sizeof a));
    for (size_t i = 0; i < sizeof a; i++) {
        b[i] ^= 0x80;
        ASSERT_TRUE(!symm__ct_equal(a, b, sizeof a));
        b[i] ^= 0x80;
    }
    symm__wipe(a, sizeof a);
    for (size_t i = 0; i < sizeof a; i++) ASSERT_EQ(a[i], 0);
}

int main(void) {
    test_sha256();
    test_hmac();
    test_pbkdf2();
    test_ct_equal();
    printf("crypto: SHA-256, HMAC-SHA-256 and PBKDF2 vectors pass\n");
    return 0;
}
