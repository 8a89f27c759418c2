// The proxy ring with a GPU producer: one kernel thread posts a NOP through
// symm_device_ring.h and waits for its completion, the engine's thread
// (runtime/proxy/engine.c) takes it; beside it, in the same run, the floor
// of the anchors' proxy_bound: a kernel thread stores a word into host-pinned
// memory, a host thread spins on it and stores the ack, the kernel spins on
// that. Rounds alternate; per-iteration times on the GPU's globaltimer,
// median of the last 90 %. Also the streaming rate: one thread, and 32
// blocks at once, posting NOPs back to back (the claim's fetch-add in device
// memory, the slot's 64 bytes to host memory), then waiting for the last.
//
// The rings live where the GPU wiring will put them: slots and header in
// host-pinned memory mapped into the device, the producer index and credit
// cache in device memory (symm__proxy_mem hooks).
//
// Built with the CUDA backend (tests/proxy/meson.build: bench_proxy_ring_gpu,
// suite gpu runs a short one; exit 77 without a GPU), or by hand:
//   nvcc -O2 -std=c++17 -arch=sm_90 -Iinclude -I. -Iabi -Iruntime -Iruntime/proxy
//       -DSYMM_API= -Xcompiler -D_GNU_SOURCE tests/proxy/bench_ring_gpu.cu
//       runtime/proxy/engine.c runtime/base/error.c -o bench_ring_gpu   (one line)
//   ./bench_ring_gpu [iters] [--pin]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>

#include <symm/symm_device_ring.h>

#include "engine.h"

extern "C" const char *symm__last_error(void); /* runtime/base/error.c */

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_) {                                                                          \
            printf("%s: %s\n", #x, cudaGetErrorString(e_));                                \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static bool pin;
static void pin_to(int cpu) {
    if (!pin) return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

// ---- where the rings live ----
static void *alloc_shared(void *, size_t bytes) {
    void *p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable)) return nullptr;
    memset(p, 0, bytes);
    return p;
}
static void free_shared(void *, void *p, size_t) { cudaFreeHost(p); }
static void *alloc_producer(void *, size_t bytes) {
    void *p = nullptr;
    if (cudaMalloc(&p, bytes) || cudaMemset(p, 0, bytes)) return nullptr;
    return p;
}
static void free_producer(void *, void *p, size_t) { cudaFree(p); }
static void *device_view(void *, void *p) {
    void *d = nullptr;
    return cudaHostGetDevicePointer(&d, p, 0) ? nullptr : d;
}
static uint64_t read_producer(void *, const uint64_t *p) {
    uint64_t v = 0;
    cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost);
    return v;
}

static symm_status no_run(void *, const symm_ring_req *, bool *) { return SYMM_ERR_INTERNAL; }
static symm_status no_flush(void *) { return SYMM_SUCCESS; }

// ---- kernels ----
__device__ __forceinline__ uint64_t gtime() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void ring_rtt(symm_ring r, int iters, uint64_t *ns, int *status) {
    int st = symm_ring_check(&r);
    for (int i = 0; i < iters && st == SYMM_SUCCESS; i++) {
        uint64_t t0 = gtime(), t = 0;
        st = symm_ring_nop(&r, &t);
        if (st == SYMM_SUCCESS) st = symm_ring_wait(&r, t);
        ns[i] = gtime() - t0;
    }
    *status = st;
}

// Each block's thread 0 posts n NOPs back to back, then waits for its last.
__global__ void ring_stream(symm_ring r, int n, uint64_t *ns, int *status) {
    if (threadIdx.x) return;
    uint64_t t0 = gtime(), t = 0;
    int st = SYMM_SUCCESS;
    for (int i = 0; i < n && st == SYMM_SUCCESS; i++) st = symm_ring_nop(&r, &t);
    if (st == SYMM_SUCCESS) st = symm_ring_wait(&r, t);
    ns[blockIdx.x] = gtime() - t0;
    if (st) *status = st;
}

__global__ void ping(uint64_t *req, uint64_t *ack, int iters, uint64_t *ns) {
    for (int i = 1; i <= iters; i++) {
        uint64_t t0 = gtime();
        asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(req), "l"((uint64_t)i) : "memory");
        uint64_t v;
        do {
            asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(ack) : "memory");
        } while (v != (uint64_t)i);
        ns[i - 1] = gtime() - t0;
    }
}

static void summarize(std::vector<uint64_t> &h, double *med, double *p10, double *p90) {
    std::vector<uint64_t> s(h.begin() + h.size() / 10, h.end());
    std::sort(s.begin(), s.end());
    *med = s[s.size() / 2] / 1e3;
    *p10 = s[s.size() / 10] / 1e3;
    *p90 = s[s.size() * 9 / 10] / 1e3;
}

int main(int argc, char **argv) {
    int iters = 20000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pin")) pin = true;
        else iters = atoi(argv[i]);
    }
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
        printf("SKIP: no usable GPU\n");
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaSetDeviceFlags(cudaDeviceMapHost));
    symm__proxy_mem mem = {nullptr,     alloc_shared, free_shared,  alloc_producer,
                           free_producer, device_view, read_producer};
    symm__proxy_exec x = {nullptr, no_run, no_flush, nullptr, nullptr, nullptr};
    symm__proxy_opts o = {1, 1024, 50, 100, 0};
    symm__engine *e = nullptr;
    if (symm__engine_create(&o, &x, &mem, &e)) {
        printf("engine: %s\n", symm__last_error());
        return 1;
    }
    pin_to(2);
    if (symm__engine_start(e)) return 1;
    pin_to(0);
    symm_ring r;
    if (symm__engine_ring(e, 0, SYMM_RING_VERSION, &r)) return 1;

    uint64_t *ns, *req, *ack, *dreq, *dack;
    int *status;
    CK(cudaMalloc(&ns, iters * sizeof(uint64_t)));
    CK(cudaMallocManaged(&status, sizeof(int)));
    CK(cudaHostAlloc(&req, 64, cudaHostAllocMapped));
    CK(cudaHostAlloc(&ack, 64, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(&dreq, req, 0));
    CK(cudaHostGetDevicePointer(&dack, ack, 0));
    std::vector<uint64_t> h(iters);
    printf("GPU producer (%s), %d iterations per round, median of the last 90 %%%s\n", prop.name,
           iters, pin ? ", host threads pinned (engine CPU 2, floor's host thread CPU 2)" : "");
    for (int round = 0; round < 3; round++) {
        *status = -1;
        ring_rtt<<<1, 1>>>(r, iters, ns, status);
        CK(cudaDeviceSynchronize());
        if (*status) {
            printf("ring kernel status %d\n", *status);
            return 1;
        }
        CK(cudaMemcpy(h.data(), ns, iters * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        double rm, r10, r90;
        summarize(h, &rm, &r10, &r90);

        *req = 0;
        *ack = 0;
        std::atomic<bool> stop{false};
        std::thread proxy([&] {
            pin_to(2);
            uint64_t last = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                uint64_t v = __atomic_load_n(req, __ATOMIC_ACQUIRE);
                if (v != last) {
                    last = v;
                    __atomic_store_n(ack, v, __ATOMIC_RELEASE);
                }
            }
        });
        ping<<<1, 1>>>(dreq, dack, iters, ns);
        CK(cudaDeviceSynchronize());
        stop = true;
        proxy.join();
        CK(cudaMemcpy(h.data(), ns, iters * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        double fm, f10, f90;
        summarize(h, &fm, &f10, &f90);
        printf("round %d: ring %.3f us (p10 %.3f, p90 %.3f)  floor %.3f us (p10 %.3f, p90 %.3f)  "
               "ratio %.2f\n", round, rm, r10, r90, fm, f10, f90, rm / fm);
    }
    // streaming: 1 block x 20000 NOPs, then 32 blocks x 2000 NOPs at once
    for (int blocks : {1, 32}) {
        const int n = blocks == 1 ? 20000 : 2000;
        *status = 0;
        ring_stream<<<blocks, 32>>>(r, n, ns, status);
        CK(cudaDeviceSynchronize());
        if (*status) {
            printf("stream kernel status %d\n", *status);
            return 1;
        }
        std::vector<uint64_t> b(blocks);
        CK(cudaMemcpy(b.data(), ns, blocks * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        uint64_t longest = *std::max_element(b.begin(), b.end());
        printf("stream: %d block(s) x %d NOPs: %.3f us per request (%.2f M requests/s)\n", blocks,
               n, longest / 1e3 / (double)(blocks * n), blocks * n / (longest / 1e3));
    }
    symm__proxy_stats s;
    symm__engine_stats(e, &s);
    printf("engine: %llu requests, %llu failed\n", (unsigned long long)s.requests,
           (unsigned long long)s.failed);
    if (symm__engine_quiet(e)) {
        printf("quiet: %s\n", symm__last_error());
        return 1;
    }
    symm__engine_destroy(e);
    return s.failed ? 1 : 0;
}
