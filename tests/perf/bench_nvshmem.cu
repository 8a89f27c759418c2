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
    const char *nvls = getenv("NVSHMEM_DISABLE_NVLS"), *ncclnvls = getenv("NCCL_NVLS_ENABLE");
    if (!nvls || strcmp(nvls, "1") || !ncclnvls || strcmp(ncclnvls, "0")) {
        fprintf(stderr, "refusing to run: NVSHMEM_DISABLE_NVLS=1 and NCCL_NVLS_ENABLE=0 must be set\n");
        return 3;
    }
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
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto ev_ms = [&]() {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        return (double)ms;
    };
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

    for (size_t sz : kPutSizes) {
        if (!section("put")) break;
        if (me == 1) CK(cudaMemset(dst, 0, sz));
        sync_all(s);
        const int N = puts_per_sample(sz);
        std::vector<double> t;
        if (me == 0) {
            for (int r = 0; r < 3 + 20; r++) {
                CK(cudaEventRecord(e0, s));
                for (int k = 0; k < N; k++)
                    nvshmemx_putmem_on_stream(dst + ((size_t)k * sz) % kBuf, src, sz, peer, s);
                nvshmemx_quiet_on_stream(s);
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                if (r >= 3) t.push_back(ev_ms());
            }
        }
        sync_all(s);
        unsigned long long bad = exchange_bad(me == 1 ? bench_count_bad(dst, sz, s) : 0);
        if (me == 0) {
            double ms = median(t);
            char key[64];
            snprintf(key, sizeof key, "put_bw_%s", human(sz).c_str());
            result(key, (double)sz * N / (ms * 1e-3) / 1e9, "GB/s", "%.2f us/put, N=%d, bad=%llu",
                   ms * 1e3 / N, N, bad);
        }
    }

    sync_all(s);
    if (me == 0) {
        std::vector<double> t;
        for (int r = 0; r < 500 + 5000; r++) {
            double a = now_s();
            nvshmemx_putmem_on_stream(dst, src, 8, peer, s);
            nvshmemx_quiet_on_stream(s);
            CK(cudaStreamSynchronize(s));
            double b = now_s();
            if (r >= 500) t.push_back((b - a) * 1e6);
        }
        result("put_lat_8B", median(t), "us", "p10 %.2f p90 %.2f", pct(t, 0.1), pct(t, 0.9));
    }
    sync_all(s);

    for (size_t sz : kGetSizes) {
        if (!section("get")) break;
        if (me == 0) CK(cudaMemset(dst, 0, sz));
        sync_all(s);
        const int N = puts_per_sample(sz);
        std::vector<double> t;
        if (me == 0) {
            for (int r = 0; r < 3 + 20; r++) {
                CK(cudaEventRecord(e0, s));
                for (int k = 0; k < N; k++)
                    nvshmemx_getmem_on_stream(dst + ((size_t)k * sz) % kBuf, src, sz, peer, s);
                nvshmemx_quiet_on_stream(s);
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                if (r >= 3) t.push_back(ev_ms());
            }
            double ms = median(t);
            unsigned long long bad = bench_count_bad(dst, sz, s);
            char key[64];
            snprintf(key, sizeof key, "get_bw_%s", human(sz).c_str());
            result(key, (double)sz * N / (ms * 1e-3) / 1e9, "GB/s", "%.2f us/get, N=%d, bad=%llu",
                   ms * 1e3 / N, N, bad);
        }
        sync_all(s);
    }

    for (size_t sz : kDevSizes) {
        if (!section("dev")) break;
        double best = 0;
        int bestG = 0;
        std::string detail;
        for (int G : kDevGs) {
            if (me == 1) CK(cudaMemset(dst, 0, sz));
            sync_all(s);
            std::vector<double> t;
            int nl = (int)std::min<size_t>(100, std::max<size_t>(1, (256ull << 20) / sz));
            if (me == 0) {
                for (int r = 0; r < 2 + 15; r++) {
                    CK(cudaEventRecord(e0, s));
                    for (int k = 0; k < nl; k++) dev_put_kernel<<<G, 1024, 0, s>>>(dst, src, sz, peer);
                    CK(cudaEventRecord(e1, s));
                    CK(cudaEventSynchronize(e1));
                    CK(cudaGetLastError());
                    if (r >= 2) t.push_back(ev_ms() / nl);
                }
            }
            sync_all(s);
            unsigned long long bad = exchange_bad(me == 1 ? bench_count_bad(dst, sz, s) : 0);
            if (me == 0) {
                double gbs = (double)sz / (median(t) * 1e-3) / 1e9;
                char b[64];
                snprintf(b, sizeof b, "%sG%d:%.1f%s", detail.empty() ? "" : ",", G, gbs, bad ? "(BAD)" : "");
                detail += b;
                if (gbs > best && !bad) {
                    best = gbs;
                    bestG = G;
                }
            }
        }
        char key[64];
        snprintf(key, sizeof key, "devput_bw_%s", human(sz).c_str());
        result(key, best, "GB/s", "G=%d (%s)", bestG, detail.c_str());
    }

    {
        const int warm = 1000, iters = 10000;
        long long *dclk;
        unsigned long long *tot;
        CK(cudaMalloc(&dclk, sizeof(long long) * iters));
        CK(cudaMalloc(&tot, 2 * sizeof(unsigned long long)));
        CK(cudaMemsetAsync(flag, 0, sizeof(int), s));
        sync_all(s);
        pingpong_kernel<<<1, 1, 0, s>>>(flag, warm, iters, me, peer, dclk, tot);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(s));
        std::vector<long long> hc(iters);
        unsigned long long ht[2];
        CK(cudaMemcpy(hc.data(), dclk, sizeof(long long) * iters, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(ht, tot, sizeof ht, cudaMemcpyDeviceToHost));
        sync_all(s);
        if (me == 0) {
            double ghz = (double)ht[1] / (double)ht[0];
            std::vector<double> half;
            for (int i = 0; i < iters; i++) half.push_back(hc[i] / ghz / 2.0 / 1000.0);
            result("pingpong_half_rtt", median(half), "us", "mean %.3f us, p10 %.3f, SM %.2f GHz",
                   (double)ht[0] / iters / 2.0 / 1000.0, pct(half, 0.1), ghz);
        }
        CK(cudaFree(dclk));
        CK(cudaFree(tot));
    }

    {
        sync_all(s);
        for (int i = 0; i < 100; i++) nvshmemx_barrier_all_on_stream(s);
        CK(cudaStreamSynchronize(s));
        std::vector<double> per;
        for (int r = 0; r < 7; r++) {
            CK(cudaEventRecord(e0, s));
            for (int i = 0; i < 1000; i++) nvshmemx_barrier_all_on_stream(s);
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            per.push_back(ev_ms());
        }
        result("barrier_us", median(per), "us", "per barrier, 1000 back-to-back, min %.2f", pct(per, 0));
        sync_all(s);
    }

    {
        const size_t rmax = 256u << 20;
        float *rsrc = (float *)nvshmem_malloc(rmax), *rdst = (float *)nvshmem_malloc(rmax);
        CK(cudaMemset(rsrc, 0, rmax));
        const size_t rs[] = {1024, 65536, 1u << 20, 16u << 20, 256u << 20};
        for (size_t sz : rs) {
            size_t n = sz / 4;
            sync_all(s);
            nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, rdst, rsrc, n, s);
            CK(cudaStreamSynchronize(s));
            int per = sz <= (1u << 20) ? 50 : sz <= (16u << 20) ? 10 : 1;
            int reps = sz >= (256u << 20) ? 3 : 7;
            std::vector<double> t;
            for (int r = 0; r < reps; r++) {
                CK(cudaEventRecord(e0, s));
                for (int k = 0; k < per; k++)
                    nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, rdst, rsrc, n, s);
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                t.push_back(ev_ms() * 1e3 / per);
            }
            char key[64];
            snprintf(key, sizeof key, "reduce_f32_%s", human(sz).c_str());
            double us = median(t);
            result(key, (double)sz / (us * 1e-6) / 1e9, "GB/s", "%.2f us/call", us);
        }
        sync_all(s);
        nvshmem_free(rdst);
        nvshmem_free(rsrc);
    }

    sync_all(s);
    if (me == 0) printf("total wall %.1f s\n", now_s() - t_start);
    results_flush();
    nvshmem_free(g_bad_sym);
    nvshmem_free(times);
    nvshmem_free(flag);
    nvshmem_free(src);
    nvshmem_free(dst);
    nvshmem_finalize();
    return 0;
}
