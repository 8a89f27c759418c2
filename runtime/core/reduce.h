/* Host reductions (reduce.c), used by the generic collectives (api/coll.c). */
#ifndef SYMM_CORE_REDUCE_H
#define SYMM_CORE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include <symm/symm.h>

/* acc (n accumulators of the dtype's accumulator type: float for the 16-bit
 * floats) op= src (n elements of dtype). dtype and op are validated. */
void symm__red_apply(uint32_t dtype, uint32_t op, void *acc, const void *src, size_t n);
/* FLOAT16/BFLOAT16: float accumulators <-> 16-bit elements. */
void symm__half_load(uint32_t dtype, float *acc, const uint16_t *src, size_t n);
void symm__half_store(uint32_t dtype, uint16_t *out, const float *acc, size_t n);

#endif
