/*
 * CUDA backend: an asynchronous failure is recorded on the context and seen
 * through symm_ctx_async_error without another blocking call. Each PE enqueues
 * a signal wait on a stream that nobody can satisfy; the GPU-side wait gives
 * up after the context's timeout (SYMM_TIMEOUT_MS, set short by meson) and
 * the record then reads TIMEOUT with its message; truncation keeps the NUL;
 * CLEAR empties the record. Runs with 2 PEs, but every PE checks only itself.
 */
#include "gpu_test.h"

#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    const char *t = getenv("SYMM_TIMEOUT_MS");
    if (!t || atoi(t) <= 0 || atoi(t) > 10000) TEST_FAIL_("run with SYMM_TIMEOUT_MS <= 10000");
    const double timeout_s = atoi(t) / 1000.0;

    symm_buf sig = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 1, &sig));
    symm_status st = -1;
    char msg[512];
    CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_SUCCESS);
    ASSERT_TRUE(strcmp(msg, "") == 0);

    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    /* The signal stays 0: "greater than 2^40" never holds. */
    const double t0 = now_s();
    CHECK_OK(symm_signal_wait_until_on_stream(sig, 0, SYMM_CMP_GT, 1ull << 40, (symm_stream_t)s));
    CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_SUCCESS); /* far from the timeout yet */

    /* Poll the record only (no blocking symm call) until the wait gives up. */
    double t1 = t0;
    for (;;) {
        CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &st, msg));
        t1 = now_s();
        if (st != SYMM_SUCCESS || t1 - t0 > timeout_s + 60.0) break;
        usleep(5000);
    }
    if (st == SYMM_SUCCESS) TEST_FAIL_("no asynchronous error %.1f s after the wait was enqueued", t1 - t0);
    ASSERT_EQ(st, SYMM_ERR_TIMEOUT);
    ASSERT_TRUE(strstr(msg, "signal wait") != NULL && strstr(msg, "gave up after") != NULL);
    ASSERT_TRUE(t1 - t0 >= 0.9 * timeout_s); /* not before the timeout */
    printf("pe %d: async error after %.3f s (timeout %.3f s): %s\n", gpu_me, t1 - t0, timeout_s, msg);
    CUDA_OK(cudaStreamSynchronize(s)); /* the kernel has ended */

    /* Truncated copy: 10 bytes, NUL included, nothing written past them. */
    char small[16];
    memset(small, 'X', sizeof small);
    CHECK_OK(symm_ctx_async_error(ctx, 0, 10, &st, small));
    ASSERT_EQ(st, SYMM_ERR_TIMEOUT);
    ASSERT_EQ(strlen(small), 9);
    ASSERT_TRUE(strncmp(small, msg, 9) == 0);
    ASSERT_EQ(small[10], 'X');

    /* CLEAR reports it once more, then the record is empty. */
    CHECK_OK(symm_ctx_async_error(ctx, SYMM_ASYNC_CLEAR, 0, &st, NULL));
    ASSERT_EQ(st, SYMM_ERR_TIMEOUT);
    CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_SUCCESS);
    ASSERT_TRUE(strcmp(msg, "") == 0);

    CUDA_OK(cudaStreamDestroy(s));
    /* A point-to-point wait that gave up leaves the teams in step (unlike a
     * team wait: gpu_out_of_step). */
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(sig));
    gpu_test_fini(&ctx);
    return 0;
}
