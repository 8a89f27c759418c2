/*
 * The ofi transport (ofi_internal.h): the atomics paths: the provider's own, CSWAP loops,
 * messages the target applies.
 */
#include "ofi_internal.h"

/* ---- atomics -------------------------------------------------------------- */

static uint32_t dtype_width(uint32_t dtype) {
    return symm__amo_size(dtype);
}

/* The libfabric call for a symm op: kind and fi_op (floats travel as bits). */
static void fi_op_of(uint32_t op, int *kind, enum fi_op *aop) {
    switch (op) {
    case SYMM_AMO_FETCH: *kind = K_FETCH; *aop = FI_ATOMIC_READ; break;
    case SYMM_AMO_SET: *kind = K_WRITE; *aop = FI_ATOMIC_WRITE; break;
    case SYMM_AMO_SWAP: *kind = K_FETCH; *aop = FI_ATOMIC_WRITE; break;
    case SYMM_AMO_COMPARE_SWAP: *kind = K_COMPARE; *aop = FI_CSWAP; break;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_FETCH_ADD: *kind = K_FETCH; *aop = FI_SUM; break;
    case SYMM_AMO_INC: case SYMM_AMO_ADD: *kind = K_WRITE; *aop = FI_SUM; break;
    case SYMM_AMO_FETCH_AND: *kind = K_FETCH; *aop = FI_BAND; break;
    case SYMM_AMO_AND: *kind = K_WRITE; *aop = FI_BAND; break;
    case SYMM_AMO_FETCH_OR: *kind = K_FETCH; *aop = FI_BOR; break;
    case SYMM_AMO_OR: *kind = K_WRITE; *aop = FI_BOR; break;
    case SYMM_AMO_FETCH_XOR: *kind = K_FETCH; *aop = FI_BXOR; break;
    default: *kind = K_WRITE; *aop = FI_BXOR; break; /* SYMM_AMO_XOR */
    }
}

static int valid(ofi_tp *st, int kind, enum fi_datatype dt, enum fi_op aop) {
    size_t count = 0;
    int rc = kind == K_WRITE   ? fi_atomicvalid(st->ep, dt, aop, &count)
             : kind == K_FETCH ? fi_fetch_atomicvalid(st->ep, dt, aop, &count)
                               : fi_compare_atomicvalid(st->ep, dt, aop, &count);
    return rc == 0 && count >= 1;
}

/* Fill st->how and settle st->amo (AMO_AM when some op has no way). */
void ofi__plan_atomics(ofi_tp *st, const char *force) {
    if (st->amo == AMO_AM) return;
    int missing = 0;
    for (int w = 0; w < 2; w++) {
        enum fi_datatype dt = w ? FI_UINT64 : FI_UINT32;
        int cas = valid(st, K_COMPARE, dt, FI_CSWAP);
        for (uint32_t op = 0; op <= SYMM_AMO_XOR; op++) {
            int kind;
            enum fi_op aop;
            fi_op_of(op, &kind, &aop);
            int native = valid(st, kind, dt, aop);
            if (force && !strcmp(force, "cas") && op != SYMM_AMO_COMPARE_SWAP) native = 0;
            st->how[w][op] = native ? HOW_NATIVE : cas ? HOW_CAS : HOW_NONE;
            if (!native) st->amo = AMO_CAS;
            missing |= st->how[w][op] == HOW_NONE;
        }
    }
    if (missing) st->amo = (st->info->caps & FI_MSG) ? AMO_AM : -1;
    if (st->amo == AMO_AM || st->amo < 0) memset(st->how, HOW_NONE, sizeof st->how);
}

/* One provider atomic on pe's element at off. old (may be NULL) receives the
 * prior value when it completes; wait = 0 leaves that to the next quiet. */
static int32_t native(ofi_tp *st, int32_t pe, uint64_t off, uint32_t width, int kind,
                      enum fi_op aop, uint64_t v, uint64_t cmp, void *old, int old_gpu, int wait) {
    uint64_t raddr, rkey, room;
    int32_t rc = ofi__remote_at(st, pe, off, width, &raddr, &rkey, &room);
    if (rc) return rc;
    if (room < width)
        return fail(st->core, SYMM_ERR_OUT_OF_BOUNDS, "atomic at heap offset %llu crosses the "
                    "end of a registered range", (unsigned long long)off);
    char *slot;
    rc = ofi__bounce_get(st, 32, &slot); /* operand, compare, result */
    if (rc) return rc;
    memcpy(slot, &v, 8);
    memcpy(slot + 8, &cmp, 8);
    ofi_op o = {.kind = kind == K_WRITE ? OP_ATOMIC : kind == K_FETCH ? OP_FETCH : OP_COMPARE,
            .buf = slot, .len = width, .desc = st->bounce_desc, .raddr = raddr, .rkey = rkey,
            .dt = width == 8 ? FI_UINT64 : FI_UINT32, .aop = aop, .compare = slot + 8,
            .result = slot + 16, .copy_gpu = (uint8_t)old_gpu};
    rc = ofi__post(st, pe, &o, kind != K_WRITE, 1, kind != K_WRITE ? old : NULL, slot + 16,
                   width, 0);
    if (rc || !wait) return rc;
    return kind == K_WRITE ? ofi__flush(st, pe) : ofi__wait_for(st, pe, 0);
}

/* Any op as a CSWAP loop of its own width, starting from an atomic read
 * (FI_ATOMIC_READ where valid, else a CSWAP that swaps 0 for 0). */
static int32_t cas_loop(ofi_tp *st, int32_t pe, uint64_t off, uint32_t width, uint32_t op,
                        uint64_t v, uint64_t cmp, uint64_t *fetched) {
    uint64_t mask = width == 8 ? ~0ull : 0xffffffffull, cur = 0;
    int w = width == 8;
    int32_t rc = st->how[w][SYMM_AMO_FETCH] == HOW_NATIVE
                     ? native(st, pe, off, width, K_FETCH, FI_ATOMIC_READ, 0, 0, &cur, 0, 1)
                     : native(st, pe, off, width, K_COMPARE, FI_CSWAP, 0, 0, &cur, 0, 1);
    for (;;) {
        if (rc) return rc;
        cur &= mask;
        uint64_t nv;
        if (!symm__tp_amo_next(op, cur, v & mask, cmp & mask, &nv) || (nv & mask) == cur) {
            *fetched = cur;
            return 0;
        }
        uint64_t got = 0;
        rc = native(st, pe, off, width, K_COMPARE, FI_CSWAP, nv & mask, cur, &got, 0, 1);
        if (!rc && (got & mask) == cur) {
            *fetched = cur;
            return 0;
        }
        cur = got;
    }
}

/* An atomic as a message the target applies (with CPU atomics, or with the
 * core's mem_atomic on a staged GPU range). Blocking unless nbi (then the
 * fetched value, if any, arrives by the next quiet). */
static int32_t am_atomic(ofi_tp *st, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                         uint64_t v, uint64_t cmp, void *fetched, int fetched_gpu, int wait) {
    char *b;
    int32_t rc = ofi__bounce_get(st, sizeof(am_msg), &b);
    if (rc) return rc;
    am_msg *m = (am_msg *)(void *)b;
    *m = (am_msg){.magic = AM_MAGIC, .dtype = dtype, .op = op, .src = st->me, .off = off,
                  .value = v, .compare = cmp, .key = st->peers[pe].am_key ^ st->am_key_flip};
    ofi_op o = {.kind = OP_SEND, .buf = m, .len = sizeof *m, .desc = st->bounce_desc,
                .copy_gpu = (uint8_t)fetched_gpu};
    rc = ofi__post(st, pe, &o, 1, 1, fetched, NULL, symm__amo_size(dtype), 0);
    if (rc || !wait) return rc;
    rc = ofi__wait_for(st, pe, 0);
    if (!rc) rc = ofi__take_err(st, pe, "atomic", off);
    return rc;
}

int32_t ofi__atomic_locked(ofi_tp *st, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                             const void *value, const void *compare, void *fetched,
                             uint32_t flags) {
    int32_t rc = ofi__check_pe(st, pe);
    if (rc) return rc;
    uint32_t width = dtype_width(dtype);
    if (!width || op > SYMM_AMO_XOR)
        return fail(st->core, SYMM_ERR_INVALID_ARG, "atomic op %u on dtype %u: expected a "
                    "SYMM_AMO_* op on a 32- or 64-bit dtype", op, dtype);
    if (off % width)
        return fail(st->core, SYMM_ERR_INVALID_ARG, "atomic offset %llu is not %u-aligned",
                    (unsigned long long)off, width);
    uint64_t v = 0, cmp = 0;
    if (value) memcpy(&v, value, width);
    if (compare) memcpy(&cmp, compare, width);
    if (op == SYMM_AMO_INC || op == SYMM_AMO_FETCH_INC) v = 1;
    int nbi = (flags & SYMM_TP_NBI) != 0;
    int fgpu = fetched && ofi__gpu_ptr(st, fetched);
    ofi_region *r = symm__tp_region_of_off(st->regs, st->n_regs, off);
    if (st->amo == AMO_AM || (r && ofi__staged(r, pe)))
        return am_atomic(st, pe, off, dtype, op, v, cmp, fetched, fgpu, !nbi);
    if (st->amo < 0)
        return fail(st->core, SYMM_ERR_NOT_SUPPORTED, "provider %s has no usable atomics (and no "
                    "FI_MSG to carry them as messages)", st->prov);
    int w = width == 8;
    if (st->how[w][op] == HOW_NATIVE) {
        int kind;
        enum fi_op aop;
        fi_op_of(op, &kind, &aop);
        rc = native(st, pe, off, width, kind, aop, v, cmp, fetched, fgpu, !nbi);
        if (!rc && !nbi && fgpu) rc = ofi__take_err(st, pe, "atomic", off);
        return rc;
    }
    uint64_t old = 0;
    rc = cas_loop(st, pe, off, width, op, v, cmp, &old); /* blocking: nbi may finish early */
    if (!rc && fetched && fgpu) rc = st->core->mem_copy(st->core->core, fetched, &old, width);
    else if (!rc && fetched) memcpy(fetched, &old, width);
    return rc;
}

int32_t ofi__atomic(void *state, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                          const void *value, const void *compare, void *fetched, uint32_t flags) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = ofi__atomic_locked(st, pe, off, dtype, op, value, compare, fetched, flags);
    pthread_mutex_unlock(&st->mu);
    return rc;
}
