/*
 * Helpers for the GPU tests (CUDA C++, built by nvcc, run with 2 PEs under
 * symmrun). A test on a machine without a usable GPU prints
 * "SKIP: no usable GPU (<reason>)" and exits 77, which meson counts as a skip.
 */
#ifndef SYMM_GPU_TEST_H
#define SYMM_GPU_TEST_H

#include <cuda_runtime.h>

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

#endif
