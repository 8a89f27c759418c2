/*
 * Put and get, in every call mode: on typed buffers (element indices,
 * bounds-checked), on raw symmetric addresses, single elements (p/g), and
 * the ordering entries quiet and fence. Each operation has one path for its
 * blocking, nbi and stream forms (entry.h): the same checks, then the
 * backend's stream hook when the mode is a stream and the backend has one,
 * else the core's routed operation (route.c).
 */
#include <string.h>

#include "entry.h"
#include "stream_px.h"

/* Buffer element range on pe: fills *bp and the heap byte offset *off.
 * Inline in this file's entries (symm__rma_target for the others). */
static inline __attribute__((always_inline)) symm_status
rma_target(const char *fn, symm_buf h, uint64_t index, uint64_t nelems, int32_t pe,
           const void *local, symm__buf **bp, uint64_t *off) {
    symm__buf *b = NULL;
    SYMM_TRY(symm__enter_buf(fn, h, &b));
    SYMM_TRY_IN(fn, symm__target_ok(b->ctx, pe));
    SYMM_TRY_IN(fn, symm__range_ok(b, index, nelems));
    SYMM_CHECK(local || nelems == 0, SYMM_ERR_INVALID_ARG, "%s: local buffer is NULL", fn);
    *bp = b;
    *off = b->off + index * b->elem_size;
    return SYMM_SUCCESS;
}

symm_status symm__rma_target(const char *fn, symm_buf h, uint64_t index, uint64_t nelems,
                             int32_t pe, const void *local, symm__buf **bp, uint64_t *off) {
    return rma_target(fn, h, index, nelems, pe, local, bp, off);
}

/* Byte offset of [sym, sym + n) inside this PE's backed heap, outside the
 * runtime's system area (barrier flags, team scratch) at its start. */
symm_status symm__sym_offset(const char *fn, const symm__ctx *ctx, const void *sym, uint64_t n,
                             uint64_t *off) {
    uintptr_t base = (uintptr_t)ctx->heap_base, p = (uintptr_t)sym;
    uint64_t mapped = ctx->heap_mapped;
    if (!sym || p < base || p - base > mapped || n > mapped - (p - base))
        return symm__err(SYMM_ERR_OUT_OF_BOUNDS,
                         "%s: [%p, +%llu) is not inside the symmetric heap [%p, +%llu)", fn, sym,
                         (unsigned long long)n, (void *)ctx->heap_base, (unsigned long long)mapped);
    if (p - base < ctx->sys_bytes)
        return symm__err(SYMM_ERR_OUT_OF_BOUNDS,
                         "%s: %p is in the runtime's system area [%p, +%llu) of the symmetric heap "
                         "(barrier flags and team scratch); use addresses of buffers from "
                         "symm_buf_alloc", fn, sym, (void *)ctx->heap_base,
                         (unsigned long long)ctx->sys_bytes);
    *off = p - base;
    return SYMM_SUCCESS;
}

/* The passing case of symm__sym_offset, inline. */
static inline symm_status sym_offset(const char *fn, const symm__ctx *ctx, const void *sym,
                                     uint64_t n, uint64_t *off) {
    uintptr_t base = (uintptr_t)ctx->heap_base, p = (uintptr_t)sym;
    uint64_t mapped = ctx->heap_mapped;
    if (__builtin_expect(sym && p >= base && p - base >= ctx->sys_bytes && p - base <= mapped &&
                             n <= mapped - (p - base), 1)) {
        *off = p - base;
        return SYMM_SUCCESS;
    }
    return symm__sym_offset(fn, ctx, sym, n, off);
}

/* Move n bytes between local memory and pe's heap at off, in mode m. */
static symm_status move_routed(const char *fn, symm__ctx *ctx, bool is_put, int32_t pe,
                               uint64_t off, const void *local, uint64_t n, symm__mode m) {
    const symm__backend_ops *ops = ctx->ops;
    if (m.on_stream && symm__px_stream_to(ctx, pe)) { /* another host: the proxy */
        symm_ring_req q;
        symm__ring_req_init(&q, is_put ? SYMM_RING_OP_PUT : SYMM_RING_OP_GET, pe);
        q.off = off;
        q.local = (uint64_t)(uintptr_t)local;
        q.n = n;
        SYMM_TRY_IN(fn, symm__px_stream(ctx, &q, 0, 0, m.stream));
        return SYMM_SUCCESS;
    }
    if (m.on_stream && (is_put ? ops->put_stream != NULL : ops->get_stream != NULL)) {
        void *s = symm__hook_stream(m.stream);
        return is_put ? ops->put_stream(ctx, pe, off, local, n, s)
                      : ops->get_stream(ctx, (void *)local, pe, off, n, s);
    }
    return is_put ? symm__put(ctx, pe, off, local, n, m.flags)
                  : symm__get(ctx, (void *)local, pe, off, n, m.flags);
}

/* The direct path first (entry.h, symm__cpu_peer): a blocking or nbi move on
 * the host backend is the copy itself, complete on return as host_put's. */
static inline __attribute__((always_inline)) symm_status
move(const char *fn, symm__ctx *ctx, bool is_put, int32_t pe, uint64_t off, const void *local,
     uint64_t n, symm__mode m) {
    if (n == 0) return SYMM_SUCCESS;
    uint8_t *peer = m.on_stream ? NULL : symm__cpu_peer(ctx, pe);
    if (__builtin_expect(peer != NULL, 1)) {
        if (is_put)
            symm__host_copy(peer + off, local, n);
        else
            symm__host_copy((void *)local, peer + off, n);
        return SYMM_SUCCESS;
    }
    return move_routed(fn, ctx, is_put, pe, off, local, n, m);
}

/* ---- typed buffers ---- */

static inline __attribute__((always_inline)) symm_status
buf_put(const char *fn, symm_buf dst, uint64_t index, const void *src, uint64_t nelems, int32_t pe,
        symm__mode m) {
    symm__buf *b = NULL;
    uint64_t off = 0;
    SYMM_TRY(rma_target(fn, dst, index, nelems, pe, src, &b, &off));
    return move(fn, b->ctx, true, pe, off, src, nelems * b->elem_size, m);
}

static inline __attribute__((always_inline)) symm_status
buf_get(const char *fn, void *dst, symm_buf src, uint64_t index, uint64_t nelems, int32_t pe,
        symm__mode m) {
    symm__buf *b = NULL;
    uint64_t off = 0;
    SYMM_TRY(rma_target(fn, src, index, nelems, pe, dst, &b, &off));
    return move(fn, b->ctx, false, pe, off, dst, nelems * b->elem_size, m);
}

symm_status symm_put(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems,
                     int32_t pe) {
    return buf_put(__func__, dst, dst_index, src, nelems, pe, SYMM__BLOCKING);
}

symm_status symm_put_nbi(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems,
                         int32_t pe) {
    return buf_put(__func__, dst, dst_index, src, nelems, pe, SYMM__NBI_MODE);
}

symm_status symm_get(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe) {
    return buf_get(__func__, dst, src, src_index, nelems, pe, SYMM__BLOCKING);
}

symm_status symm_get_nbi(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems,
                         int32_t pe) {
    return buf_get(__func__, dst, src, src_index, nelems, pe, SYMM__NBI_MODE);
}

symm_status symm_p(symm_buf dst, uint64_t index, const void *value, int32_t pe) {
    return buf_put(__func__, dst, index, value, 1, pe, SYMM__BLOCKING);
}

symm_status symm_g(symm_buf src, uint64_t index, int32_t pe, void *value) {
    return buf_get(__func__, value, src, index, 1, pe, SYMM__BLOCKING);
}

symm_status symm_put_on_stream(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems,
                               int32_t pe, symm_stream_t stream) {
    return buf_put(__func__, dst, dst_index, src, nelems, pe, SYMM__ON_STREAM(stream));
}

symm_status symm_get_on_stream(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems,
                               int32_t pe, symm_stream_t stream) {
    return buf_get(__func__, dst, src, src_index, nelems, pe, SYMM__ON_STREAM(stream));
}

/* Stream puts/gets already return at once; completion comes at a later quiet. */
symm_status symm_put_nbi_on_stream(symm_buf dst, uint64_t dst_index, const void *src,
                                   uint64_t nelems, int32_t pe, symm_stream_t stream) {
    return buf_put(__func__, dst, dst_index, src, nelems, pe, SYMM__ON_STREAM(stream));
}

symm_status symm_get_nbi_on_stream(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems,
                                   int32_t pe, symm_stream_t stream) {
    return buf_get(__func__, dst, src, src_index, nelems, pe, SYMM__ON_STREAM(stream));
}

symm_status symm_p_on_stream(symm_buf dst, uint64_t index, const void *value, int32_t pe,
                             symm_stream_t stream) {
    symm__buf *b = NULL;
    uint64_t off = 0;
    SYMM_TRY(symm__rma_target(__func__, dst, index, 1, pe, value, &b, &off));
    /* Read now, from a stack copy: the backend carries pageable bytes in the
     * kernel parameter, so the stream (or a graph replay) needs no host memory. */
    uint64_t v = 0;
    memcpy(&v, value, b->elem_size);
    if (symm__px_stream_to(b->ctx, pe)) { /* the value travels in the ring's scratch cell */
        symm_ring_req q;
        symm__ring_req_init(&q, SYMM_RING_OP_PUT, pe);
        q.off = off;
        q.n = b->elem_size;
        SYMM_TRY_IN(__func__, symm__px_stream(b->ctx, &q, v, b->elem_size, stream));
        return SYMM_SUCCESS;
    }
    return move(__func__, b->ctx, true, pe, off, &v, b->elem_size, SYMM__ON_STREAM(stream));
}

/* ---- raw symmetric addresses ---- */

static inline __attribute__((always_inline)) symm_status
raw(const char *fn, symm_ctx h, void *dst, const void *src, uint64_t n, int32_t pe, bool is_put,
    symm__mode m) {
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__enter_ctx(fn, h, &ctx));
    SYMM_TRY_IN(fn, symm__target_ok(ctx, pe));
    uint64_t off = 0;
    SYMM_TRY(sym_offset(fn, ctx, is_put ? dst : src, n, &off));
    const void *local = is_put ? src : dst;
    SYMM_CHECK(local || n == 0, SYMM_ERR_INVALID_ARG, "%s: local buffer is NULL", fn);
    return move(fn, ctx, is_put, pe, off, local, n, m);
}

symm_status symm_putmem(symm_ctx ctx, void *dst_sym, const void *src, uint64_t nbytes, int32_t pe) {
    return raw(__func__, ctx, dst_sym, src, nbytes, pe, true, SYMM__BLOCKING);
}

symm_status symm_getmem(symm_ctx ctx, void *dst, const void *src_sym, uint64_t nbytes, int32_t pe) {
    return raw(__func__, ctx, dst, src_sym, nbytes, pe, false, SYMM__BLOCKING);
}

symm_status symm_putmem_nbi(symm_ctx ctx, void *dst_sym, const void *src, uint64_t nbytes,
                            int32_t pe) {
    return raw(__func__, ctx, dst_sym, src, nbytes, pe, true, SYMM__NBI_MODE);
}

symm_status symm_getmem_nbi(symm_ctx ctx, void *dst, const void *src_sym, uint64_t nbytes,
                            int32_t pe) {
    return raw(__func__, ctx, dst, src_sym, nbytes, pe, false, SYMM__NBI_MODE);
}

symm_status symm_putmem_on_stream(symm_ctx h, void *dst_sym, const void *src, uint64_t nbytes,
                                  int32_t pe, symm_stream_t stream) {
    return raw(__func__, h, dst_sym, src, nbytes, pe, true, SYMM__ON_STREAM(stream));
}

symm_status symm_getmem_on_stream(symm_ctx h, void *dst, const void *src_sym, uint64_t nbytes,
                                  int32_t pe, symm_stream_t stream) {
    return raw(__func__, h, dst, src_sym, nbytes, pe, false, SYMM__ON_STREAM(stream));
}

symm_status symm_ptr(symm_ctx h, const void *sym, int32_t pe, void **ptr) {
    const char *fn = __func__;
    symm__err_clear();
    symm__ctx *ctx = NULL;
    SYMM_TRY_IN(fn, symm__ctx_get(h, &ctx)); /* any thread */
    SYMM_CHECK(ptr, SYMM_ERR_INVALID_ARG, "%s: ptr is NULL", fn);
    SYMM_TRY_IN(fn, symm__check_pe(ctx, pe));
    uint64_t off = 0;
    SYMM_TRY(symm__sym_offset(fn, ctx, sym, 0, &off));
    *ptr = ctx->peer_base[pe] ? ctx->peer_base[pe] + off : NULL;
    return SYMM_SUCCESS;
}

/* ---- ordering ---- */

symm_status symm_quiet(symm_ctx h) {
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__enter_ctx(__func__, h, &ctx));
    SYMM_TRY_IN(__func__, symm__failed_ok(ctx));
    if (__builtin_expect(ctx->proxy != NULL, 0)) SYMM_TRY_IN(__func__, symm__proxy_quiet(ctx));
    if (__builtin_expect(ctx->cpu_peers && !ctx->tp, 1)) { /* host_quiet, inline */
        symm__host_fence();
        return SYMM_SUCCESS;
    }
    return symm__quiet(ctx);
}

symm_status symm_fence(symm_ctx h) {
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__enter_ctx(__func__, h, &ctx));
    SYMM_TRY_IN(__func__, symm__failed_ok(ctx));
    if (__builtin_expect(ctx->cpu_peers && !ctx->tp, 1)) { /* host_fence, inline */
        symm__host_order();
        return SYMM_SUCCESS;
    }
    return symm__fence(ctx);
}

symm_status symm_quiet_on_stream(symm_ctx h, symm_stream_t stream) {
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__enter_ctx(__func__, h, &ctx));
    SYMM_TRY_IN(__func__, symm__check_failed(ctx));
    if (!ctx->ops->quiet_stream) return symm__quiet(ctx);
    SYMM_TRY(ctx->ops->quiet_stream(ctx, symm__hook_stream(stream)));
    /* Requests of GPU code to PEs of other hosts: a QUIET on every proxy
     * ring, in stream order. */
    if (ctx->proxy && ctx->ops->ring_stream)
        SYMM_TRY_IN(__func__, symm__px_stream_quiet(ctx, stream));
    /* Host-initiated transport traffic completes now. */
    return ctx->tp ? symm__quiet(ctx) : SYMM_SUCCESS;
}
