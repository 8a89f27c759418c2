/*
 * SHA-256 (FIPS 180-4), HMAC-SHA-256 (RFC 2104) and PBKDF2-HMAC-SHA-256
 * (RFC 8018): what the job's handshakes need (docs/BOOTSTRAP.md, Secrets).
 * The job secret never crosses a socket: each side proves it holds the key
 * with an HMAC over the other side's fresh nonce (rendezvous.c, bootstrap.c;
 * the transports through the core's auth_mac/auth_verify services).
 *
 * Written here from the standards (no crypto library is linked, as for the
 * rest of the runtime); tests/bootstrap/test_crypto.c checks the FIPS 180-2,
 * RFC 4231 and RFC 7914 (PBKDF2-HMAC-SHA-256) vectors. Not hardened against
 * cache-timing side channels beyond what a table-free SHA-256 gives: there
 * are no secret-dependent branches or table lookups.
 */
#ifndef SYMM_BOOTSTRAP_CRYPTO_H
#define SYMM_BOOTSTRAP_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYMM__SHA256_BYTES 32u
#define SYMM__SHA256_BLOCK 64u

typedef struct symm__sha256_ctx {
    uint32_t h[8];
    uint64_t total; /* bytes hashed so far */
    uint8_t buf[SYMM__SHA256_BLOCK];
    size_t fill;
} symm__sha256_ctx;

void symm__sha256_init(symm__sha256_ctx *s);
void symm__sha256_update(symm__sha256_ctx *s, const void *data, size_t len);
void symm__sha256_final(symm__sha256_ctx *s, uint8_t out[SYMM__SHA256_BYTES]);
void symm__sha256(const void *data, size_t len, uint8_t out[SYMM__SHA256_BYTES]);

/* HMAC-SHA-256 in pieces: a key of any length (hashed first when longer
 * than a block), then any number of updates. */
typedef struct symm__hmac {
    symm__sha256_ctx inner, outer;
} symm__hmac;

void symm__hmac_init(symm__hmac *m, const void *key, size_t key_len);
void symm__hmac_update(symm__hmac *m, const void *data, size_t len);
void symm__hmac_final(symm__hmac *m, uint8_t out[SYMM__SHA256_BYTES]);
void symm__hmac_sha256(const void *key, size_t key_len, const void *msg, size_t len,
                       uint8_t out[SYMM__SHA256_BYTES]);

/* PBKDF2-HMAC-SHA-256: out_len bytes from a password and a salt. */
void symm__pbkdf2_sha256(const void *pw, size_t pw_len, const void *salt, size_t salt_len,
                         uint32_t iterations, uint8_t *out, size_t out_len);

/* Equality of n bytes in time independent of where they differ. */
bool symm__ct_equal(const void *a, const void *b, size_t n);
/* Overwrite n bytes in a way the compiler keeps. */
void symm__wipe(void *p, size_t n);

#endif /* SYMM_BOOTSTRAP_CRYPTO_H */
