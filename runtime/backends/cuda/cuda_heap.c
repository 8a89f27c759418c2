/*
 * CUDA backend: the symmetric heap in GPU memory, above the state's helpers
 * (cuda_state.c). The reservations are made at setup (cuda.c); this file
 * backs them: chunks of GPU memory made by one PE, shared with its local
 * peers as file descriptors and mapped at the same offset of every
 * reachable heap (growth, the collective scratch beyond the heap), user
 * memory registered into the heap's range, and the heap's teardown.
 * cuda.c's opening comment describes the heap as a whole.
 */
#include "cuda_internal.h"

/* ------------------------------------------------------------------------ */
/* Heap growth and registration                                              */
/* ------------------------------------------------------------------------ */

static void map_release(cu_state *s, const cu_map *m) {
    for (int32_t li = 0; li < s->local_n; li++) {
        if (!m->h[li]) continue;
        symm__cu.MemUnmap(s->va[li] + m->off, m->size);
        symm__cu.MemRelease(m->h[li]);
    }
}

static symm_status map_at(cu_state *s, CUdeviceptr va, uint64_t size,
                          CUmemGenericAllocationHandle h) {
    SYMM__CU(MemMap(va, size, 0, h, 0));
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = s->dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult r = symm__cu.MemSetAccess(va, size, &acc, 1);
    if (r != CUDA_SUCCESS) {
        symm__cu.MemUnmap(va, size);
        return symm__cu_fail(r, "cuMemSetAccess");
    }
    return SYMM_SUCCESS;
}

static symm_status push_map(cu_map **arr, size_t *n, size_t *cap, const cu_map *m) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        cu_map *na = realloc(*arr, nc * sizeof *na);
        if (!na) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = *m;
    return SYMM_SUCCESS;
}

/* The collective part of growth and registration: this PE's handle h (0 when
 * it failed locally, own mapping already made) is exported, exchanged with
 * the local PEs and every reachable peer's is mapped at off of its range.
 * m->h[local_me] must already be set (or 0). Always takes part in the
 * exchange. On failure everything in m is unmapped and released. */
static symm_status share_and_map(symm__ctx *ctx, cu_state *s, cu_map *m, symm_status st) {
    int fd = -1;
    char msg[512] = "";
    if (st == SYMM_SUCCESS) {
        CUresult r = symm__cu.MemExportToShareableHandle(&fd, m->h[s->local_me],
                                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (r != CUDA_SUCCESS) {
            fd = -1;
            st = symm__cu_fail(r, "cuMemExportToShareableHandle(POSIX fd)");
        }
    }
    if (st != SYMM_SUCCESS) snprintf(msg, sizeof msg, "%s", symm__last_error());
    /* Every PE learns every PE's local outcome first: a PE that failed does
     * not take part in the descriptor exchange, and nobody waits for it. */
    int32_t mine = st, *all = calloc((size_t)ctx->n_pes, sizeof *all);
    int *fds = malloc((size_t)s->local_n * sizeof *fds);
    symm_status gst = SYMM_ERR_OUT_OF_MEMORY;
    if (all && fds) gst = symm__boot_allgather(ctx->boot, &mine, all, sizeof mine);
    else symm__err(gst, "cuda backend: out of host memory");
    if (gst != SYMM_SUCCESS) {
        free(all);
        free(fds);
        if (fd >= 0) close(fd);
        map_release(s, m);
        return gst;
    }
    for (int32_t pe = 0; pe < ctx->n_pes && st == SYMM_SUCCESS; pe++)
        if (all[pe] != SYMM_SUCCESS)
            st = symm__err(all[pe], "PE %d could not create or export its GPU memory (%s)",
                           (int)pe, symm__status_name(all[pe]));
    free(all);
    if (st != SYMM_SUCCESS) {
        if (msg[0]) symm__err(st, "%s", msg);
        free(fds);
        if (fd >= 0) close(fd);
        map_release(s, m);
        return st;
    }
    for (int32_t li = 0; li < s->local_n; li++) fds[li] = -1;
    symm_status sh = symm__boot_share_fd(ctx->boot, fd, fds);
    close(fd);
    if (sh != SYMM_SUCCESS) st = sh;
    for (int32_t li = 0; li < s->local_n; li++) {
        if (li == s->local_me) continue;
        if (st == SYMM_SUCCESS && s->va[li] && fds[li] < 0)
            st = symm__err(SYMM_ERR_PEER_FAILED, "PE %d could not share its GPU memory",
                           (int)s->local_pe[li]);
        if (st == SYMM_SUCCESS && s->va[li]) {
            CUmemGenericAllocationHandle h = 0;
            CUresult r = symm__cu.MemImportFromShareableHandle(
                &h, (void *)(uintptr_t)fds[li], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
            if (r != CUDA_SUCCESS) {
                st = symm__cu_fail(r, "cuMemImportFromShareableHandle(peer fd)");
            } else {
                st = map_at(s, s->va[li] + m->off, m->size, h);
                if (st == SYMM_SUCCESS)
                    m->h[li] = h;
                else
                    symm__cu.MemRelease(h);
            }
        }
    }
    for (int32_t li = 0; li < s->local_n; li++)
        if (fds[li] >= 0) close(fds[li]);
    free(fds);
    if (st != SYMM_SUCCESS) {
        if (msg[0]) symm__err(st, "%s", msg);
        map_release(s, m);
    }
    return st;
}

/* Back [off, off + size) of every reachable heap reservation with new GPU
 * memory: made and zeroed here before any peer can see it, then shared with
 * the local peers and mapped at theirs (collective: st, this PE's outcome so
 * far, takes part in the exchange either way). Kept in s->chunks, so
 * heap_fini releases it. what names it in errors. */
symm_status symm__cu_map_new_chunk(symm__ctx *ctx, cu_state *s, uint64_t off, uint64_t size,
                                   const char *what, symm_status st) {
    cu_map m;
    m.off = off;
    m.size = size;
    m.h = calloc((size_t)s->local_n, sizeof *m.h);
    if (!m.h) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    if (st == SYMM_SUCCESS) {
        char call[128];
        CUmemGenericAllocationHandle h = 0;
        CUresult r = symm__cu.MemCreate(&h, size, &s->prop, 0);
        if (r != CUDA_SUCCESS) {
            snprintf(call, sizeof call, "cuMemCreate(%llu bytes of %s)", (unsigned long long)size,
                     what);
            st = symm__cu_fail(r, call);
        } else if ((st = map_at(s, s->va[s->local_me] + off, size, h)) != SYMM_SUCCESS) {
            symm__cu.MemRelease(h);
        } else {
            m.h[s->local_me] = h;
            r = symm__cu.MemsetD8Async(s->va[s->local_me] + off, 0, size, s->s_int);
            if (r == CUDA_SUCCESS) r = symm__cu.StreamSynchronize(s->s_int);
            if (r != CUDA_SUCCESS) {
                snprintf(call, sizeof call, "cuMemsetD8Async(%s)", what);
                st = symm__cu_fail(r, call);
            }
        }
    }
    st = share_and_map(ctx, s, &m, st); /* releases m on failure */
    if (st == SYMM_SUCCESS) {
        st = push_map(&s->chunks, &s->n_chunks, &s->cap_chunks, &m);
        if (st != SYMM_SUCCESS) map_release(s, &m);
    }
    if (st != SYMM_SUCCESS) free(m.h);
    return st;
}

symm_status symm__cuda_heap_grow(symm__ctx *ctx, uint64_t new_mapped) {
    cu_state *s = ctx->backend;
    uint64_t want = align_up(new_mapped, s->gran);
    if (want <= s->backed) return SYMM_SUCCESS;
    if (want > s->reg_floor)
        return symm__err(SYMM_ERR_OUT_OF_MEMORY,
                         "heap cap reached: %llu bytes needed, %llu available below registered "
                         "memory (cap %llu)", (unsigned long long)want,
                         (unsigned long long)s->reg_floor, (unsigned long long)s->span);
    SYMM_TRY(cu_enter(s));
    SYMM_TRY(symm__cu_map_new_chunk(ctx, s, s->backed, want - s->backed, "heap", SYMM_SUCCESS));
    s->backed = want;
    return SYMM_SUCCESS;
}

symm_status symm__cuda_register(symm__ctx *ctx, void *ptr, uint64_t bytes, uint64_t off) {
    cu_state *s = ctx->backend;
    uint64_t size = align_up(bytes ? bytes : 1, s->gran);
    symm_status st = SYMM_SUCCESS;
    CUmemGenericAllocationHandle h = 0;
    cu_map m;
    m.off = off;
    m.size = size;
    m.h = calloc((size_t)s->local_n, sizeof *m.h);
    if (!m.h) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    /* Local checks; a failure still takes part in the exchange below. */
    if ((st = cu_enter(s)) != SYMM_SUCCESS) {
    } else if (off % s->gran || off < s->backed || off + size > s->span) {
        st = symm__err(SYMM_ERR_INVALID_ARG,
                       "registration range [%llu, +%llu) must be %llu-aligned, above the backed "
                       "heap (%llu) and below the cap (%llu)", (unsigned long long)off,
                       (unsigned long long)size, (unsigned long long)s->gran,
                       (unsigned long long)s->backed, (unsigned long long)s->span);
    } else if ((uintptr_t)ptr % s->gran) {
        st = symm__err(SYMM_ERR_INVALID_ARG,
                       "symm_buf_register: ptr %p is not the start of a cuMemCreate mapping "
                       "(must be %llu-byte aligned)", ptr, (unsigned long long)s->gran);
    } else {
        CUresult r = symm__cu.MemRetainAllocationHandle(&h, ptr);
        if (r != CUDA_SUCCESS) {
            h = 0;
            symm__cu_fail(r, "cuMemRetainAllocationHandle");
            st = symm__err(SYMM_ERR_INVALID_ARG,
                           "symm_buf_register: %p is not memory mapped with cuMemMap (%s)", ptr,
                           symm__last_error());
        } else {
            CUmemAllocationProp prop;
            memset(&prop, 0, sizeof prop);
            CUdeviceptr base = 0;
            size_t range = 0;
            r = symm__cu.MemGetAllocationPropertiesFromHandle(&prop, h);
            if (r != CUDA_SUCCESS) {
                st = symm__cu_fail(r, "cuMemGetAllocationPropertiesFromHandle");
            } else if (!(prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
                       prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
                       prop.location.id != s->dev) {
                st = symm__err(SYMM_ERR_INVALID_ARG,
                               "symm_buf_register: the allocation must be device memory of GPU %d "
                               "created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", s->ordinal);
            } else if (symm__cu.MemGetAddressRange(&base, &range, (CUdeviceptr)(uintptr_t)ptr) ==
                           CUDA_SUCCESS &&
                       (base != (CUdeviceptr)(uintptr_t)ptr || range < size)) {
                st = symm__err(SYMM_ERR_INVALID_ARG,
                               "symm_buf_register: %p must start its mapping and the mapping "
                               "must hold %llu bytes (it holds %zu from %p)", ptr,
                               (unsigned long long)size, range, (void *)(uintptr_t)base);
            } else {
                st = map_at(s, s->va[s->local_me] + off, size, h);
            }
            if (st == SYMM_SUCCESS) {
                m.h[s->local_me] = h;
            } else {
                symm__cu.MemRelease(h);
            }
        }
    }
    st = share_and_map(ctx, s, &m, st);
    if (st == SYMM_SUCCESS) {
        pthread_mutex_lock(&s->reg_lock);
        st = push_map(&s->regs, &s->n_regs, &s->cap_regs, &m);
        if (st == SYMM_SUCCESS && off < s->reg_floor) s->reg_floor = off;
        pthread_mutex_unlock(&s->reg_lock);
        if (st != SYMM_SUCCESS) map_release(s, &m);
    }
    if (st != SYMM_SUCCESS) free(m.h);
    return st;
}

void symm__cuda_unregister(symm__ctx *ctx, uint64_t off, uint64_t bytes) {
    cu_state *s = ctx->backend;
    if (!s) return;
    cu_enter(s);
    symm__cu.StreamSynchronize(s->s_int);
    for (int i = 0; i < SYMM__MAX_TEAMS; i++) { /* a team call that failed midway */
        const cu_lane *l = atomic_load(&s->lanes[i]);
        if (l) symm__cu.StreamSynchronize(l->stream);
    }
    pthread_mutex_lock(&s->reg_lock);
    for (size_t i = 0; i < s->n_regs; i++) {
        if (s->regs[i].off != off) continue;
        cu_map m = s->regs[i];
        s->regs[i] = s->regs[--s->n_regs];
        pthread_mutex_unlock(&s->reg_lock);
        map_release(s, &m);
        free(m.h);
        atomic_fetch_add(&s->heap_gen, 1); /* graphs that copied there are stale */
        return;
    }
    pthread_mutex_unlock(&s->reg_lock);
}

/* ------------------------------------------------------------------------ */
/* The collective scratch                                                    */
/* ------------------------------------------------------------------------ */

/* A team slot's sync area is zeroed when a team takes the slot (teams.c) and
 * at init: zero its LL and staged areas with it (on the internal stream,
 * before the caller's finish), so a new team starts from clear lines and
 * flags (its epochs start again from 0). */
symm_status symm__cu_scratch_zero_slots(symm__ctx *ctx, cu_state *s, uint64_t off, uint64_t n) {
    if (!s->scratch_span || off >= ctx->sys_bytes || !n) return SYMM_SUCCESS;
    uint64_t end = min_u64(off + n, ctx->sys_bytes);
    uint64_t first = off / ctx->slot_bytes, last = (end - 1) / ctx->slot_bytes;
    const CUdeviceptr va = s->va[s->local_me];
    for (uint64_t slot = first; slot <= last; slot++) {
        if (s->ll_slot && slot < CU_LL_SLOTS)
            SYMM__CU(MemsetD8Async(va + s->span + slot * s->ll_slot, 0, s->ll_slot, s->s_int));
        if (s->st_slot && slot < CU_ST_SLOTS)
            SYMM__CU(MemsetD8Async(va + s->st_base + slot * s->st_slot, 0, s->st_slot, s->s_int));
    }
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Teardown                                                                  */
/* ------------------------------------------------------------------------ */

void symm__cuda_heap_fini(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    if (!s || !s->heap_live) return;
    s->heap_live = false;
    if (s->cuctx) {
        symm__cu.CtxSetCurrent(s->cuctx);
        if (s->s_int) symm__cu.StreamSynchronize(s->s_int);
        symm__cu.CtxSynchronize(); /* user streams may still touch the heap */
    }
    for (size_t i = s->n_regs; i-- > 0;) {
        map_release(s, &s->regs[i]);
        free(s->regs[i].h);
    }
    s->n_regs = 0;
    for (size_t i = s->n_chunks; i-- > 0;) {
        map_release(s, &s->chunks[i]);
        free(s->chunks[i].h);
    }
    s->n_chunks = 0;
    s->backed = 0;
    for (int32_t li = 0; li < s->local_n; li++) {
        if (s->va[li]) symm__cu.MemAddressFree(s->va[li], s->span + CU_SCRATCH_RESERVE);
        s->va[li] = 0;
    }
    if (s->peer_table) symm__cu.MemFree(s->peer_table);
    s->peer_table = 0;
    if (ctx->peer_base) {
        for (int32_t pe = 0; pe < ctx->n_pes; pe++) ctx->peer_base[pe] = NULL;
        if (s->owns_peer_base) {
            free(ctx->peer_base);
            ctx->peer_base = NULL;
            s->owns_peer_base = false;
        }
    }
    ctx->heap_base = NULL;
}
