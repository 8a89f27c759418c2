/*
 * Shared by bench_symm.cu and bench_nvshmem.cu: timing, statistics, data
 * patterns and the result lines that compare.py reads. Both programs measure
 * the same things the same way (PE 0 -> PE 1, CUDA events on one non-blocking
 * stream, medians); only the library calls differ.
 *
 * Result lines (PE 0, stdout and $BENCH_RESULTS): RESULT <key> <value> <unit> [note]
 * $BENCH_JSON (PE 0): the same as one JSON object (library, machine, date,
 * results with key, test, size_bytes, median, unit, metric, note), which
 * scripts/plot-bench.py draws.
 */
#ifndef SYMM_BENCH_COMMON_H
#define SYMM_BENCH_COMMON_H

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, \
                    __LINE__, cudaGetErrorString(e_));                                     \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

/* A symm call that must succeed (the symm benchmarks; expands to symm.h's
 * names, so only they use it). */
#define SK(x)                                                                           \
    do {                                                                                \
        symm_status st_ = (x);                                                          \
        if (st_ != SYMM_SUCCESS) {                                                      \
            fprintf(stderr, "[pe %d] %s -> %s (%s)\n", g_bench_pe, #x,                  \
                    symm_status_string(st_), symm_last_error());                        \
            exit(3);                                                                    \
        }                                                                               \
    } while (0)

/* Every benchmark refuses to run unless NVLink multicast is off for NVSHMEM
 * and NCCL (it can take shared GPUs out of service). */
static inline bool bench_multicast_off() {
    const char *nvls = getenv("NVSHMEM_DISABLE_NVLS"), *ncclnvls = getenv("NCCL_NVLS_ENABLE");
    if (nvls && !strcmp(nvls, "1") && ncclnvls && !strcmp(ncclnvls, "0")) return true;
    fprintf(stderr, "refusing to run: NVSHMEM_DISABLE_NVLS=1 and NCCL_NVLS_ENABLE=0 must be set\n");
    return false;
}

static inline double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
static inline double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return (n & 1) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
static inline double pct(std::vector<double> v, double p) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t i = (size_t)std::min<double>((double)v.size() - 1, std::floor(p * (double)(v.size() - 1) + 0.5));
    return v[i];
}
static inline std::string human(size_t b) {
    char buf[64];
    if (b >= (1ull << 30) && b % (1ull << 30) == 0) snprintf(buf, sizeof buf, "%zuGiB", b >> 30);
    else if (b >= (1ull << 20) && b % (1ull << 20) == 0) snprintf(buf, sizeof buf, "%zuMiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0) snprintf(buf, sizeof buf, "%zuKiB", b >> 10);
    else snprintf(buf, sizeof buf, "%zuB", b);
    return buf;
}

static int g_bench_pe = -1;
static std::string g_results;
struct bench_row {
    std::string key, unit, note;
    double value;
};
static std::vector<bench_row> g_rows; /* for $BENCH_JSON */
static inline void result(const char *key, double value, const char *unit, const char *fmt = "",
                          ...) {
    if (g_bench_pe != 0) return;
    char note[256] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
    char line[512];
    const char *tag = getenv("BENCH_TAG"); /* key prefix for extra passes */
    snprintf(line, sizeof line, "RESULT %s%s %.6g %s %s\n", tag ? tag : "", key, value, unit, note);
    fputs(line, stdout);
    fflush(stdout);
    g_results += line;
    g_rows.push_back({std::string(tag ? tag : "") + key, unit, note, value});
}

/* JSON for scripts/plot-bench.py: "test" is the key without its size suffix
 * ("put_bw_1MiB" -> "put_bw", 1048576 bytes). */
static inline void json_str(FILE *o, const std::string &s) {
    fputc('"', o);
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') fprintf(o, "\\%c", c);
        else if (c < 0x20) fprintf(o, "\\u%04x", c);
        else fputc(c, o);
    }
    fputc('"', o);
}
static inline bool key_size(const std::string &key, std::string *test, double *bytes) {
    size_t us = key.rfind('_');
    if (us == std::string::npos) return false;
    const char *p = key.c_str() + us + 1;
    char *end = nullptr;
    double v = strtod(p, &end);
    if (end == p) return false;
    double mul = strcmp(end, "B") == 0 ? 1 : strcmp(end, "KiB") == 0 ? 1024.0
               : strcmp(end, "MiB") == 0 ? 1048576.0 : strcmp(end, "GiB") == 0 ? 1073741824.0 : 0;
    if (mul == 0) return false;
    *test = key.substr(0, us);
    *bytes = v * mul;
    return true;
}
static inline void results_json(const char *library) {
    const char *f = getenv("BENCH_JSON");
    if (g_bench_pe != 0 || !f) return;
    FILE *o = fopen(f, "w");
    if (!o) {
        fprintf(stderr, "BENCH_JSON: cannot write %s\n", f);
        return;
    }
    cudaDeviceProp prop;
    int dev = 0;
    cudaGetDevice(&dev);
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) snprintf(prop.name, sizeof prop.name, "?");
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    char machine[300], date[64];
    snprintf(machine, sizeof machine, "%d x %s", ndev, prop.name);
    time_t t = time(nullptr);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    fprintf(o, "{\"library\": ");
    json_str(o, library);
    fprintf(o, ", \"machine\": ");
    json_str(o, machine);
    fprintf(o, ", \"date\": ");
    json_str(o, date);
    fprintf(o, ", \"direction\": \"PE 0 -> PE 1\", \"results\": [");
    for (size_t i = 0; i < g_rows.size(); i++) {
        const bench_row &r = g_rows[i];
        std::string test = r.key;
        double bytes = -1;
        bool sized = key_size(r.key, &test, &bytes);
        fprintf(o, "%s\n  {\"key\": ", i ? "," : "");
        json_str(o, r.key);
        fprintf(o, ", \"test\": ");
        json_str(o, test);
        if (sized) fprintf(o, ", \"size_bytes\": %.0f", bytes);
        else fprintf(o, ", \"size_bytes\": null");
        fprintf(o, ", \"median\": %.6g, \"unit\": ", r.value);
        json_str(o, r.unit);
        fprintf(o, ", \"metric\": \"%s\", \"note\": ",
                r.unit == "GB/s" ? "bandwidth" : r.unit == "us" ? "latency" : "time");
        json_str(o, r.note);
        fprintf(o, "}");
    }
    fprintf(o, "\n]}\n");
    fclose(o);
}
static inline void results_flush() {
    const char *f = getenv("BENCH_RESULTS");
    if (g_bench_pe != 0 || !f) return;
    FILE *o = fopen(f, "a");
    if (o) {
        fputs(g_results.c_str(), o);
        fclose(o);
    }
}

/* BENCH_SECTIONS=put,lat,get,dev,pp,bar,red (default: all) */
static inline bool section(const char *name) {
    const char *s = getenv("BENCH_SECTIONS");
    if (!s || !*s) return true;
    std::string all = std::string(",") + s + ",";
    return all.find(std::string(",") + name + ",") != std::string::npos;
}

__device__ __forceinline__ unsigned char bench_pat(unsigned long long o) {
    return (unsigned char)(((o * 0x9E3779B1ull) >> 17) ^ (o >> 3) ^ 0x5A);
}
__global__ void bench_fill(unsigned char *p, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = bench_pat(i);
}
__global__ void bench_check(const unsigned char *p, size_t n, unsigned long long *bad) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long nb = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        nb += (p[i] != bench_pat(i));
    if (nb) atomicAdd(bad, nb);
}
static inline unsigned long long bench_count_bad(const void *p, size_t n, cudaStream_t s) {
    static unsigned long long *d = nullptr;
    if (!d) CK(cudaMalloc(&d, sizeof *d));
    CK(cudaMemsetAsync(d, 0, sizeof *d, s));
    bench_check<<<1056, 512, 0, s>>>((const unsigned char *)p, n, d);
    CK(cudaGetLastError());
    unsigned long long h = 0;
    CK(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    return h;
}

__device__ __forceinline__ unsigned long long bench_gtimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Sizes and sample counts of the measurements. */
static const size_t kPutSizes[] = {8, 64, 512, 4096, 65536, 262144, 1u << 20, 16u << 20,
                                   256u << 20, 1u << 30};
static const size_t kGetSizes[] = {8, 4096, 65536, 1u << 20, 16u << 20, 256u << 20};
static const size_t kDevSizes[] = {65536, 1u << 20, 16u << 20, 256u << 20};
static const int kDevGs[] = {1, 8, 32, 132};
static const size_t kBuf = 1ull << 30;
static inline int puts_per_sample(size_t sz) {
    return (int)std::min<size_t>(1000, std::max<size_t>(2, (2ull << 30) / sz));
}

/* ------------------------------------------------------------------------ */
/* The measurements, shared by bench_symm and bench_nvshmem                  */
/* ------------------------------------------------------------------------ */
/* A library under test fills a BenchLib with its calls; bench_run() does
 * every measurement the same way for both. All calls act on PE me's stream
 * s; puts/gets target peer; dst/src are symmetric buffers of kBuf bytes. */
struct BenchLib {
    int me, peer;
    char *dst, *src;
    cudaStream_t s;
    std::function<void(char *dst, const char *src, size_t n)> put_on_stream;
    std::function<void(char *dst, const char *src, size_t n)> get_on_stream;
    std::function<void()> quiet_on_stream, barrier_all_on_stream;
    std::function<void()> sync_all; /* stream + device synchronised, then a barrier */
    /* PE 1's count of bad bytes, known on PE 0 after the call (collective) */
    std::function<unsigned long long(unsigned long long mine)> exchange_bad;
    /* one device block-put kernel: G blocks x 1024 threads, sz bytes, on s */
    std::function<void(int G, size_t sz)> dev_put;
    /* the ping-pong kernel (1 thread): clock64 per round trip into dclk, and
     * globaltimer/clock64 totals into tot[0..1] */
    std::function<void(int warm, int iters, long long *dclk, unsigned long long *tot)> pingpong;
    /* float sum reduce of n elements over all PEs, on s */
    std::function<void(size_t n)> reduce_on_stream;
};

static inline void bench_run(const BenchLib &L) {
    const int me = L.me;
    cudaStream_t s = L.s;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto ev_ms = [&]() {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        return (double)ms;
    };

    /* (a) put on stream: N back-to-back + quiet_on_stream */
    for (size_t sz : kPutSizes) {
        if (!section("put")) break;
        if (me == 1) CK(cudaMemset(L.dst, 0, sz));
        L.sync_all();
        const int N = puts_per_sample(sz);
        std::vector<double> t, th;
        if (me == 0) {
            for (int r = 0; r < 3 + 20; r++) {
                CK(cudaEventRecord(e0, s));
                double h0 = now_s();
                for (int k = 0; k < N; k++) L.put_on_stream(L.dst + ((size_t)k * sz) % kBuf, L.src, sz);
                if (r >= 3) th.push_back((now_s() - h0) * 1e6 / N);
                L.quiet_on_stream();
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                if (r >= 3) t.push_back(ev_ms());
            }
        }
        L.sync_all();
        unsigned long long bad = L.exchange_bad(me == 1 ? bench_count_bad(L.dst, sz, s) : 0);
        if (me == 0) {
            double ms = median(t);
            char key[64];
            snprintf(key, sizeof key, "put_bw_%s", human(sz).c_str());
            result(key, (double)sz * N / (ms * 1e-3) / 1e9, "GB/s",
                   "%.2f us/put (host %.2f us/call), N=%d, bad=%llu", ms * 1e3 / N, median(th), N,
                   bad);
        }
    }

    /* (b) 8 B put + quiet_on_stream + stream sync, wall */
    L.sync_all();
    if (me == 0 && section("lat")) {
        std::vector<double> t;
        for (int r = 0; r < 500 + 5000; r++) {
            double a = now_s();
            L.put_on_stream(L.dst, L.src, 8);
            L.quiet_on_stream();
            CK(cudaStreamSynchronize(s));
            double b = now_s();
            if (r >= 500) t.push_back((b - a) * 1e6);
        }
        result("put_lat_8B", median(t), "us", "p10 %.2f p90 %.2f", pct(t, 0.1), pct(t, 0.9));
    }
    L.sync_all();

    /* (g) get on stream: N back-to-back + quiet_on_stream (PE 0 reads PE 1's src) */
    for (size_t sz : kGetSizes) {
        if (!section("get")) break;
        if (me == 0) CK(cudaMemset(L.dst, 0, sz));
        L.sync_all();
        const int N = puts_per_sample(sz);
        if (me == 0) {
            std::vector<double> t;
            for (int r = 0; r < 3 + 20; r++) {
                CK(cudaEventRecord(e0, s));
                for (int k = 0; k < N; k++) L.get_on_stream(L.dst + ((size_t)k * sz) % kBuf, L.src, sz);
                L.quiet_on_stream();
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                if (r >= 3) t.push_back(ev_ms());
            }
            double ms = median(t);
            unsigned long long bad = bench_count_bad(L.dst, sz, s);
            char key[64];
            snprintf(key, sizeof key, "get_bw_%s", human(sz).c_str());
            result(key, (double)sz * N / (ms * 1e-3) / 1e9, "GB/s", "%.2f us/get, N=%d, bad=%llu",
                   ms * 1e3 / N, N, bad);
        }
        L.sync_all();
    }

    /* (c) device block put, G blocks x 1024 threads, best G */
    for (size_t sz : kDevSizes) {
        if (!section("dev")) break;
        double best = 0;
        int bestG = 0;
        std::string detail;
        for (int G : kDevGs) {
            if (me == 1) CK(cudaMemset(L.dst, 0, sz));
            L.sync_all();
            std::vector<double> t;
            int nl = (int)std::min<size_t>(100, std::max<size_t>(1, (256ull << 20) / sz));
            if (me == 0) {
                for (int r = 0; r < 2 + 15; r++) {
                    CK(cudaEventRecord(e0, s));
                    for (int k = 0; k < nl; k++) L.dev_put(G, sz);
                    CK(cudaEventRecord(e1, s));
                    CK(cudaEventSynchronize(e1));
                    CK(cudaGetLastError());
                    if (r >= 2) t.push_back(ev_ms() / nl);
                }
            }
            L.sync_all();
            unsigned long long bad = L.exchange_bad(me == 1 ? bench_count_bad(L.dst, sz, s) : 0);
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

    /* (d) device p ping-pong, half round trip, timed on the device */
    if (section("pp")) {
        const int warm = 1000, iters = 10000;
        long long *dclk;
        unsigned long long *tot;
        CK(cudaMalloc(&dclk, sizeof(long long) * iters));
        CK(cudaMalloc(&tot, 2 * sizeof(unsigned long long)));
        L.sync_all();
        L.pingpong(warm, iters, dclk, tot);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(s));
        std::vector<long long> hc(iters);
        unsigned long long ht[2];
        CK(cudaMemcpy(hc.data(), dclk, sizeof(long long) * iters, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(ht, tot, sizeof ht, cudaMemcpyDeviceToHost));
        L.sync_all();
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

    /* (e) barrier_all_on_stream, 1000 back-to-back */
    if (section("bar")) {
        L.sync_all();
        for (int i = 0; i < 100; i++) L.barrier_all_on_stream();
        CK(cudaStreamSynchronize(s));
        std::vector<double> per, host;
        for (int r = 0; r < 7; r++) {
            CK(cudaEventRecord(e0, s));
            double h0 = now_s();
            for (int i = 0; i < 1000; i++) L.barrier_all_on_stream();
            host.push_back((now_s() - h0) * 1e6 / 1000);
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            per.push_back(ev_ms());
        }
        result("barrier_us", median(per), "us",
               "per barrier, 1000 back-to-back, min %.2f (host %.2f us/call)", pct(per, 0),
               median(host));
        L.sync_all();
    }

    /* (f) float sum reduce on stream over all PEs. Calls per sample and
     * samples depend on the size only: reductions are collective, so both PEs
     * (and both libraries) must make the same calls. */
    if (section("red")) {
        const size_t rs[] = {1024, 65536, 1u << 20, 16u << 20, 256u << 20};
        for (size_t sz : rs) {
            L.sync_all();
            L.reduce_on_stream(sz / 4); /* warm-up */
            CK(cudaStreamSynchronize(s));
            L.sync_all();
            const int per = sz <= (1u << 20) ? 50 : sz <= (16u << 20) ? 10 : 1;
            const int reps = sz >= (256u << 20) ? 3 : 7;
            std::vector<double> t;
            for (int r = 0; r < reps; r++) {
                CK(cudaEventRecord(e0, s));
                for (int k = 0; k < per; k++) L.reduce_on_stream(sz / 4);
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                t.push_back(ev_ms() * 1e3 / per);
            }
            char key[64];
            snprintf(key, sizeof key, "reduce_f32_%s", human(sz).c_str());
            double us = median(t);
            result(key, (double)sz / (us * 1e-6) / 1e9, "GB/s", "%.2f us/call, %d calls x %d samples",
                   us, per, reps);
        }
        L.sync_all();
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
}

#endif
