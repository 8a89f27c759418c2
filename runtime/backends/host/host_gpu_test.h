/*
 * A test hook of the host backend (host.c): with SYMM_TEST_HOST_GPU_MEM=1 in
 * the environment its GPU-memory service for transports (backend.h,
 * tp_gpu_open) says the heap is GPU memory, so a staging transport (tcp)
 * must reach it through the service only, on a machine without a GPU:
 *  - the heap is registered as SYMM_TP_MEM_CUDA at an address that faults
 *    (the real one with bit 62 set: not canonical on x86-64, EFAULT for a
 *    socket call), which only the service turns back;
 *  - copies and atomics are plain memmove / CPU atomics that count what
 *    they move in a window of heap offsets the test sets, separately for
 *    the target side (addresses the transport got from mem_add) and the
 *    initiator side (this PE's own heap pointers it passed to a transport).
 * SYMM_TEST_HOST_GPU_FAIL_BYTES=N makes copies fail with SYMM_ERR_CUDA (the
 * error paths of a transport's staging): of exactly N bytes on the target
 * side, of N + 1 bytes on the initiator side.
 * Tests that link the runtime's objects read the counts
 * (tests/transport/test_tcp_gpumem.c).
 */
#ifndef SYMM_HOST_GPU_TEST_H
#define SYMM_HOST_GPU_TEST_H

#include <stdint.h>

typedef struct symm__host_gpu_stats {
    uint64_t tgt_in, tgt_out;   /* bytes copied into / out of the window, target side    */
    uint64_t loc_in, loc_out;   /* the same for this PE's own heap pointers (initiator)  */
    uint64_t tgt_amo, loc_amo;  /* atomics on a word of the window                       */
    uint64_t calls;             /* every copy and atomic the service ran                 */
} symm__host_gpu_stats;

/* Count from now on what touches heap offsets [off, off + len); zeroes the counts. */
void symm__host_gpu_test_window(uint64_t off, uint64_t len);
void symm__host_gpu_test_stats(symm__host_gpu_stats *out);

#endif
