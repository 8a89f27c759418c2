/*
 * Shared by bench_symm.cu and bench_nvshmem.cu: timing, statistics, data
 * patterns and the result lines that compare.py reads. Both programs measure
 * the same things the same way (PE 0 -> PE 1, CUDA events on one non-blocking
 * stream, medians); only the library calls differ.
 *
 * Result lines (PE 0, stdout and $BENCH_RESULTS): RESULT <key> <value> <unit> [note]
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

#endif
