/*
 * A small job for the logging tests (test_log.py): a barrier, a broadcast
 * (checked), and two waits that last over a second (PE 1 waits for a value
 * PE 0 puts 1.8 s after PE 1 said it waits; the others wait in a barrier PE 0
 * joins late), so the log has init blocks, collective TRACE lines and
 * long-wait lines to check.
 */
#include <time.h>

#include "symm_test.h"

int main(void) {
    symm_ctx ctx;
    CHECK_OK(symm_init(NULL, &ctx));
    const int me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    symm_test_pe = me;
    symm_buf buf, flag;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 16, &buf));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 1, &flag));
    symm_buf big; /* 2 MiB: the heap grows (SYMM_HEAP_CHUNK=1M in the tests) */
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, 2u << 20, &big));
    int64_t *mine = NULL;
    CHECK_OK(symm_buf_ptr(buf, (void **)&mine));
    for (int i = 0; i < 16; i++) mine[i] = me == 0 ? 1000 + i : -1;
    int64_t zero = 0;
    CHECK_OK(symm_p(flag, 0, &zero, me));
    CHECK_OK(symm_barrier_all(ctx));

    symm_team world;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    CHECK_OK(symm_broadcast(world, buf, 0, buf, 0, 16, 0));
    for (int i = 0; i < 16; i++) ASSERT_EQ(mine[i], 1000 + i);

    /* PE 1 tells PE 0 it is about to wait; PE 0 then lets it wait 1.8 s. */
    if (n > 1 && me == 0) {
        int64_t ready = 7;
        CHECK_OK(symm_wait_until(flag, 0, SYMM_CMP_EQ, &ready));
        struct timespec nap = {1, 800000000};
        nanosleep(&nap, NULL);
        int64_t v = 42;
        CHECK_OK(symm_p(flag, 0, &v, 1));
    } else if (me == 1) {
        int64_t ready = 7, want = 42;
        CHECK_OK(symm_p(flag, 0, &ready, 0));
        CHECK_OK(symm_wait_until(flag, 0, SYMM_CMP_EQ, &want));
    }
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(big));
    CHECK_OK(symm_buf_free(flag));
    CHECK_OK(symm_buf_free(buf));
    CHECK_OK(symm_finalize(&ctx));
    printf("PE %d of %d: ok\n", me, n);
    return 0;
}
