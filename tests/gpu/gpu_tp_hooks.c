/* The CUDA backend's hooks for transports, on one GPU (no NIC needed):
 * dmabuf_fd exports a dma-buf of a heap chunk (cuMemGetHandleForAddressRange)
 * when the GPU says it can, is_device_mem tells device from host and managed
 * memory, local_copy moves bytes both ways (the staging copies of route.c).
 * Linked against the runtime's objects (internal hooks); one PE.
 * Exit 77 without a usable GPU. Prints which dma-buf path ran. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_driver.h"
#include "internal.h"
#include "symm_test.h"

const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

int main(void) {
    symm_init_attr attr;
    CHECK_OK(symm_init_attr_init(&attr, sizeof attr));
    attr.backend = SYMM_BACKEND_CUDA;
    attr.bootstrap = SYMM_BOOTSTRAP_SINGLE;
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
    char *host = malloc(1u << 20);
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

    symm__cu.MemFree(d);
    symm__cu.MemFreeHost(pinned);
    free(host);
    CHECK_OK(symm_finalize(&h));
    printf("gpu_tp_hooks: all passed\n");
    return 0;
}
