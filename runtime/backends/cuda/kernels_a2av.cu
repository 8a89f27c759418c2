/*
 * symm_alltoallv / symm_alltoallv_on_stream on the CUDA backend: the grid
 * form of the variable-size all-to-all of symm_device_coll.cuh (block 0
 * reads the counts from the peers, every block pulls an equal share of the
 * received bytes), launched cooperatively by cuda_a2av.c, with the
 * runtime's timeout on its two team barriers and the caller's src capacity.
 * A failure other than a barrier's (which sets the error word) leaves its
 * reason in the pinned word for the host (cuda_a2av.c).
 */
#include "kernels_common.cuh"

static_assert(CU_A2AV_DST == SYMM__A2AV_DST && CU_A2AV_PEER_SRC == SYMM__A2AV_PEER_SRC &&
                  CU_A2AV_OWN_SRC == SYMM__A2AV_OWN_SRC,
              "kernel_params.h and symm_device_coll.cuh name the alltoallv reasons alike");

extern "C" __global__ void __launch_bounds__(SYMM__A2AV_THREADS)
    symm_k_alltoallv(const __grid_constant__ symm__ka2av_params p) {
    const int why = symm__alltoallv_grid(p.ctx, p.team, p.dst, p.dst_cap, p.src, p.src_cap,
                                         p.send_counts, p.unit_bytes, p.recv_counts,
                                         p.recv_offsets, p.timeout_ns, p.err);
    if (blockIdx.x == 0 && threadIdx.x == 0 && why != 0 && why != SYMM__A2AV_PEER_FAILED)
        atomicExch_system(p.word, why);
}
