/*
 * The GPU proxy end to end (docs/PROXY.md): 2 PEs on 2 simulated hosts
 * sharing one GPU (symmrun -n 2 --hosts 2), so the peer has no peer_base and
 * every device and stream operation to it goes kernel -> ring -> proxy
 * thread -> tcp -> the other process -> its GPU heap.
 *
 *   gpu_proxy ops     device put/get/p/g/atomics/signal/put_signal/quiet/
 *                     barrier at thread, warp and block scope; stream forms;
 *                     an all-reduce and a barrier on a stream inside a CUDA
 *                     graph, replayed. Checked against the values each PE
 *                     wrote (run under symmrun).
 *   gpu_proxy dead    forks 2 PEs on 2 simulated hosts (SYMM_HOST_ID), kills
 *                     PE 1 while PE 0's kernel waits for a signal through
 *                     the proxy path and its stream waits on a proxied get:
 *                     both end, symm_dev_quiet(c) and symm_ctx_async_error say
 *                     PEER_FAILED within the bound.
 *   gpu_proxy bench   figures: device put through the proxy vs the host put
 *                     over the same transport (latency, bandwidth), and the
 *                     all-reduce on a stream vs the blocking form.
 * Without a GPU: SKIP (77).
 */
#include <symm/symm.h>
#include <symm/symm_device.cuh>

#include "gpu_test.h"
#include "symm_kill_harness.h"

#define BIG 100000u     /* device put/get bytes (a buffer outside the heap) */
#define SIG_BYTES 4096u /* put_signal payload */
#define WARP_BYTES 8192u
#define STREAM_BYTES 65536u
#define NW 16

/* Outputs of the thread kernel (device memory). */
struct t_out {
    int64_t fadd, cas, swap, g, fetch;
    int32_t quiet_st, barrier_st, wait_st, quiet2_st;
    uint32_t u32_fetch;
};

static __device__ __forceinline__ uint8_t pat(uint64_t i, int pe, int salt) {
    return (uint8_t)((i * 7u + (uint64_t)pe * 13u + (uint64_t)salt * 29u) & 0xffu);
}

__global__ void k_fill(uint8_t *p, uint64_t n, int pe, int salt) {
    for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = pat(i, pe, salt);
}

/* One thread: every op to the peer through the proxy. A, W, U, S are local
 * symmetric addresses (this PE's copies). */
__global__ void k_thread(symm_device_ctx c, uint8_t *A, int64_t *W, uint32_t *U, uint64_t *S,
                         const uint8_t *src, uint8_t *back, int peer, t_out *o) {
    const int me = symm_dev_my_pe(c);
    symm_dev_putmem(c, A, src, BIG, peer);                       /* device src outside the heap */
    symm_dev_p(c, W + 0, (int64_t)(1000 + me), peer);
    o->fadd = symm_dev_atomic_fetch_add(c, W + 1, (int64_t)5, peer);
    symm_dev_atomic_add(c, W + 2, (int64_t)7, peer);
    o->cas = symm_dev_atomic_compare_swap(c, W + 3, (int64_t)0, (int64_t)(42 + me), peer);
    o->swap = symm_dev_atomic_swap(c, W + 4, (int64_t)9, peer);
    symm_dev_atomic_set(c, W + 5, (int64_t)-11, peer);
    symm_dev_atomic_inc(c, W + 6, peer);
    symm_dev_atomic_inc(c, W + 6, peer);
    symm_dev_atomic_or(c, U + 0, 0x80000001u, peer);
    o->u32_fetch = symm_dev_atomic_fetch_xor(c, U + 1, 0xffu, peer);
    symm_dev_fence(c);
    o->quiet_st = symm_dev_quiet(c);
    /* data, then the signal: the peer waits for the signal and checks the data */
    symm_dev_putmem_signal(c, A + 200000, src, SIG_BYTES, S + 0, 1, SYMM_SIGNAL_SET, peer);
    symm_dev_signal_op(c, S + 1, 3, SYMM_SIGNAL_ADD, peer);
    uint64_t seen = 0;
    o->wait_st = symm_dev_signal_wait_until(c, S + 1, SYMM_CMP_GE, (uint64_t)3, &seen);
    o->barrier_st = symm_dev_barrier_all(c);
    o->g = symm_dev_g(c, W + 0, peer);       /* the peer's W[0]: my p wrote it */
    o->fetch = symm_dev_atomic_fetch(c, W + 2, peer);
    symm_dev_getmem(c, back, A, BIG, peer);  /* the peer's A: what I put there */
    o->quiet2_st = symm_dev_quiet(c);
}

/* Warp and block scope: warp 0 puts WARP_BYTES with the warp form, the block
 * puts with a signal and gets back with the block form, then barriers. */
__global__ void k_block(symm_device_ctx c, uint8_t *A, uint64_t *S, const uint8_t *src,
                        uint8_t *back, int peer, int *st) {
    if (threadIdx.x < 32) symm_dev_putmem_warp(c, A + 300000, src, WARP_BYTES, peer);
    __syncthreads();
    symm_dev_putmem_signal_block(c, A + 320000, src + 1, WARP_BYTES, S + 2, 1, SYMM_SIGNAL_ADD,
                                 peer);
    symm_status w = symm_dev_signal_wait_until(c, S + 2, SYMM_CMP_GE, (uint64_t)1);
    symm_status b = symm_dev_barrier_all_block(c);
    symm_dev_getmem_block(c, back, A + 300000, WARP_BYTES, peer);
    if (threadIdx.x < 32) symm_dev_getmem_warp(c, back + WARP_BYTES, A + 320000, WARP_BYTES, peer);
    __syncthreads();
    if (threadIdx.x == 0) {
        st[0] = w;
        st[1] = b;
        st[2] = symm_dev_quiet(c);
    }
}

static void expect_pattern(const uint8_t *h, uint64_t n, int pe, int salt, uint64_t shift,
                           const char *what) {
    for (uint64_t i = 0; i < n; i++)
        if (h[i] != (uint8_t)(((i + shift) * 7u + (uint64_t)pe * 13u + (uint64_t)salt * 29u) & 0xffu))
            TEST_FAIL_("%s: byte %llu is %u (pattern of PE %d)", what, (unsigned long long)i,
                       h[i], pe);
}

static int ops(void) {
    symm_ctx ctx = gpu_test_init();
    const int me = gpu_me, peer = 1 - gpu_me;
    ASSERT_EQ(gpu_n, 2);
    symm_device_ctx c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    CHECK_OK(symm_device_ctx_get(ctx, &c));
    ASSERT_EQ(c.struct_size, (uint32_t)sizeof c);
    ASSERT_EQ(c.device_abi, SYMM_DEVICE_ABI_VERSION);
    const bool remote = c.peer_base[peer] == NULL;
    if (me == 0) printf("peer %s; %u proxy ring(s) for kernels\n",
                        remote ? "on another host (proxy)" : "load/store reachable", c.n_rings);
    ASSERT_TRUE(!remote || c.n_rings >= 1);

    symm_buf A, W, U, S, D, R;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, 512u << 10, &A));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, NW, &W));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, NW, &U));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, NW, &S));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, 4096, &D));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, 4096, &R));
    uint8_t *a = (uint8_t *)gpu_ptr(A);
    uint8_t *src, *back;
    t_out *o;
    CUDA_OK(cudaMalloc(&src, BIG));
    CUDA_OK(cudaMalloc(&back, BIG));
    CUDA_OK(cudaMalloc(&o, sizeof *o));
    k_fill<<<64, 256>>>(src, BIG, me, 0);
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_barrier_all(ctx));

    /* ---- thread scope ---- */
    k_thread<<<1, 1>>>(c, a, (int64_t *)gpu_ptr(W), (uint32_t *)gpu_ptr(U), (uint64_t *)gpu_ptr(S),
                       src, back, peer, o);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    t_out h;
    CUDA_OK(cudaMemcpy(&h, o, sizeof h, cudaMemcpyDeviceToHost));
    ASSERT_EQ(h.quiet_st, SYMM_SUCCESS);
    ASSERT_EQ(h.wait_st, SYMM_SUCCESS);
    ASSERT_EQ(h.barrier_st, SYMM_SUCCESS);
    ASSERT_EQ(h.quiet2_st, SYMM_SUCCESS);
    ASSERT_EQ(h.fadd, 0);
    ASSERT_EQ(h.cas, 0);
    ASSERT_EQ(h.swap, 0);
    ASSERT_EQ(h.u32_fetch, 0u);
    ASSERT_EQ(h.g, 1000 + me); /* the peer's W[0], which I wrote with p */
    ASSERT_EQ(h.fetch, 7);
    CHECK_OK(symm_barrier_all(ctx));
    int64_t w[NW];
    uint32_t u[NW];
    uint64_t sg[NW];
    gpu_read(w, W, 0, sizeof w);
    gpu_read(u, U, 0, sizeof u);
    gpu_read(sg, S, 0, sizeof sg);
    ASSERT_EQ(w[0], 1000 + peer);
    ASSERT_EQ(w[1], 5);
    ASSERT_EQ(w[2], 7);
    ASSERT_EQ(w[3], 42 + peer);
    ASSERT_EQ(w[4], 9);
    ASSERT_EQ(w[5], -11);
    ASSERT_EQ(w[6], 2);
    ASSERT_EQ(u[0], 0x80000001u);
    ASSERT_EQ(u[1], 0xffu);
    ASSERT_U64_EQ(sg[0], 1);
    ASSERT_U64_EQ(sg[1], 3);
    uint8_t *hb = (uint8_t *)malloc(BIG);
    ASSERT_TRUE(hb != NULL);
    gpu_read(hb, A, 0, BIG);
    expect_pattern(hb, BIG, peer, 0, 0, "device putmem (the peer's data here)");
    gpu_read(hb, A, 200000, SIG_BYTES);
    expect_pattern(hb, SIG_BYTES, peer, 0, 0, "device put_signal data");
    CUDA_OK(cudaMemcpy(hb, back, BIG, cudaMemcpyDeviceToHost));
    expect_pattern(hb, BIG, me, 0, 0, "device getmem (my data at the peer)");
    if (me == 0) printf("thread scope: ok\n");

    /* ---- warp and block scope ---- */
    int *dst_st, hst[3];
    CUDA_OK(cudaMalloc(&dst_st, sizeof hst));
    CUDA_OK(cudaMemset(back, 0, BIG));
    k_block<<<1, 128>>>(c, a, (uint64_t *)gpu_ptr(S), src, back, peer, dst_st);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(hst, dst_st, sizeof hst, cudaMemcpyDeviceToHost));
    ASSERT_EQ(hst[0], SYMM_SUCCESS);
    ASSERT_EQ(hst[1], SYMM_SUCCESS);
    ASSERT_EQ(hst[2], SYMM_SUCCESS);
    CUDA_OK(cudaMemcpy(hb, back, 2 * WARP_BYTES, cudaMemcpyDeviceToHost));
    expect_pattern(hb, WARP_BYTES, me, 0, 0, "warp put, block get");
    expect_pattern(hb + WARP_BYTES, WARP_BYTES, me, 0, 1, "block put_signal, warp get");
    CHECK_OK(symm_barrier_all(ctx));
    gpu_read(hb, A, 300000, WARP_BYTES);
    expect_pattern(hb, WARP_BYTES, peer, 0, 0, "warp put (the peer's data here)");
    if (me == 0) printf("warp and block scope: ok\n");

    /* ---- stream forms ---- */
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    symm_stream_t ss = (symm_stream_t)s;
    k_fill<<<64, 256, 0, s>>>(src, STREAM_BYTES, me, 3);
    CHECK_OK(symm_putmem_on_stream(ctx, a + 400000, src, STREAM_BYTES, peer, ss));
    const int64_t v = 77000 + me;
    CHECK_OK(symm_p_on_stream(W, 8, &v, peer, ss));
    CHECK_OK(symm_signal_op_on_stream(S, 4, 5, SYMM_SIGNAL_SET, peer, ss));
    CHECK_OK(symm_put_signal_on_stream(A, 480000, src, 1024, S, 5, 2, SYMM_SIGNAL_ADD, peer, ss));
    CHECK_OK(symm_quiet_on_stream(ctx, ss));
    CHECK_OK(symm_barrier_all_on_stream(ctx, ss));
    CHECK_OK(symm_getmem_on_stream(ctx, back, a + 400000, STREAM_BYTES, peer, ss));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(hb, back, STREAM_BYTES, cudaMemcpyDeviceToHost));
    expect_pattern(hb, STREAM_BYTES, me, 3, 0, "putmem_on_stream then getmem_on_stream");
    gpu_read(hb, A, 400000, STREAM_BYTES);
    expect_pattern(hb, STREAM_BYTES, peer, 3, 0, "putmem_on_stream (the peer's data here)");
    gpu_read(w, W, 0, sizeof w);
    gpu_read(sg, S, 0, sizeof sg);
    ASSERT_EQ(w[8], 77000 + peer);
    ASSERT_U64_EQ(sg[4], 5);
    ASSERT_U64_EQ(sg[5], 2);
    symm_status ast = SYMM_SUCCESS;
    char msg[512];
    CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &ast, msg));
    if (ast != SYMM_SUCCESS) TEST_FAIL_("async error after the stream forms: %s: %s",
                                        symm_status_string(ast), msg);
    if (me == 0) printf("stream forms: ok\n");

    /* ---- a collective across hosts inside a CUDA graph ---- */
    symm_team world;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    float *d = (float *)gpu_ptr(D), *r = (float *)gpu_ptr(R);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK_OK(symm_reduce_on_stream(world, R, 0, D, 0, 4096, SYMM_OP_SUM, ss));
    CHECK_OK(symm_barrier_all_on_stream(ctx, ss));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    float hd[4096], hr[4096];
    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < 4096; i++) hd[i] = (float)(i % 97) + 1000.0f * (float)me + (float)rep;
        CUDA_OK(cudaMemcpyAsync(d, hd, sizeof hd, cudaMemcpyHostToDevice, s));
        CUDA_OK(cudaGraphLaunch(ge, s));
        CUDA_OK(cudaStreamSynchronize(s));
        CUDA_OK(cudaMemcpy(hr, r, sizeof hr, cudaMemcpyDeviceToHost));
        for (int i = 0; i < 4096; i++) {
            const float want = 2.0f * (float)(i % 97) + 1000.0f + 2.0f * (float)rep;
            if (hr[i] != want)
                TEST_FAIL_("graph replay %d: all-reduce element %d is %g, want %g", rep, i,
                           (double)hr[i], (double)want);
        }
        CHECK_OK(symm_barrier_all(ctx)); /* nobody overwrites D before the peer read it */
    }
    CUDA_OK(cudaGraphExecDestroy(ge));
    CUDA_OK(cudaGraphDestroy(g));
    if (me == 0) printf("all-reduce and barrier on a stream in a CUDA graph (3 replays): ok\n");

    CUDA_OK(cudaStreamDestroy(s));
    free(hb);
    CUDA_OK(cudaFree(src));
    CUDA_OK(cudaFree(back));
    CUDA_OK(cudaFree(o));
    CUDA_OK(cudaFree(dst_st));
    gpu_test_fini(&ctx);
    return 0;
}

/* ---- a dead PE while the proxy path waits ---- */

#define GIVE_UP_S 30.0
#define BOUND_S 12.0 /* SYMM_PEER_TIMEOUT_MS (5 s here) + the proxy's poll + a slow machine */

__global__ void k_dead(symm_device_ctx c, uint64_t *S, int64_t *W, int peer, int *st) {
    /* requests that go on while the peer dies: each ends, none hangs */
    for (int i = 0; i < 1000; i++) symm_dev_atomic_add(c, W, (int64_t)1, peer);
    st[0] = symm_dev_signal_wait_until(c, S, SYMM_CMP_EQ, (uint64_t)4242);
    st[1] = symm_dev_quiet(c);
}

static void dead_setup(int rank) {
    char id[32];
    snprintf(id, sizeof id, "%d", 1001 + rank); /* one simulated host a PE */
    setenv("SYMM_HOST_ID", id, 1);
    setenv("SYMM_PEER_TIMEOUT_MS", "5000", 1);
    setenv("SYMM_TRANSPORT", "tcp", 1);
}

static int dead_pe(int rank, const symm_unique_id *id, int ready_fd) {
    symm_test_pe = gpu_me = rank;
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
    attr.n_pes = 2;
    attr.unique_id = *id;
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
    symm_device_ctx c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    CHECK_OK(symm_device_ctx_get(ctx, &c));
    ASSERT_TRUE(c.n_rings >= 1); /* the peer is on another host */
    symm_buf S, W;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 8, &S));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 8, &W));
    uint8_t *dev;
    int *dst;
    CUDA_OK(cudaMalloc(&dev, 1 << 20));
    CUDA_OK(cudaMalloc(&dst, 2 * sizeof(int)));
    CUDA_OK(cudaMemset(dst, 0x7f, 2 * sizeof(int)));
    cudaStream_t s, s2;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK_OK(symm_barrier_all(ctx));
    char one = 1;
    ASSERT_EQ(write(ready_fd, &one, 1), 1);
    if (rank == 1) {
        for (;;) pause(); /* the parent kills it */
    }
    k_dead<<<1, 1, 0, s>>>(c, (uint64_t *)gpu_ptr(S), (int64_t *)gpu_ptr(W), 1, dst);
    CUDA_OK(cudaGetLastError());
    /* a stream form that keeps going to the dead PE: gets of 1 MiB */
    for (int i = 0; i < 20; i++)
        (void)symm_getmem_on_stream(ctx, dev, gpu_ptr(W), 64, 1, (symm_stream_t)s2);
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaStreamSynchronize(s2));
    const double t = symm_kill_now();
    ASSERT_TRUE(*symm_kill_t > 0);
    const double took = symm_kill_since_ms(t) * 1e-3;
    int h[2];
    CUDA_OK(cudaMemcpy(h, dst, sizeof h, cudaMemcpyDeviceToHost));
    printf("PE 0: kernel wait -> %s, device quiet -> %s, %.2f s after the kill\n",
           symm_status_string((symm_status)h[0]), symm_status_string((symm_status)h[1]), took);
    ASSERT_EQ(h[0], SYMM_ERR_PEER_FAILED);
    ASSERT_EQ(h[1], SYMM_ERR_PEER_FAILED);
    ASSERT_TRUE(took < BOUND_S);
    symm_status ast = SYMM_SUCCESS;
    char msg[512] = "";
    CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &ast, msg));
    printf("PE 0: async error %s: %s\n", symm_status_string(ast), msg);
    ASSERT_EQ(ast, SYMM_ERR_PEER_FAILED);
    st = symm_finalize(&ctx); /* fails (a peer died) but returns */
    ASSERT_TRUE(ctx == NULL);
    printf("PE 0: finalize -> %s\nPASS\n", symm_status_string(st));
    return 0;
}

/* ---- figures: put latency/bandwidth through the proxy vs the host put over
 * the same transport, all-reduce on a stream vs blocking (2 simulated hosts) */

/* One thread, iters puts (through the proxy each waits until its put completed
 * remotely: a latency), then a quiet. With blocks > 1 (bandwidth), block b
 * puts iters / gridDim.x times into its own slice of dst: the engine finds
 * several puts per pass and streams them before one flush. */
__global__ void k_puts(symm_device_ctx c, uint8_t *dst, const uint8_t *src, uint64_t n, int iters,
                       int peer, int *st) {
    const int per = iters / (int)gridDim.x;
    uint8_t *d = dst + (uint64_t)blockIdx.x * n;
    for (int i = 0; i < per; i++) symm_dev_putmem(c, d, src, n, peer);
    const symm_status q = symm_dev_quiet(c);
    if (q != SYMM_SUCCESS || blockIdx.x == 0) *st = q;
}

/* Holds the GPU (one thread) until the host raises *go: the host put measured
 * while a kernel of this process is resident, as it is during a device put. */
__global__ void k_hold(volatile int *go) {
    while (!*go) __nanosleep(1000);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double median3(double a, double b, double c) {
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

/* Seconds per put: device (one kernel of iters puts and a quiet), host, and
 * host while k_hold keeps a kernel of this process on the GPU. */
static double bench_dev(const symm_device_ctx &c, uint8_t *a, uint8_t *b, uint64_t n, int iters,
                        int peer, int *dst, int blocks = 1) {
    double t0 = now_s();
    k_puts<<<blocks, 1>>>(c, a, b, n, iters, peer, dst);
    CUDA_OK(cudaDeviceSynchronize());
    const double t = (now_s() - t0) / iters;
    int h = -1;
    CUDA_OK(cudaMemcpy(&h, dst, sizeof h, cudaMemcpyDeviceToHost));
    ASSERT_EQ(h, SYMM_SUCCESS);
    return t;
}
static double bench_host(symm_ctx ctx, uint8_t *a, uint8_t *b, uint64_t n, int iters, int peer,
                         volatile int *go, bool quiet_each = false) {
    cudaStream_t s = 0;
    if (go) {
        *go = 0;
        CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        k_hold<<<1, 1, 0, s>>>(go);
        CUDA_OK(cudaGetLastError());
    }
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
        CHECK_OK(symm_putmem(ctx, a, b, n, peer));
        if (quiet_each) CHECK_OK(symm_quiet(ctx));
    }
    CHECK_OK(symm_quiet(ctx));
    const double t = (now_s() - t0) / iters;
    if (go) {
        *go = 1;
        CUDA_OK(cudaStreamSynchronize(s));
        CUDA_OK(cudaStreamDestroy(s));
    }
    return t;
}

static int bench(void) {
    symm_ctx ctx = gpu_test_init();
    const int me = gpu_me, peer = 1 - gpu_me;
    symm_device_ctx c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    CHECK_OK(symm_device_ctx_get(ctx, &c));
    symm_buf A, B, D, R;
    const uint64_t max = 8u << 20; /* 8 blocks x 1 MiB slices */
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, max, &A));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, max, &B));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, 1u << 20, &D));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, 1u << 20, &R));
    uint8_t *a = (uint8_t *)gpu_ptr(A), *b = (uint8_t *)gpu_ptr(B);
    int *dst;
    CUDA_OK(cudaMalloc(&dst, sizeof(int)));
    int *go;
    CUDA_OK(cudaHostAlloc((void **)&go, sizeof(int), cudaHostAllocMapped));
    CHECK_OK(symm_barrier_all(ctx));
    /* Latency: one put completed remotely per iteration on both sides (the
     * device put through the proxy waits for that; the host puts then quiets).
     * "resident": the same host loop while a kernel of PE 0 holds the GPU, as
     * during a device put (on one GPU shared by two processes, what the other
     * PE's copies into its GPU heap then wait for shows there too). */
    if (me == 0)
        printf("latency, medians of 3\n%-10s %12s %12s %12s %8s %8s\n", "bytes", "dev put us",
               "host p+q us", "resident us", "dev/host", "dev/res");
    const uint64_t lat_sizes[] = {8, 64, 1024, 16384, 65536};
    for (uint64_t n : lat_sizes) {
        if (me == 0) {
            const int iters = 100;
            (void)bench_dev(c, a, b, n, 5, peer, dst); /* warm-up */
            (void)bench_host(ctx, a, b, n, 5, peer, NULL, true);
            double d[3], h[3], r[3];
            for (int k = 0; k < 3; k++) {
                d[k] = bench_dev(c, a, b, n, iters, peer, dst);
                h[k] = bench_host(ctx, a, b, n, iters, peer, NULL, true);
                r[k] = bench_host(ctx, a, b, n, 10, peer, go, true);
            }
            const double dev = median3(d[0], d[1], d[2]), host = median3(h[0], h[1], h[2]),
                         res = median3(r[0], r[1], r[2]);
            printf("%-10llu %12.2f %12.2f %12.2f %8.2f %8.2f\n", (unsigned long long)n,
                   dev * 1e6, host * 1e6, res * 1e6, dev / host, dev / res);
            fflush(stdout);
        }
        CHECK_OK(symm_barrier_all(ctx));
    }
    /* Bandwidth: a stream of puts then one quiet; the device's from 8 blocks
     * (8 puts in flight), the host's blocking puts back to back. */
    if (me == 0)
        printf("bandwidth, medians of 3\n%-10s %12s %12s %8s\n", "bytes", "dev GB/s",
               "host GB/s", "dev/host");
    const uint64_t bw_sizes[] = {65536, 262144, 1048576};
    for (uint64_t n : bw_sizes) {
        if (me == 0) {
            const int iters = n <= 262144 ? 64 : 16, blocks = 8;
            (void)bench_dev(c, a, b, n, blocks, peer, dst, blocks);
            double d[3], h[3];
            for (int k = 0; k < 3; k++) {
                d[k] = bench_dev(c, a, b, n, iters, peer, dst, blocks);
                h[k] = bench_host(ctx, a, b, n, iters, peer, NULL);
            }
            const double dev = n / median3(d[0], d[1], d[2]) * 1e-9,
                         host = n / median3(h[0], h[1], h[2]) * 1e-9;
            printf("%-10llu %12.3f %12.3f %8.2f\n", (unsigned long long)n, dev, host, dev / host);
            fflush(stdout);
        }
        CHECK_OK(symm_barrier_all(ctx));
    }
    symm_team world;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (me == 0) printf("%-10s %16s %16s\n", "allreduce", "on stream us", "blocking us");
    for (uint64_t ne : {(uint64_t)256, (uint64_t)16384, (uint64_t)262144, (uint64_t)1048576}) {
        const int iters = ne <= 16384 ? 50 : 10;
        CHECK_OK(symm_reduce_on_stream(world, R, 0, D, 0, ne, SYMM_OP_SUM, (symm_stream_t)s));
        CUDA_OK(cudaStreamSynchronize(s));
        CHECK_OK(symm_barrier_all(ctx));
        double t0 = now_s();
        for (int i = 0; i < iters; i++)
            CHECK_OK(symm_reduce_on_stream(world, R, 0, D, 0, ne, SYMM_OP_SUM, (symm_stream_t)s));
        CUDA_OK(cudaStreamSynchronize(s));
        const double st_us = (now_s() - t0) / iters * 1e6;
        CHECK_OK(symm_barrier_all(ctx));
        t0 = now_s();
        for (int i = 0; i < iters; i++) CHECK_OK(symm_reduce(world, R, 0, D, 0, ne, SYMM_OP_SUM));
        const double bl_us = (now_s() - t0) / iters * 1e6;
        if (me == 0) printf("%-10llu %16.1f %16.1f   (float32 elements)\n", (unsigned long long)ne,
                            st_us, bl_us);
        CHECK_OK(symm_barrier_all(ctx));
    }
    /* alltoallv: ne float32 elements to each PE (counts in symmetric memory,
     * the stream form reads them on the GPU), R as the source, D as dst */
    symm_buf SC, RC;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 2, &SC));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 4, &RC));
    if (me == 0) printf("%-10s %16s %16s\n", "alltoallv", "on stream us", "blocking us");
    for (uint64_t ne : {(uint64_t)256, (uint64_t)16384, (uint64_t)262144}) {
        const int iters = ne <= 16384 ? 50 : 10;
        const uint64_t counts[2] = {ne, ne};
        gpu_write(SC, 0, counts, sizeof counts);
        CHECK_OK(symm_barrier_all(ctx));
        CHECK_OK(symm_alltoallv_on_stream(world, D, 0, 2 * ne, R, 0, 2 * ne, SC, 0, RC, 0,
                                          (symm_stream_t)s));
        CUDA_OK(cudaStreamSynchronize(s));
        CHECK_OK(symm_barrier_all(ctx));
        double t0 = now_s();
        for (int i = 0; i < iters; i++)
            CHECK_OK(symm_alltoallv_on_stream(world, D, 0, 2 * ne, R, 0, 2 * ne, SC, 0, RC, 0,
                                              (symm_stream_t)s));
        CUDA_OK(cudaStreamSynchronize(s));
        const double st_us = (now_s() - t0) / iters * 1e6;
        CHECK_OK(symm_barrier_all(ctx));
        t0 = now_s();
        for (int i = 0; i < iters; i++)
            CHECK_OK(symm_alltoallv(world, D, 0, 2 * ne, R, 0, 2 * ne, SC, 0, RC, 0));
        const double bl_us = (now_s() - t0) / iters * 1e6;
        uint64_t rc[4];
        CUDA_OK(cudaMemcpy(rc, gpu_ptr(RC), sizeof rc, cudaMemcpyDeviceToHost));
        ASSERT_TRUE(rc[0] == ne && rc[1] == ne && rc[2] == 0 && rc[3] == ne);
        if (me == 0) printf("%-10llu %16.1f %16.1f   (float32 elements to each PE)\n",
                            (unsigned long long)ne, st_us, bl_us);
        CHECK_OK(symm_barrier_all(ctx));
    }
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaFree(dst));
    CUDA_OK(cudaFreeHost(go));
    gpu_test_fini(&ctx);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "ops";
    if (strcmp(mode, "ops") == 0) return ops();
    if (strcmp(mode, "bench") == 0) return bench();
    if (strcmp(mode, "dead") == 0) /* the parent touches no CUDA before it forks */
        return symm_kill_run(2, 1, 200.0, GIVE_UP_S, dead_setup, dead_pe);
    fprintf(stderr, "usage: gpu_proxy [ops|dead|bench]\n");
    return 2;
}
