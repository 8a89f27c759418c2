/*
 * CUDA backend: host-initiated RMA and atomics on the internal stream, and
 * the stream-ordered puts, gets, signals and waits (cuda_internal.h lists
 * the backend's files).
 */
#include <symm/symm_device_ring.h>

#include "cuda_internal.h"

/* ------------------------------------------------------------------------ */
/* Host-initiated RMA, atomics, ordering                                     */
/* ------------------------------------------------------------------------ */

/* Copy n bytes on the internal stream. cuMemcpy on overlapping ranges is
 * undefined (a same-PE put/get whose local side lies in the heap): those go
 * through a temporary device buffer, like memmove. */
symm_status symm__cu_copy_async(cu_state *s, CUdeviceptr dst, CUdeviceptr src, uint64_t n) {
    if (!(dst < src + n && src < dst + n) || dst == src) {
        if (dst != src) SYMM__CU(MemcpyAsync(dst, src, n, s->s_int));
        return SYMM_SUCCESS;
    }
    CUdeviceptr tmp = 0;
    SYMM__CU(MemAlloc(&tmp, n));
    CUresult r = symm__cu.MemcpyAsync(tmp, src, n, s->s_int);
    if (r == CUDA_SUCCESS) r = symm__cu.MemcpyAsync(dst, tmp, n, s->s_int);
    CUresult r2 = symm__cu.StreamSynchronize(s->s_int);
    symm__cu.MemFree(tmp);
    if (r != CUDA_SUCCESS) return symm__cu_fail(r, "cuMemcpyAsync(overlapping same-PE copy)");
    if (r2 != CUDA_SUCCESS) return symm__cu_fail(r2,
                                                 "cuStreamSynchronize(overlapping same-PE copy)");
    return SYMM_SUCCESS;
}

symm_status symm__cuda_put(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src, uint64_t n,
                           uint32_t flags) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return symm__cu_unreachable(ctx, pe);
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    SYMM_TRY(symm__cu_copy_async(s, (CUdeviceptr)(uintptr_t)(b + off), (CUdeviceptr)(uintptr_t)src,
                                 n));
    if (flags & SYMM__NBI) {
        atomic_fetch_add_explicit(&s->nbi_posted, 1, memory_order_release);
        return SYMM_SUCCESS;
    }
    return symm__cu_finish(s, NULL);
}

symm_status symm__cuda_get(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                           uint32_t flags) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return symm__cu_unreachable(ctx, pe);
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    SYMM_TRY(symm__cu_copy_async(s, (CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)(b + off),
                                 n));
    if (flags & SYMM__NBI) {
        atomic_fetch_add_explicit(&s->nbi_posted, 1, memory_order_release);
        return SYMM_SUCCESS;
    }
    return symm__cu_finish(s, NULL);
}

static uint32_t amo_size(uint32_t dtype) {
    switch (dtype) {
    case SYMM_DTYPE_INT32:
    case SYMM_DTYPE_UINT32:
    case SYMM_DTYPE_FLOAT32: return 4;
    case SYMM_DTYPE_INT64:
    case SYMM_DTYPE_UINT64:
    case SYMM_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

symm_status symm__cuda_atomic(symm__ctx *ctx, int32_t pe, uint64_t off, uint32_t dtype,
                              uint32_t op, const void *value, const void *compare,
                              void *fetched) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return symm__cu_unreachable(ctx, pe);
    uint32_t size = amo_size(dtype);
    if (!size) return symm__err(SYMM_ERR_INVALID_ARG, "atomics need a 4- or 8-byte dtype");
    if (op > SYMM_AMO_XOR) return symm__err(SYMM_ERR_INVALID_ARG, "unknown atomic op %u", op);
    uint64_t v = 0, c = 0;
    if (value) memcpy(&v, value, size);
    if (compare) memcpy(&c, compare, size);
    SYMM_TRY(cu_enter(s));
    void *addr = b + off;
    uint64_t *out = &s->pinned[0];
    void *args[] = {&addr, &size, &op, &v, &c, &out};
    pthread_mutex_lock(&s->amo_lock);
    symm_status st = symm__cu_launch(s, s->f_amo, "cuLaunchKernel(symm_k_amo)", 1, 1, 1, s->s_int,
                                     args);
    if (st == SYMM_SUCCESS) st = symm__cu_finish(s, NULL);
    uint64_t r = *(volatile uint64_t *)out;
    pthread_mutex_unlock(&s->amo_lock);
    if (st == SYMM_SUCCESS && fetched) memcpy(fetched, &r, size); /* little-endian */
    return st;
}

/* Blocking host calls finish the internal stream before they return, so only
 * nbi operations can be outstanding: with none, quiet is the error-word check
 * alone (no driver call). */
symm_status symm__cuda_quiet(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    if (!cu_nbi_outstanding(s)) return symm__cu_check_err_word(s);
    SYMM_TRY(cu_enter(s));
    return symm__cu_finish(s, NULL);
}

symm_status symm__cuda_fence(symm__ctx *ctx) {
    (void)ctx; /* host operations share one in-order stream: already ordered */
    return SYMM_SUCCESS;
}

symm_status symm__cuda_memset0(symm__ctx *ctx, uint64_t off, uint64_t n) {
    cu_state *s = ctx->backend;
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    SYMM__CU(MemsetD8Async((CUdeviceptr)(uintptr_t)(ctx->heap_base + off), 0, n, s->s_int));
    SYMM_TRY(symm__cu_scratch_zero_slots(ctx, s, off, n));
    return symm__cu_finish(s, NULL);
}

/* ------------------------------------------------------------------------ */
/* Stream-ordered point-to-point                                             */
/* ------------------------------------------------------------------------ */

/* Where local memory p is, as kernels on our device see it: CU_MEM_GPU (our
 * GPU's memory, *dev its address; our heap needs no driver query),
 * CU_MEM_PINNED (host memory mapped for the device, *dev its device address)
 * or CU_MEM_OTHER (pageable host memory, another GPU's: copy engine only). */
enum { CU_MEM_OTHER, CU_MEM_PINNED, CU_MEM_GPU };
static int mem_kind(const symm__ctx *ctx, const cu_state *s, const void *p, CUdeviceptr *dev) {
    uintptr_t a = (uintptr_t)p;
    if (a >= (uintptr_t)ctx->heap_base && a < (uintptr_t)ctx->heap_base + s->span) {
        *dev = (CUdeviceptr)a;
        return CU_MEM_GPU;
    }
    unsigned int type = 0;
    CUdeviceptr dp = 0;
    int ord = -1;
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *data[3] = {&type, &dp, &ord};
    if (symm__cu.PointerGetAttributes(3, attrs, data, (CUdeviceptr)a) != CUDA_SUCCESS)
        return CU_MEM_OTHER;
    if (type == CU_MEMORYTYPE_HOST && dp) {
        *dev = dp;
        return CU_MEM_PINNED;
    }
    if (type == CU_MEMORYTYPE_DEVICE && ord == s->ordinal) {
        *dev = (CUdeviceptr)a;
        return CU_MEM_GPU;
    }
    return CU_MEM_OTHER;
}

/* 64 bytes per thread (4 x 16-byte loads in flight, then the stores): the
 * fastest shape in probe_cuda from 4 KiB to 4 MiB. */
static symm_status launch_copy(cu_state *s, CUdeviceptr dst, CUdeviceptr src, uint64_t n,
                               CUstream cs) {
    void *args[] = {&dst, &src, &n};
    uint64_t per_block = CU_THREADS * 64u, b = (n + per_block - 1) / per_block;
    unsigned cap = s->sms > 0 ? 4u * (unsigned)s->sms : 512u;
    return symm__cu_launch(s, s->f_copy, "cuLaunchKernel(symm_k_copy)",
                           (unsigned)min_u64(max_u64(b, 1), cap),
                  1, CU_THREADS, cs, args);
}

/* Write one 4/8-byte word, read now, with a stream memory op (ordered after
 * the stream's earlier work). false: not possible, use a kernel. */
static bool write_value(cu_state *s, CUstream cs, CUdeviceptr dst, const void *src, uint32_t n) {
    CUresult r;
    if (n == 8) {
        uint64_t v;
        memcpy(&v, src, 8);
        r = symm__cu.StreamWriteValue64(cs, dst, v, CU_STREAM_WRITE_VALUE_DEFAULT);
    } else {
        uint32_t v;
        memcpy(&v, src, 4);
        r = symm__cu.StreamWriteValue32 ? symm__cu.StreamWriteValue32(cs, dst, v, CU_STREAM_WRITE_VALUE_DEFAULT)
                                        : CUDA_ERROR_NOT_SUPPORTED;
    }
    return r == CUDA_SUCCESS;
}

symm_status symm__cuda_put_stream(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src,
                                  uint64_t n, void *stream) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return symm__cu_unreachable(ctx, pe);
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    CUdeviceptr dst = (CUdeviceptr)(uintptr_t)(b + off), dsrc = 0;
    const bool kernel_size = n >= s->copy_kernel_min && n <= s->copy_kernel_max;
    const int kind = kernel_size || n <= SYMM__INLINE_BYTES ? mem_kind(ctx, s, src, &dsrc) : CU_MEM_OTHER;
    const bool dev_src = kind != CU_MEM_OTHER;
    const char *path = "copy engine (cuMemcpyAsync)";
    if (kind == CU_MEM_GPU && kernel_size) {
        path = "SM copy kernel";
        SYMM_TRY(launch_copy(s, dst, dsrc, n, cs));
    } else if (!dev_src && (n == 4 || n == 8) && dst % n == 0 && atomic_load(&s->memops) &&
               write_value(s, cs, dst, src, (uint32_t)n)) {
        /* one word from pageable memory: a stream memory op, no kernel */
        path = "stream memory op (cuStreamWriteValue)";
    } else if (!dev_src && n <= SYMM__INLINE_BYTES) {
        path = "store kernel, data in its parameters";
        /* pageable source: carried in the kernel parameter (capturable) */
        symm__inline_data d;
        memset(&d, 0, sizeof d);
        memcpy(d.bytes, src, n);
        uint32_t n32 = (uint32_t)n;
        void *args[] = {&dst, &d, &n32};
        SYMM_TRY(symm__cu_launch(s, s->f_store, "cuLaunchKernel(symm_k_store)", 1, 1, 64, cs,
                                 args));
    } else {
        SYMM__CU(MemcpyAsync(dst, (CUdeviceptr)(uintptr_t)src, n, cs));
    }
    SYMM_TRACE(SYMM_LOG_STREAM, "cuda: put of %llu bytes to PE %d at offset %llu%s: %s",
               (unsigned long long)n, (int)pe, (unsigned long long)off,
               stream ? "" : " (blocking)", path);
    return symm__cu_finish(s, stream);
}

symm_status symm__cuda_get_stream(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off,
                                  uint64_t n, void *stream) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return symm__cu_unreachable(ctx, pe);
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    CUdeviceptr src = (CUdeviceptr)(uintptr_t)(b + off);
    SYMM__CU(MemcpyAsync((CUdeviceptr)(uintptr_t)dst, src, n, cs));
    return symm__cu_finish(s, stream);
}

symm_status symm__cuda_signal_stream(symm__ctx *ctx, int32_t pe, uint64_t off, uint64_t value,
                                     uint32_t sig_op, void *stream) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return symm__cu_unreachable(ctx, pe);
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    uint64_t *addr = (uint64_t *)(void *)(b + off);
    if (sig_op == SYMM_SIGNAL_SET && atomic_load(&s->memops)) {
        /* the default flags put a memory barrier before the write: earlier
         * work of the stream is visible first */
        CUresult r = symm__cu.StreamWriteValue64(cs, (CUdeviceptr)(uintptr_t)addr, value,
                                                 CU_STREAM_WRITE_VALUE_DEFAULT);
        if (r == CUDA_SUCCESS) return symm__cu_finish(s, stream);
        if (atomic_exchange(&s->memops, false)) /* e.g. not allowed on peer memory: use kernels */
            SYMM_WARN(SYMM_LOG_BACKEND, "cuda: cuStreamWriteValue64 failed (%d); stream signals "
                      "use a kernel from now on", (int)r);
    }
    void *args[] = {&addr, &value, &sig_op};
    SYMM_TRY(symm__cu_launch(s, s->f_signal, "cuLaunchKernel(symm_k_signal)", 1, 1, 1, cs, args));
    return symm__cu_finish(s, stream);
}

symm_status symm__cuda_wait_stream(symm__ctx *ctx, uint64_t off, uint32_t cmp, uint64_t value,
                                   void *stream) {
    cu_state *s = ctx->backend;
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    uint64_t *addr = (uint64_t *)(void *)(ctx->heap_base + off);
    /* cuStreamWaitValue64's GEQ is a cyclic comparison; only EQ is exact */
    if (cmp == SYMM_CMP_EQ && s->stream_memops && atomic_load(&s->memops)) {
        CUresult r = symm__cu.StreamWaitValue64(cs, (CUdeviceptr)(uintptr_t)addr, value,
                                                CU_STREAM_WAIT_VALUE_EQ);
        if (r == CUDA_SUCCESS) return symm__cu_finish(s, stream);
        if (atomic_exchange(&s->memops, false))
            SYMM_WARN(SYMM_LOG_BACKEND, "cuda: cuStreamWaitValue64 failed (%d); stream waits use "
                      "a kernel from now on (SYMM_CUDA_STREAM_MEMOPS ignored)", (int)r);
    }
    int *err = s->err_word;
    void *args[] = {&addr, &cmp, &value, &s->timeout_ns, &err};
    SYMM_TRY(symm__cu_launch(s, s->f_wait, "cuLaunchKernel(symm_k_wait)", 1, 1, 1, cs, args));
    return symm__cu_finish(s, stream);
}

symm_status symm__cuda_quiet_stream(symm__ctx *ctx, void *stream) {
    cu_state *s = ctx->backend;
    if (!stream) return symm__cuda_quiet(ctx);
    /* Stream work completes in stream order: only host-issued nbi operations
     * (internal stream) need joining, and only outside a capture. */
    if (!cu_nbi_outstanding(s)) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    SYMM__CU(StreamIsCapturing((CUstream)stream, &cap));
    if (cap != CU_STREAM_CAPTURE_STATUS_NONE) return SYMM_SUCCESS;
    SYMM__CU(EventRecord(s->ev_int, s->s_int));
    SYMM__CU(StreamWaitEvent((CUstream)stream, s->ev_int, 0));
    return SYMM_SUCCESS;
}


/* Whether stream is being captured into *capturing; false when the query
 * fails. */
static bool capture_known(symm__ctx *ctx, void *stream, bool *capturing) {
    cu_state *s = ctx->backend;
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    if (cu_enter(s) != SYMM_SUCCESS ||
        symm__cu.StreamIsCapturing(stream_of(s, stream), &cap) != CUDA_SUCCESS)
        return false;
    *capturing = cap != CU_STREAM_CAPTURE_STATUS_NONE;
    return true;
}

/* Whether symm__cuda_ring_stream can take a wake word on this stream: the
 * 32-bit stream memory operations it waits and resets with, and a stream
 * that is not being captured (backend.h) and is one stream (the per-thread
 * default stream's handle names a different stream in every thread, and the
 * word is the handle's). */
bool symm__cuda_ring_stream_wake(symm__ctx *ctx, void *stream) {
    cu_state *s = ctx->backend;
    bool capturing = true;
    return (CUstream)stream != CU_STREAM_PER_THREAD && atomic_load(&s->memops) &&
           symm__cu.StreamWaitValue32 && symm__cu.StreamWriteValue32 &&
           capture_known(ctx, stream, &capturing) && !capturing;
}

bool symm__cuda_stream_capturing(symm__ctx *ctx, void *stream) {
    bool capturing = false;
    return capture_known(ctx, stream, &capturing) && capturing;
}

/* A stream form to a PE of another host: symm_k_ring on the stream posts the
 * request to a proxy ring (kernels.cu); the stream then waits on the wake
 * word and resets it for the stream's next operation (a graph replays the
 * three nodes in order), or, without one, the kernel waits. */
symm_status symm__cuda_ring_stream(symm__ctx *ctx, const struct symm_ring *r,
                                   const struct symm_ring_req *q, uint64_t inline_bytes,
                                   uint32_t n_inline, const symm__px_wake *wake, void *stream) {
    cu_state *s = ctx->backend;
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    symm_ring rr = *r;
    symm_ring_req qq = *q;
    uint64_t *notify = wake ? wake->notify : NULL;
    uint32_t *word = wake ? wake->word : NULL;
    uint64_t cell = wake ? wake->cell : 0;
    void *args[] = {&rr, &qq, &inline_bytes, &n_inline, &notify, &word, &cell};
    SYMM_TRY(symm__cu_launch(s, s->f_ring, "cuLaunchKernel(symm_k_ring)", 1, 1, 32, cs, args));
    if (word) {
        const CUdeviceptr w = (CUdeviceptr)(uintptr_t)word;
        SYMM__CU(StreamWaitValue32(cs, w, 1u, CU_STREAM_WAIT_VALUE_GEQ));
        SYMM__CU(StreamWriteValue32(cs, w, 0u, CU_STREAM_WRITE_VALUE_DEFAULT));
    }
    return symm__cu_finish(s, stream);
}
