/*
 * Small operations through symm's host API (the host backend, 2 PEs of one
 * host under symmrun); bench_small_shmem.c is the same program over
 * OpenSHMEM. scripts/bench-small.sh runs both, alternating, and prints the
 * medians side by side.
 *   symmrun -n 2 bench_small [rounds] [calls per batch]
 * A batch is 2000 calls on the host backend and 100 on a device backend,
 * where each call waits for the GPU (SYMM_BACKEND=cuda).
 */
#include <symm/symm.h>

static int me;
static symm_ctx ctx;
#define BARRIER() symm_barrier_all(ctx)
#include "bench_small.h"

#define CHECK(call)                                                                            \
    do {                                                                                       \
        symm_status st_ = (call);                                                              \
        if (st_) {                                                                             \
            fprintf(stderr, "PE %d: %s: %s (%s)\n", me, #call, symm_status_string(st_),        \
                    symm_last_error());                                                        \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    CHECK(symm_init(NULL, &ctx));
    me = symm_my_pe(ctx);
    if (symm_n_pes(ctx) != 2) {
        fprintf(stderr, "bench_small: run on 2 PEs (symmrun -n 2)\n");
        return 1;
    }
    symm_buf buf;
    CHECK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 65536 / 8 * 2, &buf));
    int64_t *base;
    CHECK(symm_buf_ptr(buf, (void **)&base));
    static char src[65536];
    int64_t v = 1, cmp = 0, old = 0;
    volatile int64_t *peer;
    CHECK(symm_ptr(ctx, base, 1, (void **)&peer));
    /* The floor stores into the peer's heap from the host: host backend only
     * (SYMM_BACKEND=cuda times the CUDA backend's host entries without it). */
    symm_ctx_info info = {.struct_size = sizeof info};
    CHECK(symm_ctx_query(ctx, &info));
    if (info.backend != SYMM_BACKEND_HOST) peer = NULL;
    bs_batch = argc > 2 ? atoi(argv[2]) : info.backend == SYMM_BACKEND_HOST ? BATCH : 100;
    if (bs_batch < 10) {
        fprintf(stderr, "bench_small: calls per batch must be at least 10\n");
        return 1;
    }
    for (int r = 0; r < rounds; r++) {
        if (peer)
            BS_TIME("floor", "store_fence", 8, 1, {
                peer[0] = i;
                atomic_thread_fence(memory_order_seq_cst);
            });
        BS_TIME("symm", "putmem_quiet", 8, 1, {
            CHECK(symm_putmem(ctx, base, src, 8, 1));
            CHECK(symm_quiet(ctx));
        });
        BS_TIME("symm", "p", 8, 1, CHECK(symm_p(buf, 0, &v, 1)));
        BS_TIME("symm", "getmem", 8, 1, CHECK(symm_getmem(ctx, src, base, 8, 1)));
        BS_TIME("symm", "fetch_add", 8, 1,
                CHECK(symm_atomic(buf, 1, SYMM_AMO_FETCH_ADD, &v, NULL, 1, &old)));
        BS_TIME("symm", "compare_swap", 8, 1,
                CHECK(symm_atomic(buf, 2, SYMM_AMO_COMPARE_SWAP, &v, &cmp, 1, &old)));
        BS_TIME("symm", "put_rate", 8, WINDOW, {
            for (int k = 0; k < WINDOW; k++) CHECK(symm_putmem_nbi(ctx, base, src, 8, 1));
            CHECK(symm_quiet(ctx));
        });
        BS_TIME("symm", "putmem_quiet", 4096, 1, {
            CHECK(symm_putmem(ctx, base, src, 4096, 1));
            CHECK(symm_quiet(ctx));
        });
        BS_TIME("symm", "putmem_quiet", 65536, 1, {
            CHECK(symm_putmem(ctx, base, src, 65536, 1));
            CHECK(symm_quiet(ctx));
        });
        /* both PEs: a barrier costs what the slower sees */
        {
            double v_[BATCHES];
            for (int b = 0; b < BATCHES; b++) {
                double t0 = bs_now_ns();
                for (int i = 0; i < bs_batch / 10; i++) CHECK(symm_barrier_all(ctx));
                v_[b] = (bs_now_ns() - t0) / (bs_batch / 10);
            }
            if (me == 0) bs_report("symm", "barrier_all", 0, v_, BATCHES);
        }
    }
    CHECK(symm_buf_free(buf));
    CHECK(symm_finalize(&ctx));
    return 0;
}
