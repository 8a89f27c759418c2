/*
 * GPU-side waits on a dead peer: a PE is SIGKILLed while every
 * survivor's GPU waits for it and the survivor's host thread sits in
 * cudaStreamSynchronize (no symm call polls the job). The runtime's job
 * watcher must notice, set the context's fail word, and every kind of wait
 * must end: waits inside the user's kernel report SYMM_ERR_PEER_FAILED (the
 * kernel writes the status the device call returned), the runtime's own
 * stream kernels end, and the host reads PEER_FAILED from
 * symm_ctx_async_error and symm_finalize, all within the dead-peer bound.
 *
 *   gpu_dead KIND [VICTIM [N]]
 *
 * KIND: dev_wait, dev_signal, dev_barrier (block), dev_barrier_thread,
 * dev_barrier_warp (team, warp scope), dev_fcollect, dev_reduce,
 * stream_wait (symm_signal_wait_until_on_stream), stream_barrier,
 * stream_alltoallv (symm_alltoallv_on_stream: its LL form by default, the
 * grid form under SYMM_CUDA_COLL_ALGO=twoshot).
 * The PEs are forked (unique-id bootstrap; symmrun would end the job
 * itself); the parent never touches CUDA. GPU_DEAD_HOSTS=1: every PE is a
 * simulated host of its own (SYMM_HOST_ID, tcp), so the device kinds wait
 * through the proxy path (barriers announce through the ring, fcollect puts
 * and reduce gets through it) and must still end with PEER_FAILED. Before the kill each survivor
 * checks the context forms on a healthy job (a satisfied wait returns
 * SUCCESS and the value; a device barrier with every PE succeeds). Exit 77
 * without a usable GPU.
 */
#include <symm/symm_device.cuh>

#include "gpu_test.h"
#include "symm_kill_harness.h"

#define GIVE_UP_S 30.0

static const char *kind;
static int victim, n_pes, me;

static double limit_ms(void) {
    const char *v = getenv("SYMM_PEER_TIMEOUT_MS");
    return (v ? atof(v) : 100.0) + SYMM_KILL_SLACK_MS;
}

/* One block; thread 0 (or warp 0, or the whole block) waits; *status gets
 * what the device call returned (block-wide calls: every thread agrees). */
__global__ void k_dev(symm_device_ctx c, symm_device_team t, int which, uint64_t *flag,
                      float *fbuf, size_t n, int *status, uint64_t *seen) {
    symm_status st = SYMM_SUCCESS;
    switch (which) {
    case 0: /* dev_wait: flag[0] == 12345 never comes */
        if (threadIdx.x == 0) st = symm_dev_wait_until(c, flag, SYMM_CMP_EQ, (uint64_t)12345, seen);
        break;
    case 1: /* dev_signal */
        if (threadIdx.x == 0) st = symm_dev_signal_wait_until(c, flag + 1, SYMM_CMP_EQ, 777, seen);
        break;
    case 2: st = symm_dev_barrier_all_block(c); break;
    case 3:
        if (threadIdx.x == 0) st = symm_dev_barrier_all(c);
        break;
    case 4:
        if (threadIdx.x < 32) st = symm_dev_team_barrier_warp(c, t);
        break;
    case 5: st = symm_dev_team_fcollect_block(c, t, fbuf + n, fbuf, n); break;
    case 6: st = symm_dev_team_reduce_block(c, t, fbuf, fbuf, n, SYMM_OP_SUM); break;
    /* healthy-job checks (before the kill) */
    case 10: /* satisfied at once: flag[2] == 5 */
        if (threadIdx.x == 0) st = symm_dev_wait_until(c, flag + 2, SYMM_CMP_EQ, (uint64_t)5, seen);
        break;
    default: st = SYMM_ERR_INTERNAL;
    }
    __shared__ int first;
    if (threadIdx.x == 0) first = (int)st;
    __syncthreads();
    /* block-wide calls must return the same status in every thread */
    const bool block_wide = which == 2 || which == 5 || which == 6;
    const int differ = __syncthreads_or(block_wide && (int)st != first);
    if (threadIdx.x == 0) *status = differ ? -2 : first;
}

static int kind_code(const char *k) {
    static const char *const names[] = {"dev_wait", "dev_signal", "dev_barrier",
                                        "dev_barrier_thread", "dev_barrier_warp", "dev_fcollect",
                                        "dev_reduce"};
    for (int i = 0; i < 7; i++)
        if (strcmp(k, names[i]) == 0) return i;
    return -1;
}

static int run_pe(int rank, const symm_unique_id *id, int ready_fd) {
    me = symm_test_pe = rank;
    int count = 0;
    cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess || count < 1) {
        printf("SKIP: no usable GPU (%s)\n", ce != cudaSuccess ? cudaGetErrorString(ce) : "none");
        return 77;
    }
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_CUDA;
    attr.bootstrap = SYMM_BOOTSTRAP_UID;
    attr.rank = rank;
    attr.n_pes = n_pes;
    attr.unique_id = *id;
    attr.timeout_ms = 20000; /* the runtime kernels' own timeout: far above the bound */
    symm_ctx ctx = NULL;
    symm_status st = symm_init(&attr, &ctx);
    if (st == SYMM_ERR_NO_DEVICE) {
        printf("SKIP: no usable GPU (%s)\n", symm_last_error());
        return 77;
    }
    CHECK_OK(st);
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(symm_ctx_query(ctx, &info));
    CUDA_OK(cudaSetDevice(info.device));
    CUDA_OK(cudaFree(0));

    const size_t n = 256;
    symm_buf flags = NULL, data = NULL, cnts = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 4, &flags));
    /* alltoallv: n_pes send counts (A2V each), then the receive counts and offsets */
    const uint64_t A2V = 8, np = (uint64_t)n_pes;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 3 * np, &cnts));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, (uint64_t)(n * (n_pes + 1)), &data));
    uint64_t *flag = NULL;
    float *fbuf = NULL;
    CHECK_OK(symm_buf_ptr(flags, (void **)&flag));
    CHECK_OK(symm_buf_ptr(data, (void **)&fbuf));
    uint64_t init[4] = {0, 0, 5, 0};
    CUDA_OK(cudaMemcpy(flag, init, sizeof init, cudaMemcpyHostToDevice));

    symm_device_ctx c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    CHECK_OK(symm_device_ctx_get(ctx, &c));
    ASSERT_EQ(c.struct_size, (uint32_t)sizeof c); /* a 1.1 runtime fills fail_word */
    ASSERT_TRUE(c.fail_word != NULL);
    symm_team world;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    symm_device_team t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    CHECK_OK(symm_device_team_get(world, &t));

    int *d_status = NULL;
    uint64_t *d_seen = NULL;
    CUDA_OK(cudaMalloc(&d_status, sizeof(int)));
    CUDA_OK(cudaMalloc(&d_seen, sizeof(uint64_t)));
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_OK(symm_barrier_all(ctx));

    /* Healthy job: a satisfied context wait returns SUCCESS and its value,
     * and a device barrier over every PE (the victim too) succeeds. */
    int h_status = -1;
    uint64_t h_seen = 0;
    CUDA_OK(cudaMemset(d_status, 0xff, sizeof(int)));
    k_dev<<<1, 128, 0, s>>>(c, t, 10, flag, fbuf, n, d_status, d_seen);
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(&h_status, d_status, sizeof h_status, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&h_seen, d_seen, sizeof h_seen, cudaMemcpyDeviceToHost));
    ASSERT_EQ(h_status, (int)SYMM_SUCCESS);
    ASSERT_EQ(h_seen, (uint64_t)5);
    CUDA_OK(cudaMemset(d_status, 0xff, sizeof(int)));
    k_dev<<<1, 128, 0, s>>>(c, t, 2, flag, fbuf, n, d_status, d_seen);
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(&h_status, d_status, sizeof h_status, cudaMemcpyDeviceToHost));
    ASSERT_EQ(h_status, (int)SYMM_SUCCESS);
    /* and an alltoallv on the stream: A2V floats from every PE */
    uint64_t *cnt = NULL;
    CHECK_OK(symm_buf_ptr(cnts, (void **)&cnt));
    uint64_t h_cnt[3 * SYMM_KILL_MAX_PES];
    for (uint64_t j = 0; j < np; j++) h_cnt[j] = A2V;
    CUDA_OK(cudaMemcpy(cnt, h_cnt, np * sizeof(uint64_t), cudaMemcpyHostToDevice));
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_alltoallv_on_stream(world, data, n, n, data, 0, A2V * np, cnts, 0, cnts, np,
                                      (symm_stream_t)s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(h_cnt, cnt, 3 * np * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    for (uint64_t j = 0; j < np; j++) {
        ASSERT_U64_EQ(h_cnt[np + j], A2V);
        ASSERT_U64_EQ(h_cnt[2 * np + j], A2V * j);
    }
    CHECK_OK(symm_barrier_all(ctx));

    char one = 1;
    ASSERT_EQ(write(ready_fd, &one, 1), 1);
    if (rank == victim) {
        for (;;) pause(); /* the parent kills it */
    }

    /* Enqueue the wait, then sit in cudaStreamSynchronize: only the job
     * watcher can end it. */
    const int code = kind_code(kind);
    CUDA_OK(cudaMemset(d_status, 0xff, sizeof(int)));
    if (code >= 0) {
        k_dev<<<1, 128, 0, s>>>(c, t, code, flag, fbuf, n, d_status, d_seen);
        CUDA_OK(cudaGetLastError());
    } else if (strcmp(kind, "stream_wait") == 0) {
        CHECK_OK(symm_signal_wait_until_on_stream(flags, 3, SYMM_CMP_EQ, 4242, (symm_stream_t)s));
    } else if (strcmp(kind, "stream_barrier") == 0) {
        CHECK_OK(symm_barrier_all_on_stream(ctx, (symm_stream_t)s));
    } else if (strcmp(kind, "stream_alltoallv") == 0) {
        CHECK_OK(symm_alltoallv_on_stream(world, data, n, n, data, 0, A2V * np, cnts, 0, cnts,
                                          np, (symm_stream_t)s));
    } else {
        TEST_FAIL_("unknown kind %s", kind);
    }
    CUDA_OK(cudaStreamSynchronize(s));
    const double t_end = symm_kill_now();
    if (*symm_kill_t == 0) TEST_FAIL_("%s ended before the victim was killed", kind);
    const double ms = symm_kill_since_ms(t_end);
    if (code >= 0) {
        CUDA_OK(cudaMemcpy(&h_status, d_status, sizeof h_status, cudaMemcpyDeviceToHost));
        if (h_status != (int)SYMM_ERR_PEER_FAILED)
            TEST_FAIL_("%s: the device call returned %d, expected SYMM_ERR_PEER_FAILED (%d)", kind,
                       h_status, (int)SYMM_ERR_PEER_FAILED);
    }
    symm_status ast = SYMM_SUCCESS;
    char msg[256] = "";
    CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &ast, msg));
    if (ast != SYMM_ERR_PEER_FAILED)
        TEST_FAIL_("%s: symm_ctx_async_error says %s (%s), expected SYMM_ERR_PEER_FAILED", kind,
                   symm_status_string(ast), msg);
    printf("PE %d: %s ended %.1f ms after PE %d was killed; async error: %s\n", me, kind, ms,
           victim, msg);
    fflush(stdout);
    if (ms > limit_ms())
        TEST_FAIL_("%s ended %.1f ms after the kill (limit %.0f)", kind, ms, limit_ms());
    CHECK_STATUS(symm_finalize(&ctx), SYMM_ERR_PEER_FAILED);
    ASSERT_TRUE(ctx == NULL);
    return 0;
}

/* GPU_DEAD_HOSTS=1: one simulated host a PE (in the child, before symm_init). */
static void hosts_setup(int rank) {
    char id[32];
    snprintf(id, sizeof id, "gpu-dead-host-%d", rank);
    setenv("SYMM_HOST_ID", id, 1);
    setenv("SYMM_TRANSPORT", "tcp", 0);
}

int main(int argc, char **argv) {
    kind = argc > 1 ? argv[1] : "dev_wait";
    victim = argc > 2 ? atoi(argv[2]) : 1;
    n_pes = argc > 3 ? atoi(argv[3]) : 2;
    if (n_pes < 2 || n_pes > SYMM_KILL_MAX_PES || victim < 0 || victim >= n_pes) {
        fprintf(stderr, "usage: gpu_dead KIND [VICTIM [N]] (2 <= N <= %d)\n", SYMM_KILL_MAX_PES);
        return 2;
    }
    /* 50 ms for the survivors to enter their waits */
    const char *hosts = getenv("GPU_DEAD_HOSTS");
    const bool remote = hosts && strcmp(hosts, "1") == 0;
    int rc = symm_kill_run(n_pes, victim, 50.0, GIVE_UP_S, remote ? hosts_setup : NULL, run_pe);
    if (rc == 0)
        printf("%s: every survivor's GPU wait ended with SYMM_ERR_PEER_FAILED after PE %d of %d "
               "was killed%s\n",
               kind, victim, n_pes, remote ? " (every PE its own simulated host)" : "");
    return rc;
}
