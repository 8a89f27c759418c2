/*
 * The ofi transport (ofi_internal.h): which libfabric provider, domain and attributes:
 * SYMM_OFI_PROVIDER or the auto order, what each lacks, and the probe.
 */
#include "ofi_internal.h"

/* ---- provider choice ---------------------------------------------------- */

/* What this build can use (FI_MR_RAW, FI_MR_MMU_NOTIFY, FI_MR_RMA_EVENT: no). */
#define MR_MODES (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

uint32_t ofi__api_version(void) {
    uint32_t have = ofi__F->version(), built = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    return have < built ? have : built;
}

/* One fi_getinfo for prov with the given wishes; NULL when none matches. */
static struct fi_info *query(const symm_tp_core *core, const char *prov, uint64_t caps,
                             uint64_t op_flags, uint64_t order, int *rc_out) {
    struct fi_info *h = ofi__F->dupinfo(NULL), *info = NULL;
    if (!h) {
        *rc_out = -FI_ENOMEM;
        return NULL;
    }
    h->caps = caps;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->addr_format = FI_FORMAT_UNSPEC;
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->mr_mode = (int)MR_MODES;
    h->domain_attr->threading = FI_THREAD_SAFE;
    h->tx_attr->op_flags = op_flags;
    h->tx_attr->msg_order = order;
    h->rx_attr->msg_order = order;
    if (prov) h->fabric_attr->prov_name = strdup(prov);
    const char *dom = env(core, "SYMM_OFI_DOMAIN");
    if (dom) h->domain_attr->name = strdup(dom);
    /* SYMM_OFI_ADDR: this host's address on the fabric (the NIC's IP). */
    const char *node = env(core, "SYMM_OFI_ADDR");
    *rc_out = ofi__F->getinfo(ofi__api_version(), node, NULL, node ? FI_SOURCE : 0, h, &info);
    ofi__F->freeinfo(h);
    return *rc_out == 0 ? info : NULL;
}

/* The entry of a list to use: a named domain, else the first that is not
 * the loopback interface or an IPv6 link-local source (unreachable from
 * other hosts), else the first. */
static struct fi_info *pick_entry(struct fi_info *list) {
    for (struct fi_info *i = list; i; i = i->next) {
        const char *d = i->domain_attr && i->domain_attr->name ? i->domain_attr->name : "";
        if (!strcmp(d, "lo")) continue;
        if (i->addr_format == FI_SOCKADDR_IN6 && i->src_addr) {
            const uint8_t *a = (const uint8_t *)i->src_addr + 8; /* sin6_addr */
            if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) continue;
        }
        return i;
    }
    return list;
}


/* The best attribute set prov offers (see the top of the file). */
static int try_provider(const symm_tp_core *core, const char *prov, const char *force_amo,
                        choice *c, char *why, size_t why_len) {
    int rc;
    bool want_am = force_amo && !strcmp(force_amo, "am");
    struct fi_info *l = query(core, prov, FI_RMA, 0, 0, &rc);
    if (!l) {
        const char *node = env(core, "SYMM_OFI_ADDR");
        snprintf(why, why_len, "%s: %s%s%s", prov ? prov : "any",
                 rc == -FI_ENODATA ? "not available here (no such provider, device or interface)"
                                   : ferr(rc),
                 node ? " with SYMM_OFI_ADDR=" : "", node ? node : "");
        return -1;
    }
    ofi__F->freeinfo(l);
    static const struct { uint64_t caps, opf, order; int amo, delivery; } ladder[] = {
        {FI_RMA | FI_ATOMIC | FI_MSG, FI_DELIVERY_COMPLETE, 0, AMO_NATIVE, 1},
        {FI_RMA | FI_ATOMIC, FI_DELIVERY_COMPLETE, 0, AMO_NATIVE, 1},
        {FI_RMA | FI_MSG, FI_DELIVERY_COMPLETE, 0, AMO_AM, 1},
        {FI_RMA | FI_ATOMIC | FI_MSG, 0, FI_ORDER_RAW, AMO_NATIVE, 0},
        {FI_RMA | FI_ATOMIC, 0, FI_ORDER_RAW, AMO_NATIVE, 0},
        {FI_RMA | FI_MSG, 0, FI_ORDER_RAW, AMO_AM, 0},
    };
    for (size_t k = 0; k < sizeof ladder / sizeof ladder[0]; k++) {
        if (want_am && !(ladder[k].caps & FI_MSG)) continue;
        l = query(core, prov, ladder[k].caps, ladder[k].opf, ladder[k].order, &rc);
        if (!l) continue;
        /* shm (libfabric 1.17, measured) hands a fetching atomic the result of
         * another initiator's atomic on the same target under
         * FI_DELIVERY_COMPLETE; without it every result was right, and shm
         * orders reads after writes, so quiet flushes with a read instead. */
        if (ladder[k].delivery && !strcmp(pick_entry(l)->fabric_attr->prov_name, "shm")) {
            ofi__F->freeinfo(l);
            continue;
        }
        c->info = ofi__F->dupinfo(pick_entry(l));
        ofi__F->freeinfo(l);
        if (!c->info) {
            snprintf(why, why_len, "out of host memory");
            return -1;
        }
        c->amo = want_am ? AMO_AM : ladder[k].amo;
        c->delivery = ladder[k].delivery;
        /* the same with FI_RMA_EVENT, where offered: a target's counter */
        l = query(core, prov, ladder[k].caps | FI_RMA_EVENT, ladder[k].opf, ladder[k].order, &rc);
        if (l) {
            struct fi_info *e = ofi__F->dupinfo(pick_entry(l));
            ofi__F->freeinfo(l);
            if (e && !strcmp(e->fabric_attr->prov_name, c->info->fabric_attr->prov_name)) {
                ofi__F->freeinfo(c->info);
                c->info = e;
                c->rma_event = 1;
            } else if (e) {
                ofi__F->freeinfo(e);
            }
        }
        return 0;
    }
    snprintf(why, why_len, "%s: offers RMA but neither delivery completion nor reads ordered "
             "after writes (quiet could not mean remote completion)%s", prov ? prov : "any",
             want_am ? ", or no FI_MSG for SYMM_OFI_ATOMICS=am" : "");
    return -1;
}

/* libfabric sizes per-peer resources by FI_UNIVERSE_SIZE (default 256):
 * ofi_rxm's verbs CQ is (rx + tx queue) x that, which a Soft-RoCE device
 * refused (measured in the guest). Like MPI launchers, say the job's size
 * when the user has not; read once, at libfabric's first call. */
static void universe_size(const symm_tp_core *core) {
    if (getenv("FI_UNIVERSE_SIZE")) return;
    char v[16];
    snprintf(v, sizeof v, "%d", core->n_pes > 2 ? core->n_pes : 2);
    setenv("FI_UNIVERSE_SIZE", v, 0);
}

/* The provider: SYMM_OFI_PROVIDER, else AUTO_ORDER. 0, or a status + why. */
int32_t ofi__choose(const symm_tp_core *core, choice *c, char *why, size_t why_len,
                      char *reason, size_t reason_len) {
    memset(c, 0, sizeof *c);
    if (!ofi__F) {
        snprintf(why, why_len, "%s", ofi__F_why);
        return SYMM_ERR_NOT_SUPPORTED;
    }
    universe_size(core);
    if (ofi__F->version() < API_MIN) {
        snprintf(why, why_len, "libfabric %u.%u is too old (1.9 or newer needed)",
                 FI_MAJOR(ofi__F->version()), FI_MINOR(ofi__F->version()));
        return SYMM_ERR_NOT_SUPPORTED;
    }
    const char *want = env(core, "SYMM_OFI_PROVIDER");
    const char *amo = env(core, "SYMM_OFI_ATOMICS");
    if (amo && strcmp(amo, "auto") && strcmp(amo, "native") && strcmp(amo, "cas") &&
        strcmp(amo, "am")) {
        snprintf(why, why_len, "SYMM_OFI_ATOMICS=\"%s\": expected auto, native, cas or am", amo);
        return SYMM_ERR_INVALID_ARG;
    }
    if (want) {
        if (try_provider(core, want, amo, c, why, why_len) != 0) return SYMM_ERR_NOT_SUPPORTED;
        snprintf(reason, reason_len, "SYMM_OFI_PROVIDER=%s", want);
        return 0;
    }
    const char *tp = core->getenv(core->core, "SYMM_TRANSPORT");
    bool named = tp && !strcmp(tp, "ofi");
    size_t n_try = named ? N_AUTO : N_AUTO_CORE;
    const char *order = named ? "efa, cxi, verbs;ofi_rxm, tcp;ofi_rxm" : "efa, cxi";
    char tried[600] = "";
    for (size_t i = 0; i < n_try; i++) {
        char w[200];
        if (try_provider(core, AUTO_ORDER[i], amo, c, w, sizeof w) == 0) {
            snprintf(reason, reason_len, "auto (order %s)%s%s", order, tried[0] ? "; skipped " : "",
                     tried);
            return 0;
        }
        size_t len = strlen(tried);
        snprintf(tried + len, sizeof tried - len, "%s%s", len ? "; " : "", w);
    }
    snprintf(why, why_len, "no libfabric provider of %s offers an RDM endpoint with RMA here (%s); "
             "%sset SYMM_OFI_PROVIDER (fi_info -l lists them)", order, tried,
             named ? "" : "SYMM_TRANSPORT=auto tries only these (verbs and tcp are left to the "
                          "ibverbs and tcp transports): set SYMM_TRANSPORT=ofi, or ");
    return SYMM_ERR_NO_DEVICE;
}

/* Atomics run at the target by its CPU, with atomic instructions? */
int ofi__software_atomics(const char *prov) {
    static const char *const sw[] = {"ofi_rxm", "ofi_rxd", "shm", "sockets", "udp"};
    char copy[64];
    snprintf(copy, sizeof copy, "%s", prov);
    /* a layered name ("verbs;ofi_rxm"): the last layer runs the atomics */
    const char *last = strrchr(copy, ';');
    last = last ? last + 1 : copy;
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++)
        if (!strcmp(last, sw[i])) return 1;
    return 0;
}

/* ---- probe ---------------------------------------------------------------- */

int32_t ofi__probe(const symm_tp_core *core, char *why, size_t why_len) {
    choice c;
    char reason[700];
    int32_t rc = ofi__choose(core, &c, why, why_len, reason, sizeof reason);
    if (c.info) ofi__F->freeinfo(c.info);
    return rc;
}
