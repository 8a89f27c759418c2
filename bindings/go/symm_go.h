/* C helpers of the Go package, included by every file that imports "C". */
#ifndef SYMM_GO_H
#define SYMM_GO_H
#include <stdint.h>
#include <stdlib.h>
#include <symm/symm.h>

/* An address that Go holds as a uintptr (a CUDA stream, device memory) as the
 * pointer C expects, converted here so Go code never turns an integer into an
 * unsafe.Pointer. */
static inline void *symm_go_addr(uintptr_t a) { return (void *)a; }

/* The stream-ordered entries with the stream as an integer. A CUDA stream may
 * be a small non-pointer value (CU_STREAM_LEGACY is 1, CU_STREAM_PER_THREAD 2)
 * that Go must never hold in a pointer-typed variable (the garbage collector
 * rejects such "pointers" on a goroutine's stack), so Go passes a uintptr_t and
 * the conversion happens here. One line per entry, as the ABI test expects it
 * from abi/symm-abi.json. */
static inline symm_status symm_go_put_on_stream(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, int32_t pe, uintptr_t stream) { return symm_put_on_stream(dst, dst_index, src, nelems, pe, (symm_stream_t)stream); }
static inline symm_status symm_go_get_on_stream(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe, uintptr_t stream) { return symm_get_on_stream(dst, src, src_index, nelems, pe, (symm_stream_t)stream); }
static inline symm_status symm_go_put_nbi_on_stream(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, int32_t pe, uintptr_t stream) { return symm_put_nbi_on_stream(dst, dst_index, src, nelems, pe, (symm_stream_t)stream); }
static inline symm_status symm_go_get_nbi_on_stream(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe, uintptr_t stream) { return symm_get_nbi_on_stream(dst, src, src_index, nelems, pe, (symm_stream_t)stream); }
static inline symm_status symm_go_p_on_stream(symm_buf dst, uint64_t index, const void *value, int32_t pe, uintptr_t stream) { return symm_p_on_stream(dst, index, value, pe, (symm_stream_t)stream); }
static inline symm_status symm_go_putmem_on_stream(symm_ctx ctx, void *dst_sym, const void *src, uint64_t nbytes, int32_t pe, uintptr_t stream) { return symm_putmem_on_stream(ctx, dst_sym, src, nbytes, pe, (symm_stream_t)stream); }
static inline symm_status symm_go_getmem_on_stream(symm_ctx ctx, void *dst, const void *src_sym, uint64_t nbytes, int32_t pe, uintptr_t stream) { return symm_getmem_on_stream(ctx, dst, src_sym, nbytes, pe, (symm_stream_t)stream); }
static inline symm_status symm_go_put_signal_on_stream(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe, uintptr_t stream) { return symm_put_signal_on_stream(dst, dst_index, src, nelems, sig, sig_index, signal, sig_op, pe, (symm_stream_t)stream); }
static inline symm_status symm_go_signal_op_on_stream(symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe, uintptr_t stream) { return symm_signal_op_on_stream(sig, sig_index, signal, sig_op, pe, (symm_stream_t)stream); }
static inline symm_status symm_go_signal_wait_until_on_stream(symm_buf sig, uint64_t sig_index, uint32_t cmp, uint64_t value, uintptr_t stream) { return symm_signal_wait_until_on_stream(sig, sig_index, cmp, value, (symm_stream_t)stream); }
static inline symm_status symm_go_quiet_on_stream(symm_ctx ctx, uintptr_t stream) { return symm_quiet_on_stream(ctx, (symm_stream_t)stream); }
static inline symm_status symm_go_barrier_all_on_stream(symm_ctx ctx, uintptr_t stream) { return symm_barrier_all_on_stream(ctx, (symm_stream_t)stream); }
static inline symm_status symm_go_barrier_on_stream(symm_team team, uintptr_t stream) { return symm_barrier_on_stream(team, (symm_stream_t)stream); }
static inline symm_status symm_go_team_sync_on_stream(symm_team team, uintptr_t stream) { return symm_team_sync_on_stream(team, (symm_stream_t)stream); }
static inline symm_status symm_go_broadcast_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t root, uintptr_t stream) { return symm_broadcast_on_stream(team, dst, dst_index, src, src_index, nelems, root, (symm_stream_t)stream); }
static inline symm_status symm_go_fcollect_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uintptr_t stream) { return symm_fcollect_on_stream(team, dst, dst_index, src, src_index, nelems, (symm_stream_t)stream); }
static inline symm_status symm_go_alltoall_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uintptr_t stream) { return symm_alltoall_on_stream(team, dst, dst_index, src, src_index, nelems, (symm_stream_t)stream); }
static inline symm_status symm_go_alltoallv_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, uint64_t dst_nelems, symm_buf src, uint64_t src_index, uint64_t src_nelems, symm_buf send_counts, uint64_t send_index, symm_buf recv_counts, uint64_t recv_index, uintptr_t stream) { return symm_alltoallv_on_stream(team, dst, dst_index, dst_nelems, src, src_index, src_nelems, send_counts, send_index, recv_counts, recv_index, (symm_stream_t)stream); }
static inline symm_status symm_go_reduce_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op, uintptr_t stream) { return symm_reduce_on_stream(team, dst, dst_index, src, src_index, nelems, op, (symm_stream_t)stream); }
static inline symm_status symm_go_reducescatter_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op, uintptr_t stream) { return symm_reducescatter_on_stream(team, dst, dst_index, src, src_index, nelems, op, (symm_stream_t)stream); }
#endif
