/*
 * What the RDMA-style transports (ibverbs, ofi) share, header-only and free
 * of the core's types like amo_cpu.h: the table of ranges given to mem_add
 * (each with every PE's target address and key), its exchange and lookups,
 * and the arithmetic of an atomic op built on compare-and-swap.
 */
#ifndef SYMM_TP_COMMON_H
#define SYMM_TP_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <symm/symm.h>

#include "runtime/transports/transport.h"

/* One mem_add range: where it is here, and how each PE's copy is named. */
typedef struct symm__tp_region {
    uint64_t off, len; /* heap offset and length                         */
    char *base;        /* this PE's address of off                       */
    void *mr;          /* the transport's registration                   */
    void *desc;        /* its local descriptor, where the API has one    */
    uint64_t *raddr;   /* [n_pes] target address of off on each PE       */
    uint64_t *rkey;    /* [n_pes] its key there                          */
} symm__tp_region;

/* The region holding heap offset off, or NULL. */
static inline symm__tp_region *symm__tp_region_of_off(symm__tp_region *regs, int n,
                                                      uint64_t off) {
    for (int i = 0; i < n; i++)
        if (off >= regs[i].off && off - regs[i].off < regs[i].len) return &regs[i];
    return NULL;
}

/* The region holding local [p, p+1), or NULL. */
static inline symm__tp_region *symm__tp_region_of_ptr(symm__tp_region *regs, int n,
                                                      const void *p) {
    const char *c = p;
    for (int i = 0; i < n; i++)
        if (c >= regs[i].base && (uint64_t)(c - regs[i].base) < regs[i].len) return &regs[i];
    return NULL;
}

/* pe's target address and key for heap offset off, and how many of the n
 * bytes from off stay in that region (*room); 0 when no region holds off. */
static inline int symm__tp_remote_at(symm__tp_region *regs, int n_regs, int32_t pe, uint64_t off,
                                     uint64_t n, uint64_t *raddr, uint64_t *rkey,
                                     uint64_t *room) {
    symm__tp_region *r = symm__tp_region_of_off(regs, n_regs, off);
    if (!r) return 0;
    *raddr = r->raddr[pe] + (off - r->off);
    *rkey = r->rkey[pe];
    *room = r->off + r->len - off;
    if (*room > n) *room = n;
    return 1;
}

/* Free one region: release(region) frees the transport's registration. */
static inline void symm__tp_region_free(symm__tp_region *r, void (*release)(symm__tp_region *)) {
    if (r->mr) release(r);
    free(r->raddr);
    free(r->rkey);
}

/* Forget the region added at heap_off (a range is added once per offset;
 * len is only checked not to be shorter, so a caller's rounding cannot leak
 * the registration): it is freed (symm__tp_region_free), then the last
 * region takes its place. Returns 1 when one was removed. */
static inline int symm__tp_region_remove(symm__tp_region *regs, int *n, uint64_t heap_off,
                                         uint64_t len, void (*release)(symm__tp_region *)) {
    for (int i = 0; i < *n; i++) {
        if (regs[i].off == heap_off && len >= regs[i].len) {
            symm__tp_region_free(&regs[i], release);
            regs[i] = regs[--*n];
            return 1;
        }
    }
    return 0;
}

/* Collective part of mem_add: every PE tells its status, address and key
 * for [heap_off, +len). status/why: this PE's own failure (it still takes
 * part, so no PE waits for it). who prefixes messages ("ibverbs: "). Returns
 * 0 with *raddr and *rkey ([n_pes], the caller's to free) or a status with
 * the core's error set. */
static inline int32_t symm__tp_mem_exchange(const symm_tp_core *core, const char *who,
                                            int32_t status, const char *why, uint64_t addr,
                                            uint64_t key, uint64_t heap_off, uint64_t len,
                                            uint64_t **raddr, uint64_t **rkey) {
    typedef struct mem_msg {
        uint32_t status, pad;
        uint64_t addr, key;
    } mem_msg;
    size_t n = (size_t)core->n_pes;
    mem_msg mine = {.status = (uint32_t)status, .addr = addr, .key = key};
    mem_msg *all = calloc(n, sizeof *all);
    *raddr = calloc(n, sizeof **raddr);
    *rkey = calloc(n, sizeof **rkey);
    if ((!*raddr || !*rkey) && !status) {
        status = SYMM_ERR_OUT_OF_MEMORY;
        why = "out of host memory";
        mine.status = (uint32_t)status;
    }
    /* Without room for the answers this PE cannot take part (a few bytes per
     * PE: not worth a fallback); every other case reports through it. */
    int32_t rc = all ? core->allgather(core->core, &mine, all, sizeof mine)
                     : SYMM_ERR_OUT_OF_MEMORY;
    int32_t bad = -1;
    for (size_t i = 0; all && !rc && i < n && bad < 0; i++)
        if (all[i].status) bad = (int32_t)i;
    char msg[600];
    if (status) {
        snprintf(msg, sizeof msg, "%sregistering heap [%llu, +%llu): %s", who,
                 (unsigned long long)heap_off, (unsigned long long)len, why);
        rc = core->set_error(core->core, status, msg);
    } else if (!all && rc) {
        rc = core->set_error(core->core, rc, "out of host memory");
    } else if (!rc && bad >= 0) {
        snprintf(msg, sizeof msg, "%sPE %d could not register heap [%llu, +%llu) (status %u; its "
                 "error says why)", who, bad, (unsigned long long)heap_off,
                 (unsigned long long)len, all[bad].status);
        rc = core->set_error(core->core, (int32_t)all[bad].status, msg);
    } /* else an allgather failure: the core's error stands */
    for (size_t i = 0; !rc && i < n; i++) {
        (*raddr)[i] = all[i].addr;
        (*rkey)[i] = all[i].key;
    }
    free(all);
    if (rc) {
        free(*raddr);
        free(*rkey);
        *raddr = *rkey = NULL;
    }
    return rc;
}

/* put_signal's signal: an aligned 64-bit word, SET or ADD. 0, or
 * SYMM_ERR_INVALID_ARG with the core's error set (who prefixes it). */
static inline int32_t symm__tp_check_signal(const symm_tp_core *core, const char *who,
                                            uint64_t sig_off, uint32_t sig_op) {
    char msg[160];
    if (sig_off % 8)
        snprintf(msg, sizeof msg, "%ssignal offset %llu is not 8-aligned", who,
                 (unsigned long long)sig_off);
    else if (sig_op != SYMM_SIGNAL_SET && sig_op != SYMM_SIGNAL_ADD)
        snprintf(msg, sizeof msg, "%sunknown signal op %u", who, sig_op);
    else
        return 0;
    return core->set_error(core->core, SYMM_ERR_INVALID_ARG, msg);
}

/* The element's new value for op (SYMM_AMO_*; INC takes v = 1 from the
 * caller), or 0 when op writes nothing: one step of an op built on CSWAP. */
static inline int symm__tp_amo_next(uint32_t op, uint64_t old, uint64_t v, uint64_t cmp,
                                    uint64_t *out) {
    switch (op) {
    case SYMM_AMO_FETCH: return 0;
    case SYMM_AMO_SET: case SYMM_AMO_SWAP: *out = v; break;
    case SYMM_AMO_COMPARE_SWAP: if (old != cmp) return 0; *out = v; break;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC:
    case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD: *out = old + v; break;
    case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND: *out = old & v; break;
    case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR: *out = old | v; break;
    case SYMM_AMO_FETCH_XOR: case SYMM_AMO_XOR: *out = old ^ v; break;
    default: return 0;
    }
    return 1;
}

#endif /* SYMM_TP_COMMON_H */
