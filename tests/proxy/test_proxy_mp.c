/*
 * The proxy on a real context: PE 0 starts its proxy and a CPU producer posts
 * through the ring exactly what GPU code will post; the engine runs every
 * request through the core's routing, so with PEs on two simulated hosts
 * (symmrun --hosts 2, SYMM_TRANSPORT=tcp) they travel over the tcp
 * transport. PE 1 checks what arrived. Linked against the runtime's objects
 * (symm__proxy_* are internal).
 *
 *   symmrun -n 2 --hosts 2 test_proxy_mp ops DEPTH     (the remote cases)
 *   symmrun -n 2 test_proxy_mp local DEPTH             (one host: no proxy
 *        unless forced; forced, the requests go to the backend)
 *   test_proxy_mp kill DEPTH                           (forks 2 PEs on 2
 *        simulated hosts; PE 1 is SIGKILLed while PE 0 streams)
 *
 * ops: puts of many sizes and alignments then a ring quiet, checked by PE 1
 *      right after a bootstrap barrier (quiet = remote completion);
 *      put-with-signal rounds (SET and ADD) that PE 1 checks while they
 *      stream (a PE that sees the signal sees the data); put, fence, flag
 *      put (the fence orders them); gets of many sizes; every atomic op on
 *      every 4/8-byte dtype against a model, fetched values included;
 *      bad requests, each failing alone with its status and an async
 *      record; two producer threads on two rings beside host calls; the
 *      host-side quiet, the counters, stop.
 * kill: two producer threads stream to the victim; each must end with
 *      PEER_FAILED within SYMM_PEER_TIMEOUT_MS + slack; stop and finalize
 *      end too.
 * mixed: every PE's proxy runs a team sync while its application thread
 *      makes a host barrier of the same team (run_mixed).
 *
 *   symmrun -n 4 --hosts 2 test_proxy_mp mixed ROUNDS
 * grow: heap growths while the proxy has a team sync still to run, and one
 *      PE's growth waits for that sync, as a GPU's may (run_grow).
 *
 *   symmrun -n 2 --hosts 2 test_proxy_mp grow ROUNDS
 * pageable: the proxy's thread moves data between this host's PEs while the
 *      application thread holds a lock that the backend's copies take, as
 *      the CUDA driver's pageable path is held (run_pageable).
 *
 *   symmrun -n 4 --hosts 2 test_proxy_mp pageable ROUNDS
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxy.h"
#include "stream_px.h"
#include "symm_kill_harness.h"
#include "symm_test.h"

const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

#define DATA_BYTES (1u << 20)
#define PUT_BYTES (512u << 10)   /* [0, 512K): the put phase                 */
#define SIG_BASE (512u << 10)    /* [512K, 576K): 64 rounds of 1 KiB         */
#define SIG_ROUNDS 64u
#define FENCE_BASE (768u << 10)  /* [768K, 1M): 8 fence rounds of 32 KiB     */
#define FENCE_ROUNDS 8u
#define GET_BYTES (256u << 10)
#define THREAD_BYTES (128u << 10)

static int me;
static symm__ctx *C;

static uint8_t pattern(uint32_t round, uint64_t i) {
    return (uint8_t)(i * 131u + round * 7u + 1u);
}

static uint64_t off_of(symm_buf b) {
    symm__buf *x = NULL;
    CHECK_OK(symm__buf_get(b, &x));
    return x->off;
}

static void boot_barrier(void) { CHECK_OK(symm__boot_barrier(C->boot)); }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct bufs {
    symm_buf data, gsrc, sig, flag, thr;
    symm_buf amo[6];
} bufs;

static const uint32_t amo_dtypes[6] = {SYMM_DTYPE_INT32, SYMM_DTYPE_UINT32, SYMM_DTYPE_INT64,
                                       SYMM_DTYPE_UINT64, SYMM_DTYPE_FLOAT32,
                                       SYMM_DTYPE_FLOAT64};

static void alloc_bufs(symm_ctx ctx, bufs *b) {
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, DATA_BYTES, &b->data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, GET_BYTES, &b->gsrc));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 16, &b->sig));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 16, &b->flag));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, 3 * THREAD_BYTES, &b->thr));
    for (int i = 0; i < 6; i++) CHECK_OK(symm_buf_alloc(ctx, amo_dtypes[i], 4, &b->amo[i]));
}

static void *local_ptr(symm_buf b) {
    void *p = NULL;
    CHECK_OK(symm_buf_ptr(b, &p));
    return p;
}

static void check_bytes(const char *what, const uint8_t *got, uint32_t round, uint64_t base,
                        uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != pattern(round, base + i))
            TEST_FAIL_("%s: byte %llu is %u, expected %u", what, (unsigned long long)(base + i),
                       got[i], pattern(round, base + i));
}

/* ---- atomics: the op sequence and its model ---- */

typedef struct amo_step {
    uint32_t op;
    uint64_t value, compare;
} amo_step;

static uint64_t width_mask(uint32_t size) { return size == 8 ? ~0ull : 0xffffffffull; }

static bool fetches(uint32_t op) {
    return op == SYMM_AMO_FETCH || op == SYMM_AMO_COMPARE_SWAP || op == SYMM_AMO_SWAP ||
           op == SYMM_AMO_FETCH_INC || op == SYMM_AMO_FETCH_ADD || op == SYMM_AMO_FETCH_AND ||
           op == SYMM_AMO_FETCH_OR || op == SYMM_AMO_FETCH_XOR;
}

/* Apply one step to the model x (bits, width size); returns the old value. */
static uint64_t model(uint64_t *x, const amo_step *s, uint32_t size) {
    const uint64_t m = width_mask(size), old = *x, v = s->value & m;
    switch (s->op) {
    case SYMM_AMO_FETCH: break;
    case SYMM_AMO_SET: case SYMM_AMO_SWAP: *x = v; break;
    case SYMM_AMO_COMPARE_SWAP: if (old == (s->compare & m)) *x = v; break;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC: *x = (old + 1) & m; break;
    case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD: *x = (old + v) & m; break;
    case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND: *x = old & v; break;
    case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR: *x = old | v; break;
    case SYMM_AMO_FETCH_XOR: case SYMM_AMO_XOR: *x = old ^ v; break;
    default: TEST_FAIL_("model: op %u", s->op);
    }
    return old;
}

#define SENTINEL 0x5a5a5a5a5a5a5a5aull
#define AMO_INIT64 0x0123456789abcdefull

/* Integer steps: every op, values with bit 63 (64-bit) set, a wrap of the
 * 32-bit ones, a compare-and-swap that hits and one that misses. */
static int int_steps(amo_step *s, uint32_t size) {
    const uint64_t big = size == 8 ? 0x8000000000000001ull : 0x80000001ull;
    const uint64_t top = size == 8 ? 0xfffffffffffffff0ull : 0xfffffff0ull;
    int n = 0;
    s[n++] = (amo_step){SYMM_AMO_FETCH, 0, 0};
    s[n++] = (amo_step){SYMM_AMO_SET, top, 0};
    s[n++] = (amo_step){SYMM_AMO_FETCH_ADD, 0x25, 0}; /* wraps */
    s[n++] = (amo_step){SYMM_AMO_ADD, 5, 0};
    s[n++] = (amo_step){SYMM_AMO_FETCH_INC, 0, 0};
    s[n++] = (amo_step){SYMM_AMO_INC, 0, 0};
    s[n++] = (amo_step){SYMM_AMO_SWAP, big, 0};
    s[n++] = (amo_step){SYMM_AMO_COMPARE_SWAP, 77, big};     /* hits  */
    s[n++] = (amo_step){SYMM_AMO_COMPARE_SWAP, 99, big};     /* misses */
    s[n++] = (amo_step){SYMM_AMO_SET, top ^ 0x0f0f, 0};
    s[n++] = (amo_step){SYMM_AMO_FETCH_AND, 0xff00ff, 0};
    s[n++] = (amo_step){SYMM_AMO_AND, 0xf0f0f0, 0};
    s[n++] = (amo_step){SYMM_AMO_FETCH_OR, big, 0};
    s[n++] = (amo_step){SYMM_AMO_OR, 0x3, 0};
    s[n++] = (amo_step){SYMM_AMO_FETCH_XOR, 0xffff, 0};
    s[n++] = (amo_step){SYMM_AMO_XOR, top, 0};
    s[n++] = (amo_step){SYMM_AMO_FETCH, 0, 0};
    return n;
}

static int float_steps(amo_step *s, uint32_t size) {
    uint64_t a, b;
    if (size == 4) {
        float fa = -1.5f, fb = 3.25e10f;
        uint32_t ua, ub;
        memcpy(&ua, &fa, 4);
        memcpy(&ub, &fb, 4);
        a = ua;
        b = ub;
    } else {
        double da = -2.75, db = 1e300;
        memcpy(&a, &da, 8);
        memcpy(&b, &db, 8);
    }
    int n = 0;
    s[n++] = (amo_step){SYMM_AMO_FETCH, 0, 0};
    s[n++] = (amo_step){SYMM_AMO_SET, a, 0};
    s[n++] = (amo_step){SYMM_AMO_SWAP, b, 0};
    s[n++] = (amo_step){SYMM_AMO_FETCH, 0, 0};
    return n;
}

static void pe0_atomics(const symm_ring *r, const bufs *b) {
    for (int d = 0; d < 6; d++) {
        const uint32_t size = d < 2 || d == 4 ? 4 : 8;
        amo_step steps[32];
        int n = d < 4 ? int_steps(steps, size) : float_steps(steps, size);
        uint64_t res[32], x = AMO_INIT64 & width_mask(size), t = 0;
        for (int k = 0; k < n; k++) res[k] = SENTINEL;
        const uint64_t off = off_of(b->amo[d]);
        for (int k = 0; k < n; k++)
            CHECK_OK(symm_ring_amo(r, 1, off, amo_dtypes[d], steps[k].op, steps[k].value,
                                   steps[k].compare, &res[k], &t));
        CHECK_OK(symm_ring_wait(r, t));
        for (int k = 0; k < n; k++) {
            const uint64_t old = model(&x, &steps[k], size);
            const uint64_t m = width_mask(size);
            if (!fetches(steps[k].op)) {
                if (res[k] != SENTINEL)
                    TEST_FAIL_("dtype %u step %d (op %u) wrote a result", amo_dtypes[d], k,
                               steps[k].op);
                continue;
            }
            if ((res[k] & m) != old)
                TEST_FAIL_("dtype %u step %d (op %u): fetched %#llx, expected %#llx",
                           amo_dtypes[d], k, steps[k].op, (unsigned long long)(res[k] & m),
                           (unsigned long long)old);
            if (size == 4 && (res[k] >> 32) != (SENTINEL >> 32))
                TEST_FAIL_("dtype %u step %d: a 4-byte result wrote 8 bytes", amo_dtypes[d], k);
        }
        /* the final value, read back through the ring */
        uint64_t fin = 0;
        CHECK_OK(symm_ring_get(r, &fin, 1, off, size, &t));
        CHECK_OK(symm_ring_wait(r, t));
        ASSERT_U64_EQ(fin & width_mask(size), x);
    }
    printf("PE 0: every atomic op on INT32, UINT32, INT64, UINT64 (FETCH, SET, SWAP on "
           "FLOAT32, FLOAT64) matched the model, fetched values included\n");
}

/* ---- bad requests: each on a ring of its own (the first failure is what a
 * ring keeps) ---- */

static void pe0_bad(symm_ctx ctx, const bufs *b, uint32_t first_ring) {
    const uint64_t data = off_of(b->data), sig = off_of(b->sig), amo64 = off_of(b->amo[3]);
    const uint64_t amof = off_of(b->amo[4]);
    uint8_t src[64] = {0};
    uint64_t res = 0;
    struct {
        const char *what;
        symm_status want;
    } cases[] = {
        {"put past the heap", SYMM_ERR_OUT_OF_BOUNDS},
        {"atomic ADD on FLOAT32", SYMM_ERR_INVALID_ARG},
        {"unaligned atomic", SYMM_ERR_INVALID_ARG},
        {"pe out of range", SYMM_ERR_INVALID_ARG},
        {"put_signal with signal op 7", SYMM_ERR_INVALID_ARG},
        {"get into NULL", SYMM_ERR_INVALID_ARG},
    };
    char msg[512];
    symm_status ast;
    CHECK_OK(symm_ctx_async_error(ctx, SYMM_ASYNC_CLEAR, sizeof msg, &ast, msg));
    ASSERT_EQ(ast, SYMM_SUCCESS);
    for (uint32_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        symm_ring r;
        CHECK_OK(symm__proxy_ring(C, first_ring + k, SYMM_RING_VERSION, &r));
        uint64_t t = 0;
        switch (k) {
        case 0: CHECK_OK(symm_ring_put(&r, 1, C->heap_cap - 8, src, 64, &t)); break;
        case 1:
            CHECK_OK(symm_ring_amo(&r, 1, amof, SYMM_DTYPE_FLOAT32, SYMM_AMO_ADD, 1, 0, &res, &t));
            break;
        case 2:
            CHECK_OK(symm_ring_amo(&r, 1, amo64 + 4, SYMM_DTYPE_UINT64, SYMM_AMO_ADD, 1, 0, NULL,
                                   &t));
            break;
        case 3: CHECK_OK(symm_ring_put(&r, C->n_pes, data, src, 8, &t)); break;
        case 4: CHECK_OK(symm_ring_put_signal(&r, 1, data, src, 8, sig, 1, 7, &t)); break;
        case 5: CHECK_OK(symm_ring_get(&r, NULL, 1, data, 8, &t)); break;
        }
        symm_status st = symm_ring_wait(&r, t);
        if (st != cases[k].want)
            TEST_FAIL_("%s: the ring reported %s, expected %s", cases[k].what,
                       symm__status_name(st), symm__status_name(cases[k].want));
        uint64_t at = 0;
        ASSERT_EQ(symm_ring_error(&r, &at), cases[k].want);
        ASSERT_U64_EQ(at, t);
        /* the context's async record names the ring and the request */
        CHECK_OK(symm_ctx_async_error(ctx, SYMM_ASYNC_CLEAR, sizeof msg, &ast, msg));
        ASSERT_EQ(ast, cases[k].want);
        char ring_name[32];
        snprintf(ring_name, sizeof ring_name, "proxy ring %u", first_ring + k);
        if (!strstr(msg, ring_name)) TEST_FAIL_("%s: async message '%s'", cases[k].what, msg);
        printf("PE 0: %s -> %s (%s)\n", cases[k].what, symm__status_name(st), msg);
        /* the ring goes on: a NOP after the failure completes (its wait
         * reports the earlier failure, as a quiet would) */
        uint64_t t2 = 0;
        CHECK_OK(symm_ring_nop(&r, &t2));
        ASSERT_EQ(symm_ring_wait(&r, t2), cases[k].want);
        CHECK_OK(symm_ring_alive(&r));
    }
}

/* ---- producer threads beside host calls ---- */

typedef struct streamer {
    symm_ring ring;
    uint64_t off;
    const uint8_t *src;
    uint32_t round;
    symm_status st;
} streamer;

static void *stream_puts(void *arg) {
    streamer *s = arg;
    for (uint64_t done = 0; done < THREAD_BYTES && !s->st;) {
        uint64_t n = 1 + (done * 7919u) % 3000u;
        if (n > THREAD_BYTES - done) n = THREAD_BYTES - done;
        s->st = symm_ring_put(&s->ring, 1, s->off + done, s->src + done, n, NULL);
        done += n;
    }
    if (!s->st) s->st = symm_ring_quiet(&s->ring);
    return NULL;
}

/* ---- the two PEs ---- */

static void pe0(symm_ctx ctx, const bufs *b, uint32_t n_rings) {
    symm_ring r;
    CHECK_OK(symm__proxy_ring(C, 0, SYMM_RING_VERSION, &r));
    CHECK_OK(symm_ring_check(&r));
    const uint64_t data = off_of(b->data), sig = off_of(b->sig), flag = off_of(b->flag);
    uint8_t *src = malloc(DATA_BYTES);
    ASSERT_TRUE(src != NULL);

    /* 1. puts of many sizes and alignments, then quiet */
    for (uint64_t i = 0; i < PUT_BYTES; i++) src[i] = pattern(1, i);
    static const uint64_t sizes[] = {1, 3, 8, 13, 64, 1000, 4096, 7, 65541, 24, 2, 100000, 5};
    uint64_t n_puts = 0;
    for (uint64_t o = 0, k = 0; o < PUT_BYTES; k++) {
        uint64_t n = sizes[k % (sizeof sizes / sizeof sizes[0])];
        if (n > PUT_BYTES - o) n = PUT_BYTES - o;
        CHECK_OK(symm_ring_put(&r, 1, data + o, src + o, n, NULL));
        o += n;
        n_puts++;
    }
    CHECK_OK(symm_ring_quiet(&r));
    printf("PE 0: %llu puts (%u bytes) and a quiet through a %u-slot ring\n",
           (unsigned long long)n_puts, PUT_BYTES, r.depth);
    boot_barrier(); /* A: PE 1 checks at once */

    /* 2. put-with-signal rounds: 32 with SET, 32 with ADD; PE 1 checks them
     * as they land */
    for (uint32_t k = 0; k < SIG_ROUNDS; k++)
        for (uint64_t i = 0; i < 1024; i++) src[SIG_BASE + k * 1024 + i] = pattern(100 + k, i);
    boot_barrier(); /* B */
    for (uint32_t k = 0; k < SIG_ROUNDS; k++) {
        const bool set = k < SIG_ROUNDS / 2;
        CHECK_OK(symm_ring_put_signal(&r, 1, data + SIG_BASE + k * 1024, src + SIG_BASE + k * 1024,
                                      1024, sig + (set ? 8 : 16), set ? k + 1 : 1,
                                      set ? SYMM_SIGNAL_SET : SYMM_SIGNAL_ADD, NULL));
    }
    /* 3. put, fence, flag put: the flag never overtakes the data */
    for (uint32_t k = 0; k < FENCE_ROUNDS; k++) {
        for (uint64_t i = 0; i < 32768; i++) src[FENCE_BASE + k * 32768 + i] = pattern(200 + k, i);
        CHECK_OK(symm_ring_put(&r, 1, data + FENCE_BASE + k * 32768, src + FENCE_BASE + k * 32768,
                               32768, NULL));
        CHECK_OK(symm_ring_fence(&r, NULL));
        static uint64_t flags[FENCE_ROUNDS];
        flags[k] = k + 1;
        CHECK_OK(symm_ring_put(&r, 1, flag, &flags[k], 8, NULL));
    }
    CHECK_OK(symm_ring_quiet(&r));
    boot_barrier(); /* C: PE 1 has checked the signal and fence rounds */

    /* 4. gets of many sizes (PE 1 filled gsrc with round 77) */
    uint8_t *dst = calloc(1, GET_BYTES);
    ASSERT_TRUE(dst != NULL);
    static const uint64_t gsizes[] = {0, 1, 5, 8, 12, 4096, 3, 65536, 1023, 100001};
    const uint64_t gsrc = off_of(b->gsrc);
    for (uint64_t o = 0, k = 0; o < GET_BYTES; k++) {
        uint64_t n = gsizes[k % (sizeof gsizes / sizeof gsizes[0])];
        if (n > GET_BYTES - o) n = GET_BYTES - o;
        uint64_t t = 0;
        memset(dst + o, 0, n);
        CHECK_OK(symm_ring_get(&r, dst + o, 1, gsrc + o, n, &t));
        if (k % 3 == 0) { /* some checked one by one, the rest after a quiet */
            CHECK_OK(symm_ring_wait(&r, t));
            check_bytes("get", dst + o, 77, o, n);
        }
        o += n;
    }
    CHECK_OK(symm_ring_quiet(&r));
    check_bytes("gets", dst, 77, 0, GET_BYTES);
    printf("PE 0: gets of %u bytes in pieces of 0 to 100001 bytes matched\n", GET_BYTES);

    /* 5. atomics */
    pe0_atomics(&r, b);

    /* 6. bad requests on rings 2.. */
    pe0_bad(ctx, b, 2);

    /* 7. two producer threads on rings 0 and 1, host puts beside them */
    const uint64_t thr = off_of(b->thr);
    uint8_t *tsrc = malloc(3 * THREAD_BYTES);
    ASSERT_TRUE(tsrc != NULL);
    for (uint64_t i = 0; i < 3 * THREAD_BYTES; i++)
        tsrc[i] = pattern(300 + (uint32_t)(i / THREAD_BYTES), i % THREAD_BYTES);
    streamer s[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        memset(&s[i], 0, sizeof s[i]);
        CHECK_OK(symm__proxy_ring(C, (uint32_t)i, SYMM_RING_VERSION, &s[i].ring));
        s[i].off = thr + (uint64_t)i * THREAD_BYTES;
        s[i].src = tsrc + (uint64_t)i * THREAD_BYTES;
        ASSERT_EQ(pthread_create(&th[i], NULL, stream_puts, &s[i]), 0);
    }
    for (uint64_t done = 0; done < THREAD_BYTES; done += 4096)
        CHECK_OK(symm_put(b->thr, 2 * THREAD_BYTES + done, tsrc + 2 * THREAD_BYTES + done, 4096,
                          1));
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        if (s[i].st) TEST_FAIL_("streamer %d: %s", i, symm__status_name(s[i].st));
    }
    /* the host-side quiet over every ring: rings 0 and 1 are clean; the bad
     * requests' failures were delivered (symm_ctx_async_error cleared each),
     * so it returns none, while each ring's own view keeps its first */
    for (uint32_t i = 0; i < 2; i++) CHECK_OK(symm_ring_wait(&s[i].ring, *s[i].ring.head));
    CHECK_OK(symm__proxy_quiet(C));
    {
        symm_ring r2;
        uint64_t at = 0;
        CHECK_OK(symm__proxy_ring(C, 2, SYMM_RING_VERSION, &r2));
        ASSERT_EQ(symm_ring_error(&r2, &at), SYMM_ERR_OUT_OF_BOUNDS);
        ASSERT_U64_EQ(at, 1);
    }
    symm__proxy_stats st;
    symm__proxy_stats_get(C, &st);
    printf("PE 0: proxy counters: %llu requests, %llu failed, %llu flushes, %llu naps, "
           "%llu passes (%u rings)\n", (unsigned long long)st.requests,
           (unsigned long long)st.failed, (unsigned long long)st.flushes,
           (unsigned long long)st.naps, (unsigned long long)st.passes, n_rings);
    ASSERT_EQ(st.failed, 6);
    boot_barrier(); /* D: PE 1 checks the streams */
    free(tsrc);
    free(dst);
    free(src);
}

static void pe1(symm_ctx ctx, const bufs *b) {
    uint8_t *data = local_ptr(b->data);
    boot_barrier(); /* A */
    check_bytes("puts after quiet", data, 1, 0, PUT_BYTES);
    printf("PE 1: the %u bytes were there when PE 0's quiet returned\n", PUT_BYTES);
    boot_barrier(); /* B */
    for (uint32_t k = 0; k < SIG_ROUNDS; k++) {
        const bool set = k < SIG_ROUNDS / 2;
        uint64_t seen = 0;
        CHECK_OK(symm_signal_wait_until(b->sig, set ? 1 : 2, SYMM_CMP_GE,
                                        set ? k + 1 : k - SIG_ROUNDS / 2 + 1, &seen));
        check_bytes(set ? "data under a SET signal" : "data under an ADD signal",
                    data + SIG_BASE + k * 1024, 100 + k, 0, 1024);
    }
    uint64_t fin = 0;
    CHECK_OK(symm_signal_fetch(b->sig, 1, &fin));
    ASSERT_U64_EQ(fin, SIG_ROUNDS / 2);
    for (uint32_t k = 0; k < FENCE_ROUNDS; k++) {
        uint64_t want = k + 1;
        CHECK_OK(symm_wait_until(b->flag, 0, SYMM_CMP_GE, &want));
        check_bytes("data before a fenced flag", data + FENCE_BASE + k * 32768, 200 + k, 0, 32768);
    }
    printf("PE 1: %u put-with-signal rounds and %u fenced rounds: the data was there first\n",
           SIG_ROUNDS, FENCE_ROUNDS);
    boot_barrier(); /* C */
    boot_barrier(); /* D */
    const uint8_t *thr = local_ptr(b->thr);
    for (uint32_t i = 0; i < 3; i++)
        check_bytes("streams beside host puts", thr + i * THREAD_BYTES, 300 + i, 0, THREAD_BYTES);
    printf("PE 1: two ring streams and the host's puts all landed\n");
    (void)ctx;
}

static void run_ops(bool remote, uint32_t depth) {
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_HOST);
    me = symm_my_pe(ctx);
    CHECK_OK(symm__ctx_get(ctx, &C));
    ASSERT_EQ(symm_n_pes(ctx), 2);
    if (remote && C->n_remote != 1)
        TEST_FAIL_("run under symmrun -n 2 --hosts 2: PE 1 must be on another host");
    if (!remote && C->n_remote != 0) TEST_FAIL_("the local case runs on one host");
    bufs b;
    alloc_bufs(ctx, &b);
    if (me == 1) {
        uint8_t *g = local_ptr(b.gsrc);
        for (uint64_t i = 0; i < GET_BYTES; i++) g[i] = pattern(77, i);
        for (int d = 0; d < 6; d++) {
            uint64_t init = AMO_INIT64;
            memcpy(local_ptr(b.amo[d]), &init, d < 2 || d == 4 ? 4 : 8);
        }
    }
    CHECK_OK(symm_barrier_all(ctx));
    if (me == 0) {
        symm__proxy_opts o;
        CHECK_OK(symm__proxy_opts_env(&o));
        o.depth = depth;
        o.n_rings = 8;
        if (!remote) {
            /* one host: no proxy unless forced */
            ASSERT_TRUE(!symm__proxy_wanted(C, 0));
            CHECK_OK(symm__proxy_start(C, &o));
            ASSERT_TRUE(!symm__proxy_running(C));
            symm_ring r;
            CHECK_STATUS(symm__proxy_ring(C, 0, SYMM_RING_VERSION, &r), SYMM_ERR_NOT_SUPPORTED);
            o.flags = SYMM__PROXY_FORCE;
        } else {
            ASSERT_TRUE(symm__proxy_wanted(C, 0));
            ASSERT_TRUE(!symm__proxy_wanted(C, SYMM__PROXY_NEED_GPU)); /* host backend */
        }
        CHECK_OK(symm__proxy_start(C, &o));
        ASSERT_TRUE(symm__proxy_running(C));
        CHECK_STATUS(symm__proxy_start(C, &o), SYMM_ERR_INVALID_STATE);
        symm_ring r;
        CHECK_STATUS(symm__proxy_ring(C, 0, SYMM_RING_VERSION + 1, &r), SYMM_ERR_ABI_MISMATCH);
        pe0(ctx, &b, o.n_rings);
        double t0 = now_s();
        symm__proxy_stop(C);
        ASSERT_TRUE(!symm__proxy_running(C));
        printf("PE 0: proxy stopped in %.2f ms\n", (now_s() - t0) * 1e3);
        CHECK_OK(symm__proxy_ring(C, 0, SYMM_RING_VERSION, &r));
        uint64_t t = 0;
        CHECK_OK(symm_ring_nop(&r, &t));
        /* after the stop: an error, no hang */
        ASSERT_EQ(symm_ring_wait(&r, t), SYMM_ERR_INVALID_STATE);
        symm__proxy_destroy(C);
        ASSERT_EQ(symm__proxy_n_rings(C), 0);
    } else {
        pe1(ctx, &b);
    }
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_finalize(&ctx));
    if (me == 0) printf("ok: proxy %s, depth %u\n", remote ? "to a remote PE over the transport"
                                                          : "forced on one host", depth);
}

/* ---- kill: PE 1 dies while PE 0's producers stream ---- */

#define GIVE_UP_S 20.0

static uint32_t kill_depth;

typedef struct killer_arg {
    symm_ring ring;
    uint64_t off;
    const uint8_t *src;
    bool quiet_each;
    symm_status st;
    double t_end;
    atomic_uint_fast64_t posted;
} killer_arg;

static void *kill_stream(void *arg) {
    killer_arg *k = arg;
    double t0 = now_s();
    symm_status st = SYMM_SUCCESS;
    for (uint64_t i = 0; st == SYMM_SUCCESS && now_s() - t0 < GIVE_UP_S; i++) {
        uint64_t t = 0;
        st = symm_ring_put(&k->ring, 1, k->off + (i % 16) * 4096, k->src, 4096, &t);
        atomic_fetch_add(&k->posted, 1);
        if (st == SYMM_SUCCESS && (k->quiet_each || i % 32 == 31))
            st = k->quiet_each ? symm_ring_quiet(&k->ring) : symm_ring_wait(&k->ring, t);
    }
    k->st = st;
    k->t_end = now_s();
    return NULL;
}

static int kill_pe(int rank, const symm_unique_id *id, int ready_fd) {
    me = symm_test_pe = rank;
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_HOST;
    attr.bootstrap = SYMM_BOOTSTRAP_UID;
    attr.rank = rank;
    attr.n_pes = 2;
    attr.unique_id = *id;
    attr.timeout_ms = 20000;
    symm_ctx ctx = NULL;
    CHECK_OK(symm_init(&attr, &ctx));
    CHECK_OK(symm__ctx_get(ctx, &C));
    if (C->n_remote != 1) TEST_FAIL_("PE %d: the other PE is not on another host", rank);
    symm_buf data;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, 2 * 65536, &data));
    CHECK_OK(symm_barrier_all(ctx));
    if (rank == 1) {
        char one = 1;
        ASSERT_EQ(write(ready_fd, &one, 1), 1);
        for (;;) pause(); /* the parent kills it */
    }
    symm__proxy_opts o;
    CHECK_OK(symm__proxy_opts_env(&o));
    o.depth = kill_depth;
    o.n_rings = 2;
    CHECK_OK(symm__proxy_start(C, &o));
    static uint8_t src[4096];
    killer_arg k[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        memset(&k[i], 0, sizeof k[i]);
        CHECK_OK(symm__proxy_ring(C, (uint32_t)i, SYMM_RING_VERSION, &k[i].ring));
        k[i].off = off_of(data) + (uint64_t)i * 65536;
        k[i].src = src;
        k[i].quiet_each = i == 1;
    }
    /* streaming before the kill: the proxy works (each producer has had 32
     * requests through, waits included, before PE 1 may be killed) */
    for (int i = 0; i < 2; i++) ASSERT_EQ(pthread_create(&th[i], NULL, kill_stream, &k[i]), 0);
    for (int i = 0; i < 2; i++) {
        double t0 = now_s();
        while (atomic_load(&k[i].posted) < 34 && now_s() - t0 < GIVE_UP_S) symm_kill_sleep_ms(1);
        if (atomic_load(&k[i].posted) < 34)
            TEST_FAIL_("producer %d: %llu requests through in %.0f s", i,
                       (unsigned long long)atomic_load(&k[i].posted), GIVE_UP_S);
    }
    char one = 1;
    ASSERT_EQ(write(ready_fd, &one, 1), 1);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    const char *v = getenv("SYMM_PEER_TIMEOUT_MS");
    const double limit = (v ? atof(v) : 100.0) + SYMM_KILL_SLACK_MS;
    for (int i = 0; i < 2; i++) {
        if (k[i].st != SYMM_ERR_PEER_FAILED)
            TEST_FAIL_("producer %d ended with %s, expected PEER_FAILED", i,
                       symm__status_name(k[i].st));
        if (*symm_kill_t == 0) TEST_FAIL_("producer %d failed before the kill", i);
        const double ms = symm_kill_since_ms(k[i].t_end);
        printf("PE 0: producer %d (%s) -> PEER_FAILED %.1f ms after PE 1 was killed, %llu "
               "requests posted\n", i, k[i].quiet_each ? "put + quiet" : "streaming puts", ms,
               (unsigned long long)atomic_load(&k[i].posted));
        if (ms > limit) TEST_FAIL_("producer %d noticed after %.1f ms (limit %.0f)", i, ms, limit);
    }
    double t0 = now_s();
    symm__proxy_stop(C);
    const double stop_ms = (now_s() - t0) * 1e3;
    printf("PE 0: proxy stop took %.1f ms\n", stop_ms);
    if (stop_ms > limit) TEST_FAIL_("stop took %.1f ms", stop_ms);
    /* a producer after the death: an error at once, no wait */
    uint64_t t = 0;
    symm_status st = symm_ring_nop(&k[0].ring, &t);
    if (st == SYMM_SUCCESS) st = symm_ring_wait(&k[0].ring, t);
    ASSERT_EQ(st, SYMM_ERR_PEER_FAILED);
    char msg[512];
    symm_status ast;
    CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &ast, msg));
    ASSERT_EQ(ast, SYMM_ERR_PEER_FAILED);
    printf("PE 0: async record: %s\n", msg);
    symm__proxy_destroy(C);
    CHECK_STATUS(symm_finalize(&ctx), SYMM_ERR_PEER_FAILED);
    fflush(stdout); /* the harness ends the PE with _exit */
    return 0;
}

static void set_host(int rank) {
    char id[64];
    snprintf(id, sizeof id, "proxy-kill-host-%d", rank);
    setenv("SYMM_HOST_ID", id, 1);
}

/* ---- the proxied-call modes (mixed, grow, pageable): a context whose world team spans
 * hosts, its proxy started with one call registered, posted as the stream's
 * kernel posts it. ---- */

static symm_ctx spanning_ctx(void) {
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_HOST);
    me = symm_my_pe(ctx);
    CHECK_OK(symm__ctx_get(ctx, &C));
    if (C->n_remote == 0) TEST_FAIL_("run under symmrun --hosts 2: the team must span hosts");
    return ctx;
}

static uint64_t start_with_call(symm__proxy_call_fn fn, symm_ring *r) {
    symm__proxy_opts o;
    CHECK_OK(symm__proxy_opts_env(&o));
    CHECK_OK(symm__proxy_start(C, &o));
    uint64_t id = 0;
    static int unused;
    CHECK_OK(symm__proxy_call_add(C, fn, &unused, sizeof unused, NULL, false, &id));
    CHECK_OK(symm__proxy_ring(C, 0, SYMM_RING_VERSION, r));
    return id;
}

static uint64_t post_call(symm_ring *r, uint64_t id) {
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_CALL, 0);
    q.value = id;
    uint64_t t = 0;
    CHECK_OK(symm_ring_post(r, &q, &t));
    return t;
}

static void finish_proxied(symm_ctx ctx) {
    CHECK_OK(symm__boot_barrier(C->boot));
    symm__proxy_stop(C);
    symm__proxy_destroy(C);
    CHECK_OK(symm_finalize(&ctx));
}

/* ---- mixed: a team's stream barrier that the proxy runs (here posted by
 * a CPU producer as the stream's kernel posts it, counted as issued as
 * api/stream_px.c counts it) and a host barrier of the same team right
 * after, without waiting for the first: the host barrier must run after it
 * (symm__team_px_drain), else the two threads' syncs of one team interleave
 * (4 PEs on 2 hosts: a hang within a few hundred rounds). ---- */

static symm_status mixed_sync(symm__ctx *ctx, void *arg) {
    (void)arg;
    symm_status st = symm__team_sync(ctx->predef[SYMM_TEAM_WORLD]);
    symm__px_team_done(ctx->predef[SYMM_TEAM_WORLD], true);
    return st;
}

static void run_mixed(uint32_t rounds) {
    symm_ctx ctx = spanning_ctx();
    symm_ring r;
    const uint64_t id = start_with_call(mixed_sync, &r);
    symm__team *world = C->predef[SYMM_TEAM_WORLD];
    double t0 = now_s();
    for (uint32_t k = 0; k < rounds; k++) {
        atomic_fetch_add(&world->px_issued, 1);
        const uint64_t t = post_call(&r, id);
        CHECK_OK(symm_barrier_all(ctx)); /* the proxied sync may not have run yet */
        CHECK_OK(symm_ring_wait(&r, t));
    }
    ASSERT_EQ(atomic_load(&world->px_done), (uint64_t)rounds);
    printf("PE %d: mixed: %u rounds in %.2f s\n", me, rounds, now_s() - t0);
    finish_proxied(ctx);
}

/* ---- grow: a heap growth (symm_buf_alloc past the backed heap, so the
 * transport's collective mem_add) while the proxy still has a team sync to
 * run. On a GPU a PE's growth may wait for its stream (CUDA may order a
 * device memory allocation after queued work), and the stream's queued
 * barrier waits for the other PE's proxy. Here PE 1's heap_grow is wrapped
 * to wait the same way, and PE 0's proxy starts its sync only once PE 0's
 * application thread is in mem_add's exchange: if that thread kept the
 * transport through the exchange, PE 0's proxy could not send, PE 1 could
 * not grow, and the job would hang (transport.h, "Thread safety"). ---- */

static _Atomic int grow_synced;
static symm__backend_ops grow_ops;
static symm_status (*grow_orig)(symm__ctx *, uint64_t);

static symm_status grow_sync(symm__ctx *ctx, void *arg) {
    (void)arg;
    if (ctx->my_pe == 0) usleep(300 * 1000); /* PE 0's application thread is in mem_add by then */
    symm_status st = symm__team_sync(ctx->predef[SYMM_TEAM_WORLD]);
    atomic_store(&grow_synced, 1);
    return st;
}

static symm_status grow_behind_stream(symm__ctx *ctx, uint64_t new_mapped) {
    const double t0 = now_s();
    while (!atomic_load(&grow_synced)) {
        if (now_s() - t0 > 10.0)
            return symm__err(SYMM_ERR_TIMEOUT, "test: the proxied team sync did not finish "
                             "within 10 s while this PE's heap growth waited for it");
        usleep(1000);
    }
    return grow_orig(ctx, new_mapped);
}

static void run_grow(uint32_t rounds) {
    symm_ctx ctx = spanning_ctx();
    if (me == 1) {
        grow_ops = *C->ops;
        grow_orig = grow_ops.heap_grow;
        grow_ops.heap_grow = grow_behind_stream;
        C->ops = &grow_ops;
    }
    symm_ring r;
    const uint64_t id = start_with_call(grow_sync, &r);
    const double t0 = now_s();
    for (uint32_t k = 0; k < rounds; k++) {
        atomic_store(&grow_synced, 0);
        const uint64_t mapped = C->heap_mapped;
        const uint64_t t = post_call(&r, id);
        /* past the backed heap: a growth, so mem_add; filled and read back */
        symm_buf b = NULL;
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, C->cfg.heap_chunk, &b));
        ASSERT_TRUE(C->heap_mapped > mapped);
        CHECK_OK(symm_ring_wait(&r, t));
        uint8_t *local = malloc(C->cfg.heap_chunk);
        ASSERT_TRUE(local != NULL);
        for (uint64_t i = 0; i < C->cfg.heap_chunk; i++) local[i] = pattern(k + (uint32_t)me, i);
        CHECK_OK(symm_put(b, 0, local, C->cfg.heap_chunk, 1 - me));
        CHECK_OK(symm_barrier_all(ctx));
        CHECK_OK(symm_get(local, b, 0, C->cfg.heap_chunk, me));
        for (uint64_t i = 0; i < C->cfg.heap_chunk; i++)
            if (local[i] != pattern(k + (uint32_t)(1 - me), i))
                TEST_FAIL_("round %u: byte %llu of the grown buffer is wrong", k,
                           (unsigned long long)i);
        free(local);
    }
    printf("PE %d: grow: %u heap growths with a proxied team sync pending, %.2f s\n", me,
           rounds, now_s() - t0);
    finish_proxied(ctx);
}

/* ---- pageable: the proxy's thread never takes the backend's copies. On
 * CUDA they are the driver's pageable path, which an application thread's
 * copy into pageable memory holds while it waits for its stream (torch's
 * .cpu()); when that stream waits for the proxy, a backend copy on the
 * proxy's thread never starts. Here every PE's backend put and get take one
 * lock of the process, as the driver's pageable path does, and the
 * application thread holds it while it waits for a proxied call that moves
 * data between this host's PEs from host memory (a collective's records and
 * partial sums are such data) around a sync of the world team. The call
 * must end within 10 s (route.c: on the proxy's thread those copies go
 * through the transport's memory service). ---- */

static pthread_mutex_t driver_lock = PTHREAD_MUTEX_INITIALIZER;
static symm__backend_ops pg_ops;
static symm_status (*pg_put)(symm__ctx *, int32_t, uint64_t, const void *, uint64_t, uint32_t);
static symm_status (*pg_get)(symm__ctx *, void *, int32_t, uint64_t, uint64_t, uint32_t);
static uint64_t pg_off;         /* heap offset of n_pes 8-byte slots */
static _Atomic uint32_t pg_round;

static symm_status locked_put(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src,
                              uint64_t n, uint32_t flags) {
    pthread_mutex_lock(&driver_lock);
    symm_status st = pg_put(ctx, pe, off, src, n, flags);
    pthread_mutex_unlock(&driver_lock);
    return st;
}

static symm_status locked_get(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                              uint32_t flags) {
    pthread_mutex_lock(&driver_lock);
    symm_status st = pg_get(ctx, dst, pe, off, n, flags);
    pthread_mutex_unlock(&driver_lock);
    return st;
}

static uint64_t pg_value(uint32_t round, int32_t pe) { return ((uint64_t)round << 32) | (uint32_t)pe; }

static symm_status pageable_call(symm__ctx *ctx, void *arg) {
    (void)arg;
    symm__team *world = ctx->predef[SYMM_TEAM_WORLD];
    const uint32_t k = atomic_load(&pg_round);
    const uint64_t mine = pg_value(k, ctx->my_pe); /* on the stack: host memory */
    for (int32_t pe = 0; pe < ctx->n_pes; pe++)
        if (!ctx->remote[pe]) SYMM_TRY(symm__put(ctx, pe, pg_off + 8u * (uint64_t)ctx->my_pe, &mine, 8, 0));
    SYMM_TRY(symm__team_sync(world));
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        if (ctx->remote[pe]) continue;
        uint64_t got = 0;
        SYMM_TRY(symm__get(ctx, &got, pe, pg_off + 8u * (uint64_t)pe, 8, 0));
        if (got != pg_value(k, pe))
            return symm__err(SYMM_ERR_INTERNAL, "round %u: PE %d's slot on PE %d holds %#llx, "
                             "not %#llx", k, pe, pe, (unsigned long long)got,
                             (unsigned long long)pg_value(k, pe));
    }
    return symm__team_sync(world); /* the next round's puts after every PE's gets */
}

static void run_pageable(uint32_t rounds) {
    symm_ctx ctx = spanning_ctx();
    if (C->n_pes - C->n_remote < 2) TEST_FAIL_("run with 2 or more PEs on each host");
    pg_ops = *C->ops;
    pg_put = pg_ops.put;
    pg_get = pg_ops.get;
    pg_ops.put = locked_put;
    pg_ops.get = locked_get;
    C->ops = &pg_ops;
    symm_buf b = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, (uint64_t)C->n_pes, &b));
    symm__buf *bb = NULL;
    CHECK_OK(symm__buf_get(b, &bb));
    pg_off = bb->off;
    symm_ring r;
    const uint64_t id = start_with_call(pageable_call, &r);
    const double t0 = now_s();
    for (uint32_t k = 0; k < rounds; k++) {
        atomic_store(&pg_round, k);
        pthread_mutex_lock(&driver_lock); /* the application's copy, waiting for its stream */
        const uint64_t t = post_call(&r, id);
        const double w0 = now_s();
        while (!symm_ring_test(&r, t)) {
            if (now_s() - w0 > 10.0)
                TEST_FAIL_("round %u: the proxied call did not finish within 10 s while the "
                           "application thread held the backend's copy lock: the proxy's "
                           "thread waits for it", k);
            usleep(100);
        }
        pthread_mutex_unlock(&driver_lock);
        CHECK_OK(symm_ring_wait(&r, t));
    }
    printf("PE %d: pageable: %u proxied rounds with the backend's copies locked, %.2f s\n", me,
           rounds, now_s() - t0);
    finish_proxied(ctx);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    const uint32_t depth = argc > 2 ? (uint32_t)atoi(argv[2]) : 1024;
    if (!strcmp(mode, "ops")) {
        run_ops(true, depth);
    } else if (!strcmp(mode, "mixed")) {
        run_mixed(depth);
    } else if (!strcmp(mode, "grow")) {
        run_grow(depth);
    } else if (!strcmp(mode, "pageable")) {
        run_pageable(depth);
    } else if (!strcmp(mode, "local")) {
        run_ops(false, depth);
    } else if (!strcmp(mode, "kill")) {
        kill_depth = depth;
        /* the harness signals "ready" for PE 0 once its producers stream */
        int rc = symm_kill_run(2, 1, 100.0, 2 * GIVE_UP_S, set_host, kill_pe);
        if (rc == 0) printf("kill: PE 0's producers ended with PEER_FAILED (depth %u)\n", depth);
        return rc;
    } else {
        fprintf(stderr, "usage: test_proxy_mp ops|local|kill [DEPTH] | mixed|grow|pageable "
                        "[ROUNDS]\n");
        return 2;
    }
    return 0;
}
