/*
 * Staged reductions of the 32-bit dtypes (int32, uint32, float32): one of the
 * four kernel files of symm_k_streduce_<dtype>_<op>, whose code is in
 * kernels_staged.cuh (kernels.cu says how kernel files are built and loaded).
 */
#include "kernels_staged.cuh"

SYMM__REDUCE_PAIRS_32(SYMM__K_STREDUCE)
