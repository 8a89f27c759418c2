/*
 * Staged reductions of the 8-bit dtypes (int8, uint8): one of the four kernel
 * files of symm_k_streduce_<dtype>_<op>, whose code is in kernels_staged.cuh
 * (kernels.cu says how kernel files are built and loaded).
 */
#include "kernels_staged.cuh"

SYMM__REDUCE_PAIRS_8(SYMM__K_STREDUCE)
