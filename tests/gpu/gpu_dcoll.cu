/*
 * CUDA backend, 2+ PEs: device collectives (symm_device_coll.cuh) called
 * inside user kernels. Random data against a reference computed on the host
 * (float64 for floating types, exact wrap-around for integers) for every
 * op x dtype, odd sizes, in place where allowed, block and warp scope, on the
 * world team and on a strided team (even PEs: 1 PE when n = 2); reduce
 * results compared bitwise across PEs inside the kernel; alltoallv with
 * random counts (zeros included), its overflow status, its stream form in
 * one block, three and one a SM, small and large, a CUDA graph of it
 * replayed for counts that change between replays, and the reverse
 * exchange (combine).
 *
 * More PEs than GPUs: fine for 2 (the suite's setting); above 2 it skips
 * unless SYMM_TEST_OVERSUBSCRIBE=1 (slow: PEs time-slice one GPU).
 *
 * Every team PE is reached the way the collectives route it: load/store with
 * a peer_base, the proxy otherwise. Under symmrun --hosts 2 (suite
 * gpu-remote: gpu_dcoll_h2) the peer is on another simulated host, which the
 * test asserts (no peer_base, proxy rings in the context), so every case
 * above runs through the proxy; -n 4 --hosts 2 (gpu_dcoll_n4h2) mixes both
 * routes in one call on the world team.
 */
#include "gpu_test.h"

#include <symm/symm_device.cuh>

#include <math.h>

#include <vector>

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static uint64_t rnd(int pe, uint64_t cas, uint64_t i) {
    return mix64(mix64(mix64((uint64_t)pe + 1) ^ cas) ^ i);
}

/* ---- host views of element types ------------------------------------------ */
template <typename T> struct H {
    static double to(T v) { return (double)v; }
    static T from(double d) { return (T)d; }
    static constexpr bool flt = std::is_floating_point<T>::value;
    static constexpr double eps = std::is_same<T, float>::value ? 0x1p-24 : 0x1p-53;
    static constexpr double acc_eps = eps;
};
template <> struct H<__half> {
    static double to(__half v) { return (double)__half2float(v); }
    static __half from(double d) { return __float2half_rn((float)d); }
    static constexpr bool flt = true;
    static constexpr double eps = 0x1p-11, acc_eps = 0x1p-24;
};
template <> struct H<__nv_bfloat16> {
    static double to(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
    static __nv_bfloat16 from(double d) { return __float2bfloat16_rn((float)d); }
    static constexpr bool flt = true;
    static constexpr double eps = 0x1p-8, acc_eps = 0x1p-24;
};

/* Element i of team PE wpe's data for case cas. */
template <typename T> static T gen(int wpe, uint64_t cas, uint64_t i, int op) {
    uint64_t r = rnd(wpe, cas, i);
    if constexpr (H<T>::flt) {
        double u = (double)(r >> 11) * 0x1p-53;
        return H<T>::from(op == SYMM_OP_PROD ? 0.5 + u : 2.0 * u - 1.0);
    } else {
        if (op == SYMM_OP_AND) r |= rnd(wpe, cas ^ 77, i); /* not all zero after a few PEs */
        return (T)r;
    }
}

template <typename T> static T int_combine(T a, T b, int op) {
    switch (op) {
    case SYMM_OP_SUM: return (T)((uint64_t)a + (uint64_t)b);
    case SYMM_OP_PROD: return (T)((uint64_t)a * (uint64_t)b);
    case SYMM_OP_MIN: return b < a ? b : a;
    case SYMM_OP_MAX: return a < b ? b : a;
    case SYMM_OP_AND: return (T)(a & b);
    case SYMM_OP_OR: return (T)(a | b);
    default: return (T)(a ^ b);
    }
}

/* ---- kernels -------------------------------------------------------------- */
/* kind 0: reduce, 1: reducescatter. After the collective, the reduce result
 * is compared bitwise with the next team PE's (before a closing barrier, so
 * nobody has reused its dst yet): read in place from a load/store peer,
 * fetched into scratch (this PE's device memory) from a proxied one. */
template <typename T, bool warp>
__global__ void red_kernel(symm_device_ctx c, symm_device_team t, T *dst, const T *src, size_t n,
                           int op, int kind, int *status, unsigned long long *bad,
                           unsigned char *scratch) {
    symm_status st;
    if constexpr (warp)
        st = kind == 0 ? symm_dev_team_reduce_warp(c, t, dst, src, n, op)
                       : symm_dev_team_reducescatter_warp(c, t, dst, src, n, op);
    else
        st = kind == 0 ? symm_dev_team_reduce_block(c, t, dst, src, n, op)
                       : symm_dev_team_reducescatter_block(c, t, dst, src, n, op);
    if (threadIdx.x == 0) *status = (int)st;
    if (st != SYMM_SUCCESS || kind != 0) return;
    const unsigned char *mine = (const unsigned char *)dst;
    const int next_pe = symm_dev_team_world_pe(t, (t.my_pe + 1) % t.n_pes);
    const unsigned char *next = (const unsigned char *)symm_dev_ptr(c, (const void *)dst, next_pe);
    if (!next) {
        if constexpr (warp)
            symm_dev_getmem_warp(c, scratch, dst, n * sizeof(T), next_pe);
        else
            symm_dev_getmem_block(c, scratch, dst, n * sizeof(T), next_pe);
        next = scratch;
    }
    unsigned long long nb = 0;
    for (size_t i = threadIdx.x; i < n * sizeof(T); i += blockDim.x) nb += mine[i] != next[i];
    if (nb) atomicAdd(bad, nb);
    if constexpr (warp)
        symm_dev_team_barrier_warp(c, t);
    else
        symm_dev_team_barrier_block(c, t);
}

/* kind 0 broadcast, 1 fcollect, 2 alltoall (bytes). */
__global__ void move_kernel(symm_device_ctx c, symm_device_team t, void *dst, const void *src,
                            size_t nbytes, int root, int kind, int warp, int *status) {
    symm_status st;
    if (kind == 0) {
        if (warp) st = symm_dev_team_broadcastmem_warp(c, t, dst, src, nbytes, root);
        else st = symm_dev_team_broadcastmem_block(c, t, dst, src, nbytes, root);
    } else if (kind == 1) {
        if (warp) st = symm_dev_team_fcollectmem_warp(c, t, dst, src, nbytes);
        else st = symm_dev_team_fcollectmem_block(c, t, dst, src, nbytes);
    } else {
        if (warp) st = symm_dev_team_alltoallmem_warp(c, t, dst, src, nbytes);
        else st = symm_dev_team_alltoallmem_block(c, t, dst, src, nbytes);
    }
    if (threadIdx.x == 0) *status = (int)st;
}

__global__ void a2av_kernel(symm_device_ctx c, symm_device_team t, uint32_t *dst, uint64_t cap,
                            const uint32_t *src, const uint64_t *counts, uint64_t *rc,
                            uint64_t *ro, int *status) {
    symm_status st = symm_dev_team_alltoallvmem_block(c, t, dst, cap, src, counts,
                                                      3 * sizeof(uint32_t), rc, ro);
    if (threadIdx.x == 0) *status = (int)st;
}

/* ---- test driver ---------------------------------------------------------- */
struct Env {
    symm_device_ctx dc;
    symm_device_team dt;
    std::vector<int> wpe; /* world PE of each team PE */
    symm_buf A, B, C, D;
    cudaStream_t s;
    int *status;
    unsigned long long *bad;
    unsigned char *scratch; /* device memory, cap_bytes: a proxied peer's reduce result */
    size_t cap_bytes;
    int checks;
};

static int dstatus(Env &e) {
    int h = -1;
    CUDA_OK(cudaStreamSynchronize(e.s));
    CUDA_OK(cudaMemcpy(&h, e.status, sizeof h, cudaMemcpyDeviceToHost));
    return h;
}
static unsigned long long dbad(Env &e) {
    unsigned long long h = 0;
    CUDA_OK(cudaMemcpy(&h, e.bad, sizeof h, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemset(e.bad, 0, sizeof h));
    return h;
}

static uint64_t g_case = 0;

/* One reduce (kind 0) or reducescatter (kind 1) case. */
template <typename T>
static void red_case(Env &e, int op, int kind, size_t n, bool inplace, bool warp) {
    const int np = e.dt.n_pes, me = e.dt.my_pe;
    const uint64_t cas = ++g_case * 1000 + (uint64_t)op;
    const size_t srcn = kind ? n * (size_t)np : n;
    ASSERT_TRUE(srcn * sizeof(T) <= e.cap_bytes);
    std::vector<T> mine(srcn);
    for (size_t i = 0; i < srcn; i++) mine[i] = gen<T>(e.wpe[(size_t)me], cas, i, op);
    T *src = (T *)gpu_ptr(inplace ? e.B : e.A);
    T *dst = (T *)gpu_ptr(e.B) + (inplace && kind ? (size_t)me * n : 0);
    gpu_write(inplace ? e.B : e.A, 0, mine.data(), srcn * sizeof(T));
    if (!inplace) {
        CUDA_OK(cudaMemset(gpu_ptr(e.B), 0xa5, srcn * sizeof(T)));
        CUDA_OK(cudaDeviceSynchronize()); /* before the kernel (another stream) and peers' stores */
    }
    /* warp scope for a few dtypes only (each instance costs compile time) */
    if constexpr (std::is_same<T, int32_t>::value || std::is_same<T, uint8_t>::value ||
                  std::is_same<T, __half>::value || std::is_same<T, double>::value) {
        if (warp)
            red_kernel<T, true><<<1, 32, 0, e.s>>>(e.dc, e.dt, dst, src, n, op, kind, e.status,
                                                    e.bad, e.scratch);
        else
            red_kernel<T, false><<<1, 160, 0, e.s>>>(e.dc, e.dt, dst, src, n, op, kind, e.status,
                                                      e.bad, e.scratch);
    } else {
        red_kernel<T, false><<<1, warp ? 32 : 160, 0, e.s>>>(e.dc, e.dt, dst, src, n, op, kind,
                                                             e.status, e.bad, e.scratch);
    }
    CUDA_OK(cudaGetLastError());
    int st = dstatus(e);
    if (H<T>::flt && op >= SYMM_OP_AND) {
        ASSERT_EQ(st, SYMM_ERR_NOT_SUPPORTED);
        return;
    }
    if (st != SYMM_SUCCESS)
        TEST_FAIL_("reduce%s op %d dtype size %zu n %zu%s%s on a team of %d: status %s, want "
                   "SUCCESS", kind ? "scatter" : "", op, sizeof(T), n, inplace ? " in place" : "",
                   warp ? " warp" : " block", np, symm_status_string((symm_status)st));
    const unsigned long long nb = dbad(e);
    if (nb)
        TEST_FAIL_("reduce op %d dtype size %zu n %zu%s%s: %llu bytes differ from the next team "
                   "PE's result (every PE must get the same bits)", op, sizeof(T), n,
                   inplace ? " in place" : "", warp ? " warp" : " block", nb);
    std::vector<T> got(n);
    CUDA_OK(cudaMemcpy(got.data(), dst, n * sizeof(T), cudaMemcpyDeviceToHost));
    const size_t blk = kind ? (size_t)me * n : 0;
    for (size_t i = 0; i < n; i++) {
        if constexpr (H<T>::flt) {
            double ref = 0, mag = 0;
            for (int j = 0; j < np; j++) {
                double x = H<T>::to(gen<T>(e.wpe[(size_t)j], cas, blk + i, op));
                mag += fabs(x);
                if (j == 0) ref = x;
                else if (op == SYMM_OP_SUM) ref += x;
                else if (op == SYMM_OP_PROD) ref *= x;
                else if (op == SYMM_OP_MIN) ref = fmin(ref, x);
                else ref = fmax(ref, x);
            }
            double g = H<T>::to(got[i]), tol;
            if (op == SYMM_OP_MIN || op == SYMM_OP_MAX) tol = 0;
            else if (op == SYMM_OP_PROD) tol = fabs(ref) * ((np + 1) * H<T>::acc_eps + 2 * H<T>::eps);
            else tol = (np + 1) * H<T>::acc_eps * mag + 2 * H<T>::eps * fabs(ref) + 1e-7;
            if (!(fabs(g - ref) <= tol))
                TEST_FAIL_("reduce%s op %d dtype size %zu n %zu elem %zu: got %.9g want %.9g "
                           "(tol %.3g)", kind ? "scatter" : "", op, sizeof(T), n, i, g, ref, tol);
        } else {
            T ref = gen<T>(e.wpe[0], cas, blk + i, op);
            for (int j = 1; j < np; j++)
                ref = int_combine<T>(ref, gen<T>(e.wpe[(size_t)j], cas, blk + i, op), op);
            if (got[i] != ref)
                TEST_FAIL_("reduce%s op %d dtype size %zu n %zu elem %zu: got %llu want %llu",
                           kind ? "scatter" : "", op, sizeof(T), n, i,
                           (unsigned long long)got[i], (unsigned long long)ref);
        }
    }
    e.checks++;
}

template <typename T> static void red_all(Env &e, bool is_int) {
    const size_t sizes[] = {1, 7, 1003, 20011};
    const int nops = is_int ? 7 : 4;
    for (int op = 0; op < 7; op++) {
        for (int k = 0; k < 4; k++) {
            const size_t n = sizes[k];
            const bool warp = k == 1;
            if (op >= nops) { /* rejected before any synchronisation */
                red_case<T>(e, op, 0, n, false, warp);
                break;
            }
            red_case<T>(e, op, 0, n, k == 2, warp);  /* all-reduce (in place once) */
            red_case<T>(e, op, 1, n, k == 3, warp);  /* reducescatter (own block once) */
        }
    }
    red_case<T>(e, SYMM_OP_SUM, 0, 0, false, false); /* nelems 0 synchronises */
    /* an op outside SYMM_OP_*: INVALID_ARG on every PE, nobody waits */
    red_kernel<T, false><<<1, 64, 0, e.s>>>(e.dc, e.dt, (T *)gpu_ptr(e.B), (T *)gpu_ptr(e.A), 5,
                                            99, 0, e.status, e.bad, e.scratch);
    CUDA_OK(cudaGetLastError());
    ASSERT_EQ(dstatus(e), SYMM_ERR_INVALID_ARG);
}

static void move_case(Env &e, int kind, size_t nb, bool inplace, bool warp) {
    const int np = e.dt.n_pes, me = e.dt.my_pe;
    const uint64_t cas = ++g_case * 1000 + 500 + (uint64_t)kind;
    const int root = (int)(cas % (uint64_t)np);
    const size_t srcb = kind == 2 ? nb * (size_t)np : nb, dstb = kind == 0 ? nb : nb * (size_t)np;
    ASSERT_TRUE(srcb <= e.cap_bytes && dstb <= e.cap_bytes);
    auto byte = [&](int tpe, size_t i) { return (uint8_t)rnd(e.wpe[(size_t)tpe], cas, i); };
    std::vector<uint8_t> h(srcb);
    for (size_t i = 0; i < srcb; i++) h[i] = byte(me, i);
    uint8_t *dst = (uint8_t *)gpu_ptr(e.B), *src = (uint8_t *)gpu_ptr(e.A);
    CUDA_OK(cudaMemset(dst, 0x5a, dstb));
    if (inplace) { /* broadcast: dst == src; fcollect: src is my block of dst */
        src = kind == 0 ? dst : dst + (size_t)me * nb;
        gpu_write(e.B, (uint64_t)(src - dst), h.data(), srcb);
    } else {
        gpu_write(e.A, 0, h.data(), srcb);
    }
    move_kernel<<<1, warp ? 32 : 96, 0, e.s>>>(e.dc, e.dt, dst, src, nb, root, kind, warp,
                                                e.status);
    CUDA_OK(cudaGetLastError());
    const int st = dstatus(e);
    if (st != SYMM_SUCCESS)
        TEST_FAIL_("%s nbytes %zu%s%s on a team of %d: status %s, want SUCCESS",
                   kind == 0 ? "broadcast" : kind == 1 ? "fcollect" : "alltoall", nb,
                   inplace ? " in place" : "", warp ? " warp" : "", np,
                   symm_status_string((symm_status)st));
    std::vector<uint8_t> got(dstb);
    CUDA_OK(cudaMemcpy(got.data(), dst, dstb, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < dstb; i++) {
        uint8_t want;
        if (kind == 0) want = byte(root, i);
        else if (kind == 1) want = byte((int)(i / nb), i % nb);
        else want = byte((int)(i / nb), (size_t)me * nb + i % nb);
        if (got[i] != want)
            TEST_FAIL_("%s nbytes %zu%s%s byte %zu: got %u want %u",
                       kind == 0 ? "broadcast" : kind == 1 ? "fcollect" : "alltoall", nb,
                       inplace ? " in place" : "", warp ? " warp" : "", i, got[i], want);
    }
    e.checks++;
}

/* alltoallv: units of 3 uint32 (sender, receiver, index), up to maxc units
 * from a PE to each PE (a quarter of the pairs send none). how: A2AV_KERNEL
 * (the block function in a kernel of ours), A2AV_STREAM (the stream form
 * with `blocks` blocks: 0 = one a SM, 1 = the single-block kernel) or
 * A2AV_GRAPH (ge: a CUDA graph of the stream form captured once with a dst
 * capacity of a2av_graph_cap units, replayed for this case's counts and
 * data, which the graph reads when it runs). small: team PE 0's dst is one
 * unit too small (nothing may be written there, the others finish). Then the
 * reverse exchange, the same way, brings every unit back to where it left. */
enum { A2AV_KERNEL, A2AV_STREAM, A2AV_GRAPH };
static uint64_t a2av_graph_cap(const Env &e) { return e.cap_bytes / 12 - 1; }

static void a2av_case(Env &e, int how, unsigned blocks, bool small_pe0, uint64_t maxc,
                      cudaGraphExec_t ge = nullptr, cudaGraphExec_t ge_back = nullptr) {
    const int np = e.dt.n_pes, me = e.dt.my_pe;
    const uint64_t cas = ++g_case * 1000 + 900;
    auto cnt = [&](int from, int to) -> uint64_t {
        uint64_t r = rnd(e.wpe[(size_t)from], cas, (uint64_t)to);
        return (r & 3) == 0 ? 0 : (r >> 8) % maxc;
    };
    std::vector<uint64_t> sc((size_t)np);
    uint64_t stot = 0, rtot = 0;
    for (int j = 0; j < np; j++) stot += sc[(size_t)j] = cnt(me, j);
    for (int j = 0; j < np; j++) rtot += cnt(j, me);
    std::vector<uint32_t> src(3 * stot + 3);
    for (int j = 0, u = 0; j < np; j++)
        for (uint64_t k = 0; k < sc[(size_t)j]; k++, u++) {
            src[3 * (size_t)u] = (uint32_t)me;
            src[3 * (size_t)u + 1] = (uint32_t)j;
            src[3 * (size_t)u + 2] = (uint32_t)(k * 7 + cas);
        }
    ASSERT_TRUE(src.size() * 4 <= e.cap_bytes && 3 * 4 * rtot + 12 <= e.cap_bytes);
    gpu_write(e.A, 0, src.data(), 3 * 4 * stot);
    uint64_t *counts = (uint64_t *)gpu_ptr(e.C), *rc = counts + np, *ro = counts + 2 * np;
    CUDA_OK(cudaMemcpy(counts, sc.data(), (size_t)np * 8, cudaMemcpyHostToDevice));
    uint32_t *dst = (uint32_t *)gpu_ptr(e.B);
    CUDA_OK(cudaMemset(dst, 0xee, 3 * 4 * rtot + 12));
    CUDA_OK(cudaDeviceSynchronize());
    const bool small = small_pe0 && me == 0 && rtot > 0;
    const uint64_t cap = how == A2AV_GRAPH ? a2av_graph_cap(e)
                         : small           ? rtot - 1
                                           : rtot + (uint64_t)(how == A2AV_KERNEL ? 1 : 0);
    if (how == A2AV_GRAPH)
        CUDA_OK(cudaGraphLaunch(ge, e.s));
    else if (how == A2AV_STREAM)
        CUDA_OK(symm_dev_alltoallv_on_stream_blocks(e.dc, e.dt, dst, cap, gpu_ptr(e.A), counts, 12,
                                                    rc, ro, e.status, blocks, e.s));
    else
        a2av_kernel<<<1, 128, 0, e.s>>>(e.dc, e.dt, dst, cap, (uint32_t *)gpu_ptr(e.A), counts,
                                        rc, ro, e.status);
    CUDA_OK(cudaGetLastError());
    const int st = dstatus(e), want_st = small ? SYMM_ERR_OUT_OF_BOUNDS : SYMM_SUCCESS;
    if (st != want_st)
        TEST_FAIL_("alltoallv how %d (0 kernel, 1 stream, 2 graph) blocks %u maxc %llu: status "
                   "%s, want %s", how, blocks, (unsigned long long)maxc,
                   symm_status_string((symm_status)st), symm_status_string((symm_status)want_st));
    std::vector<uint64_t> hrc((size_t)np), hro((size_t)np);
    CUDA_OK(cudaMemcpy(hrc.data(), rc, (size_t)np * 8, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hro.data(), ro, (size_t)np * 8, cudaMemcpyDeviceToHost));
    std::vector<uint32_t> got(3 * rtot + 3);
    CUDA_OK(cudaMemcpy(got.data(), dst, got.size() * 4, cudaMemcpyDeviceToHost));
    uint64_t off = 0;
    for (int j = 0; j < np; j++) {
        ASSERT_U64_EQ(hrc[(size_t)j], cnt(j, me));
        ASSERT_U64_EQ(hro[(size_t)j], off);
        for (uint64_t k = 0; k < hrc[(size_t)j]; k++) {
            const uint32_t *u = &got[3 * (off + k)];
            if (small) {
                if ((u[0] & u[1] & u[2]) != 0xeeeeeeeeu)
                    TEST_FAIL_("alltoallv how %d blocks %u: unit %llu from %d written into too "
                               "small a dst", how, blocks, (unsigned long long)k, j);
                continue;
            }
            if (u[0] != (uint32_t)j || u[1] != (uint32_t)me || u[2] != (uint32_t)(k * 7 + cas))
                TEST_FAIL_("alltoallv how %d blocks %u from %d unit %llu: (%u %u %u)", how, blocks,
                           j, (unsigned long long)k, u[0], u[1], u[2]);
        }
        off += hrc[(size_t)j];
    }
    ASSERT_EQ(got[3 * rtot] & got[3 * rtot + 1] & got[3 * rtot + 2], 0xeeeeeeeeu);
    if (small_pe0) {
        e.checks++;
        return; /* PE 0 has no data to send back */
    }
    /* combine: the received units go back (counts = rc, symmetric) */
    uint32_t *back = (uint32_t *)gpu_ptr(e.D);
    uint64_t *rc2 = counts + 3 * np, *ro2 = counts + 4 * np;
    CUDA_OK(cudaMemset(back, 0, 3 * 4 * stot + 12));
    CUDA_OK(cudaDeviceSynchronize());
    if (how == A2AV_GRAPH)
        CUDA_OK(cudaGraphLaunch(ge_back, e.s));
    else if (how == A2AV_STREAM)
        CUDA_OK(symm_dev_alltoallv_on_stream_blocks(e.dc, e.dt, back, stot, dst, rc, 12, rc2, ro2,
                                                    e.status, blocks, e.s));
    else
        a2av_kernel<<<1, 256, 0, e.s>>>(e.dc, e.dt, back, stot, dst, rc, rc2, ro2, e.status);
    CUDA_OK(cudaGetLastError());
    const int st_back = dstatus(e);
    if (st_back != SYMM_SUCCESS)
        TEST_FAIL_("alltoallv combine how %d blocks %u maxc %llu: status %s, want SUCCESS", how,
                   blocks, (unsigned long long)maxc, symm_status_string((symm_status)st_back));
    std::vector<uint32_t> ret(3 * stot + 3);
    CUDA_OK(cudaMemcpy(ret.data(), back, ret.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < 3 * stot; i++)
        if (ret[i] != src[i]) TEST_FAIL_("combine word %zu: got %u want %u", i, ret[i], src[i]);
    std::vector<uint64_t> hrc2((size_t)np);
    CUDA_OK(cudaMemcpy(hrc2.data(), rc2, (size_t)np * 8, cudaMemcpyDeviceToHost));
    for (int j = 0; j < np; j++) ASSERT_U64_EQ(hrc2[(size_t)j], sc[(size_t)j]);
    e.checks++;
}

/* Every way of running the exchange: the block function in a kernel; the
 * stream form in one block, three, one a SM, with small and large counts
 * (up to about 4 MiB a PE: every block of the grid gets a share) and with
 * too small a dst on PE 0; and one CUDA graph of it (dispatch and combine)
 * captured once and replayed for three cases whose counts differ. */
static void a2av_all(Env &e) {
    const uint64_t large = e.cap_bytes / 12 / (uint64_t)e.dt.n_pes;
    a2av_case(e, A2AV_KERNEL, 1, false, 700);
    a2av_case(e, A2AV_KERNEL, 1, true, 700);
    for (unsigned blocks : {1u, 3u, 0u}) {
        a2av_case(e, A2AV_STREAM, blocks, false, 700);
        a2av_case(e, A2AV_STREAM, blocks, false, large);
        a2av_case(e, A2AV_STREAM, blocks, true, large);
    }
    const int np = e.dt.n_pes;
    uint64_t *counts = (uint64_t *)gpu_ptr(e.C);
    uint32_t *dst = (uint32_t *)gpu_ptr(e.B), *back = (uint32_t *)gpu_ptr(e.D);
    cudaGraph_t g;
    cudaGraphExec_t ge[2];
    for (int k = 0; k < 2; k++) { /* dispatch, then combine (its capacity: what this PE sent) */
        CUDA_OK(cudaStreamBeginCapture(e.s, cudaStreamCaptureModeThreadLocal));
        if (k == 0)
            CUDA_OK(symm_dev_alltoallv_on_stream_blocks(e.dc, e.dt, dst, a2av_graph_cap(e),
                                                        gpu_ptr(e.A), counts, 12, counts + np,
                                                        counts + 2 * np, e.status, 0, e.s));
        else
            CUDA_OK(symm_dev_alltoallv_on_stream_blocks(e.dc, e.dt, back, a2av_graph_cap(e), dst,
                                                        counts + np, 12, counts + 3 * np,
                                                        counts + 4 * np, e.status, 0, e.s));
        CUDA_OK(cudaStreamEndCapture(e.s, &g));
        CUDA_OK(cudaGraphInstantiate(&ge[k], g, 0));
        CUDA_OK(cudaGraphDestroy(g));
    }
    for (uint64_t maxc : {large, (uint64_t)700, large / 3})
        a2av_case(e, A2AV_GRAPH, 0, false, maxc, ge[0], ge[1]);
    for (int k = 0; k < 2; k++) CUDA_OK(cudaGraphExecDestroy(ge[k]));
}

static void run_team(Env &e) {
    red_all<int8_t>(e, true);
    red_all<int16_t>(e, true);
    red_all<int32_t>(e, true);
    red_all<int64_t>(e, true);
    red_all<uint8_t>(e, true);
    red_all<uint16_t>(e, true);
    red_all<uint32_t>(e, true);
    red_all<uint64_t>(e, true);
    red_all<__half>(e, false);
    red_all<__nv_bfloat16>(e, false);
    red_all<float>(e, false);
    red_all<double>(e, false);
    const size_t nbs[] = {0, 1, 13, 1001, 65539};
    for (int kind = 0; kind < 3; kind++)
        for (int k = 0; k < 5; k++) {
            move_case(e, kind, nbs[k], false, k == 2);
            if (kind < 2) move_case(e, kind, nbs[k], true, k == 3);
        }
    a2av_all(e);
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    int count = 0;
    CUDA_OK(cudaGetDeviceCount(&count));
    const char *over = getenv("SYMM_TEST_OVERSUBSCRIBE");
    if (gpu_n > 2 && count < gpu_n && !(over && *over == '1')) {
        printf("SKIP: %d PEs on %d GPU(s) (set SYMM_TEST_OVERSUBSCRIBE=1 to share)\n", gpu_n,
               count);
        return 77;
    }
    Env e;
    memset(&e.dc, 0, sizeof e.dc);
    e.dc.struct_size = sizeof e.dc;
    CHECK_OK(symm_device_ctx_get(ctx, &e.dc));
    if (gpu_n > SYMM_DEVICE_FAST_PES) {
        printf("SKIP: this test reads the routes of up to %d PEs\n", SYMM_DEVICE_FAST_PES);
        return 77;
    }
    /* each PE's route: load/store, or the proxy (asserted under --hosts) */
    const int proxied = gpu_check_routes(e.dc, [&](int pe) { return e.dc.peer_base[pe]; });
    e.cap_bytes = 4u << 20;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, e.cap_bytes, &e.A));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, e.cap_bytes, &e.B));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 8 * (uint64_t)gpu_n, &e.C));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, e.cap_bytes, &e.D));
    CUDA_OK(cudaStreamCreateWithFlags(&e.s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&e.status, sizeof(int)));
    CUDA_OK(cudaMalloc(&e.bad, sizeof(unsigned long long)));
    CUDA_OK(cudaMemset(e.bad, 0, sizeof(unsigned long long)));
    CUDA_OK(cudaMalloc(&e.scratch, e.cap_bytes));
    e.checks = 0;

    symm_team world = NULL, even = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    CHECK_OK(symm_team_split_strided(world, 0, 2, (gpu_n + 1) / 2, NULL, &even));
    CHECK_OK(symm_barrier_all(ctx));
    for (int pass = 0; pass < 2; pass++) {
        symm_team tm = pass == 0 ? world : even;
        if (!tm) continue; /* odd PEs are not in the strided team */
        memset(&e.dt, 0, sizeof e.dt);
        e.dt.struct_size = sizeof e.dt;
        CHECK_OK(symm_device_team_get(tm, &e.dt));
        ASSERT_EQ(e.dt.n_pes, pass == 0 ? gpu_n : (gpu_n + 1) / 2);
        e.wpe.assign((size_t)e.dt.n_pes, 0);
        e.checks = 0;
        for (int j = 0; j < e.dt.n_pes; j++) e.wpe[(size_t)j] = e.dt.start + j * e.dt.stride;
        run_team(e);
        if (gpu_me == 0)
            printf("team %s (%d PEs, %d of %d peers of PE 0 through the proxy): %d cases ok\n",
                   pass ? "even (stride 2)" : "world", e.dt.n_pes, proxied, gpu_n - 1, e.checks);
    }
    CHECK_OK(symm_barrier_all(ctx));
    if (even) CHECK_OK(symm_team_destroy(even));
    CUDA_OK(cudaStreamDestroy(e.s));
    CUDA_OK(cudaFree(e.scratch));
    gpu_test_fini(&ctx);
    return 0;
}
