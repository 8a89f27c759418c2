/*
 * Fuzz target: the bootstrap wire decoders (runtime/core/wire.c).
 *
 * The input is a byte stream as a rendezvous server or a PE would read it
 * from a socket. It is split into messages by the same incremental receiver
 * the server uses (symm__wire_rx_*), once taking whole pieces and once in
 * small uneven pieces, and every complete message goes through its payload
 * parser. The raw input is also given to each payload parser directly.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "internal.h"
#include "bootstrap/wire.h"

/* 1 when the payload is valid for its type. */
static int parse_payload(const symm__wire_header *h, const uint8_t *p) {
    switch (h->type) {
    case SYMM__MSG_HELLO: {
        symm__wire_hello hello;
        return symm__wire_parse_hello(p, h->length, &hello) == SYMM_SUCCESS;
    }
    case SYMM__MSG_WELCOME: {
        int32_t n;
        if (symm__wire_welcome_count(p, h->length, &n) != SYMM_SUCCESS) return 0;
        uint64_t *host = malloc((size_t)n * sizeof *host);
        int32_t *pid = malloc((size_t)n * sizeof *pid);
        int ok = host && pid &&
                 symm__wire_parse_welcome(p, h->length, n, host, pid) == SYMM_SUCCESS;
        free(host);
        free(pid);
        return ok;
    }
    case SYMM__MSG_REJECT:
    case SYMM__MSG_ABORT: {
        symm__wire_abort a;
        if (symm__wire_parse_abort(p, h->length, &a) != SYMM_SUCCESS) return 0;
        return strlen(a.reason) <= SYMM__WIRE_MAX_REASON;
    }
    case SYMM__MSG_CHALLENGE: return h->length == SYMM__WIRE_CHALLENGE_BYTES;
    case SYMM__MSG_AUTH: return h->length == SYMM__WIRE_AUTH_BYTES;
    case SYMM__MSG_ALLGATHER: return 1;
    case SYMM__MSG_BARRIER:
    case SYMM__MSG_BYE: return h->length == 0;
    default: return 0; /* the header decoder lets no other type through */
    }
}

/* Split the stream into messages; piece > 0 caps every read at that many
 * bytes (varying), like a socket delivering small segments. 1 when the
 * stream is one or more valid messages and nothing else. */
static int parse_stream(const uint8_t *data, size_t size, size_t piece) {
    symm__wire_rx rx;
    memset(&rx, 0, sizeof rx);
    size_t off = 0, messages = 0, k = 0;
    int valid = 1;
    while (off < size) {
        uint8_t *dst;
        size_t want;
        symm__wire_rx_want(&rx, &dst, &want);
        size_t n = size - off < want ? size - off : want;
        if (piece && n > piece + k % 3) n = piece + k % 3;
        k++;
        memcpy(dst, data + off, n);
        off += n;
        bool complete;
        if (symm__wire_rx_advance(&rx, n, &complete) != SYMM_SUCCESS) {
            valid = 0;
            break;
        }
        if (!complete) continue;
        symm__wire_header h;
        uint8_t *p = symm__wire_rx_take(&rx, &h);
        if (!parse_payload(&h, p)) valid = 0;
        free(p);
        messages++;
    }
    if (rx.got != 0) valid = 0; /* a partial message at the end */
    symm__wire_rx_reset(&rx);
    return valid && messages > 0;
}

int symm_fuzz_valid(const uint8_t *data, size_t size) {
    return parse_stream(data, size, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int whole = parse_stream(data, size, 0);
    int pieces = parse_stream(data, size, 1 + (size ? data[0] % 7 : 0));
    if (whole != pieces) abort(); /* the split must not change the verdict */

    /* Each decoder on the raw bytes. */
    symm__wire_header h;
    symm__wire_decode_header(data, size, &h);
    symm__wire_hello hello;
    symm__wire_parse_hello(data, size, &hello);
    int32_t n;
    if (symm__wire_welcome_count(data, size, &n) == SYMM_SUCCESS) {
        uint64_t *host = malloc((size_t)n * sizeof *host);
        int32_t *pid = malloc((size_t)n * sizeof *pid);
        if (host && pid) symm__wire_parse_welcome(data, size, n, host, pid);
        free(host);
        free(pid);
    }
    symm__wire_abort a;
    symm__wire_parse_abort(data, size, &a);
    symm__wire_fdmsg m;
    symm__wire_parse_fdmsg(data, size, &m);
    return 0;
}
