/* The CUDA backend's hooks for transports, on one GPU (no NIC needed):
 * dmabuf_fd exports a dma-buf of a heap chunk (cuMemGetHandleForAddressRange)
 * when the GPU says it can, is_device_mem tells device from host and managed
 * memory, local_copy moves bytes both ways (the staging copies of route.c);
 * the GPU-memory service for staging transports (tp_gpu_open) copies and
 * updates the heap and cuMemAlloc memory.
 * Linked against the runtime's objects (internal hooks); one PE.
 * Exit 77 without a usable GPU. Prints which dma-buf path ran. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_driver.h"
#include "internal.h"
#include "symm_test.h"

const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

/* The service's copies and atomics on the heap (a cuMemMap mapping) and on
 * cuMemAlloc memory d (NULL: not), checked against host data. */
static symm_status service_round(symm__tp_gpu *svc, uint8_t *heap, uint8_t *d, char *host,
                                 const char *label) {
    uint8_t *scratch = d ? d : heap + (4u << 20); /* a GPU buffer of 1 MiB */
    const uint64_t sizes[] = {8, 4096, 65536, 3u << 20}; /* 3 MiB: pieces of the bounce */
    for (int k = 0; k < 4; k++) {
        uint64_t n = sizes[k];
        uint8_t *dst[2] = {heap + 4096, scratch};
        for (int j = 0; j < 2; j++) {
            if (j == 1 && n > (1u << 20)) continue; /* d holds 1 MiB */
            for (uint64_t i = 0; i < n; i++) host[i] = (char)(i * 7 + k * 13 + j + 1);
            CHECK_OK(svc->copy(svc->state, dst[j], host, n));
            char *back = calloc(1, n);
            ASSERT_TRUE(back != NULL);
            CHECK_OK(svc->copy(svc->state, back, dst[j], n));
            for (uint64_t i = 0; i < n; i++) {
                if (back[i] != host[i]) {
                    printf("FAIL: service copy of %llu bytes to %s %s: byte %llu differs\n",
                           (unsigned long long)n, j ? "cuMemAlloc memory" : "the heap", label,
                           (unsigned long long)i);
                    free(back);
                    return SYMM_ERR_INTERNAL;
                }
            }
            free(back);
        }
    }
    /* inside GPU memory: heap -> heap (disjoint and overlapping), heap -> d */
    for (int i = 0; i < 65536; i++) host[i] = (char)(i * 3 + 1);
    CHECK_OK(svc->copy(svc->state, heap + 4096, host, 65536));
    CHECK_OK(svc->copy(svc->state, heap + (1u << 20), heap + 4096, 65536));
    CHECK_OK(svc->copy(svc->state, heap + 4096 + 1000, heap + 4096, 65536)); /* overlapping */
    CHECK_OK(svc->copy(svc->state, scratch, heap + (1u << 20), 65536));
    char *back = malloc(65536 + 1000);
    ASSERT_TRUE(back != NULL);
    CHECK_OK(svc->copy(svc->state, back, scratch, 65536));
    for (int i = 0; i < 65536; i++) ASSERT_EQ(back[i], host[i]);
    CHECK_OK(svc->copy(svc->state, back, heap + 4096 + 1000, 65536));
    for (int i = 0; i < 65536; i++) ASSERT_EQ(back[i], host[i]);
    free(back);
    /* atomics on a heap word: fetch-add, compare-swap, SET (a stream write) */
    uint64_t *w = (uint64_t *)(heap + 64), v = 40, got = 0;
    CHECK_OK(svc->copy(svc->state, w, &v, 8));
    CHECK_OK(svc->atomic(svc->state, w, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, 2, 0, &got));
    ASSERT_EQ(got, 40u);
    CHECK_OK(svc->atomic(svc->state, w, SYMM_DTYPE_UINT64, SYMM_AMO_COMPARE_SWAP, 7, 42, &got));
    ASSERT_EQ(got, 42u);
    CHECK_OK(svc->atomic(svc->state, w, SYMM_DTYPE_UINT64, SYMM_AMO_SET, 99, 0, NULL));
    CHECK_OK(svc->copy(svc->state, &v, w, 8));
    ASSERT_EQ(v, 99u);
    uint32_t *w32 = (uint32_t *)(scratch + 128), v32 = 5;
    uint64_t got32 = 0;
    CHECK_OK(svc->copy(svc->state, w32, &v32, 4));
    CHECK_OK(svc->atomic(svc->state, w32, SYMM_DTYPE_UINT32, SYMM_AMO_FETCH_ADD, 3, 0, &got32));
    ASSERT_EQ(got32, 5u);
    CHECK_OK(svc->copy(svc->state, &v32, w32, 4));
    ASSERT_EQ(v32, 8u);
    printf("gpu_tp_hooks: the service's copies and atomics %s: ok\n", label);
    return SYMM_SUCCESS;
}

/* The GPU-memory service (what tcp stages through). */
static symm_status check_service(symm__ctx *ctx, void *hp, void *d, char *host) {
    ASSERT_TRUE(ctx->ops->tp_gpu_open != NULL);
    symm__tp_gpu svc;
    memset(&svc, 0, sizeof svc);
    CHECK_OK(ctx->ops->tp_gpu_open(ctx, &svc));
    ASSERT_TRUE(svc.heap_is_gpu && svc.copy && svc.atomic);
    ASSERT_TRUE(svc.is_gpu(svc.state, d) && svc.is_gpu(svc.state, hp));
    ASSERT_TRUE(!svc.is_gpu(svc.state, host));
    uint8_t *heap = hp; /* 6 MiB of the heap */
    CHECK_OK(service_round(&svc, heap, d, host, "(idle)"));
    svc.close(svc.state);
    return SYMM_SUCCESS;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    symm_init_attr attr;
    CHECK_OK(symm_init_attr_init(&attr, sizeof attr));
    attr.backend = SYMM_BACKEND_CUDA;
    attr.bootstrap = SYMM_BOOTSTRAP_SINGLE;
    attr.timeout_ms = 30000; /* a service copy the GPU never runs fails, not hangs */
    symm_ctx h = NULL;
    symm_status st = symm_init(&attr, &h);
    if (st == SYMM_ERR_NO_DEVICE) {
        printf("SKIP: no usable GPU (%s)\n", symm__last_error());
        return 77;
    }
    CHECK_OK(st);
    symm__ctx *ctx = NULL;
    CHECK_OK(symm__ctx_get(h, &ctx));
    const symm__backend_ops *o = ctx->ops;
    ASSERT_TRUE(o->dmabuf_fd && o->is_device_mem && o->local_copy);

    /* is_device_mem: heap and cuMemAlloc memory yes; malloc, pinned, managed no */
    CUdeviceptr d = 0;
    void *pinned = NULL;
    ASSERT_EQ(symm__cu.MemAlloc(&d, 1u << 20), CUDA_SUCCESS);
    ASSERT_EQ(symm__cu.MemHostAlloc(&pinned, 4096, 0), CUDA_SUCCESS);
    char *host = malloc(4u << 20);
    ASSERT_TRUE(host != NULL);
    ASSERT_TRUE(o->is_device_mem(ctx, (void *)(uintptr_t)d));
    ASSERT_TRUE(o->is_device_mem(ctx, ctx->heap_base));
    ASSERT_TRUE(!o->is_device_mem(ctx, host));
    ASSERT_TRUE(!o->is_device_mem(ctx, pinned));

    /* local_copy: host -> device -> host */
    for (int i = 0; i < (1 << 20); i++) host[i] = (char)(i * 11 + 5);
    CHECK_OK(o->local_copy(ctx, (void *)(uintptr_t)d, host, 1u << 20));
    memset(host, 0, 1u << 20);
    CHECK_OK(o->local_copy(ctx, host, (void *)(uintptr_t)d, 1u << 20));
    for (int i = 0; i < (1 << 20); i++) ASSERT_EQ(host[i], (char)(i * 11 + 5));

    /* dmabuf_fd of the first heap chunk: a descriptor when the GPU exports
     * dma-bufs, else -1 (the transport then tries nvidia-peermem). */
    int can = 0;
    CUdevice dev;
    ASSERT_EQ(symm__cu.DeviceGet(&dev, ctx->cfg.device), CUDA_SUCCESS);
    symm__cu.DeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
    int fd = o->dmabuf_fd(ctx, 0, ctx->cfg.heap_chunk);
    printf("gpu_tp_hooks: DMA_BUF_SUPPORTED=%d, cuMemGetHandleForAddressRange %s, fd %d\n", can,
           symm__cu.MemGetHandleForAddressRange ? "present" : "missing", fd);
    if (can && symm__cu.MemGetHandleForAddressRange) {
        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(fcntl(fd, F_GETFD) != -1);
        close(fd);
    } else {
        ASSERT_EQ(fd, -1);
    }

    symm_buf hb = NULL;
    void *hp = NULL;
    CHECK_OK(symm_buf_alloc(h, SYMM_DTYPE_UINT8, 6u << 20, &hb));
    CHECK_OK(symm_buf_ptr(hb, &hp));
    CHECK_OK(check_service(ctx, hp, (void *)(uintptr_t)d, host));
    CHECK_OK(symm_buf_free(hb));

    symm__cu.MemFree(d);
    symm__cu.MemFreeHost(pinned);
    free(host);
    CHECK_OK(symm_finalize(&h));
    printf("gpu_tp_hooks: all passed\n");
    return 0;
}
