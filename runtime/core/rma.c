/* Put/get on typed buffers and on raw symmetric addresses; quiet and fence. */
#include "internal.h"

/* Buffer element range on pe: fills *bp and the heap byte offset *off. */
symm_status symm__rma_target(const char *fn, symm_buf h, uint64_t index, uint64_t nelems,
                             int32_t pe, const void *local, symm__buf **bp, uint64_t *off) {
    symm__buf *b;
    SYMM_TRY_IN(fn, symm__buf_get(h, &b));
    SYMM_TRY_IN(fn, symm__thread_check(b->ctx));
    SYMM_TRY_IN(fn, symm__check_target(b->ctx, pe));
    SYMM_TRY_IN(fn, symm__check_range(b, index, nelems));
    SYMM_CHECK(local || nelems == 0, SYMM_ERR_INVALID_ARG, "%s: local buffer is NULL", fn);
    *bp = b;
    *off = b->off + index * b->elem_size;
    return SYMM_SUCCESS;
}

static symm_status do_put(const char *fn, symm_buf dst, uint64_t index, const void *src,
                          uint64_t nelems, int32_t pe, uint32_t flags) {
    symm__err_clear();
    symm__buf *b;
    uint64_t off;
    SYMM_TRY(symm__rma_target(fn, dst, index, nelems, pe, src, &b, &off));
    if (nelems == 0) return SYMM_SUCCESS;
    return symm__put(b->ctx, pe, off, src, nelems * b->elem_size, flags);
}

static symm_status do_get(const char *fn, void *dst, symm_buf src, uint64_t index,
                          uint64_t nelems, int32_t pe, uint32_t flags) {
    symm__err_clear();
    symm__buf *b;
    uint64_t off;
    SYMM_TRY(symm__rma_target(fn, src, index, nelems, pe, dst, &b, &off));
    if (nelems == 0) return SYMM_SUCCESS;
    return symm__get(b->ctx, dst, pe, off, nelems * b->elem_size, flags);
}

symm_status symm_put(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems,
                     int32_t pe) {
    return do_put("symm_put", dst, dst_index, src, nelems, pe, 0);
}

symm_status symm_put_nbi(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems,
                         int32_t pe) {
    return do_put("symm_put_nbi", dst, dst_index, src, nelems, pe, SYMM__NBI);
}

symm_status symm_get(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe) {
    return do_get("symm_get", dst, src, src_index, nelems, pe, 0);
}

symm_status symm_get_nbi(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems,
                         int32_t pe) {
    return do_get("symm_get_nbi", dst, src, src_index, nelems, pe, SYMM__NBI);
}

symm_status symm_p(symm_buf dst, uint64_t index, const void *value, int32_t pe) {
    return do_put("symm_p", dst, index, value, 1, pe, 0);
}

symm_status symm_g(symm_buf src, uint64_t index, int32_t pe, void *value) {
    return do_get("symm_g", value, src, index, 1, pe, 0);
}

/* ---- raw symmetric addresses ---- */

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

static symm_status raw(const char *fn, symm_ctx h, void *dst, const void *src, uint64_t n,
                       int32_t pe, bool is_put, uint32_t flags) {
    symm__err_clear();
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__ctx_get(h, &ctx));
    SYMM_TRY(symm__thread_check(ctx));
    SYMM_TRY_IN(fn, symm__check_target(ctx, pe));
    uint64_t off;
    SYMM_TRY(symm__sym_offset(fn, ctx, is_put ? dst : src, n, &off));
    SYMM_CHECK((is_put ? src : dst) || n == 0, SYMM_ERR_INVALID_ARG, "%s: local buffer is NULL", fn);
    if (n == 0) return SYMM_SUCCESS;
    return is_put ? symm__put(ctx, pe, off, src, n, flags)
                  : symm__get(ctx, dst, pe, off, n, flags);
}

symm_status symm_putmem(symm_ctx ctx, void *dst_sym, const void *src, uint64_t nbytes, int32_t pe) {
    return raw("symm_putmem", ctx, dst_sym, src, nbytes, pe, true, 0);
}

symm_status symm_getmem(symm_ctx ctx, void *dst, const void *src_sym, uint64_t nbytes, int32_t pe) {
    return raw("symm_getmem", ctx, dst, src_sym, nbytes, pe, false, 0);
}

symm_status symm_putmem_nbi(symm_ctx ctx, void *dst_sym, const void *src, uint64_t nbytes,
                            int32_t pe) {
    return raw("symm_putmem_nbi", ctx, dst_sym, src, nbytes, pe, true, SYMM__NBI);
}

symm_status symm_getmem_nbi(symm_ctx ctx, void *dst, const void *src_sym, uint64_t nbytes,
                            int32_t pe) {
    return raw("symm_getmem_nbi", ctx, dst, src_sym, nbytes, pe, false, SYMM__NBI);
}

symm_status symm_ptr(symm_ctx h, const void *sym, int32_t pe, void **ptr) {
    symm__err_clear();
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__ctx_get(h, &ctx));
    SYMM_CHECK(ptr, SYMM_ERR_INVALID_ARG, "symm_ptr: ptr is NULL");
    SYMM_TRY_IN("symm_ptr", symm__check_pe(ctx, pe));
    uint64_t off;
    SYMM_TRY(symm__sym_offset("symm_ptr", ctx, sym, 0, &off));
    *ptr = ctx->peer_base[pe] ? ctx->peer_base[pe] + off : NULL;
    return SYMM_SUCCESS;
}

/* ---- ordering ---- */

symm_status symm_quiet(symm_ctx h) {
    symm__err_clear();
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__ctx_get(h, &ctx));
    SYMM_TRY(symm__thread_check(ctx));
    SYMM_TRY_IN("symm_quiet", symm__check_failed(ctx));
    return symm__quiet(ctx);
}

symm_status symm_fence(symm_ctx h) {
    symm__err_clear();
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__ctx_get(h, &ctx));
    SYMM_TRY(symm__thread_check(ctx));
    SYMM_TRY_IN("symm_fence", symm__check_failed(ctx));
    return symm__fence(ctx);
}
