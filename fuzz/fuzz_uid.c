/*
 * Fuzz target: the unique-id decoder and the address parser it feeds
 * (runtime/core/wire.c). A unique id arrives over the application's own
 * channel, so its 128 bytes are untrusted; so is SYMM_BOOTSTRAP_ADDR.
 *
 * Inputs of 128 bytes are decoded as an id (shorter ones are zero-padded,
 * longer ones cut); the input is also parsed as an address text.
 */
#include <string.h>

#include "fuzz.h"
#include "internal.h"
#include "bootstrap/wire.h"

static int decode(const uint8_t *data, size_t size) {
    uint8_t id[SYMM_UNIQUE_ID_BYTES] = {0};
    memcpy(id, data, size < sizeof id ? size : sizeof id);
    uint8_t secret[SYMM__SECRET_BYTES];
    char addr[SYMM__UID_ADDR_MAX + 1];
    if (symm__wire_decode_uid(id, secret, addr) != SYMM_SUCCESS) return 0;
    if (strlen(addr) > SYMM__UID_ADDR_MAX) __builtin_trap();
    symm__addr a;
    if (symm__addr_parse(addr, &a) != SYMM_SUCCESS) return 0;
    /* What decodes must encode back to the same bytes. */
    uint8_t again[SYMM_UNIQUE_ID_BYTES];
    if (symm__wire_encode_uid(again, secret, addr) != SYMM_SUCCESS ||
        memcmp(again, id, sizeof id) != 0)
        __builtin_trap();
    return 1;
}

int symm_fuzz_valid(const uint8_t *data, size_t size) {
    return size == SYMM_UNIQUE_ID_BYTES && decode(data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    decode(data, size);
    char text[SYMM__ADDR_TEXT_MAX + 64];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    symm__addr a;
    if (symm__addr_parse(text, &a) == SYMM_SUCCESS) {
        /* The canonical text parses to the same address. */
        symm__addr b;
        if (symm__addr_parse(a.text, &b) != SYMM_SUCCESS || b.kind != a.kind ||
            b.port != a.port || strcmp(b.host, a.host) != 0 || strcmp(b.text, a.text) != 0)
            __builtin_trap();
    }
    return 0;
}
