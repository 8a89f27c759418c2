/*
 * Buffers: the collective allocation, free and registration calls built on
 * the heap's allocator (core/heap.c), and the local buffer queries. An
 * all-gather of each call's arguments catches PEs that disagree before
 * anything changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- collective agreement ---- */

typedef struct call_sig {
    uint64_t seq;
    uint32_t kind; /* 1 alloc, 2 free, 3 register, 4 outcome */
    uint32_t dtype;
    uint64_t a, b;   /* alloc: count, bytes; free: offset; outcome: status */
    int32_t status;  /* the PE's own argument checks (alloc), 0 otherwise */
    uint32_t pad;
} call_sig;

/* All-gather this PE's call signature; MISMATCH (on every PE) if any differs. */
static symm_status agree(symm__ctx *ctx, const char *what, const call_sig *mine) {
    if (ctx->n_pes == 1) return SYMM_SUCCESS;
    call_sig *all = calloc((size_t)ctx->n_pes, sizeof *all);
    if (!all) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: out of host memory", what);
    symm_status st = symm__boot_allgather(ctx->boot, mine, all, sizeof *mine);
    if (st) {
        free(all);
        if (st == SYMM_ERR_PEER_FAILED) symm__mark_failed(ctx);
        return st;
    }
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        if (all[pe].status && pe != ctx->my_pe && !mine->status) {
            st = symm__err(SYMM_ERR_MISMATCH, "%s: PE %d rejected its arguments (%s); nothing "
                           "was changed", what, pe, symm__status_name(all[pe].status));
            break;
        }
        if (memcmp(&all[pe], mine, sizeof *mine) != 0) {
            st = symm__err(SYMM_ERR_MISMATCH,
                           "%s: PEs disagree (PE %d: call #%llu kind %u dtype %u args %llu/%llu; "
                           "PE %d: call #%llu kind %u dtype %u args %llu/%llu); nothing was changed",
                           what, ctx->my_pe, (unsigned long long)mine->seq, mine->kind, mine->dtype,
                           (unsigned long long)mine->a, (unsigned long long)mine->b, pe,
                           (unsigned long long)all[pe].seq, all[pe].kind, all[pe].dtype,
                           (unsigned long long)all[pe].a, (unsigned long long)all[pe].b);
            break;
        }
    }
    free(all);
    return st;
}

/* All-gather one status; the first failing PE's status wins everywhere. */
static symm_status agree_outcome(symm__ctx *ctx, const char *what, symm_status local) {
    if (ctx->n_pes == 1) return local;
    int32_t *all = calloc((size_t)ctx->n_pes, sizeof *all);
    if (!all) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: out of host memory", what);
    char saved[512];
    snprintf(saved, sizeof saved, "%s", symm__last_error());
    symm_status st = symm__boot_allgather(ctx->boot, &local, all, sizeof local);
    if (st == SYMM_SUCCESS) {
        for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
            if (all[pe] != SYMM_SUCCESS) {
                st = pe == ctx->my_pe ? symm__err(all[pe], "%s", saved)
                                      : symm__err(all[pe], "%s failed on PE %d (%s)", what, pe,
                                                  symm__status_name(all[pe]));
                break;
            }
        }
    }
    free(all);
    return st;
}

/* ---- buffers ---- */

static uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) & ~(a - 1);
}

/* A buffer object for [off, off + len) with a handle; NULL (and a message) on
 * failure. Linked into the context by buf_link once the call succeeded. */
static symm__buf *buf_new(symm__ctx *ctx, const char *fn, uint32_t dtype, uint64_t count,
                          uint64_t off, uint64_t len, uint32_t flags) {
    symm__buf *b = calloc(1, sizeof *b);
    if (!b) {
        symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
        return NULL;
    }
    b->ctx = ctx;
    b->dtype = dtype;
    b->elem_size = symm__dtype_size(dtype);
    b->count = count;
    b->off = off;
    b->bytes = len;
    b->flags = flags;
    b->handle = symm__handle_new(SYMM__KIND_BUF, b);
    if (!b->handle) {
        free(b);
        symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: handle table full", fn);
        return NULL;
    }
    return b;
}

static void buf_link(symm__ctx *ctx, symm__buf *b) {
    b->next = ctx->bufs;
    if (ctx->bufs) ctx->bufs->prev = b;
    ctx->bufs = b;
}

/* symm_buf_alloc's checks of its own arguments on this PE; the message is
 * kept in saved (the agreement's messages replace the thread's). */
static symm_status alloc_check_args(const symm__ctx *ctx, uint32_t dtype, uint64_t count,
                                    const symm_buf *out, char *saved, size_t cap) {
    const uint32_t es = symm__dtype_size(dtype);
    symm_status own = SYMM_SUCCESS;
    if (!out)
        own = symm__err(SYMM_ERR_INVALID_ARG, "symm_buf_alloc: buf out-parameter is NULL");
    else if (!es)
        own = symm__err(SYMM_ERR_INVALID_ARG, "symm_buf_alloc: unknown dtype %u", dtype);
    else if (count > ctx->heap_cap / es)
        own = symm__err(SYMM_ERR_OUT_OF_MEMORY,
                        "symm_buf_alloc: %llu elements of %u bytes exceed the heap cap of %llu "
                        "bytes (SYMM_HEAP_CAP)", (unsigned long long)count, es,
                        (unsigned long long)ctx->heap_cap);
    if (own) snprintf(saved, cap, "%s", symm__last_error());
    return own;
}

/* Room for len bytes at *off, the heap grown (a collective) when they end
 * past its backed part. Every PE's allocator is in the same state, so every
 * PE takes the same path. */
static symm_status alloc_room(symm__ctx *ctx, uint64_t len, uint64_t *off_out) {
    uint64_t off = 0;
    symm_status st;
    if (!symm__alloc_take(&ctx->alloc, len, SYMM__HEAP_ALIGN, &off)) {
        /* Same allocator state everywhere: every PE lands here together. */
        return symm__err(SYMM_ERR_OUT_OF_MEMORY,
                         "symm_buf_alloc: no room for %llu bytes in the heap (cap %llu bytes, %llu "
                         "in use); raise SYMM_HEAP_CAP or the heap_cap attribute",
                         (unsigned long long)len, (unsigned long long)ctx->heap_cap,
                         (unsigned long long)ctx->alloc.used);
    }
    if (off + len > ctx->heap_mapped) {
        /* [old_mapped, new_mapped) goes to the transport; ctx->heap_mapped
         * moves only once both succeeded (backend.h, heap_grow). */
        const uint64_t old_mapped = ctx->heap_mapped;
        uint64_t new_mapped = align_up(off + len, ctx->cfg.heap_chunk);
        st = ctx->ops->heap_grow(ctx, new_mapped); /* collective */
        if (st == SYMM_SUCCESS) /* collective */
            st = symm__tp_mem_add(ctx, symm__local(ctx, old_mapped), old_mapped,
                                  new_mapped - old_mapped);
        if (st) {
            symm__alloc_give(&ctx->alloc, off, len);
            return st;
        }
        ctx->heap_mapped = new_mapped;
        SYMM_INFO(SYMM_LOG_HEAP, "heap grew to %llu bytes backed (cap %llu) for %llu bytes at offset %llu",
                  (unsigned long long)new_mapped, (unsigned long long)ctx->heap_cap,
                  (unsigned long long)len, (unsigned long long)off);
    }
    SYMM_TRACE(SYMM_LOG_HEAP, "symm_buf_alloc: %llu bytes at offset %llu (%llu in use)",
               (unsigned long long)len, (unsigned long long)off, (unsigned long long)ctx->alloc.used);
    *off_out = off;
    return SYMM_SUCCESS;
}

symm_status symm_buf_alloc(symm_ctx h, uint32_t dtype, uint64_t count, symm_buf *out) {
    symm__err_clear();
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__ctx_get(h, &ctx));
    SYMM_TRY(symm__thread_check(ctx));
    /* This PE's own checks go through the agreement too: a PE that returned
     * at once would leave its peers waiting in it. It gets its own error,
     * its peers MISMATCH naming it (agree). */
    const uint32_t es = symm__dtype_size(dtype);
    char saved[512] = "";
    symm_status own = alloc_check_args(ctx, dtype, count, out, saved, sizeof saved);
    uint64_t bytes = own ? 0 : count * es;
    uint64_t len = align_up(bytes ? bytes : 1, SYMM__HEAP_ALIGN);

    SYMM_TRY(symm__ctx_lock("symm_buf_alloc", ctx));
    call_sig sig = {ctx->alloc_seq, 1, dtype, count, bytes, (int32_t)own, 0};
    symm_status st = symm__check_failed(ctx);
    if (st == SYMM_SUCCESS) st = agree(ctx, "symm_buf_alloc", &sig);
    /* this PE's own error, whatever its peers passed (unless the exchange failed) */
    if (own && (st == SYMM_SUCCESS || st == SYMM_ERR_MISMATCH)) st = symm__err(own, "%s", saved);
    if (st) goto out;
    ctx->alloc_seq++;

    uint64_t off = 0;
    st = alloc_room(ctx, len, &off);
    if (st) goto out;
    symm_status local = ctx->ops->memset0(ctx, off, len);
    symm__buf *b = NULL;
    if (local == SYMM_SUCCESS) {
        b = buf_new(ctx, "symm_buf_alloc", dtype, count, off, len, 0);
        if (!b) local = SYMM_ERR_OUT_OF_MEMORY;
    }
    /* The outcome exchange doubles as the barrier that makes the zeroing
     * visible before any peer can write into the new buffer. */
    st = agree_outcome(ctx, "symm_buf_alloc", local);
    if (st) {
        if (b) symm__handle_release(SYMM__KIND_BUF, b->handle);
        free(b);
        symm__alloc_give(&ctx->alloc, off, len);
        goto out;
    }
    buf_link(ctx, b);
    *out = (symm_buf)(uintptr_t)b->handle;
out:
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

symm_status symm_buf_free(symm_buf h) {
    const char *fn = "symm_buf_free";
    symm__err_clear();
    if (!h) return SYMM_SUCCESS;
    symm__buf *b;
    SYMM_TRY(symm__buf_get(h, &b));
    symm__ctx *ctx = b->ctx;
    SYMM_TRY(symm__thread_check(ctx));
    symm__hold(&b->closing); /* across the lock and the agreement */
    SYMM_TRY(symm__ctx_lock(fn, ctx));
    if (atomic_load(&b->closing)) {
        pthread_mutex_unlock(&ctx->lock);
        return symm__err(SYMM_ERR_INVALID_HANDLE, "%s: the buffer was freed by another thread "
                         "during this call", fn);
    }
    symm_status st = symm__quiet(ctx);
    call_sig sig = {ctx->alloc_seq, 2, b->dtype, b->off, b->count, 0, 0};
    if (st == SYMM_SUCCESS) st = symm__check_failed(ctx);
    /* The agreement is also the barrier: no peer still targets the buffer. */
    if (st == SYMM_SUCCESS) st = agree(ctx, fn, &sig);
    if (st == SYMM_SUCCESS) {
        ctx->alloc_seq++;
        if (b->prev) b->prev->next = b->next;
        else ctx->bufs = b->next;
        if (b->next) b->next->prev = b->prev;
        /* Unreachable first (waits on it leave), then the grace period
         * outside the lock (a call waiting for the lock may hold it), then
         * the range goes back. */
        atomic_store(&b->closing, 1);
        symm__handle_release(SYMM__KIND_BUF, b->handle);
    }
    pthread_mutex_unlock(&ctx->lock);
    if (st) return st;
    symm__retire(ctx, &b->closing);
    pthread_mutex_lock(&ctx->lock); /* ctx lives: a finalize waits for this call */
    /* the range given to mem_add: the registered bytes, not the aligned span */
    if (b->flags & SYMM__BUF_REGISTERED)
        symm__tp_mem_remove(ctx, b->off, b->count * b->elem_size);
    if ((b->flags & SYMM__BUF_REGISTERED) && ctx->ops->unregister_mem)
        ctx->ops->unregister_mem(ctx, b->off, b->bytes);
    symm__alloc_give(&ctx->alloc, b->off, b->bytes);
    pthread_mutex_unlock(&ctx->lock);
    free(b);
    return SYMM_SUCCESS;
}

symm_status symm_buf_ptr(symm_buf h, void **ptr) {
    symm__err_clear();
    symm__buf *b;
    SYMM_TRY(symm__buf_get(h, &b));
    SYMM_CHECK(ptr, SYMM_ERR_INVALID_ARG, "symm_buf_ptr: ptr is NULL");
    *ptr = symm__local(b->ctx, b->off);
    return SYMM_SUCCESS;
}

symm_status symm_buf_query(symm_buf h, uint32_t *dtype, uint64_t *count, uint64_t *offset) {
    symm__err_clear();
    symm__buf *b;
    SYMM_TRY(symm__buf_get(h, &b));
    if (dtype) *dtype = b->dtype;
    if (count) *count = b->count;
    if (offset) *offset = b->off;
    return SYMM_SUCCESS;
}

/* ---- registration of caller-owned memory ---- */

/* Registered memory is mapped from the top of the heap downwards, aligned to
 * the backend's reg_align (its mapping granularity), so it never meets the
 * chunks that back the allocator's first-fit ranges from the bottom. */

symm_status symm_buf_register(symm_ctx h, void *ptr, uint32_t dtype, uint64_t count,
                              symm_buf *out) {
    const char *fn = "symm_buf_register";
    symm__err_clear();
    symm__ctx *ctx = NULL;
    SYMM_TRY_IN(fn, symm__ctx_get(h, &ctx));
    SYMM_TRY_IN(fn, symm__thread_check(ctx));
    SYMM_CHECK(out, SYMM_ERR_INVALID_ARG, "%s: buf out-parameter is NULL", fn);
    SYMM_CHECK(ptr, SYMM_ERR_INVALID_ARG, "%s: ptr is NULL", fn);
    uint32_t es = symm__dtype_size(dtype);
    SYMM_CHECK(es, SYMM_ERR_INVALID_ARG, "%s: unknown dtype %u", fn, dtype);
    SYMM_CHECK(count > 0 && count <= ctx->heap_cap / es, SYMM_ERR_INVALID_ARG,
               "%s: count %llu must be in [1, heap cap / element size]", fn,
               (unsigned long long)count);
    if (!ctx->ops->register_mem || !ctx->ops->unregister_mem)
        return symm__err(SYMM_ERR_NOT_SUPPORTED,
                         "%s: the %s backend cannot register memory (a device backend can)", fn,
                         ctx->ops->name);
    const uint64_t align = ctx->ops->reg_align ? ctx->ops->reg_align : SYMM__HEAP_ALIGN;
    const uint64_t bytes = count * es, len = align_up(bytes, align);
    SYMM_TRY(symm__ctx_lock(fn, ctx));
    /* every PE must register the same shape (the offsets must agree) */
    call_sig sig = {ctx->alloc_seq, 3, dtype, count, bytes, 0, 0};
    symm_status st = symm__check_failed(ctx);
    if (st == SYMM_SUCCESS) st = agree(ctx, fn, &sig);
    if (st) goto out;
    ctx->alloc_seq++;
    uint64_t off = 0;
    bool taken = symm__alloc_take_top(&ctx->alloc, len, align, &off);
    if (!taken || off < ctx->heap_mapped) {
        /* same allocator state on every PE: all fail here together */
        if (taken) symm__alloc_give(&ctx->alloc, off, len);
        st = symm__err(SYMM_ERR_OUT_OF_MEMORY,
                       "%s: no room for %llu bytes above the backed heap (cap %llu)", fn,
                       (unsigned long long)len, (unsigned long long)ctx->heap_cap);
        goto out;
    }
    st = ctx->ops->register_mem(ctx, ptr, bytes, off); /* collective */
    if (st == SYMM_SUCCESS) {
        st = symm__tp_mem_add(ctx, symm__local(ctx, off), off, bytes); /* collective */
        if (st) ctx->ops->unregister_mem(ctx, off, bytes);
    }
    symm__buf *b = NULL;
    if (st == SYMM_SUCCESS) {
        b = buf_new(ctx, fn, dtype, count, off, len, SYMM__BUF_REGISTERED);
        if (!b) {
            st = SYMM_ERR_OUT_OF_MEMORY;
            symm__tp_mem_remove(ctx, off, bytes);
            ctx->ops->unregister_mem(ctx, off, bytes);
        }
    }
    if (st) {
        symm__alloc_give(&ctx->alloc, off, len);
        goto out;
    }
    buf_link(ctx, b);
    *out = (symm_buf)(uintptr_t)b->handle;
out:
    pthread_mutex_unlock(&ctx->lock);
    return st;
}
