/*
 * CUDA backend: after a team wait gave up at the timeout, the context's
 * teams are out of step (a PE's later collective could pair with a peer's
 * earlier one), so every later team operation fails with SYMM_ERR_TIMEOUT
 * at once, while RMA still works (docs/DECISIONS.md "Blocking calls:
 * agreement, lanes, timeouts"). 2 PEs, SYMM_TIMEOUT_MS short (meson: 3000):
 *  - PE 0 enqueues a stream barrier that PE 1 does not make until after
 *    PE 0's timeout; PE 0 reads TIMEOUT from symm_ctx_async_error ("out of
 *    step"), then its blocking and stream collectives, barriers and a split
 *    fail at once with TIMEOUT, and a put to PE 1 succeeds;
 *  - PE 1 then makes team operations: the first may still pass (PE 0's
 *    arrival at the barrier is there), but one of the next two times out,
 *    and from then on they fail at once as well.
 * A stream signal wait that gives up (gpu_async) leaves the teams working.
 */
#include "gpu_test.h"

#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A team operation that must fail at once, saying why. */
static void fails_fast(symm_status st, const char *what, double t0) {
    const double dt = now_s() - t0;
    if (st != SYMM_ERR_TIMEOUT)
        TEST_FAIL_("%s after the give-up: %s (%s), want SYMM_ERR_TIMEOUT", what,
                   symm_status_string(st), symm_last_error());
    if (!strstr(symm_last_error(), "out of step"))
        TEST_FAIL_("%s: the message does not say the teams are out of step: %s", what,
                   symm_last_error());
    if (dt > 0.5) TEST_FAIL_("%s took %.3f s: it should fail at once", what, dt);
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    if (gpu_n != 2) TEST_FAIL_("run with 2 PEs");
    const char *t = getenv("SYMM_TIMEOUT_MS");
    if (!t || atoi(t) <= 0 || atoi(t) > 10000) TEST_FAIL_("run with SYMM_TIMEOUT_MS <= 10000");
    const double timeout_s = atoi(t) / 1000.0;

    symm_team world = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    symm_buf a = NULL, b = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, 64, &a));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, 64, &b));
    CHECK_OK(symm_reduce(world, b, 0, a, 0, 64, SYMM_OP_SUM)); /* the teams work */
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    symm_status st = -1;
    char msg[512];
    const float one = 1.0f;

    if (gpu_me == 0) {
        const double t0 = now_s();
        CHECK_OK(symm_barrier_on_stream(world, (symm_stream_t)s)); /* PE 1 is not there */
        for (;;) {
            CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &st, msg));
            if (st != SYMM_SUCCESS || now_s() - t0 > timeout_s + 60.0) break;
            usleep(5000);
        }
        ASSERT_EQ(st, SYMM_ERR_TIMEOUT);
        ASSERT_TRUE(strstr(msg, "team wait") != NULL && strstr(msg, "out of step") != NULL);
        printf("pe 0: the stream barrier gave up after %.3f s: %s\n", now_s() - t0, msg);
        CUDA_OK(cudaStreamSynchronize(s));

        double t1 = now_s();
        fails_fast(symm_reduce(world, b, 0, a, 0, 64, SYMM_OP_SUM), "symm_reduce", t1);
        t1 = now_s();
        fails_fast(symm_reduce_on_stream(world, b, 0, a, 0, 64, SYMM_OP_SUM, (symm_stream_t)s),
                   "symm_reduce_on_stream", t1);
        t1 = now_s();
        fails_fast(symm_fcollect(world, b, 0, a, 0, 32), "symm_fcollect", t1);
        t1 = now_s();
        fails_fast(symm_barrier(world), "symm_barrier", t1);
        t1 = now_s();
        fails_fast(symm_barrier_all_on_stream(ctx, (symm_stream_t)s), "symm_barrier_all_on_stream",
                   t1);
        symm_team half = NULL;
        t1 = now_s();
        fails_fast(symm_team_split_strided(world, 0, 1, 1, NULL, &half), "symm_team_split_strided",
                   t1);
        ASSERT_TRUE(half == NULL);
        CHECK_OK(symm_put(a, 0, &one, 1, 1)); /* RMA still works */
        CHECK_OK(symm_quiet(ctx));
    } else {
        usleep((useconds_t)((timeout_s + 1.0) * 1e6)); /* past PE 0's timeout */
        /* PE 0's arrival at its barrier is there: the first call may pass;
         * one of the next two waits for PE 0, which makes no team call now. */
        const double t0 = now_s();
        st = symm_barrier(world);
        if (st == SYMM_SUCCESS) st = symm_reduce(world, b, 0, a, 0, 64, SYMM_OP_SUM);
        if (st == SYMM_SUCCESS) st = symm_fcollect(world, b, 0, a, 0, 32);
        if (st != SYMM_ERR_TIMEOUT)
            TEST_FAIL_("pe 1: team operations after PE 0 left the teams: %s (%s), want TIMEOUT",
                       symm_status_string(st), symm_last_error());
        printf("pe 1: a team operation gave up after %.3f s: %s\n", now_s() - t0,
               symm_last_error());
        const double t1 = now_s();
        fails_fast(symm_reduce(world, b, 0, a, 0, 64, SYMM_OP_SUM), "pe 1: symm_reduce", t1);
        CHECK_OK(symm_put(a, 1, &one, 1, 0)); /* RMA still works */
        CHECK_OK(symm_quiet(ctx));
    }
    CHECK_OK(symm_ctx_async_error(ctx, SYMM_ASYNC_CLEAR, 0, &st, NULL));
    CUDA_OK(cudaStreamDestroy(s));
    CHECK_OK(symm_buf_free(b));
    CHECK_OK(symm_buf_free(a));
    gpu_test_fini(&ctx);
    return 0;
}
