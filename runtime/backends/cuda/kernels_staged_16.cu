/*
 * Staged reductions of the 16-bit dtypes (int16, uint16, float16, bfloat16):
 * one of the four kernel files of symm_k_streduce_<dtype>_<op>, whose code is
 * in kernels_staged.cuh (kernels.cu says how kernel files are built and
 * loaded).
 */
#include "kernels_staged.cuh"

SYMM__REDUCE_PAIRS_16(SYMM__K_STREDUCE)
