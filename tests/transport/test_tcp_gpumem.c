/*
 * The tcp transport on "GPU memory" without a GPU: under symmrun --hosts,
 * with SYMM_TEST_HOST_GPU_MEM=1 the host backend's GPU-memory service
 * (runtime/backends/host/host_gpu_test.h) makes the heap pass for GPU
 * memory. The transport is given the heap at an address that faults, so a
 * target-side access that bypasses the service crashes or fails; and the
 * service counts what it moves in a window of heap offsets, so every check
 * below also asserts that each byte and atomic of an operation went through
 * it, on the side it should (the target's service, or the initiator's
 * staging of its own heap), no more and no less.
 *
 * Pairs (initiator A, target T on another host), one at a time, the other
 * PEs idle in the barriers (whose traffic lies outside the window):
 *   put      host -> T's heap, sizes across the staging pieces (tcp: 1 MiB,
 *            ofi: 64 KiB messages)
 *   get      T's heap -> host
 *   get_dev  T's heap -> A's own heap (a "device" destination)
 *   put_dev  A's own heap (a "device" source) -> T's heap
 *   atomics  every op on every width and type, fetched values and results
 *            against a reference
 *   signal   put-with-signal (blocking and nbi, SET and ADD): T checks the
 *            data as soon as it sees the signal, then acknowledges
 * Links the runtime's objects (internal hooks and the counts). --bench times
 * puts and gets instead (any backend).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/host/host_gpu_test.h"
#include "transports/amo_cpu.h"
#include "internal.h"
#include "tp.h"
#include "symm_test.h"

/* The loader's; this test has the runtime's objects, not the loader. */
const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

#define DATA (3u * (1u << 20) + 4099u) /* bytes: several staging pieces, odd tail */

static symm_ctx h;
static symm__ctx *ctx;
static int me, n;
static symm_buf data, mine, sig, amo[6];
static uint64_t win_lo, win_hi;
static uint8_t *ref, *tmp;

static const uint32_t amo_types[6] = {SYMM_DTYPE_INT32, SYMM_DTYPE_UINT32, SYMM_DTYPE_INT64,
                                      SYMM_DTYPE_UINT64, SYMM_DTYPE_FLOAT32, SYMM_DTYPE_FLOAT64};

static uint64_t off_of(symm_buf b) {
    uint64_t off = 0;
    CHECK_OK(symm_buf_query(b, NULL, NULL, &off));
    return off;
}

static void span(symm_buf b, uint64_t bytes) {
    uint64_t o = off_of(b);
    if (o < win_lo) win_lo = o;
    if (o + bytes > win_hi) win_hi = o + bytes;
}

/* Every PE: counts from zero, then the barrier (nothing of the phase
 * before it). */
static void phase_start(void) {
    symm__host_gpu_test_window(win_lo, win_hi - win_lo);
    CHECK_OK(symm_barrier_all(h));
}

/* Every PE after the phase's operations and a barrier: what it must have
 * counted (A and T as given, 0 elsewhere). */
static void expect(int a, int t, const symm__host_gpu_stats *at_a, const symm__host_gpu_stats *at_t,
                   const char *what) {
    CHECK_OK(symm_barrier_all(h));
    symm__host_gpu_stats got, zero = {0};
    symm__host_gpu_test_stats(&got);
    const symm__host_gpu_stats *want = me == a ? at_a : me == t ? at_t : &zero;
    if (got.tgt_in != want->tgt_in || got.tgt_out != want->tgt_out ||
        got.loc_in != want->loc_in || got.loc_out != want->loc_out ||
        got.tgt_amo != want->tgt_amo || got.loc_amo != want->loc_amo)
        TEST_FAIL_("%s (A=%d, T=%d): counted tgt_in %llu tgt_out %llu loc_in %llu loc_out %llu "
                   "tgt_amo %llu loc_amo %llu; expected %llu %llu %llu %llu %llu %llu", what, a,
                   t, (unsigned long long)got.tgt_in, (unsigned long long)got.tgt_out,
                   (unsigned long long)got.loc_in, (unsigned long long)got.loc_out,
                   (unsigned long long)got.tgt_amo, (unsigned long long)got.loc_amo,
                   (unsigned long long)want->tgt_in, (unsigned long long)want->tgt_out,
                   (unsigned long long)want->loc_in, (unsigned long long)want->loc_out,
                   (unsigned long long)want->tgt_amo, (unsigned long long)want->loc_amo);
}

static void fill(uint8_t *p, uint64_t len, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 1;
    for (uint64_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

/* T's own copy of data[off, off + len) equals ref (read with the CPU: the
 * host backend's heap is host memory to the application). */
static void check_data_at(int t, uint64_t off, const uint8_t *want, uint64_t len, const char *what) {
    if (me != t) return;
    void *p = NULL;
    CHECK_OK(symm_buf_ptr(data, &p));
    if (memcmp((uint8_t *)p + off, want, len) != 0)
        TEST_FAIL_("%s: T's data differs from the reference (%llu bytes at %llu)", what,
                   (unsigned long long)len, (unsigned long long)off);
}

static void test_put_get(int a, int t) {
    /* around the ofi transport's 64 KiB staged messages (4 KiB with its knob) too */
    static const uint64_t sizes[] = {1,     7,     4095,  4096,  4097,          65535,
                                     65536, 65537, (1u << 20) + 3, DATA};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t len = sizes[k], off = (DATA - len) / 2;
        fill(ref, len, (uint32_t)(k * 31 + (uint64_t)a));
        phase_start();
        if (me == a) CHECK_OK(symm_put(data, off, ref, len, t));
        symm__host_gpu_stats sa = {0}, st = {.tgt_in = len};
        expect(a, t, &sa, &st, "put from host memory");
        check_data_at(t, off, ref, len, "put from host memory");

        phase_start();
        if (me == a) {
            memset(tmp, 0, len);
            CHECK_OK(symm_get(tmp, data, off, len, t));
            if (memcmp(tmp, ref, len) != 0) TEST_FAIL_("get into host memory: data differs");
        }
        st = (symm__host_gpu_stats){.tgt_out = len};
        expect(a, t, &sa, &st, "get into host memory");

        /* a get into A's own heap: a "device" destination, staged by A */
        phase_start();
        uint8_t *own = NULL;
        CHECK_OK(symm_buf_ptr(mine, (void **)&own));
        if (me == a) {
            memset(own, 0, len);
            CHECK_OK(symm_get(own, data, off, len, t));
            if (memcmp(own, ref, len) != 0) TEST_FAIL_("get into the heap: data differs");
        }
        sa = (symm__host_gpu_stats){.loc_in = len};
        expect(a, t, &sa, &st, "get into a GPU destination");

        /* a put from A's own heap: a "device" source, staged by A */
        fill(own, len, (uint32_t)(k * 17 + 5));
        phase_start();
        if (me == a) CHECK_OK(symm_put(data, off, own, len, t));
        sa = (symm__host_gpu_stats){.loc_out = len};
        st = (symm__host_gpu_stats){.tgt_in = len};
        expect(a, t, &sa, &st, "put from a GPU source");
        if (me == t) fill(ref, len, (uint32_t)(k * 17 + 5));
        check_data_at(t, off, ref, len, "put from a GPU source");
        CHECK_OK(symm_barrier_all(h));
    }
}

/* The reference of one atomic on raw bits (size 4 or 8). */
static uint64_t ref_amo(uint32_t dtype, uint32_t op, uint64_t old, uint64_t v, uint64_t c) {
    uint64_t mask = symm__amo_size(dtype) == 8 ? ~0ull : 0xffffffffull;
    switch (op) {
    case SYMM_AMO_FETCH: return old;
    case SYMM_AMO_SET: case SYMM_AMO_SWAP: return v & mask;
    case SYMM_AMO_COMPARE_SWAP: return ((old ^ c) & mask) == 0 ? v & mask : old;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC: return (old + 1) & mask;
    case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD: return (old + v) & mask;
    case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND: return old & v & mask;
    case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR: return (old | v) & mask;
    default: return (old ^ v) & mask;
    }
}

static bool fetching(uint32_t op) {
    return op == SYMM_AMO_FETCH || op == SYMM_AMO_SWAP || op == SYMM_AMO_COMPARE_SWAP ||
           op == SYMM_AMO_FETCH_INC || op == SYMM_AMO_FETCH_ADD || op == SYMM_AMO_FETCH_AND ||
           op == SYMM_AMO_FETCH_OR || op == SYMM_AMO_FETCH_XOR;
}

static void test_atomics(int a, int t) {
    phase_start();
    uint64_t count = 0;
    for (int d = 0; d < 6; d++) {
        uint32_t dt = amo_types[d], size = symm__amo_size(dt);
        bool fl = dt == SYMM_DTYPE_FLOAT32 || dt == SYMM_DTYPE_FLOAT64;
        uint64_t mask = size == 8 ? ~0ull : 0xffffffffull;
        for (uint32_t op = SYMM_AMO_FETCH; op <= SYMM_AMO_XOR; op++) {
            if (fl && op != SYMM_AMO_FETCH && op != SYMM_AMO_SET && op != SYMM_AMO_SWAP)
                continue; /* what the API takes on floating types */
            for (int hit = 0; hit < (op == SYMM_AMO_COMPARE_SWAP ? 2 : 1); hit++) {
                count += 3;
                if (me != a) continue;
                uint64_t init = (0x8765432187654321ull * (op + 3) + (uint64_t)d) & mask;
                uint64_t v = (0x0f0f00ff33cc55aaull ^ (uint64_t)op * 77) & mask;
                uint64_t c = hit ? init : init ^ 1, got = 0, fin = 0;
                CHECK_OK(symm_atomic(amo[d], 0, SYMM_AMO_SET, &init, NULL, t, NULL));
                CHECK_OK(symm_atomic(amo[d], 0, op, &v, &c, t, &got));
                if (fetching(op) && (got & mask) != init)
                    TEST_FAIL_("atomic op %u dtype %u: fetched %llx, expected %llx", op, dt,
                               (unsigned long long)(got & mask), (unsigned long long)init);
                CHECK_OK(symm_atomic(amo[d], 0, SYMM_AMO_FETCH, NULL, NULL, t, &fin));
                uint64_t want = ref_amo(dt, op, init, v, c);
                if ((fin & mask) != want)
                    TEST_FAIL_("atomic op %u dtype %u: result %llx, expected %llx", op, dt,
                               (unsigned long long)(fin & mask), (unsigned long long)want);
            }
        }
    }
    symm__host_gpu_stats sa = {0}, st = {.tgt_amo = count};
    expect(a, t, &sa, &st, "atomics of every op and width");

}

/* Put-with-signal: T sees the data whenever it sees the signal. */
static void test_signal(int a, int t) {
    enum { ROUNDS = 8 };
    const uint64_t len = (256u << 10) + 13;
    phase_start();
    uint64_t *s = NULL;
    CHECK_OK(symm_buf_ptr(sig, (void **)&s));
    for (int r = 0; r < ROUNDS; r++) {
        bool add = r % 2, nbi = r % 4 >= 2;
        uint64_t off = (uint64_t)r * 4099;
        fill(ref, len, (uint32_t)(r * 101 + a));
        if (me == a) {
            uint64_t value = add ? 1 : (uint64_t)r + 1; /* signal r + 1 after round r */
            if (nbi) {
                CHECK_OK(symm_put_signal_nbi(data, off, ref, len, sig, 0, value,
                                             add ? SYMM_SIGNAL_ADD : SYMM_SIGNAL_SET, t));
                CHECK_OK(symm_quiet(h));
            } else {
                CHECK_OK(symm_put_signal(data, off, ref, len, sig, 0, value,
                                         add ? SYMM_SIGNAL_ADD : SYMM_SIGNAL_SET, t));
            }
            CHECK_OK(symm_signal_wait_until(sig, 1, SYMM_CMP_GE, (uint64_t)r + 1, NULL));
        } else if (me == t) {
            CHECK_OK(symm_signal_wait_until(sig, 0, SYMM_CMP_GE, (uint64_t)r + 1, NULL));
            check_data_at(t, off, ref, len, "put-with-signal: the data when the signal came");
            CHECK_OK(symm_signal_op(sig, 1, 1, SYMM_SIGNAL_ADD, a)); /* ack */
        }
    }
    /* T: ROUNDS payloads in and ROUNDS signal updates; A: ROUNDS acks */
    symm__host_gpu_stats sa = {.tgt_amo = ROUNDS}, st = {.tgt_in = ROUNDS * len, .tgt_amo = ROUNDS};
    expect(a, t, &sa, &st, "put-with-signal");
    CHECK_OK(symm_barrier_all(h));
    if (me == a || me == t) memset(s, 0, 2 * sizeof *s); /* both words, for the next pair */
    CHECK_OK(symm_barrier_all(h));
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* --bench: PE 0 times blocking puts and gets of several sizes to PE n - 1
 * (another host) over the transport; medians of REPS. Run with the host
 * backend (plain, or SYMM_TEST_HOST_GPU_MEM=1: the staging's CPU cost) and
 * with SYMM_TEST_BACKEND=cuda (the heap in GPU memory: the real staging). */
static int bench(void) {
    enum { REPS = 21 };
    static const uint64_t sizes[] = {8, 4096, 65536, 1u << 20, 4u << 20};
    h = symm_test_init(SYMM_BACKEND_AUTO);
    me = symm_my_pe(h);
    n = symm_n_pes(h);
    CHECK_OK(symm__ctx_get(h, &ctx));
    ASSERT_TRUE(ctx->tp != NULL);
    uint8_t *buf = malloc(4u << 20);
    ASSERT_TRUE(buf != NULL);
    memset(buf, 7, 4u << 20);
    CHECK_OK(symm_buf_alloc(h, SYMM_DTYPE_UINT8, 4u << 20, &data));
    symm_ctx_info info = {.struct_size = sizeof info};
    CHECK_OK(symm_ctx_query(h, &info));
    const char *hook = getenv("SYMM_TEST_HOST_GPU_MEM");
    if (me == 0)
        printf("bench: PE 0 -> PE %d over %s, heap: %s\n| bytes | put median us | put MB/s | "
               "get median us | get MB/s |\n|---|---|---|---|---|\n", n - 1, ctx->tp->name,
               info.backend == SYMM_BACKEND_CUDA ? "GPU memory (cuda)"
               : hook && !strcmp(hook, "1") ? "host memory as GPU memory (test hook)"
                                            : "host memory");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t len = sizes[k], tp[REPS], tg[REPS];
        CHECK_OK(symm_barrier_all(h));
        for (int r = 0; me == 0 && r < REPS; r++) {
            uint64_t t0 = now_ns();
            CHECK_OK(symm_put(data, 0, buf, len, n - 1));
            uint64_t t1 = now_ns();
            CHECK_OK(symm_get(buf, data, 0, len, n - 1));
            tp[r] = t1 - t0;
            tg[r] = now_ns() - t1;
        }
        if (me == 0) {
            qsort(tp, REPS, sizeof tp[0], cmp_u64);
            qsort(tg, REPS, sizeof tg[0], cmp_u64);
            printf("| %llu | %.1f | %.0f | %.1f | %.0f |\n", (unsigned long long)len,
                   tp[REPS / 2] / 1e3, len * 1e3 / tp[REPS / 2], tg[REPS / 2] / 1e3,
                   len * 1e3 / tg[REPS / 2]);
        }
    }
    CHECK_OK(symm_barrier_all(h));
    CHECK_OK(symm_finalize(&h));
    free(buf);
    return 0;
}

/* --fail (SYMM_TEST_HOST_GPU_FAIL_BYTES=777: 777-byte copies fail at the
 * target, 778-byte ones at the initiator): a copy that fails on either side
 * fails that operation with SYMM_ERR_CUDA and a message; the
 * connection stays usable (the next operation succeeds, its data checked);
 * a put-with-signal whose data could not be copied leaves the signal as it
 * was. */
static void test_fail(int a, int t) {
    const uint64_t bad = 777, bad_local = 778, good = 779; /* host_gpu_test.h */
    uint8_t *own = NULL;
    uint64_t *s = NULL;
    CHECK_OK(symm_buf_ptr(mine, (void **)&own));
    CHECK_OK(symm_buf_ptr(sig, (void **)&s));
    fill(ref, good, 3);
    if (me == a) {
        CHECK_STATUS(symm_put(data, 0, ref, bad, t), SYMM_ERR_CUDA); /* T's copy in */
        printf("tcp_gpumem --fail: a put into T's GPU memory: %s\n", symm_last_error());
        CHECK_OK(symm_put(data, 0, ref, good, t));
        CHECK_STATUS(symm_get(tmp, data, 0, bad, t), SYMM_ERR_CUDA); /* T's copy out */
        CHECK_OK(symm_get(tmp, data, 0, good, t));
        ASSERT_TRUE(memcmp(tmp, ref, good) == 0);
        memcpy(own, ref, good);
        CHECK_STATUS(symm_put(data, 0, own, bad_local, t), SYMM_ERR_CUDA); /* A's copy out */
        CHECK_OK(symm_get(tmp, data, 0, good, t)); /* T's data untouched by it */
        ASSERT_TRUE(memcmp(tmp, ref, good) == 0);
        CHECK_STATUS(symm_get(own, data, 0, bad_local, t), SYMM_ERR_CUDA); /* A's copy in */
        printf("tcp_gpumem --fail: a get into A's GPU memory: %s\n", symm_last_error());
        memset(own, 0, good);
        CHECK_OK(symm_get(own, data, 0, good, t));
        ASSERT_TRUE(memcmp(own, ref, good) == 0);
        CHECK_STATUS(symm_put_signal(data, 0, ref, bad, sig, 0, 9, SYMM_SIGNAL_SET, t),
                     SYMM_ERR_CUDA);
        CHECK_OK(symm_put(data, 0, ref, good, t));
    }
    CHECK_OK(symm_barrier_all(h));
    if (me == t) ASSERT_U64_EQ(s[0], 0); /* the signal of the failed put-with-signal */
    check_data_at(t, 0, ref, good, "after the failed copies");
    CHECK_OK(symm_barrier_all(h));
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) return bench();
    bool fail_mode = argc > 1 && strcmp(argv[1], "--fail") == 0;
    if (!getenv("SYMM_TEST_HOST_GPU_MEM")) {
        printf("SKIP: run with SYMM_TEST_HOST_GPU_MEM=1 (meson does)\n");
        return 77;
    }
    h = symm_test_init(SYMM_BACKEND_HOST);
    CHECK_OK(symm__ctx_get(h, &ctx));
    me = symm_my_pe(h);
    n = symm_n_pes(h);
    ASSERT_TRUE(ctx->tp != NULL); /* the job spans hosts: run under symmrun --hosts */
    ASSERT_TRUE(ctx->tp->info.caps & SYMM_TP_CAP_GPU_MEM);
    ref = malloc(DATA);
    tmp = malloc(DATA);
    ASSERT_TRUE(ref && tmp);

    CHECK_OK(symm_buf_alloc(h, SYMM_DTYPE_UINT8, DATA, &data));
    CHECK_OK(symm_buf_alloc(h, SYMM_DTYPE_UINT8, DATA, &mine));
    CHECK_OK(symm_buf_alloc(h, SYMM_DTYPE_UINT64, 2, &sig));
    for (int d = 0; d < 6; d++) CHECK_OK(symm_buf_alloc(h, amo_types[d], 1, &amo[d]));
    win_lo = UINT64_MAX;
    win_hi = 0;
    span(data, DATA);
    span(mine, DATA);
    span(sig, 16);
    for (int d = 0; d < 6; d++) span(amo[d], 8);
    ASSERT_TRUE(win_hi - win_lo < 4 * (uint64_t)DATA); /* one window, no system area in it */

    /* pairs across the two hosts, both ways (hosts are halves of the PEs) */
    int pairs[3][2] = {{0, n - 1}, {n - 1, 0}, {1, n / 2}};
    int n_pairs = n >= 4 ? 3 : 2;
    for (int p = 0; p < n_pairs; p++) {
        int a = pairs[p][0], t = pairs[p][1];
        if (me == a) ASSERT_TRUE(ctx->remote[t]);
        if (fail_mode) {
            test_fail(a, t);
            continue;
        }
        test_put_get(a, t);
        test_atomics(a, t);
        test_signal(a, t);
        if (me == 0) printf("tcp_gpumem: PE %d -> PE %d passed\n", a, t);
    }
    symm__host_gpu_stats s;
    symm__host_gpu_test_stats(&s);
    ASSERT_TRUE(s.calls > 0);
    CHECK_OK(symm_barrier_all(h));
    CHECK_OK(symm_finalize(&h));
    free(ref);
    free(tmp);
    printf("tcp_gpumem: PE %d of %d: all passed\n", me, n);
    return 0;
}
