/*
 * Every producer function of symm_device_ring.h called from one function:
 * compiled (not run) as C99, C11, C++17 and CUDA (a __global__ kernel), with
 * warnings as errors, by compile_ring.py (suite proxy). The same source in
 * every language, so a construct one of them rejects is caught here.
 */
#include <symm/symm_device_ring.h>

#ifdef __CUDACC__
#define RING_KERNEL extern "C" __global__ void
#else
#define RING_KERNEL void
#endif

RING_KERNEL ring_calls(symm_ring r, uint64_t *local, int32_t *status);

RING_KERNEL ring_calls(symm_ring r, uint64_t *local, int32_t *status) {
    uint64_t t = 0;
    symm_status st = symm_ring_check(&r);
    if (st == SYMM_SUCCESS) st = symm_ring_put(&r, 1, 256, local, 64, &t);
    if (st == SYMM_SUCCESS) st = symm_ring_get(&r, local + 8, 1, 256, 64, &t);
    if (st == SYMM_SUCCESS)
        st = symm_ring_amo(&r, 1, 512, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, 1, 0, local + 16, &t);
    if (st == SYMM_SUCCESS)
        st = symm_ring_amo(&r, 1, 520, SYMM_DTYPE_INT32, SYMM_AMO_COMPARE_SWAP, 5, 4, local + 17,
                           &t);
    if (st == SYMM_SUCCESS)
        st = symm_ring_put_signal(&r, 1, 256, local, 64, 1024, 1, SYMM_SIGNAL_ADD, &t);
    if (st == SYMM_SUCCESS) st = symm_ring_fence(&r, &t);
    if (st == SYMM_SUCCESS) st = symm_ring_nop(&r, &t);
    if (st == SYMM_SUCCESS) st = symm_ring_wait(&r, t);
    if (st == SYMM_SUCCESS && !symm_ring_test(&r, t)) st = SYMM_ERR_INTERNAL;
    if (st == SYMM_SUCCESS) st = symm_ring_quiet(&r);
    if (st == SYMM_SUCCESS) st = symm_ring_alive(&r);
    if (st == SYMM_SUCCESS) st = symm_ring_error(&r, &t);
    *status = st;
}
