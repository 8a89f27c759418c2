/*
 * bench_nvshmem: the NVSHMEM side of bench_symm.cu (same measurements, same
 * output; see bench_common.h). Built on the GPU machine against the
 * nvidia-nvshmem wheel (scripts/gpu-suite.sh), -rdc=true as NVSHMEM requires.
 *
 * Two processes, one per GPU: BENCH_RANK=0|1, unique-id bootstrap through the
 * file BENCH_UID_FILE (PE 0 writes it, PE 1 polls). NVLink multicast must stay
 * off: the program refuses to start unless NVSHMEM_DISABLE_NVLS=1 and
 * NCCL_NVLS_ENABLE=0.
 */
#include "bench_common.h"

#include <nvshmem.h>
#include <nvshmemx.h>
#include <sys/stat.h>
#include <unistd.h>

__global__ void dev_put_kernel(char *dst, const char *src, size_t size, int peer) {
    size_t chunk = (size + gridDim.x - 1) / gridDim.x;
    chunk = (chunk + 15) & ~(size_t)15;
    size_t off = (size_t)blockIdx.x * chunk;
    if (off < size) {
        size_t n = size - off < chunk ? size - off : chunk;
        nvshmemx_putmem_block(dst + off, src + off, n, peer);
    }
    nvshmem_quiet();
}

__global__ void pingpong_kernel(int *flag, int warm, int iters, int mype, int peer, long long *dclk,
                                unsigned long long *tot) {
    unsigned long long g0 = 0;
    long long c0 = 0;
    for (int i = 1; i <= warm + iters; i++) {
        if (i == warm + 1) {
            g0 = bench_gtimer();
            c0 = clock64();
        }
        if (mype == 0) {
            long long t0 = clock64();
            nvshmem_int_p(flag, i, peer);
            nvshmem_int_wait_until(flag, NVSHMEM_CMP_EQ, i);
            long long t1 = clock64();
            if (i > warm) dclk[i - warm - 1] = t1 - t0;
        } else {
            nvshmem_int_wait_until(flag, NVSHMEM_CMP_EQ, i);
            nvshmem_int_p(flag, i, peer);
        }
    }
    tot[0] = bench_gtimer() - g0;
    tot[1] = (unsigned long long)(clock64() - c0);
}

static unsigned long long *g_bad_sym;
static unsigned long long exchange_bad(unsigned long long mine) {
    if (g_bench_pe == 1) {
        CK(cudaMemcpy(g_bad_sym + 1, &mine, sizeof mine, cudaMemcpyHostToDevice));
        nvshmem_putmem(g_bad_sym, g_bad_sym + 1, sizeof mine, 0);
        nvshmem_quiet();
    }
    nvshmem_barrier_all();
    unsigned long long v = 0;
    if (g_bench_pe == 0) CK(cudaMemcpy(&v, g_bad_sym, sizeof v, cudaMemcpyDeviceToHost));
    nvshmem_barrier_all();
    return v;
}

static void sync_all(cudaStream_t s) {
    CK(cudaStreamSynchronize(s));
    CK(cudaDeviceSynchronize());
    nvshmem_barrier_all();
}

int main() {
    const double t_start = now_s();
    if (!bench_multicast_off()) return 3;
    const char *rk = getenv("BENCH_RANK"), *uidf = getenv("BENCH_UID_FILE");
    if (!rk || !uidf) {
        fprintf(stderr, "need BENCH_RANK and BENCH_UID_FILE\n");
        return 3;
    }
    int rank = atoi(rk);
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    double t_ctx0 = now_s();
    CK(cudaSetDevice(rank % ndev));
    CK(cudaFree(0));
    double t_ctx = now_s() - t_ctx0;

    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) {
        if (nvshmemx_get_uniqueid(&id) != 0) return 4;
        std::string tmp = std::string(uidf) + ".tmp";
        FILE *f = fopen(tmp.c_str(), "wb");
        if (!f || fwrite(&id, sizeof id, 1, f) != 1) return 4;
        fclose(f);
        rename(tmp.c_str(), uidf);
    } else {
        double a = now_s();
        for (;;) {
            struct stat sb;
            if (stat(uidf, &sb) == 0 && (size_t)sb.st_size == sizeof id) break;
            if (now_s() - a > 120) return 4;
            usleep(2000);
        }
        FILE *f = fopen(uidf, "rb");
        if (!f || fread(&id, sizeof id, 1, f) != 1) return 4;
        fclose(f);
    }
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(rank, 2, &id, &attr) != 0) return 4;
    double t0 = now_s();
    nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    double t_init = now_s() - t0;
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), peer = 1 - me;
    g_bench_pe = me;
    if (npes != 2) return 5;
    int maj = 0, min = 0, patch = 0;
    nvshmemx_vendor_get_version_info(&maj, &min, &patch);
    printf("[pe %d/%d] NVSHMEM %d.%d.%d, cuda ctx %.3f s, init %.3f s\n", me, npes, maj, min,
           patch, t_ctx, t_init);
    fflush(stdout);

    double ta = now_s();
    char *dst = (char *)nvshmem_malloc(kBuf);
    char *src = (char *)nvshmem_malloc(kBuf);
    int *flag = (int *)nvshmem_malloc(64 * sizeof(int));
    double *times = (double *)nvshmem_malloc(4 * sizeof(double));
    g_bad_sym = (unsigned long long *)nvshmem_malloc(4 * sizeof(unsigned long long));
    double t_alloc = now_s() - ta;
    if (!dst || !src || !flag || !times || !g_bad_sym) return 6;

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    bench_fill<<<1056, 512, 0, s>>>((unsigned char *)src, kBuf);
    CK(cudaGetLastError());
    sync_all(s);

    {
        double mine = t_init;
        CK(cudaMemcpy(times + 2, &mine, sizeof mine, cudaMemcpyHostToDevice));
        nvshmem_putmem(times + me, times + 2, sizeof mine, 0);
        nvshmem_quiet();
        nvshmem_barrier_all();
        if (me == 0) {
            double all[2];
            CK(cudaMemcpy(all, times, sizeof all, cudaMemcpyDeviceToHost));
            result("init_s_pe0", all[0], "s", "nvshmemx_init_attr (UID) wall (CUDA context made before)");
            result("init_s_pe1", all[1], "s", "");
            result("alloc_2GiB_s", t_alloc, "s", "nvshmem_malloc 2 GiB + small");
        }
        nvshmem_barrier_all();
    }

    const size_t rmax = 256u << 20;
    float *rsrc = (float *)nvshmem_malloc(rmax), *rdst = (float *)nvshmem_malloc(rmax);
    if (!rsrc || !rdst) return 6;
    CK(cudaMemset(rsrc, 0, rmax));

    BenchLib L;
    L.me = me;
    L.peer = peer;
    L.dst = dst;
    L.src = src;
    L.s = s;
    L.put_on_stream = [&](char *d, const char *sr, size_t n) { nvshmemx_putmem_on_stream(d, sr, n, peer, s); };
    L.get_on_stream = [&](char *d, const char *sr, size_t n) { nvshmemx_getmem_on_stream(d, sr, n, peer, s); };
    L.quiet_on_stream = [&]() { nvshmemx_quiet_on_stream(s); };
    L.barrier_all_on_stream = [&]() { nvshmemx_barrier_all_on_stream(s); };
    L.sync_all = [&]() { sync_all(s); };
    L.exchange_bad = exchange_bad;
    L.dev_put = [&](int G, size_t sz) { dev_put_kernel<<<G, 1024, 0, s>>>(dst, src, sz, peer); };
    L.pingpong = [&](int warm, int iters, long long *dclk, unsigned long long *tot) {
        CK(cudaMemset(flag, 0, sizeof(int)));
        sync_all(s);
        pingpong_kernel<<<1, 1, 0, s>>>(flag, warm, iters, me, peer, dclk, tot);
    };
    L.reduce_on_stream = [&](size_t n) {
        nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, rdst, rsrc, n, s);
    };
    bench_run(L);

    sync_all(s);
    if (me == 0) printf("total wall %.1f s\n", now_s() - t_start);
    results_flush();
    results_json("NVSHMEM");
    nvshmem_free(rdst);
    nvshmem_free(rsrc);
    nvshmem_free(g_bad_sym);
    nvshmem_free(times);
    nvshmem_free(flag);
    nvshmem_free(src);
    nvshmem_free(dst);
    nvshmem_finalize();
    return 0;
}
