/* The CUDA backend's GPU-memory service for transports (cuda_tpmem.c). */
#ifndef SYMM_CUDA_TPMEM_H
#define SYMM_CUDA_TPMEM_H

#include "internal.h"

/* backend.h's tp_gpu_open. */
symm_status symm__cuda_tp_gpu_open(symm__ctx *ctx, symm__tp_gpu *out);

#endif
