/*
 * bench_coll_stream: symm's stream collectives called from C, on every PE of
 * the job (symmrun -n N, one GPU per PE), float32 sum:
 *
 *   all_reduce      symm_reduce_on_stream, in place (dst = src)
 *   all_gather      symm_fcollect_on_stream
 *   reduce_scatter  symm_reducescatter_on_stream
 *   all_to_all      symm_alltoall_on_stream
 *   all_reduce_oop  symm_reduce_on_stream, out of place (only when --ops names it)
 *   all_to_all_v    symm_dev_alltoallv_on_stream_blocks (symm_device_coll.cuh),
 *                   counts in GPU memory, equal (as all_to_all), with
 *                   --a2av-blocks N blocks (0: one a SM; only when --ops
 *                   names it)
 *   all_to_all_v_abi  symm_alltoallv_on_stream (the C ABI's, through the
 *                   runtime: its LL or grid form; SYMM_CUDA_A2AV_BLOCKS
 *                   sets its blocks; only when --ops names it)
 *   all_reduce_blocking  symm_reduce, in place, the blocking form: "host" is
 *                   the whole call (it returns done), no GPU columns (only
 *                   when --ops names it)
 *
 * "bytes" is the largest buffer, as in bench_coll.py: the all-reduce buffer,
 * the all-gather output, the reduce-scatter input, the all-to-all buffer. For
 * each size, medians of 7 samples of K calls:
 *
 *   host   host time per call: K calls issued back to back, wall time / K
 *          (nothing waits in between; the GPU runs behind)
 *   b2b    GPU time per call of K calls back to back on one stream (events)
 *   graph  GPU time per call of the replay of a CUDA graph of K calls
 *
 * plus the floor under "host": an empty kernel launched the way the runtime
 * launches (cuLaunchKernelEx with programmatic stream serialization), timed
 * the same way in the same process. Each result is checked once per size
 * against exact expected values on every PE before it is timed; a wrong one
 * is reported, and the program exits 1.
 *
 *   symmrun -n N bench_coll_stream [--ops all_reduce,...] [--sizes 8,1048576,...]
 *                                  [--max-bytes B] [--peer-access] [--calls K]
 *                                  [--no-align] [--skew-us N]
 *
 * --peer-access enables CUDA peer access to every other GPU first, as NCCL
 * and PyTorch do in their processes. K (--calls) is 50 up to 1 MiB, 10 up
 * to 16 MiB, else 2. Every sample of b2b and graph starts after a host
 * barrier unless --no-align (PEs then start samples as they come, as in
 * PyTorch's loops); --skew-us N makes PE 1 start each sample N us late, the
 * late peer under which LL waits without naps once fed a polling storm
 * (docs/DECISIONS.md "One-shot LL").
 *
 * PE 0 prints one markdown table (and RESULT lines, $BENCH_JSON: see
 * bench_common.h). The runtime's choices (SYMM_CUDA_COLL_ALGO, ...) apply as
 * in any program, so one binary compares algorithms run after run.
 */
#include "bench_common.h"

#include <cuda.h>
#include <unistd.h>
#include <symm/symm.h>
#include <symm/symm_device.cuh>

static symm_ctx g_ctx;
static symm_team g_world;
static int g_me, g_n;

__global__ void k_empty() {}

/* x[i] = (i % 251) + pe + 1 (exact in float32 after any sum of <= 64 PEs) */
__global__ void k_fill(float *x, uint64_t n, int pe) {
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        x[i] = (float)(i % 251u) + (float)(pe + 1);
}

/* Counts elements of x that differ from the expected value of op for element
 * i (i counted from first in the source pattern's numbering). */
enum { OP_AR, OP_AG, OP_RS, OP_A2A, OP_ARO, OP_A2AV, OP_A2AVC, OP_ARB, N_OPS };
static const char *const kOpName[N_OPS] = {"all_reduce", "all_gather", "reduce_scatter",
                                           "all_to_all", "all_reduce_oop", "all_to_all_v",
                                           "all_to_all_v_abi", "all_reduce_blocking"};
__global__ void k_check(const float *x, uint64_t n, int op, int me, int npes, uint64_t per,
                        unsigned long long *bad) {
    unsigned long long mine = 0;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        float want;
        const float sum_pe = (float)(npes * (npes + 1) / 2);
        switch (op) {
        case OP_AR:
        case OP_ARB:
        case OP_ARO: want = (float)npes * (float)(i % 251u) + sum_pe; break;
        /* block j of the output is PE j's source (element i % per of it) */
        case OP_AG: want = (float)((i % per) % 251u) + (float)(i / per + 1); break;
        /* own block me of every PE's input, summed */
        case OP_RS: want = (float)npes * (float)((me * per + i) % 251u) + sum_pe; break;
        /* block j of the output is block me of PE j's input (all_to_all_v
         * with equal counts too) */
        default: want = (float)((me * per + i % per) % 251u) + (float)(i / per + 1); break;
        }
        if (x[i] != want) mine++;
    }
    if (mine) atomicAdd(bad, mine);
}

struct Args {
    std::vector<size_t> sizes;
    bool ops[N_OPS] = {true, true, true, true, false, false, false, false};
    bool peer_access = false;
    int calls = 0; /* --calls K: calls per timing (0: by size) */
};
static bool g_align = true; /* --no-align: no host barrier before each timing */
static int g_skew_us = 0;   /* --skew-us N: PE 1 sleeps N us before each timing */
static unsigned g_a2av_blocks = 0; /* --a2av-blocks N */
/* all_to_all_v: the device context and team, this PE's symmetric src / dst,
 * the symmetric send counts, and the receive counts / offsets (one buffer:
 * send counts, then receive counts and offsets, as symm_alltoallv takes) */
static symm_buf g_bcounts;
static symm_device_ctx g_dc;
static symm_device_team g_dt;
static float *g_src, *g_dst;
static uint64_t *g_counts, *g_rc, *g_ro;

static Args parse(int argc, char **argv) {
    Args a;
    size_t maxb = 256u << 20;
    const char *sizes = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
            std::string o = std::string(",") + argv[++i] + ",";
            for (int k = 0; k < N_OPS; k++)
                a.ops[k] = o.find(std::string(",") + kOpName[k] + ",") != std::string::npos;
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            sizes = argv[++i];
        } else if (!strcmp(argv[i], "--peer-access")) {
            a.peer_access = true;
        } else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            maxb = strtoull(argv[++i], nullptr, 0);
        } else if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
            a.calls = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--no-align")) {
            g_align = false;
        } else if (!strcmp(argv[i], "--skew-us") && i + 1 < argc) {
            g_skew_us = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--a2av-blocks") && i + 1 < argc) {
            g_a2av_blocks = (unsigned)atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_coll_stream [--ops a,b] [--sizes s1,s2] [--max-bytes B] "
                            "[--peer-access] [--calls K] [--no-align] [--skew-us N] "
                            "[--a2av-blocks N]\n");
            exit(2);
        }
    }
    if (sizes) {
        for (const char *p = sizes; *p;) {
            char *end;
            a.sizes.push_back(strtoull(p, &end, 0));
            p = *end == ',' ? end + 1 : end;
            if (end == p && *p) break;
        }
    } else {
        for (size_t b = 8; b <= maxb; b *= 4) a.sizes.push_back(b);
        /* and the issue's target sizes that the powers of 4 miss */
        for (size_t b : {(size_t)64 << 10, (size_t)1 << 20, (size_t)16 << 20, (size_t)256 << 20})
            if (b <= maxb && std::find(a.sizes.begin(), a.sizes.end(), b) == a.sizes.end())
                a.sizes.push_back(b);
        std::sort(a.sizes.begin(), a.sizes.end());
    }
    return a;
}

/* One call of op on `bytes` (the largest buffer). */
static void call(int op, symm_buf dst, symm_buf src, size_t bytes, cudaStream_t s) {
    const uint64_t n = bytes / 4, per = n / (uint64_t)g_n;
    switch (op) {
    case OP_AR: SK(symm_reduce_on_stream(g_world, src, 0, src, 0, n, SYMM_OP_SUM, s)); break;
    case OP_AG: SK(symm_fcollect_on_stream(g_world, dst, 0, src, 0, per, s)); break;
    case OP_RS: SK(symm_reducescatter_on_stream(g_world, dst, 0, src, 0, per, SYMM_OP_SUM, s)); break;
    case OP_ARO: SK(symm_reduce_on_stream(g_world, dst, 0, src, 0, n, SYMM_OP_SUM, s)); break;
    case OP_ARB: SK(symm_reduce(g_world, src, 0, src, 0, n, SYMM_OP_SUM)); break;
    case OP_A2AV: /* units of one float; the counts (per each) are set per size */
        CK(symm_dev_alltoallv_on_stream_blocks(g_dc, g_dt, g_dst, per * (uint64_t)g_n, g_src,
                                               g_counts, 4, g_rc, g_ro, nullptr, g_a2av_blocks, s));
        break;
    case OP_A2AVC:
        SK(symm_alltoallv_on_stream(g_world, dst, 0, per * (uint64_t)g_n, src, 0,
                                    per * (uint64_t)g_n, g_bcounts, 0, g_bcounts, (uint64_t)g_n,
                                    s));
        break;
    default: SK(symm_alltoall_on_stream(g_world, dst, 0, src, 0, per, s)); break;
    }
}

/* Host time per call of fn, K calls in a burst; median of 7 bursts. */
template <typename F> static double host_us(int k, cudaStream_t s, F fn) {
    std::vector<double> t;
    for (int r = 0; r < 7; r++) {
        double t0 = now_s();
        for (int i = 0; i < k; i++) fn();
        t.push_back((now_s() - t0) * 1e6 / k);
        CK(cudaStreamSynchronize(s));
        SK(symm_barrier_all(g_ctx));
    }
    return median(t);
}

/* GPU time per call: K calls back to back, or a graph of K calls replayed. */
template <typename F>
static double gpu_us(int k, bool graph, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, F fn) {
    cudaGraphExec_t ge = nullptr;
    if (graph) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < k; i++) fn();
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphDestroy(g));
        CK(cudaGraphLaunch(ge, s)); /* warm-up */
        CK(cudaStreamSynchronize(s));
    }
    std::vector<double> t;
    for (int r = 0; r < 7; r++) {
        if (g_align) SK(symm_barrier_all(g_ctx));
        if (g_skew_us > 0 && g_me == 1) usleep((useconds_t)g_skew_us);
        CK(cudaEventRecord(e0, s));
        if (graph) {
            CK(cudaGraphLaunch(ge, s));
        } else {
            for (int i = 0; i < k; i++) fn();
        }
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1e3 / k);
    }
    if (ge) CK(cudaGraphExecDestroy(ge));
    return median(t);
}

int main(int argc, char **argv) {
    if (!bench_multicast_off()) return 3;
    Args a = parse(argc, argv);
    const size_t maxb = a.sizes.empty() ? 0 : *std::max_element(a.sizes.begin(), a.sizes.end());
    symm_init_attr attr;
    SK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_CUDA;
    SK(symm_init(&attr, &g_ctx));
    g_me = symm_my_pe(g_ctx);
    g_n = symm_n_pes(g_ctx);
    g_bench_pe = g_me;
    SK(symm_team_get(g_ctx, SYMM_TEAM_WORLD, &g_world));
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    SK(symm_ctx_query(g_ctx, &info));
    CK(cudaSetDevice(info.device));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, info.device));
    if (a.peer_access) { /* as in a process where NCCL or PyTorch enabled it */
        int ndev = 0;
        CK(cudaGetDeviceCount(&ndev));
        for (int d = 0; d < ndev; d++) {
            int can = 0;
            if (d == info.device) continue;
            CK(cudaDeviceCanAccessPeer(&can, info.device, d));
            if (!can) continue;
            cudaError_t e = cudaDeviceEnablePeerAccess(d, 0);
            if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
            (void)cudaGetLastError();
        }
    }

    symm_buf bsrc, bdst, bbad;
    SK(symm_buf_alloc(g_ctx, SYMM_DTYPE_FLOAT32, maxb / 4 + 4, &bsrc));
    SK(symm_buf_alloc(g_ctx, SYMM_DTYPE_FLOAT32, maxb / 4 + 4, &bdst));
    SK(symm_buf_alloc(g_ctx, SYMM_DTYPE_UINT64, 2, &bbad));
    float *src, *dst;
    unsigned long long *bad;
    SK(symm_buf_ptr(bsrc, (void **)&src));
    SK(symm_buf_ptr(bdst, (void **)&dst));
    SK(symm_buf_ptr(bbad, (void **)&bad));
    SK(symm_buf_alloc(g_ctx, SYMM_DTYPE_UINT64, 3 * (uint64_t)g_n, &g_bcounts));
    SK(symm_buf_ptr(g_bcounts, (void **)&g_counts));
    g_rc = g_counts + g_n;
    g_ro = g_counts + 2 * g_n;
    g_src = src;
    g_dst = dst;
    memset(&g_dc, 0, sizeof g_dc);
    g_dc.struct_size = sizeof g_dc;
    memset(&g_dt, 0, sizeof g_dt);
    g_dt.struct_size = sizeof g_dt;
    if (a.ops[OP_A2AV]) {
        SK(symm_device_ctx_get(g_ctx, &g_dc));
        SK(symm_device_team_get(g_world, &g_dt));
    }
    cudaStream_t s;
    cudaEvent_t e0, e1;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));

    /* the floor: an empty kernel, launched as the runtime launches (PDL) */
    cudaLaunchAttribute pdl;
    pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    pdl.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t lc = {};
    lc.gridDim = dim3(1);
    lc.blockDim = dim3(32);
    lc.stream = s;
    lc.attrs = &pdl;
    lc.numAttrs = 1;
    auto empty = [&]() { CK(cudaLaunchKernelEx(&lc, k_empty)); };
    for (int i = 0; i < 100; i++) empty();
    CK(cudaStreamSynchronize(s));
    const double floor_host = host_us(50, s, empty);
    const double floor_gpu = gpu_us(50, false, s, e0, e1, empty);
    if (g_me == 0) {
        printf("bench_coll_stream: %d PEs, %s, symm stream collectives from C (float32 sum)\n", g_n,
               prop.name);
        printf("floor: empty kernel (cudaLaunchKernelEx, PDL): host %.2f us/call, GPU %.2f us/call back to back\n\n",
               floor_host, floor_gpu);
        printf("| op | bytes | host us/call | b2b GPU us/call | graph GPU us/call | busbw GB/s (graph) | check |\n");
        printf("|---|---|---|---|---|---|---|\n");
        fflush(stdout);
    }
    result("floor_host_us", floor_host, "us", "empty PDL kernel launch, host time per call");
    int failed = 0;
    for (int op = 0; op < N_OPS; op++) {
        if (!a.ops[op]) continue;
        for (size_t bytes : a.sizes) {
            const uint64_t n = bytes / 4, per = n / (uint64_t)g_n;
            const bool whole = op == OP_AR || op == OP_ARO || op == OP_ARB; /* n elements */
            if (!whole && per == 0) continue;
            if (n == 0) continue;
            if (op == OP_A2AV || op == OP_A2AVC) { /* per units to every PE */
                std::vector<uint64_t> c((size_t)g_n, per);
                CK(cudaMemcpy(g_counts, c.data(), c.size() * 8, cudaMemcpyHostToDevice));
            }
            /* check one call on fresh data */
            const uint64_t out_n = op == OP_RS ? per : whole ? n : per * (uint64_t)g_n;
            k_fill<<<264, 256, 0, s>>>(src, n, g_me);
            CK(cudaMemsetAsync(dst, 0xff, bytes, s));
            CK(cudaMemsetAsync(bad, 0, 16, s));
            CK(cudaStreamSynchronize(s));
            SK(symm_barrier_all(g_ctx));
            call(op, bdst, bsrc, bytes, s);
            k_check<<<264, 256, 0, s>>>(op == OP_AR || op == OP_ARB ? src : dst, out_n, op, g_me,
                                        g_n, per, bad);
            CK(cudaStreamSynchronize(s));
            unsigned long long mine = 0, all = 0;
            CK(cudaMemcpy(&mine, bad, 8, cudaMemcpyDeviceToHost));
            SK(symm_barrier_all(g_ctx));
            CK(cudaMemcpy(bad + 1, &mine, 8, cudaMemcpyHostToDevice));
            SK(symm_barrier_all(g_ctx));
            SK(symm_reduce(g_world, bbad, 0, bbad, 1, 1, SYMM_OP_SUM));
            CK(cudaMemcpy(&all, bad, 8, cudaMemcpyDeviceToHost));
            if (all) {
                failed = 1;
                if (g_me == 0) {
                    printf("| %s | %s | - | - | - | - | BAD: %llu wrong elements |\n", kOpName[op],
                           human(bytes).c_str(), all);
                    fflush(stdout);
                }
                continue;
            }
            const int k = a.calls > 0 ? a.calls : bytes <= (1u << 20) ? 50 : bytes <= (16u << 20) ? 10 : 2;
            auto fn = [&]() { call(op, bdst, bsrc, bytes, s); };
            const double h = host_us(k, s, fn);
            if (op == OP_ARB) { /* blocking: the host time is the call */
                if (g_me == 0) {
                    printf("| %s | %s | %.2f | - | - | - | ok |\n", kOpName[op],
                           human(bytes).c_str(), h);
                    fflush(stdout);
                }
                char key[96];
                snprintf(key, sizeof key, "%s_us_%s", kOpName[op], human(bytes).c_str());
                result(key, h, "us", "a whole blocking call, %d PEs", g_n);
                SK(symm_barrier_all(g_ctx));
                continue;
            }
            const double b = gpu_us(k, false, s, e0, e1, fn);
            const double g = gpu_us(k, true, s, e0, e1, fn);
            const double f = whole ? 2.0 * (g_n - 1) / g_n : (double)(g_n - 1) / g_n;
            const double bw = (double)bytes * f / (g * 1e-6) / 1e9;
            if (g_me == 0) {
                printf("| %s | %s | %.2f | %.2f | %.2f | %.1f | ok |\n", kOpName[op],
                       human(bytes).c_str(), h, b, g, bw);
                fflush(stdout);
            }
            char key[96];
            snprintf(key, sizeof key, "%s_graph_us_%s", kOpName[op], human(bytes).c_str());
            result(key, g, "us", "b2b %.2f us, host %.2f us, busbw %.1f GB/s, %d PEs", b, h, bw, g_n);
            SK(symm_barrier_all(g_ctx));
        }
    }
    results_flush();
    results_json("symm");
    CK(cudaStreamSynchronize(s));
    SK(symm_barrier_all(g_ctx));
    SK(symm_buf_free(g_bcounts));
    SK(symm_buf_free(bbad));
    SK(symm_buf_free(bdst));
    SK(symm_buf_free(bsrc));
    SK(symm_finalize(&g_ctx));
    return failed;
}
