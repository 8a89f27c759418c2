/*
 * Fuzz target: the public API on a one-PE host-backend context, driven by
 * random call sequences with random handles (live, freed, NULL, foreign,
 * garbage), indices, sizes, PEs, dtypes, ops, comparisons, symmetric
 * addresses (inside buffers, in the heap's system area, outside the heap)
 * and struct sizes. Each input runs symm_init (SINGLE bootstrap) ... the
 * calls ... symm_finalize.
 *
 * Oracle: every status is SYMM_SUCCESS or one of the errors the function's
 * Contract line documents (include/symm/symm.h -> abi/symm-abi.json ->
 * api_contract.h); no crash, hang, leak or sanitizer report. Blocking waits
 * are called only when the matching test says they are satisfied (or the
 * test refused its arguments), since a lone PE could wait forever.
 *
 * Local (non-symmetric) pointers are always valid memory of the heap's size or NULL:
 * a wild local pointer is the caller's undefined behaviour, not a finding.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <symm/symm.h>

#include "api_contract.h"
#include "fuzz.h"
#include "internal.h"

#define LOCAL_BYTES 65536
#define NBUF 8
#define NTEAM 6

/* The loader answers these in applications; the harness links the runtime. */
const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }
uint32_t symm_dtype_size(uint32_t dtype) {
    static const uint8_t size[] = {0, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
    return dtype < sizeof size ? size[dtype] : 0;
}

/* la, lb: local memory as large as the whole heap (HEAP_CAP), so a copy of
 * any size the runtime accepts stays inside them (anonymous mappings: pages
 * nobody touches cost nothing); the harness itself uses their first 64 KiB. */
#define HEAP_CAP (16ull << 20)
static uint8_t *la, *lb;
static _Alignas(64) int32_t lstatus[LOCAL_BYTES / 2];
static _Alignas(64) uint64_t lidx[LOCAL_BYTES / 4];
/* Structs passed with a random struct_size (< 256): the runtime may write
 * that many bytes, as for a newer caller's larger struct. */
static _Alignas(64) uint8_t structs[4][512];

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static uint64_t take(rd *r, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v |= (uint64_t)(r->n ? *r->p : 0) << (8 * i);
        if (r->n) r->p++, r->n--;
    }
    return v;
}

static uint32_t contract(const char *name) {
    for (size_t i = 0; i < sizeof api_contract / sizeof api_contract[0]; i++)
        if (strcmp(api_contract[i].name, name) == 0) return api_contract[i].allowed;
    fprintf(stderr, "fuzz_api: %s has no contract\n", name);
    __builtin_trap();
}

static symm_status check(const char *name, symm_status st) {
    if (st < 0 || st >= SYMM_STATUS_COUNT || !(contract(name) & (1u << st))) {
        fprintf(stderr, "fuzz_api: %s returned %d (%s), not in its contract: %s\n", name, st,
                symm__status_name(st), symm__last_error());
        __builtin_trap();
    }
    return st;
}
#define CALL(fn, ...) check(#fn, fn(__VA_ARGS__))

typedef struct world {
    symm_ctx ctx, dead_ctx;
    symm_buf buf[NBUF];
    uint64_t count[NBUF];
    symm_team team[NTEAM];
    uint8_t *heap_base;
    uint64_t heap_cap;
} world;

static symm_buf pick_buf(world *w, rd *r) {
    unsigned b = (unsigned)take(r, 1);
    if (b < 16 * NBUF) return w->buf[b % NBUF];
    switch (b % 6) {
    case 0: return NULL;
    case 1: return (symm_buf)(uintptr_t)take(r, 8);
    case 2: return (symm_buf)w->ctx;
    case 3: return (symm_buf)w->team[0];
    case 4: return (symm_buf)w->dead_ctx;
    default: return (symm_buf)(uintptr_t)(take(r, 1) + 1);
    }
}

static symm_ctx pick_ctx(world *w, rd *r) {
    switch (take(r, 1) % 16) {
    case 0: return NULL;
    case 1: return (symm_ctx)(uintptr_t)take(r, 8);
    case 2: return (symm_ctx)w->buf[0];
    case 3: return w->dead_ctx;
    default: return w->ctx;
    }
}

static symm_team pick_team(world *w, rd *r) {
    unsigned b = (unsigned)take(r, 1);
    if (b < 24 * NTEAM) return w->team[b % NTEAM];
    switch (b % 4) {
    case 0: return NULL;
    case 1: return (symm_team)(uintptr_t)take(r, 8);
    case 2: return (symm_team)w->buf[0];
    default: return (symm_team)w->ctx;
    }
}

static uint64_t pick_index(world *w, rd *r) {
    switch (take(r, 1) % 10) {
    case 0: return 0;
    case 1: return 1;
    case 2: return take(r, 1);
    case 3: return take(r, 2) % 600;
    case 4: return UINT64_MAX;
    case 5: return UINT64_MAX - take(r, 1);
    case 6: return 1ull << (take(r, 1) % 64);
    case 7: return take(r, 8);
    case 8: return w->count[take(r, 1) % NBUF];
    default: return w->count[take(r, 1) % NBUF] - 1;
    }
}

static uint64_t pick_count(rd *r) {
    switch (take(r, 1) % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: return take(r, 1) % 64;
    case 3: return take(r, 2) % 520;
    case 4: return UINT64_MAX;
    case 5: return 1ull << (take(r, 1) % 64);
    case 6: return take(r, 8);
    default: return (UINT64_MAX / 8) + take(r, 1);
    }
}

/* nelems for calls that touch local memory: at most what 64 KiB holds of
 * 8-byte elements when small, otherwise values that must be refused. */
static uint64_t pick_nelems(rd *r) {
    switch (take(r, 1) % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: return take(r, 1);
    case 3: return take(r, 2) % (LOCAL_BYTES / 8 + 1);
    case 4: return UINT64_MAX;
    case 5: return UINT64_MAX / 2 + take(r, 1);
    case 6: return (1ull << 61) + take(r, 1); /* * 8 wraps */
    default: return 1ull << (32 + take(r, 1) % 31);
    }
}

static uint64_t pick_bytes(world *w, rd *r) {
    switch (take(r, 1) % 7) {
    case 0: return 0;
    case 1: return 1 + take(r, 1);
    case 2: return take(r, 2);
    case 3: return UINT64_MAX - take(r, 1);
    case 4: return w->heap_cap;
    case 5: return 1ull << (17 + take(r, 1) % 47);
    default: return LOCAL_BYTES;
    }
}

static int32_t pick_pe(rd *r) {
    switch (take(r, 1) % 8) {
    case 0: return -1;
    case 1: return 1;
    case 2: return INT32_MAX;
    case 3: return INT32_MIN;
    case 4: return (int32_t)take(r, 4);
    default: return 0;
    }
}

static uint32_t pick_dtype(rd *r) {
    unsigned b = (unsigned)take(r, 1);
    if (b < 240) return b % 13 ? b % 13 : 1;
    return b == 255 ? UINT32_MAX : b % 16;
}

static uint32_t pick_small(rd *r, uint32_t valid) {
    unsigned b = (unsigned)take(r, 1);
    if (b < 224) return b % valid;
    return b == 255 ? UINT32_MAX : valid + b % 8;
}

static void *pick_local(rd *r, uint8_t *mem) { return take(r, 1) % 16 ? mem : NULL; }

/* A symmetric address: in a buffer, anywhere in the heap (system area
 * included), just outside it, or not in the heap at all. */
static void *pick_sym(world *w, rd *r) {
    uint8_t *base = w->heap_base;
    void *p = NULL;
    switch (take(r, 1) % 10) {
    case 0: return NULL;
    case 1: return la;
    case 2: return base ? base - 1 - take(r, 1) : NULL;
    case 3: return base ? base + take(r, 2) : NULL; /* the system area */
    case 4: return base ? base + w->heap_cap - take(r, 2) : NULL;
    case 5: return base ? base + w->heap_cap + take(r, 1) : NULL;
    case 6: return base ? base + take(r, 4) % (w->heap_cap + 1) : NULL;
    case 7: return (void *)(uintptr_t)take(r, 8);
    default: {
        symm_buf b = w->buf[take(r, 1) % NBUF];
        if (symm_buf_ptr(b, &p) != SYMM_SUCCESS || !p) return base;
        return (uint8_t *)p + take(r, 2) % 8192;
    }
    }
}

static void refresh_heap(world *w) {
    /* heap base = a live buffer's address minus its symmetric offset */
    for (int i = 0; i < NBUF; i++) {
        void *p;
        uint64_t off;
        if (symm_buf_ptr(w->buf[i], &p) == SYMM_SUCCESS && p &&
            symm_buf_query(w->buf[i], NULL, NULL, &off) == SYMM_SUCCESS) {
            w->heap_base = (uint8_t *)p - off;
            return;
        }
    }
}

static int holds(int64_t v, uint32_t cmp, int64_t x) {
    switch (cmp) {
    case SYMM_CMP_EQ: return v == x;
    case SYMM_CMP_NE: return v != x;
    case SYMM_CMP_GT: return v > x;
    case SYMM_CMP_GE: return v >= x;
    case SYMM_CMP_LT: return v < x;
    case SYMM_CMP_LE: return v <= x;
    default: return 1; /* an invalid cmp must be refused at once */
    }
}

static void op_rma(world *w, rd *r) {
    symm_buf b = pick_buf(w, r);
    uint64_t idx = pick_index(w, r), n = pick_nelems(r);
    int32_t pe = pick_pe(r);
    void *loc = pick_local(r, la);
    switch (take(r, 1) % 6) {
    case 0: CALL(symm_put, b, idx, loc, n, pe); break;
    case 1: CALL(symm_get, loc, b, idx, n, pe); break;
    case 2: CALL(symm_put_nbi, b, idx, loc, n, pe); break;
    case 3: CALL(symm_get_nbi, loc, b, idx, n, pe); break;
    case 4: CALL(symm_p, b, idx, loc, pe); break;
    default: CALL(symm_g, b, idx, pe, loc); break;
    }
}

static void op_mem(world *w, rd *r) {
    symm_ctx c = pick_ctx(w, r);
    void *sym = pick_sym(w, r);
    uint64_t n = pick_bytes(w, r);
    int32_t pe = pick_pe(r);
    /* The local side: la, or (for overlapping same-PE copies) the symmetric
     * range itself moved down a little, which stays backed whenever the
     * symmetric side is accepted. */
    void *loc = la;
    uint8_t *s8 = sym;
    if (take(r, 1) % 8 == 0 && w->heap_base && s8 >= w->heap_base + 64 &&
        s8 < w->heap_base + w->heap_cap)
        loc = s8 - take(r, 1) % 64;
    void *ptr = NULL;
    switch (take(r, 1) % 7) {
    case 0: CALL(symm_putmem, c, sym, loc, n, pe); break;
    case 1: CALL(symm_getmem, c, loc, sym, n, pe); break;
    case 2: CALL(symm_putmem_nbi, c, sym, loc, n, pe); break;
    case 3: CALL(symm_getmem_nbi, c, loc, sym, n, pe); break;
    case 4: CALL(symm_ptr, c, sym, pe, take(r, 1) % 8 ? &ptr : NULL); break;
    case 5: CALL(symm_putmem_on_stream, c, sym, loc, n, pe, NULL); break;
    default: CALL(symm_getmem_on_stream, c, loc, sym, n, pe, NULL); break;
    }
}

static void op_buf(world *w, rd *r) {
    unsigned slot = (unsigned)take(r, 1) % NBUF;
    void *p = NULL;
    uint32_t dt = 0;
    uint64_t cnt = 0, off = 0;
    switch (take(r, 1) % 7) {
    case 0: {
        uint32_t dtype = pick_dtype(r);
        uint64_t count = pick_count(r);
        symm_buf nb = NULL;
        if (CALL(symm_buf_alloc, pick_ctx(w, r), dtype, count, take(r, 1) % 16 ? &nb : NULL) ==
            SYMM_SUCCESS && nb) {
            w->buf[slot] = nb; /* an older one stays allocated until finalize */
            w->count[slot] = count;
        }
        break;
    }
    case 1: CALL(symm_buf_free, pick_buf(w, r)); break;
    case 2: CALL(symm_buf_ptr, pick_buf(w, r), take(r, 1) % 8 ? &p : NULL); break;
    case 3: CALL(symm_buf_query, pick_buf(w, r), &dt, take(r, 1) % 2 ? &cnt : NULL, &off); break;
    case 4: CALL(symm_buf_peer_ptr, pick_buf(w, r), pick_pe(r), take(r, 1) % 8 ? &p : NULL); break;
    case 5: {
        uint32_t dtype = pick_dtype(r);
        uint64_t count = take(r, 1) % 2 ? take(r, 2) % (LOCAL_BYTES / 8 + 1) : pick_count(r);
        symm_buf nb = NULL;
        if (CALL(symm_buf_register, pick_ctx(w, r), pick_local(r, lb), dtype, count, &nb) ==
            SYMM_SUCCESS && nb) {
            w->buf[slot] = nb;
            w->count[slot] = count;
        }
        break;
    }
    default: refresh_heap(w); break;
    }
}

static void op_sync(world *w, rd *r) {
    symm_ctx c = pick_ctx(w, r);
    switch (take(r, 1) % 7) {
    case 0: CALL(symm_quiet, c); break;
    case 1: CALL(symm_fence, c); break;
    case 2: CALL(symm_barrier_all, c); break;
    case 3: CALL(symm_sync_all, c); break;
    case 4: CALL(symm_quiet_on_stream, c, NULL); break;
    case 5: CALL(symm_barrier_all_on_stream, c, NULL); break;
    default: {
        symm_ctx_info *info = (symm_ctx_info *)structs[3];
        memset(structs[3], 0, sizeof structs[3]);
        info->struct_size = take(r, 1) % 2 ? (uint32_t)sizeof *info : (uint32_t)take(r, 1);
        CALL(symm_ctx_query, c, take(r, 1) % 8 ? info : NULL);
        symm_status st;
        char msg[64];
        CALL(symm_ctx_async_error, c, (uint32_t)take(r, 1) % 4, take(r, 1) % 2 ? sizeof msg : 0,
             take(r, 1) % 8 ? &st : NULL, take(r, 1) % 2 ? msg : NULL);
        (void)symm_my_pe(c);
        (void)symm_n_pes(c);
        break;
    }
    }
}

static void op_team(world *w, rd *r) {
    unsigned slot = 4 + (unsigned)take(r, 1) % (NTEAM - 4);
    symm_team t = NULL, t2 = NULL;
    symm_team_config *cfg = (symm_team_config *)structs[0];
    memset(structs[0], 0, sizeof structs[0]);
    cfg->struct_size = take(r, 1) % 4 ? (uint32_t)sizeof *cfg : (uint32_t)take(r, 1);
    cfg->num_contexts = (int32_t)take(r, 1) - 8;
    const symm_team_config *pc = take(r, 1) % 2 ? cfg : NULL;
    switch (take(r, 1) % 8) {
    case 0:
        if (CALL(symm_team_get, pick_ctx(w, r), pick_small(r, 4), &t) == SYMM_SUCCESS)
            w->team[take(r, 1) % 4] = t;
        break;
    case 1: {
        int32_t start = (int32_t)take(r, 1) - 2, stride = (int32_t)take(r, 1) - 2,
                size = (int32_t)take(r, 1) - 2;
        if (CALL(symm_team_split_strided, pick_team(w, r), start, stride, size, pc, &t) ==
                SYMM_SUCCESS && t)
            w->team[slot] = t;
        break;
    }
    case 2:
        if (CALL(symm_team_split_2d, pick_team(w, r), (int32_t)take(r, 1) - 2, pc, pc, &t, &t2) ==
            SYMM_SUCCESS) {
            if (t) w->team[slot] = t;
            if (t2) w->team[4 + (slot - 3) % (NTEAM - 4)] = t2;
        }
        break;
    case 3: CALL(symm_team_destroy, pick_team(w, r)); break;
    case 4:
        (void)symm_team_my_pe(pick_team(w, r));
        (void)symm_team_n_pes(pick_team(w, r));
        (void)symm_team_translate_pe(pick_team(w, r), pick_pe(r), pick_team(w, r));
        break;
    case 5: CALL(symm_team_get_config, pick_team(w, r), take(r, 1) % 8 ? cfg : NULL); break;
    case 6: CALL(symm_team_config_init, take(r, 1) % 8 ? cfg : NULL, (uint32_t)take(r, 1)); break;
    default: {
        symm_device_team *dt = (symm_device_team *)structs[1];
        symm_device_ctx *dc = (symm_device_ctx *)structs[2];
        dt->struct_size = (uint32_t)(take(r, 1) % 2 ? sizeof *dt : take(r, 1));
        dc->struct_size = (uint32_t)(take(r, 1) % 2 ? sizeof *dc : take(r, 1));
        CALL(symm_device_team_get, pick_team(w, r), take(r, 1) % 8 ? dt : NULL);
        CALL(symm_device_ctx_get, pick_ctx(w, r), take(r, 1) % 8 ? dc : NULL);
        break;
    }
    }
}

static void op_signal(world *w, rd *r) {
    symm_buf d = pick_buf(w, r), s = pick_buf(w, r);
    uint64_t di = pick_index(w, r), si = pick_index(w, r), n = pick_nelems(r), sigv = take(r, 8);
    uint32_t sop = pick_small(r, 2);
    int32_t pe = pick_pe(r);
    switch (take(r, 1) % 6) {
    case 0: CALL(symm_put_signal, d, di, pick_local(r, la), n, s, si, sigv, sop, pe); break;
    case 1: CALL(symm_put_signal_nbi, d, di, pick_local(r, la), n, s, si, sigv, sop, pe); break;
    case 2: CALL(symm_signal_op, s, si, sigv, sop, pe); break;
    case 3: {
        uint64_t v;
        CALL(symm_signal_fetch, s, si, take(r, 1) % 8 ? &v : NULL);
        break;
    }
    case 4: {
        uint32_t cmp = pick_small(r, 6);
        uint64_t v = 0, out;
        symm_status st = symm_signal_fetch(s, si, &v);
        int go = st == SYMM_SUCCESS ? holds((int64_t)v, cmp, (int64_t)sigv)
                                     : st == SYMM_ERR_INVALID_HANDLE || st == SYMM_ERR_OUT_OF_BOUNDS;
        /* signals compare unsigned: use EQ/NE only when signedness could matter */
        if (st == SYMM_SUCCESS && cmp != SYMM_CMP_EQ && cmp != SYMM_CMP_NE && cmp < 6) {
            go = (cmp == SYMM_CMP_GT && v > sigv) || (cmp == SYMM_CMP_GE && v >= sigv) ||
                 (cmp == SYMM_CMP_LT && v < sigv) || (cmp == SYMM_CMP_LE && v <= sigv);
            /* if the signed and unsigned views disagree, skip: either reading is allowed */
            if (go != holds((int64_t)v, cmp, (int64_t)sigv)) go = 0;
        }
        if (go) CALL(symm_signal_wait_until, s, si, cmp, sigv, take(r, 1) % 2 ? &out : NULL);
        break;
    }
    default: CALL(symm_put_signal_on_stream, d, di, pick_local(r, la), n, s, si, sigv, sop, pe, NULL);
        break;
    }
}

static void op_test(world *w, rd *r) {
    symm_buf b = pick_buf(w, r);
    uint64_t idx = pick_index(w, r), n = pick_nelems(r) % (LOCAL_BYTES / 8 + 1);
    if (take(r, 1) % 8 == 0) n = pick_nelems(r);
    uint32_t cmp = pick_small(r, 6);
    const int32_t *status = take(r, 1) % 2 ? lstatus : NULL;
    const void *val = pick_local(r, la);
    int32_t sat = 0;
    uint64_t found = 0, nfound = 0;
    symm_status st;
    switch (take(r, 1) % 7) {
    case 0:
        st = CALL(symm_test, b, idx, cmp, val, &sat);
        if (st != SYMM_SUCCESS || sat) CALL(symm_wait_until, b, idx, cmp, val);
        break;
    case 1:
        st = CALL(symm_test_all, b, idx, n, status, cmp, val, &sat);
        if (st != SYMM_SUCCESS || sat) CALL(symm_wait_until_all, b, idx, n, status, cmp, val);
        break;
    case 2:
        st = CALL(symm_test_any, b, idx, n, status, cmp, val, &sat, &found);
        if (st != SYMM_SUCCESS || sat)
            CALL(symm_wait_until_any, b, idx, n, status, cmp, val, &found);
        break;
    case 3:
        st = CALL(symm_test_some, b, idx, n, status, cmp, val, lidx, &nfound);
        if (st != SYMM_SUCCESS || nfound)
            CALL(symm_wait_until_some, b, idx, n, status, cmp, val, lidx, &nfound);
        break;
    case 4:
        st = CALL(symm_test_all_vector, b, idx, n, status, cmp, val, &sat);
        if (st != SYMM_SUCCESS || sat) CALL(symm_wait_until_all_vector, b, idx, n, status, cmp, val);
        break;
    case 5:
        st = CALL(symm_test_any_vector, b, idx, n, status, cmp, val, &sat, &found);
        if (st != SYMM_SUCCESS || sat)
            CALL(symm_wait_until_any_vector, b, idx, n, status, cmp, val, &found);
        break;
    default:
        st = CALL(symm_test_some_vector, b, idx, n, status, cmp, val, lidx, &nfound);
        if (st != SYMM_SUCCESS || nfound)
            CALL(symm_wait_until_some_vector, b, idx, n, status, cmp, val, lidx, &nfound);
        break;
    }
}

static void op_atomic(world *w, rd *r) {
    symm_buf b = pick_buf(w, r);
    uint64_t idx = pick_index(w, r);
    uint32_t op = pick_small(r, 14);
    const void *val = pick_local(r, la), *cmpv = pick_local(r, la);
    void *fetched = pick_local(r, lb);
    int32_t pe = pick_pe(r);
    if (take(r, 1) % 2) CALL(symm_atomic, b, idx, op, val, cmpv, pe, fetched);
    else CALL(symm_atomic_nbi, b, idx, op, val, cmpv, pe, fetched);
}

static void op_coll(world *w, rd *r) {
    symm_team t = pick_team(w, r);
    symm_buf d = pick_buf(w, r), s = pick_buf(w, r);
    uint64_t di = pick_index(w, r), si = pick_index(w, r), n = pick_count(r);
    uint32_t op = pick_small(r, 7);
    int32_t root = take(r, 1) % 4 ? 0 : pick_pe(r);
    switch (take(r, 1) % 12) {
    case 0: CALL(symm_barrier, t); break;
    case 1: CALL(symm_team_sync, t); break;
    case 2: CALL(symm_broadcast, t, d, di, s, si, n, root); break;
    case 3: CALL(symm_fcollect, t, d, di, s, si, n); break;
    case 4: CALL(symm_collect, t, d, di, s, si, n); break;
    case 5: CALL(symm_alltoall, t, d, di, s, si, n); break;
    case 6: CALL(symm_reduce, t, d, di, s, si, n, op); break;
    case 7: CALL(symm_reducescatter, t, d, di, s, si, n, op); break;
    case 8: CALL(symm_broadcast_on_stream, t, d, di, s, si, n, root, NULL); break;
    case 9: CALL(symm_reduce_on_stream, t, d, di, s, si, n, op, NULL); break;
    case 10: CALL(symm_barrier_on_stream, t, NULL); break;
    default: CALL(symm_alltoall_on_stream, t, d, di, s, si, n, NULL); break;
    }
}

static void op_stream(world *w, rd *r) {
    symm_buf b = pick_buf(w, r), s = pick_buf(w, r);
    uint64_t idx = pick_index(w, r), n = pick_nelems(r);
    int32_t pe = pick_pe(r);
    switch (take(r, 1) % 6) {
    case 0: CALL(symm_put_on_stream, b, idx, pick_local(r, la), n, pe, NULL); break;
    case 1: CALL(symm_get_on_stream, pick_local(r, la), b, idx, n, pe, NULL); break;
    case 2: CALL(symm_put_nbi_on_stream, b, idx, pick_local(r, la), n, pe, NULL); break;
    case 3: CALL(symm_get_nbi_on_stream, pick_local(r, la), b, idx, n, pe, NULL); break;
    case 4: CALL(symm_p_on_stream, b, idx, pick_local(r, la), pe, NULL); break;
    default: {
        uint32_t cmp = pick_small(r, 6);
        uint64_t sigv = take(r, 8), v;
        CALL(symm_signal_op_on_stream, s, pick_index(w, r), sigv, pick_small(r, 2), pe, NULL);
        /* a stream wait on the host backend may block like the plain one: only when true */
        if (symm_signal_fetch(s, idx, &v) == SYMM_SUCCESS && cmp == SYMM_CMP_EQ && v == sigv)
            CALL(symm_signal_wait_until_on_stream, s, idx, cmp, sigv, NULL);
        break;
    }
    }
}

static int run(const uint8_t *data, size_t size) {
    rd r = {data, size};
    if (!la) {
        la = mmap(NULL, 2 * HEAP_CAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        lb = mmap(NULL, 2 * HEAP_CAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (la == MAP_FAILED || lb == MAP_FAILED) __builtin_trap();
    }
    world w;
    memset(&w, 0, sizeof w);
    symm_init_attr attr;
    symm_init_attr_init(&attr, sizeof attr);
    attr.backend = SYMM_BACKEND_HOST;
    attr.bootstrap = SYMM_BOOTSTRAP_SINGLE;
    attr.thread_level = (uint32_t)take(&r, 1) % 4;
    attr.heap_cap = HEAP_CAP;
    if (CALL(symm_init, &attr, &w.ctx) != SYMM_SUCCESS) __builtin_trap();
    w.heap_cap = attr.heap_cap;
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (symm_ctx_query(w.ctx, &info) == SYMM_SUCCESS) w.heap_cap = info.heap_cap;
    for (int i = 0; i < 4; i++) symm_team_get(w.ctx, (uint32_t)i, &w.team[i]);
    /* two buffers to start from, so most inputs reach the data paths */
    if (symm_buf_alloc(w.ctx, SYMM_DTYPE_UINT64, 64, &w.buf[0]) == SYMM_SUCCESS) w.count[0] = 64;
    if (symm_buf_alloc(w.ctx, SYMM_DTYPE_INT32, 100, &w.buf[1]) == SYMM_SUCCESS) w.count[1] = 100;
    refresh_heap(&w);
    memset(la, 0, LOCAL_BYTES);
    memset(lstatus, 0, sizeof lstatus);

    int calls = 0;
    while (r.n && calls++ < 200) {
        switch (take(&r, 1) % 13) {
        case 0: op_rma(&w, &r); break;
        case 1: op_mem(&w, &r); break;
        case 2: op_buf(&w, &r); break;
        case 3: op_sync(&w, &r); break;
        case 4: op_team(&w, &r); break;
        case 5: op_signal(&w, &r); break;
        case 6: op_test(&w, &r); break;
        case 7: op_atomic(&w, &r); break;
        case 8: op_coll(&w, &r); break;
        case 9: op_stream(&w, &r); break;
        case 10: { /* poke local memory the runtime might read next */
            size_t at = take(&r, 2) % (LOCAL_BYTES - 8);
            uint64_t v = take(&r, 8);
            memcpy(la + at, &v, 8);
            lstatus[take(&r, 2) % (LOCAL_BYTES / 4)] = (int32_t)take(&r, 1) - 1;
            break;
        }
        case 11: /* write into a live buffer, as the application may */ {
            void *p;
            unsigned s = (unsigned)take(&r, 1) % NBUF;
            uint64_t v = take(&r, 8);
            uint32_t dt;
            uint64_t cnt;
            if (symm_buf_ptr(w.buf[s], &p) == SYMM_SUCCESS && p &&
                symm_buf_query(w.buf[s], &dt, &cnt, NULL) == SYMM_SUCCESS && cnt &&
                symm_dtype_size(dt))
                memcpy((uint8_t *)p + (take(&r, 2) % cnt) * symm_dtype_size(dt), &v,
                       symm_dtype_size(dt));
            break;
        }
        default: /* finalize early: every later call sees a stale context */
            if (!w.dead_ctx) {
                w.dead_ctx = w.ctx;
                symm_ctx c = w.ctx;
                CALL(symm_finalize, &c);
                w.heap_base = NULL;
            }
            break;
        }
    }
    if (!w.dead_ctx) {
        symm_ctx c = w.ctx;
        if (CALL(symm_finalize, &c) != SYMM_SUCCESS) __builtin_trap();
    }
    CALL(symm_finalize, NULL);
    return 1;
}

int symm_fuzz_valid(const uint8_t *data, size_t size) { return run(data, size); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    run(data, size);
    return 0;
}
