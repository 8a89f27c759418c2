/*
 * Helpers for the GPU tests (CUDA C++, built by nvcc, run with 2 PEs under
 * symmrun). A test on a machine without a usable GPU prints
 * "SKIP: no usable GPU (<reason>)" and exits 77, which meson counts as a skip.
 */
#ifndef SYMM_GPU_TEST_H
#define SYMM_GPU_TEST_H

#include <cuda_runtime.h>

#include <stdarg.h>
#include <stddef.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symm_test.h"

#define CUDA_OK(call)                                                                   \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess)                                                          \
            TEST_FAIL_("%s -> %s (%s)", #call, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
    } while (0)

static inline void gpu_skip(const char *why) {
    printf("SKIP: no usable GPU (%s)\n", why);
    fflush(stdout);
    exit(77);
}

static int gpu_me, gpu_n;

/* GPU_TEST_TRACE=1: a line on stderr at each step a test marks, so a run that
 * hangs says where (the lent GPU machines have no debugger). */
static inline void gpu_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void gpu_trace(const char *fmt, ...) {
    static int on = -1;
    if (on < 0) on = getenv("GPU_TEST_TRACE") != NULL;
    if (!on) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[trace pe %d] ", gpu_me);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Init on the CUDA backend and make cudart use the same device. */
static inline symm_ctx gpu_test_init(void) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) gpu_skip(cudaGetErrorString(e));
    if (count < 1) gpu_skip("cudaGetDeviceCount found none");
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_CUDA;
    symm_ctx ctx = NULL;
    symm_status st = symm_init(&attr, &ctx);
    if (st == SYMM_ERR_NO_DEVICE) gpu_skip(symm_last_error());
    if (st != SYMM_SUCCESS)
        TEST_FAIL_("symm_init -> %s (%s)", symm_status_string(st), symm_last_error());
    symm_test_pe = gpu_me = symm_my_pe(ctx);
    gpu_n = symm_n_pes(ctx);
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(symm_ctx_query(ctx, &info));
    ASSERT_EQ(info.backend, SYMM_BACKEND_CUDA);
    ASSERT_TRUE(info.device >= 0 && info.device < count);
    CUDA_OK(cudaSetDevice(info.device));
    CUDA_OK(cudaFree(0));
    return ctx;
}

static inline void gpu_test_fini(symm_ctx *ctx) {
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_finalize(ctx));
    ASSERT_TRUE(*ctx == NULL);
    if (gpu_me == 0) printf("PASS\n");
}

/* Local (device) address of a buffer. */
static inline void *gpu_ptr(symm_buf b) {
    void *p = NULL;
    CHECK_OK(symm_buf_ptr(b, &p));
    return p;
}

/* Copy n bytes of this PE's buffer copy to the host / from the host. */
static inline void gpu_read(void *host, symm_buf b, uint64_t byte_off, size_t n) {
    CUDA_OK(cudaMemcpy(host, (char *)gpu_ptr(b) + byte_off, n, cudaMemcpyDeviceToHost));
}
static inline void gpu_write(symm_buf b, uint64_t byte_off, const void *host, size_t n) {
    CUDA_OK(cudaMemcpy((char *)gpu_ptr(b) + byte_off, host, n, cudaMemcpyHostToDevice));
    /* a pageable upload may still be in flight when cudaMemcpy returns, and symm's
     * own streams do not wait for the legacy stream */
    CUDA_OK(cudaDeviceSynchronize());
}

/* Simulated hosts (symmrun --hosts H): each PE gets SYMM_HOST_ID
 * "symmrun-host-<h>" and its rank and count within that host, whose PEs are
 * contiguous ranks. Is pe on this PE's host? (Without --hosts: every PE.) */
static inline bool gpu_same_host(int pe) {
    const char *id = getenv("SYMM_HOST_ID"), *lr = getenv("SYMM_LOCAL_RANK"),
               *ln = getenv("SYMM_LOCAL_N_PES");
    if (!id || strncmp(id, "symmrun-host-", 13) != 0 || !lr || !ln) return true;
    const int first = gpu_me - atoi(lr);
    return pe >= first && pe < first + atoi(ln);
}

/* The route device code takes to each PE, asserted: a PE of another
 * simulated host has no peer_base (device code reaches it through the proxy,
 * so the context must carry rings); a PE of this host is load/store
 * reachable, or (no peer access between the GPUs) reached through the proxy
 * when there is one, else the test skips. base(pe): the device view of PE
 * pe's heap base (NULL: not load/store reachable). Returns the number of PEs
 * reached through the proxy; PE 0 prints the routes. */
template <typename Base>
static inline int gpu_check_routes(const symm_device_ctx &dc, Base base) {
    const bool rings = dc.struct_size >= offsetof(symm_device_ctx, rings) + sizeof dc.rings &&
                       dc.device_abi == SYMM_DEVICE_ABI_VERSION && dc.n_rings > 0 && dc.rings;
    int proxied = 0;
    for (int pe = 0; pe < gpu_n; pe++) {
        const bool ls = base(pe) != NULL;
        if (!gpu_same_host(pe)) {
            if (ls)
                TEST_FAIL_("PE %d is on another simulated host (%s) but has a peer_base: expected "
                           "the proxy route", pe, getenv("SYMM_HOST_ID"));
            if (!rings)
                TEST_FAIL_("PE %d is on another simulated host but the device context has no "
                           "proxy rings (struct_size %u, device_abi %u, n_rings %u)", pe,
                           dc.struct_size, dc.device_abi, dc.n_rings);
        } else if (!ls && !rings) {
            printf("SKIP: no usable GPU (PE %d is not load/store reachable: no P2P)\n", pe);
            fflush(stdout);
            exit(77);
        }
        proxied += !ls;
    }
    if (gpu_me == 0) {
        printf("routes from PE 0:");
        for (int pe = 0; pe < gpu_n; pe++)
            printf(" %d:%s", pe, base(pe) ? "load/store" : "proxy");
        printf(" (%u ring%s)\n", rings ? dc.n_rings : 0u, rings && dc.n_rings == 1 ? "" : "s");
        fflush(stdout);
    }
    return proxied;
}

#endif
