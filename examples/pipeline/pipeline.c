/*
 * pipeline: a chain of stages with credit-based flow control.
 *
 * PE 0 produces chunks; every other PE receives each chunk from the PE before
 * it, checks it, and (except the last PE) transforms it and passes it on. A
 * link between PE i and PE i+1 is a ring of K slots in PE i+1's heap:
 *
 *   producer: wait for a free slot (credit), symm_put_signal the chunk into
 *             slot c % K with the slot's signal SET to c + 1;
 *   consumer: symm_signal_wait_until the slot's signal equals c + 1, read
 *             and check the chunk, then symm_signal_op ADD 1 on the
 *             producer's credit counter, which frees the slot.
 *
 * The put_signal guarantees that the data is visible before the signal, so
 * no barrier is needed per chunk. Every chunk is checked; the exit status is
 * non-zero on any mismatch or error.
 *
 *   symmrun -n 4 ./pipeline [chunks] [elements per chunk] [slots]
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <symm/symm.h>

static int fail(int me, const char *what, symm_status st) {
    fprintf(stderr, "pipeline: PE %d: %s failed: %s (%s)\n", me, what, symm_status_string(st),
            symm_last_error());
    return 1;
}

#define TRY(what, call)                                                        \
    do {                                                                       \
        symm_status st_ = (call);                                              \
        if (st_ != SYMM_SUCCESS) return fail(me, what, st_);                   \
    } while (0)

/* Element i of chunk c as produced by PE 0; each stage adds 1. */
static int64_t value(uint64_t c, uint64_t i, int stage) {
    return (int64_t)((c << 32) ^ (i * 0x9e3779b1u)) + stage;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t arg(int argc, char **argv, int i, uint64_t fallback) {
    return argc > i ? strtoull(argv[i], NULL, 0) : fallback;
}

int main(int argc, char **argv) {
    uint64_t chunks = arg(argc, argv, 1, 2000);
    uint64_t chunk = arg(argc, argv, 2, 4096); /* int64 elements */
    uint64_t K = arg(argc, argv, 3, 8);
    int me = -1;
    if (chunks == 0 || chunk == 0 || K == 0) {
        fprintf(stderr, "usage: pipeline [chunks > 0] [elements per chunk > 0] [slots > 0]\n");
        return 2;
    }

    symm_ctx ctx = NULL;
    TRY("symm_init", symm_init(NULL, &ctx));
    me = symm_my_pe(ctx);
    int n = symm_n_pes(ctx);
    if (n < 2) {
        fprintf(stderr, "pipeline: needs at least 2 PEs (symmrun -n 2 ./pipeline)\n");
        symm_finalize(&ctx);
        return 2;
    }
    bool consumer = me > 0, producer = me < n - 1;
    int left = me - 1, right = me + 1;

    /* Collective allocations: every PE makes the same ones. */
    symm_buf slots = NULL, ready = NULL, credit = NULL;
    TRY("symm_buf_alloc(slots)", symm_buf_alloc(ctx, SYMM_DTYPE_INT64, K * chunk, &slots));
    TRY("symm_buf_alloc(ready)", symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, K, &ready));
    TRY("symm_buf_alloc(credit)", symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 1, &credit));
    int64_t *work = malloc(chunk * sizeof *work);
    if (!work) {
        fprintf(stderr, "pipeline: PE %d: out of memory\n", me);
        return 1;
    }

    TRY("symm_barrier_all", symm_barrier_all(ctx));
    double t0 = now_s();
    uint64_t bad_chunks = 0;
    for (uint64_t c = 0; c < chunks; c++) {
        uint64_t slot = c % K;
        if (consumer) {
            /* Receive chunk c from the left, check it, free its slot. */
            TRY("symm_signal_wait_until",
                symm_signal_wait_until(ready, slot, SYMM_CMP_EQ, c + 1, NULL));
            TRY("symm_get", symm_get(work, slots, slot * chunk, chunk, me));
            TRY("symm_signal_op(credit)", symm_signal_op(credit, 0, 1, SYMM_SIGNAL_ADD, left));
            uint64_t bad = 0;
            for (uint64_t i = 0; i < chunk; i++) bad += work[i] != value(c, i, me - 1);
            if (bad) {
                if (bad_chunks < 5)
                    fprintf(stderr, "pipeline: PE %d: chunk %" PRIu64 ": %" PRIu64
                            " of %" PRIu64 " elements wrong\n", me, c, bad, chunk);
                bad_chunks++;
            }
            for (uint64_t i = 0; i < chunk; i++) work[i] += 1; /* this stage's work */
        } else {
            for (uint64_t i = 0; i < chunk; i++) work[i] = value(c, i, 0);
        }
        if (producer) {
            /* Slot c % K is free once the right PE consumed chunk c - K. */
            if (c >= K)
                TRY("symm_signal_wait_until(credit)",
                    symm_signal_wait_until(credit, 0, SYMM_CMP_GE, c - K + 1, NULL));
            TRY("symm_put_signal", symm_put_signal(slots, slot * chunk, work, chunk, ready, slot,
                                                   c + 1, SYMM_SIGNAL_SET, right));
        }
    }
    double dt = now_s() - t0;
    TRY("symm_barrier_all", symm_barrier_all(ctx));

    double mb = (double)chunks * (double)chunk * sizeof(int64_t) / 1e6;
    if (me == n - 1)
        printf("pipeline: %d stages, %" PRIu64 " chunks of %" PRIu64 " bytes, %" PRIu64
               " slots: %.3f s, %.1f MB/s through the chain, %" PRIu64 " bad chunks\n",
               n, chunks, chunk * (uint64_t)sizeof(int64_t), K, dt, mb / dt, bad_chunks);
    else if (bad_chunks)
        printf("pipeline: PE %d: %" PRIu64 " bad chunks\n", me, bad_chunks);

    free(work);
    TRY("symm_buf_free", symm_buf_free(credit));
    TRY("symm_buf_free", symm_buf_free(ready));
    TRY("symm_buf_free", symm_buf_free(slots));
    TRY("symm_finalize", symm_finalize(&ctx));
    return bad_chunks ? 1 : 0;
}
