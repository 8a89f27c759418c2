/*
 * CUDA backend: the numbers it was tuned with. The measured defaults that
 * setup reads (SYMM_CUDA_* override them) and launch shapes that were
 * measured, each with what the measurement found and the section of
 * docs/GPU-RESULTS.md that holds its figures; and the choice of collective
 * algorithm (cuda_tuning.c), which holds every threshold the choice
 * compares against. Included by cuda.c and the collective files; includes
 * only cuda_internal.h.
 */
#ifndef SYMM_CUDA_TUNING_H
#define SYMM_CUDA_TUNING_H

#include "cuda_internal.h"

/* RMA (cuda_rma.c) */
/* Stream puts from GPU memory of CU_COPY_KERNEL_MIN..MAX bytes run as a copy
 * kernel, others on the copy engine (SYMM_CUDA_COPY_KERNEL_MIN/_MAX override;
 * MAX=0 means copy engine only; without PDL the default is 0). Measured back
 * to back on 2 x H200 (tests/perf/probe_cuda.cu and bench_symm): a
 * PDL-launched copy kernel beats the copy engine from 128 KiB to 1 MiB;
 * below, its host cost (which varies between machines) eats the gain, and an
 * isolated small put + stream synchronize is slower as a kernel; above, the
 * gain shrinks, and from 16 MiB up the copy engine is faster
 * (docs/GPU-RESULTS.md "2026-11-21: PDL, the stream barrier, the copy
 * kernel"). So 128 KiB - 1 MiB are kernels; the rest stays on the copy
 * engine, which also leaves the SMs to compute that overlaps communication.
 * Gets always use the copy engine. */
#define CU_COPY_KERNEL_MIN (128u << 10)
#define CU_COPY_KERNEL_MAX (1u << 20)
/* Opt-in (SYMM_CUDA_STREAM_MEMOPS=1): EQ signal waits on a stream use
 * cuStreamWaitValue64 instead of a kernel. It needs no SM, but a wait on a
 * dead peer never gives up (the kernel form times out), so it is off by
 * default. */

/* Collectives (cuda_coll.c and the forms) */
/* Threads a block of the pushing all-gather / all-to-all kernel, one block a
 * SM (cuda_coll_barrier.c; docs/DECISIONS.md "Barrier algorithms"): on 4 x
 * H200 a large all-gather was much faster this way than with blocks of 256,
 * 2 a SM; more writers than that into the links measured slower still
 * (docs/GPU-RESULTS.md "2026-11-27: the push layout"). */
#define CU_PUSH_THREADS 1024u
/* A block moves at least this many bytes of a slice per step (fewer blocks
 * for smaller slices); SYMM_CUDA_STAGED_CHUNK overrides it for experiments. */
#define CU_ST_CHUNK_DEFAULT (8u << 10)
/* Steps a call aims for where pieces of the chunk allow (fewer blocks, more
 * steps): 1, as every step costs a fence and flag round trip (2 and 4 were
 * always slower on 2 and 4 x H200: docs/GPU-RESULTS.md "2026-11-27: staged
 * reductions"); SYMM_CUDA_STAGED_STEPS for experiments. */
#define CU_ST_STEPS 1
/* The peer form (kernels_staged.cuh symm__st_peer: the call within the
 * staging, and an all-reduce in halves on 2 PEs or any reduction on more;
 * symm__st_peer_plan): a block per CU_ST_PEER_CHUNK
 * bytes up to one a SM; a reduce-scatter takes one step, an all-reduce one
 * per CU_ST_PEER_CHUNK of each block's share, up to SYMM__ST_PEER_STEPS (3),
 * so that its results start out while pieces still come in. In graphs on
 * 4 x H200 the all-reduce of 16 MiB was fastest in 3 steps of 44 blocks a
 * peer, of 8 MiB in 2, and the reduce-scatter in 1 (docs/GPU-RESULTS.md
 * "2026-11-27: the peer form on 3 and 4 GPUs"; its pieces are whole lines
 * since: kernel_params.h SYMM__ST_ALIGN); on 2 x H200 the all-reduce of
 * 16 MiB in 2 steps and of 8 MiB in 1, and pieces of 8, 16 or 64 KiB were
 * no faster than these (docs/GPU-RESULTS.md "2026-11-27: the peer form on 2
 * GPUs"). Why the peer form: docs/DECISIONS.md "Staged reductions".
 * SYMM_CUDA_STAGED_CHUNK and _STEPS, where given, apply. */
#define CU_ST_PEER_CHUNK (32u << 10)
/* Landing (kernels_staged.cuh "Landing"): on 2 PEs, out of place, the steps
 * beyond what the staging holds go straight into the peer's dst, pieces of up
 * to this many bytes a block, with no credit to wait for. 64 KiB was best on
 * 2 x H200 of pieces from 16 to 128 KiB (docs/GPU-RESULTS.md "2026-11-27:
 * landing and swap"); SYMM_CUDA_STAGED_LAND (0: never) for experiments. */
#define CU_ST_LAND_DEFAULT (64u << 10)
/* A landing call's first steps go through the staging (so that small calls
 * never wait for the peer's hello), at most this many bytes of it: the 4
 * MiB a sender that landing was tuned with. The larger staging of 2-PE hosts
 * (16 MiB, for the peer form) staged whole reduce-scatters of up to 16 MiB a
 * pair instead, and landing measured faster than staging before (the
 * staging's two parities double its footprint in L2; docs/DECISIONS.md
 * "Staged reductions"; docs/GPU-RESULTS.md "2026-11-27: the peer form on 2
 * GPUs"). */
#define CU_ST_LAND_STAGED_MAX (4u << 20)
/* The in-place form of 2 PEs (kernels_staged.cuh "Swap") keeps two pieces of a
 * block in shared memory: pieces of up to this many bytes (and half what a
 * block may opt in to, less 2 KiB). 96 KiB was best on 2 x H200: smaller
 * pieces were slower, larger ones no faster (docs/GPU-RESULTS.md
 * "2026-11-27: landing and swap"); SYMM_CUDA_STAGED_SWAP (0: never) for
 * experiments. */
#define CU_ST_SWAP_DEFAULT (96u << 10)
/* LL128 reductions (kernels_ll128.cu; choice in l8_choose): each staged
 * sender region holds, after its staging, the lines of SYMM_CUDA_LL128_BYTES
 * of payload (default 2 MiB with up to 4 PEs a host, 1 MiB with more: 17,
 * 51 and 60 MiB more scratch a GPU with 2, 4 and 8 PEs; 0: none). */
#define CU_L8_BYTES_DEFAULT (2u << 20)
#define CU_L8_THREADS 512u
/* All-reduce on more than 2 PEs up to this many bytes: one shot (every PE
 * sends its whole vector to every peer and reduces all of it), above it a
 * slice each, reduced and stored to every PE. In graphs on 4 x H200 one shot
 * was the faster at 256 KiB, sliced at 512 KiB (docs/GPU-RESULTS.md
 * "2026-11-27: LL128 reductions"). SYMM_CUDA_LL128_ONESHOT. */
#define CU_L8_ONESHOT_DEFAULT (256u << 10)
/* The copy-engine reduce-scatter and all-reduce (kernels_ce.cu; coll_ce,
 * ce_choose): the
 * world team's CE area, after the staged slots, holds a header and ll_pes - 1
 * slots of SYMM_CUDA_CE_BYTES (default CU_CE_BYTES_DEFAULT with 3 or 4 PEs a
 * host, none otherwise: 192 MiB of scratch a GPU with 4 PEs); a call moves at
 * most that much a pair in one round, and each further round waits for the
 * last (on 4 x H200 a 256 MiB call in a graph was faster with 64 MiB slots,
 * one round, than with 32 MiB, two: docs/GPU-RESULTS.md "2026-11-28: the
 * copy-engine reduce-scatter").
 * The last phase goes in CU_CE_PIECES copies (SYMM_CUDA_CE_PIECES, 1-7), so
 * that only the last piece's reduction follows the last byte. */
#define CU_CE_BYTES_DEFAULT (64u << 20)
#define CU_CE_PIECES 4u
/* Cached graphs of the copy-engine forms (coll_ce_cached): a call of a
 * shape seen before (kind, dtype, op, offsets, count) on a stream that is
 * not being captured replays that shape's CUDA graph, captured at its second
 * call, in one cuGraphLaunch, instead of enqueuing its forks, copies, stream
 * writes, kernels and join one by one: on 2 x H200 a replay took roughly half
 * the host time of the same call enqueued piece by piece (the driver still
 * issues each copy and stream write; docs/DECISIONS.md "Copy engines";
 * docs/GPU-RESULTS.md "2026-11-28: cached graphs of the copy-engine forms").
 * SYMM_CUDA_CE_GRAPHS shapes a PE (least recently used out; 0: none). */
#define CU_CE_GRAPHS_DEFAULT 64u
#define CU_CE_GRAPHS_MAX 4096u

/* cuda_tuning.c: the choice of algorithm */

/* Largest payload per pair of PEs (bytes PE i sends PE j) for which "auto"
 * picks the one-shot LL algorithm, by team size and kind (copy: all-gather,
 * all-to-all); the default SYMM_CUDA_LL_BYTES holds the largest. */
uint64_t symm__cu_ll_threshold(int32_t n, bool copy);
/* The algorithm of a collective other than alltoallv: CU_ALGO_LL, _LL128
 * (*l8: its shape), _CE, _STAGED (whose launch may still find too many
 * steps and leave the call to the barrier algorithms) or _BASE (the
 * barrier algorithms); *why says why, for the trace. */
int symm__cu_coll_choose(const cu_state *s, const symm__coll *c, symm__l8_shape *l8,
                         const char **why);
/* Whether alltoallv takes the LL form on this team: *alone, a team of one
 * PE (no lines); else *thr, the largest piece a pair sends inline before
 * the lines' room caps it; *why for the trace. */
bool symm__cu_a2av_ll_choose(const cu_state *s, const symm__team *team, bool *alone,
                             uint64_t *thr, const char **why);
/* The staged form's variants (cuda_coll_staged.c): landing in the peer's
 * dst, the in-place swap of 2 PEs, the peer form's shape for slices of up
 * to len bytes, and an all-reduce on 2 PEs in halves (the peer form). */
bool symm__cu_st_can_land(const cu_state *s, const symm__coll *c);
bool symm__cu_st_can_swap(const cu_state *s, const symm__coll *c);
bool symm__cu_st_peer_shape(const cu_state *s, uint64_t len, int32_t n, bool gather,
                            symm__st_plan *plan);
bool symm__cu_st_halves(const cu_state *s, const symm__coll *c, symm__st_plan *plan);
/* Whether the barrier algorithm's all-gather / all-to-all pulls rather than
 * pushes (SYMM_CUDA_COLL_COPY, else by size and team). */
bool symm__cu_copy_pulls(const cu_state *s, const symm__coll *c, int32_t n);

#endif /* SYMM_CUDA_TUNING_H */
