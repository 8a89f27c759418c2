/*
 * The ofi transport (ofi_internal.h): memory registration: mem_add / mem_remove of heap ranges.
 */
#include "ofi_internal.h"

/* ---- memory ------------------------------------------------------------- */


uint64_t ofi__random_key(ofi_tp *st) {
    uint64_t k = 0;
    if (getrandom(&k, sizeof k, 0) != (ssize_t)sizeof k)
        k = (uint64_t)now_ms() * 0x9e3779b97f4a7c15ull;
    if (st->key_bytes < 8) k &= (1ull << (8 * st->key_bytes)) - 1;
    return k ? k : 1;
}

/* Register [base, base + len) for remote access (and local use): 0 or a
 * -FI_* code (why filled). */
int ofi__reg(ofi_tp *st, void *base, size_t len, uint64_t access, uint32_t mem_kind,
               struct fid_mr **mr, char *why, size_t why_len) {
    int rc = -FI_ENOKEY;
    for (int tries = 0; tries < 8 && rc == -FI_ENOKEY; tries++) {
        uint64_t key = (st->mr_mode & FI_MR_PROV_KEY) ? 0 : ofi__random_key(st);
        if (mem_kind == SYMM_TP_MEM_CUDA) {
            struct iovec iov = {base, len};
            struct fi_mr_attr a;
            memset(&a, 0, sizeof a);
            a.mr_iov = &iov;
            a.iov_count = 1;
            a.access = access;
            a.requested_key = key;
            a.iface = FI_HMEM_CUDA;
            a.device.cuda = st->core->device;
            rc = fi_mr_regattr(st->domain, &a, 0, mr);
        } else {
            rc = fi_mr_reg(st->domain, base, len, access, 0, key, 0, mr, NULL);
        }
    }
    if (rc) {
        snprintf(why, why_len, "fi_mr_reg of %zu bytes failed (%s%s)", len, ferr(rc),
                 rc == -FI_ENOMEM ? ": raise the locked-memory limit, ulimit -l" : "");
        return rc;
    }
    if (st->mr_mode & FI_MR_ENDPOINT) {
        rc = fi_mr_bind(*mr, &st->ep->fid, 0);
        if (!rc) rc = fi_mr_enable(*mr);
        if (rc) {
            snprintf(why, why_len, "binding a registration to the endpoint failed (%s)", ferr(rc));
            fi_close(&(*mr)->fid);
            *mr = NULL;
        }
    }
    return rc;
}

void ofi__release_mr(ofi_region *r) {
    fi_close(&((struct fid_mr *)r->mr)->fid);
}

int32_t ofi__mem_add(void *state, void *base, uint64_t heap_off, uint64_t len,
                           uint32_t mem_kind, int dmabuf_fd) {
    ofi_tp *st = state;
    const symm_tp_core *core = st->core;
    (void)dmabuf_fd; /* FI_MR_DMABUF is newer than the libfabric this was written against */
    pthread_mutex_lock(&st->mu);
    char why[300] = {0};
    int32_t status = 0;
    struct fid_mr *mr = NULL;
    /* GPU memory without FI_HMEM: not registered; peers send messages that
     * this PE's progress applies through the core's service (STAGED_ADDR
     * tells them so). */
    int staged = mem_kind == SYMM_TP_MEM_CUDA && !st->hmem && st->staging;
    if (mem_kind == SYMM_TP_MEM_CUDA && !st->hmem && !st->staging) {
        status = SYMM_ERR_NOT_SUPPORTED;
        snprintf(why, sizeof why, "GPU memory cannot be reached: provider %s has no FI_HMEM "
                 "here and %s; run the host backend (SYMM_BACKEND=host)", st->prov,
                 !(st->info->caps & FI_MSG) ? "no FI_MSG to stage it through messages"
                 : "the core offers no GPU-memory service (mem_copy) to stage it through");
    } else if (!staged) {
        int rc = ofi__reg(st, base, len, ACCESS, mem_kind, &mr, why, sizeof why);
        if (rc) status = rc == -FI_ENOMEM ? SYMM_ERR_OUT_OF_MEMORY
                         : mem_kind == SYMM_TP_MEM_CUDA ? SYMM_ERR_NOT_SUPPORTED : SYMM_ERR_SYSTEM;
    }
    pthread_mutex_lock(&st->cq_mu); /* the progress thread reads regs (atomic messages) */
    ofi_region *regs = realloc(st->regs, sizeof *regs * (size_t)(st->n_regs + 1));
    if (regs) st->regs = regs;
    pthread_mutex_unlock(&st->cq_mu);
    if (!regs && !status) {
        status = SYMM_ERR_OUT_OF_MEMORY;
        snprintf(why, sizeof why, "out of host memory");
    }
    /* Collective: nobody targets the range before every PE has added it.
     * Data operations of other threads may run meanwhile (transport.h,
     * "Thread safety"): regs is consistent, mu released. */
    pthread_mutex_unlock(&st->mu);
    uint64_t *raddr, *rkey;
    int32_t rc = symm__tp_mem_exchange(
        core, "ofi transport: ", status, why,
        staged ? STAGED_ADDR : (st->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)base : 0,
        mr ? fi_mr_key(mr) : 0,
        heap_off, len, &raddr, &rkey);
    if (rc) {
        if (mr) fi_close(&mr->fid);
        return rc;
    }
    pthread_mutex_lock(&st->mu);
    pthread_mutex_lock(&st->cq_mu);
    st->regs[st->n_regs++] = (ofi_region){.off = heap_off, .len = len, .base = base, .mr = mr,
                                          .desc = mr ? fi_mr_desc(mr) : NULL, .raddr = raddr,
                                          .rkey = rkey};
    pthread_mutex_unlock(&st->cq_mu);
    pthread_mutex_unlock(&st->mu);
    return 0;
}

void ofi__mem_remove(void *state, uint64_t heap_off, uint64_t len) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    pthread_mutex_lock(&st->cq_mu);
    symm__tp_region_remove(st->regs, &st->n_regs, heap_off, len, ofi__release_mr);
    pthread_mutex_unlock(&st->cq_mu);
    pthread_mutex_unlock(&st->mu);
}
