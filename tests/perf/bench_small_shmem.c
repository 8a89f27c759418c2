/*
 * bench_small.c over OpenSHMEM (Open MPI's OSHMEM): the same loops, batches
 * and statistics (bench_small.h), for the side-by-side figures of
 * scripts/bench-small.sh.
 *   oshrun -np 2 bench_small_shmem [rounds]
 */
#include <shmem.h>

static int me;
#define BARRIER() shmem_barrier_all()
#include "bench_small.h"

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    shmem_init();
    me = shmem_my_pe();
    if (shmem_n_pes() != 2) {
        fprintf(stderr, "bench_small_shmem: run on 2 PEs\n");
        return 1;
    }
    int64_t *base = shmem_malloc(65536 * 2);
    static char src[65536];
    int64_t v = 1, cmp = 0;
    volatile int64_t *peer = shmem_ptr(base, 1);
    for (int r = 0; r < rounds; r++) {
        if (peer)
            BS_TIME("floor_shmem", "store_fence", 8, 1, {
                peer[0] = i;
                atomic_thread_fence(memory_order_seq_cst);
            });
        BS_TIME("oshmem", "putmem_quiet", 8, 1, {
            shmem_putmem(base, src, 8, 1);
            shmem_quiet();
        });
        BS_TIME("oshmem", "p", 8, 1, shmem_int64_p(base, v, 1));
        BS_TIME("oshmem", "getmem", 8, 1, shmem_getmem(src, base, 8, 1));
        BS_TIME("oshmem", "fetch_add", 8, 1, (void)shmem_longlong_atomic_fetch_add((long long *)base + 1, v, 1));
        BS_TIME("oshmem", "compare_swap", 8, 1,
                (void)shmem_longlong_atomic_compare_swap((long long *)base + 2, cmp, v, 1));
        BS_TIME("oshmem", "put_rate", 8, WINDOW, {
            for (int k = 0; k < WINDOW; k++) shmem_putmem_nbi(base, src, 8, 1);
            shmem_quiet();
        });
        BS_TIME("oshmem", "putmem_quiet", 4096, 1, {
            shmem_putmem(base, src, 4096, 1);
            shmem_quiet();
        });
        BS_TIME("oshmem", "putmem_quiet", 65536, 1, {
            shmem_putmem(base, src, 65536, 1);
            shmem_quiet();
        });
        {
            double v_[BATCHES];
            for (int b = 0; b < BATCHES; b++) {
                double t0 = bs_now_ns();
                for (int i = 0; i < BATCH / 10; i++) shmem_barrier_all();
                v_[b] = (bs_now_ns() - t0) / (BATCH / 10);
            }
            if (me == 0) bs_report("oshmem", "barrier_all", 0, v_, BATCHES);
        }
    }
    shmem_free(base);
    shmem_finalize();
    return 0;
}
