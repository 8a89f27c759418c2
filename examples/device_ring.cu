/*
 * device_ring: GPU-initiated communication with the header-only device API.
 *
 * Every PE (one per GPU) runs one kernel that puts a message into the next
 * PE's buffer with put_signal, waits for the message from the previous PE,
 * and checks it — no host involvement between init and the check.
 *
 *   symmrun -n 2 ./device_ring          (CUDA backend, 2 GPUs)
 *
 * Build: nvcc -std=c++17 device_ring.cu -lsymm (no -rdc needed).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include <symm/symm.h>
#include <symm/symm_device.cuh>

#define N 4096 /* ints per message */

__global__ void ring(symm_device_ctx c, int *msg, uint64_t *sig, int *errors) {
    int me = c.my_pe, next = (me + 1) % c.n_pes, prev = (me + c.n_pes - 1) % c.n_pes;
    __shared__ int out[N];
    for (int i = threadIdx.x; i < N; i += blockDim.x) out[i] = me * 1000000 + i;
    __syncthreads();
    /* data to the next PE, then signal 1 there once the data is visible */
    symm_dev_putmem_signal_block(c, msg, out, sizeof out, sig, 1, SYMM_SIGNAL_SET, next);
    if (threadIdx.x == 0) symm_dev_signal_wait_until(sig, SYMM_CMP_EQ, 1);
    __syncthreads();
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        if (((volatile int *)msg)[i] != prev * 1000000 + i) atomicAdd(errors, 1);
}

static int fail(const char *what, symm_status st) {
    fprintf(stderr, "%s: %s (%s)\n", what, symm_status_string(st), symm_last_error());
    return 1;
}

int main(void) {
    symm_init_attr attr;
    SYMM_INIT_ATTR_INIT(&attr);
    attr.backend = SYMM_BACKEND_CUDA;
    symm_ctx ctx;
    symm_status st = symm_init(&attr, &ctx);
    if (st == SYMM_ERR_NO_DEVICE) {
        printf("SKIP: no usable GPU (%s)\n", symm_last_error());
        return 77;
    }
    if (st) return fail("symm_init", st);
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    symm_ctx_query(ctx, &info);
    cudaSetDevice(info.device); /* cudart on the GPU symm chose */

    symm_buf msg, sig;
    if ((st = symm_buf_alloc(ctx, SYMM_DTYPE_INT32, N, &msg))) return fail("alloc", st);
    if ((st = symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 1, &sig))) return fail("alloc", st);
    void *msg_p, *sig_p;
    symm_buf_ptr(msg, &msg_p);
    symm_buf_ptr(sig, &sig_p);
    symm_device_ctx dctx;
    memset(&dctx, 0, sizeof dctx);
    dctx.struct_size = sizeof dctx;
    if ((st = symm_device_ctx_get(ctx, &dctx))) return fail("symm_device_ctx_get", st);
    int next = (dctx.my_pe + 1) % dctx.n_pes;
    void *next_msg = NULL;
    symm_buf_peer_ptr(msg, next, &next_msg);
    if (!next_msg) {
        printf("SKIP: no usable GPU (PE %d is not load/store reachable)\n", next);
        return 77;
    }
    int *errors;
    cudaMalloc(&errors, sizeof *errors);
    cudaMemset(errors, 0, sizeof *errors);

    ring<<<1, 512>>>(dctx, (int *)msg_p, (uint64_t *)sig_p, errors);
    cudaError_t ce = cudaDeviceSynchronize();
    int h = -1;
    cudaMemcpy(&h, errors, sizeof h, cudaMemcpyDeviceToHost);
    printf("[pe %d/%d] ring: %s, %d bad elements\n", dctx.my_pe, dctx.n_pes,
           ce == cudaSuccess ? "kernel ok" : cudaGetErrorString(ce), h);
    cudaFree(errors);
    symm_barrier_all(ctx);
    symm_buf_free(sig);
    symm_buf_free(msg);
    symm_finalize(&ctx);
    return ce == cudaSuccess && h == 0 ? 0 : 1;
}
