/*
 * The ofi transport (ofi_internal.h): set-up and tear-down of an instance, and the plugin's ops
 * table.
 */
#include "ofi_internal.h"

const struct ofi_fns *ofi__F;
const char *ofi__F_why = "";

/* ---- set-up --------------------------------------------------------------- */

static void ofi_close(void *state) {
    ofi_tp *st = state;
    if (!st) return;
    atomic_store(&st->stop, 1);
    if (st->wake[1] >= 0) {
        char b = 1;
        ssize_t k = write(st->wake[1], &b, 1);
        (void)k;
    }
    if (st->thread_started) pthread_join(st->thread, NULL);
    /* the endpoint first: nothing completes into memory freed below (a
     * provider that binds registrations to it, FI_MR_ENDPOINT, may refuse
     * while they exist: then it goes after them) */
    int ep_busy = st->ep && fi_close(&st->ep->fid) == -FI_EBUSY;
    for (int i = 0; i < st->n_regs; i++) symm__tp_region_free(&st->regs[i], ofi__release_mr);
    if (st->bounce_mr) fi_close(&st->bounce_mr->fid);
    if (st->hello_mr) fi_close(&st->hello_mr->fid);
    if (st->am_mr) fi_close(&st->am_mr->fid);
    if (ep_busy) fi_close(&st->ep->fid);
    if (st->av) fi_close(&st->av->fid);
    if (st->rx_cntr) fi_close(&st->rx_cntr->fid);
    if (st->cq) fi_close(&st->cq->fid);
    if (st->domain) fi_close(&st->domain->fid);
    if (st->fabric) fi_close(&st->fabric->fid);
    if (st->info) ofi__F->freeinfo(st->info);
    if (st->wake[0] >= 0) close(st->wake[0]);
    if (st->wake[1] >= 0) close(st->wake[1]);
    free(st->bounce);
    free(st->hello);
    free(st->auth_chal);
    free(st->am_block);
    free(st->am_buf);
    free(st->regs);
    free(st->recs);
    free(st->peers);
    pthread_mutex_destroy(&st->mu);
    pthread_mutex_destroy(&st->cq_mu);
    free(st);
}

/* shm names each endpoint's shared-memory region "<pid>:<n>:<n>" and leaves
 * it in /dev/shm when the process is killed; a later process given the same
 * pid then cannot create its region (EBUSY). So symm names its shm endpoints
 * itself, symm-<pid namespace>-<pid>-<random>, and removes the regions of
 * this pid namespace whose process is gone (only symm's own names, only
 * dead pids: a live peer's mapping is unaffected by the unlink anyway). */
static void shm_name(ofi_tp *st, char *name, size_t cap) {
    char ns[64] = "", buf[64];
    ssize_t k = readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
    unsigned long long ino = 0;
    if (k > 0) {
        buf[k] = 0;
        const char *b = strchr(buf, '[');
        if (b) ino = strtoull(b + 1, NULL, 10);
    }
    snprintf(ns, sizeof ns, "symm-%llu-", ino);
    DIR *d = opendir("/dev/shm");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, ns, strlen(ns)) != 0) continue;
        long pid = strtol(e->d_name + strlen(ns), NULL, 10);
        if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char path[512];
            snprintf(path, sizeof path, "/dev/shm/%.400s", e->d_name);
            if (unlink(path) == 0)
                logf_(st->core, 1, "removed %s, the shm region of a process that is gone", path);
        }
    }
    if (d) closedir(d);
    snprintf(name, cap, "%s%ld-%016llx", ns, (long)getpid(),
             (unsigned long long)ofi__random_key(st));
}

/* The domain's limits and modes, and the testing knobs over them. */
static int32_t open_limits(ofi_tp *st, char *why, size_t why_len) {
    struct fi_info *fi = st->info;
    st->mr_mode = (uint64_t)fi->domain_attr->mr_mode;
    st->key_bytes = fi->domain_attr->mr_key_size ? fi->domain_attr->mr_key_size : 8;
    if (st->key_bytes > 8) st->key_bytes = 8;
    st->max_rma = fi->ep_attr->max_msg_size && fi->ep_attr->max_msg_size < MAX_RMA
                      ? fi->ep_attr->max_msg_size : MAX_RMA;
    st->depth = fi->tx_attr->size && fi->tx_attr->size < DEPTH_MAX ? (uint32_t)fi->tx_attr->size
                                                                   : DEPTH_MAX;
    if (st->depth < 16) st->depth = 16;
    st->hmem = (fi->caps & FI_HMEM) != 0;
    /* Without FI_HMEM a GPU heap is staged through the core's service, which
     * needs messages; the core offers the service only where the job's
     * memory may be GPU memory (the CUDA backend, or the host backend's test
     * hook), so host-memory jobs keep the small message slots. */
    st->staging = !st->hmem && symm_tp_core_has_gpu_mem(st->core) && (fi->caps & FI_MSG);
    const char *knob = env(st->core, "SYMM_OFI_SPIN_US");
    if (knob) {
        char *end;
        unsigned long v = strtoul(knob, &end, 10);
        if (*end || v > SPIN_US_MAX) {
            snprintf(why, why_len, "SYMM_OFI_SPIN_US=\"%s\": expected microseconds in [0, %u]",
                     knob, SPIN_US_MAX);
            return SYMM_ERR_INVALID_ARG;
        }
        st->spin_us = (uint32_t)v;
    }
    if ((knob = env(st->core, "SYMM_OFI_TEST_NAP_US"))) {
        char *end;
        unsigned long v = strtoul(knob, &end, 10);
        if (*end || v > TEST_NAP_US_MAX) {
            snprintf(why, why_len, "SYMM_OFI_TEST_NAP_US=\"%s\": expected microseconds in "
                     "[0, %u]", knob, TEST_NAP_US_MAX);
            return SYMM_ERR_INVALID_ARG;
        }
        st->test_nap_us = (uint32_t)v;
    }
    if ((knob = env(st->core, "SYMM_OFI_TEST_CQ_WAIT"))) {
        if (strcmp(knob, "none") && strcmp(knob, "fd")) {
            snprintf(why, why_len, "SYMM_OFI_TEST_CQ_WAIT=\"%s\": expected none or fd", knob);
            return SYMM_ERR_INVALID_ARG;
        }
        st->test_no_cq_wait = !strcmp(knob, "none");
    }
    knob = env(st->core, "SYMM_OFI_TEST_WRONG_AM_KEY"); /* a PE number */
    if (knob && strtol(knob, NULL, 10) == st->me) st->am_key_flip = 1;
    knob = env(st->core, "SYMM_OFI_FORCE_MR_LOCAL");
    if (knob && !strcmp(knob, "1")) st->mr_mode |= FI_MR_LOCAL;
    if ((knob = env(st->core, "SYMM_OFI_MAX_RMA"))) {
        char *end;
        unsigned long long v = strtoull(knob, &end, 10);
        if (*end || v < 8) {
            snprintf(why, why_len, "SYMM_OFI_MAX_RMA=\"%s\": expected a byte count >= 8", knob);
            return SYMM_ERR_INVALID_ARG;
        }
        if (v < st->max_rma) st->max_rma = v;
    }
    st->stage_chunk = STAGE_CHUNK;
    if ((knob = env(st->core, "SYMM_OFI_STAGE_CHUNK"))) {
        char *end;
        unsigned long long v = strtoull(knob, &end, 10);
        if (*end || v < 8 || v > STAGE_CHUNK_MAX) {
            snprintf(why, why_len, "SYMM_OFI_STAGE_CHUNK=\"%s\": expected a byte count in "
                     "[8, %u]", knob, STAGE_CHUNK_MAX);
            return SYMM_ERR_INVALID_ARG;
        }
        st->stage_chunk = (uint32_t)v;
    }
    return 0;
}

/* CQ (with a wait fd where the provider has one), AV, endpoint. */
static int32_t open_endpoint(ofi_tp *st, char *why, size_t why_len) {
    struct fi_info *fi = st->info;
    struct fi_cq_attr ca;
    memset(&ca, 0, sizeof ca);
    ca.format = FI_CQ_FORMAT_CONTEXT;
    ca.size = st->depth + 2 * AM_SLOTS;
    ca.wait_obj = st->test_no_cq_wait ? FI_WAIT_NONE : FI_WAIT_FD;
    st->wait_fd = -1;
    int rc = fi_cq_open(st->domain, &ca, &st->cq, NULL);
    if (!rc && !st->test_no_cq_wait && fi_control(&st->cq->fid, FI_GETWAIT, &st->wait_fd) != 0)
        st->wait_fd = -1;
    if (rc) { /* no file-descriptor wait object: the progress thread naps */
        ca.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(st->domain, &ca, &st->cq, NULL);
    }
    if (rc) {
        snprintf(why, why_len, "fi_cq_open failed (%s)", ferr(rc));
        return SYMM_ERR_SYSTEM;
    }
    struct fi_av_attr aa;
    memset(&aa, 0, sizeof aa);
    aa.type = fi->domain_attr->av_type != FI_AV_UNSPEC ? fi->domain_attr->av_type : FI_AV_TABLE;
    aa.count = (size_t)st->n;
    rc = fi_av_open(st->domain, &aa, &st->av, NULL);
    if (rc) {
        snprintf(why, why_len, "fi_av_open failed (%s)", ferr(rc));
        return SYMM_ERR_SYSTEM;
    }
    const char *step = "fi_endpoint";
    rc = fi_endpoint(st->domain, fi, &st->ep, NULL);
    if (!rc && (step = "binding the address vector")) rc = fi_ep_bind(st->ep, &st->av->fid, 0);
    if (!rc && (step = "binding the completion queue"))
        rc = fi_ep_bind(st->ep, &st->cq->fid, FI_TRANSMIT | FI_RECV);
    if (!rc && st->rma_event && st->wait_fd < 0) { /* optional: without it the thread naps longer */
        struct fi_cntr_attr na;
        memset(&na, 0, sizeof na);
        na.events = FI_CNTR_EVENTS_COMP;
        na.wait_obj = FI_WAIT_NONE;
        if (fi_cntr_open(st->domain, &na, &st->rx_cntr, NULL) == 0 &&
            fi_ep_bind(st->ep, &st->rx_cntr->fid, FI_REMOTE_WRITE | FI_REMOTE_READ) != 0) {
            fi_close(&st->rx_cntr->fid);
            st->rx_cntr = NULL;
        }
    }
    if (!rc && !strcmp(st->prov, "shm")) {
        char name[128];
        shm_name(st, name, sizeof name);
        if (fi_setname(&st->ep->fid, name, strlen(name) + 1) != 0)
            logf_(st->core, 0, "shm: cannot name the endpoint %s; the provider's name stays", name);
    }
    if (!rc && (step = "fi_enable")) rc = fi_enable(st->ep);
    if (rc) {
        snprintf(why, why_len, "setting up the endpoint failed: %s: %s", step, ferr(rc));
        return SYMM_ERR_SYSTEM;
    }
    return 0;
}

/* Records, the bounce buffer, the check-and-authentication page and the
 * atomic-message slots, registered; the message receives posted. */
static int32_t open_buffers(ofi_tp *st, char *why, size_t why_len) {
    st->n_recs = (int32_t)st->depth;
    st->recs = calloc((size_t)st->n_recs, sizeof *st->recs);
    st->bounce = aligned_alloc(4096, BOUNCE_BYTES);
    st->hello_bytes = (AUTH_HEAD + (size_t)st->n * AUTH_SLOT + 4095) & ~(size_t)4095;
    st->hello = aligned_alloc(4096, st->hello_bytes);
    st->auth_chal = calloc((size_t)st->n, AUTH_NONCE);
    st->am_block = calloc(2 * AM_SLOTS, sizeof *st->am_block);
    st->msgs = st->amo == AMO_AM || st->staging;
    st->am_slot_bytes = (sizeof(am_msg) + (st->staging ? st->stage_chunk : 0) + 63) & ~(size_t)63;
    st->am_buf = aligned_alloc(4096, (2 * AM_SLOTS * st->am_slot_bytes + 4095) & ~(size_t)4095);
    if (!st->recs || !st->bounce || !st->hello || !st->auth_chal || !st->am_block ||
        !st->am_buf) {
        snprintf(why, why_len, "out of host memory");
        return SYMM_ERR_OUT_OF_MEMORY;
    }
    for (int32_t i = 0; i < st->n_recs; i++)
        st->recs[i].next_free = i + 1 < st->n_recs ? i + 1 : -1;
    st->rec_free = 0;
    if (getrandom(&st->am_key, sizeof st->am_key, 0) != (ssize_t)sizeof st->am_key) {
        snprintf(why, why_len, "getrandom failed: %s", strerror(errno));
        return SYMM_ERR_SYSTEM;
    }
    memset(st->hello, 0, st->hello_bytes);
    st->hello[0] = 0x5359000000000000ull | (uint64_t)st->me;
    st->am_rx = st->am_block;
    st->am_tx = st->am_block + AM_SLOTS;
    for (uint32_t i = 0; i < 2 * AM_SLOTS; i++)
        st->am_block[i].msg = (am_msg *)(void *)(st->am_buf + i * st->am_slot_bytes);
    for (uint32_t i = 0; i < AM_SLOTS; i++) st->am_tx[i].dest = -1;
    int rc = ofi__reg(st, st->bounce, BOUNCE_BYTES, FI_READ | FI_WRITE | FI_SEND | FI_RECV,
                      SYMM_TP_MEM_HOST, &st->bounce_mr, why, why_len);
    if (!rc)
        rc = ofi__reg(st, st->hello, st->hello_bytes, ACCESS, SYMM_TP_MEM_HOST, &st->hello_mr, why,
                      why_len);
    if (!rc && st->msgs)
        rc = ofi__reg(st, st->am_buf, 2 * AM_SLOTS * st->am_slot_bytes, FI_SEND | FI_RECV,
                      SYMM_TP_MEM_HOST, &st->am_mr, why, why_len);
    if (rc) return rc == -FI_ENOMEM ? SYMM_ERR_OUT_OF_MEMORY : SYMM_ERR_SYSTEM;
    st->bounce_desc = fi_mr_desc(st->bounce_mr);
    st->am_desc = st->am_mr ? fi_mr_desc(st->am_mr) : NULL;
    if (st->msgs) {
        for (uint32_t i = 0; i < AM_SLOTS; i++) {
            rc = (int)fi_recv(st->ep, st->am_rx[i].msg, st->am_slot_bytes, st->am_desc,
                              FI_ADDR_UNSPEC, &st->am_rx[i].ctx);
            if (rc) {
                snprintf(why, why_len, "fi_recv for atomic messages failed (%s)", ferr(rc));
                return SYMM_ERR_SYSTEM;
            }
        }
    }
    return 0;
}

/* The local objects: fabric, domain, CQ, AV, endpoint, buffers, thread. */
static int32_t open_local(ofi_tp *st, char *why, size_t why_len) {
    struct fi_info *fi = st->info;
    int rc = ofi__F->fabric(fi->fabric_attr, &st->fabric, NULL);
    if (!rc) rc = fi_domain(st->fabric, fi, &st->domain, NULL);
    if (rc) {
        snprintf(why, why_len, "%s failed for %s (%s)", st->fabric ? "fi_domain" : "fi_fabric",
                 st->prov, ferr(rc));
        return SYMM_ERR_SYSTEM;
    }
    int32_t status = open_limits(st, why, why_len);
    if (!status) status = open_endpoint(st, why, why_len);
    /* the atomics plan before the buffers: it decides whether message slots are posted */
    if (!status) ofi__plan_atomics(st, env(st->core, "SYMM_OFI_ATOMICS"));
    if (!status) status = open_buffers(st, why, why_len);
    if (status) return status;
    if (pipe(st->wake) != 0) {
        snprintf(why, why_len, "pipe: %s", strerror(errno));
        return SYMM_ERR_SYSTEM;
    }
    if (pthread_create(&st->thread, NULL, ofi__progress_main, st) != 0) {
        snprintf(why, why_len, "cannot start the progress thread");
        return SYMM_ERR_SYSTEM;
    }
    st->thread_started = true;
    return 0;
}


/* Read each reached PE's hello word: connects connection-oriented providers
 * (rxm) now, within SYMM_TIMEOUT_MS, and checks the addressing end to end. */
static int32_t warm_up(ofi_tp *st, const addr_msg *all, size_t msg_len, char *why, size_t why_len) {
    uint64_t *got = calloc((size_t)st->n, sizeof *got);
    if (!got) {
        snprintf(why, why_len, "out of host memory");
        return SYMM_ERR_OUT_OF_MEMORY;
    }
    uint64_t limit = st->core->timeout_ms ? st->core->timeout_ms : 60000u;
    int32_t rc = 0;
    for (int32_t pe = 0; pe < st->n && !rc; pe++) {
        if (!st->peers[pe].reach) continue;
        const addr_msg *pm =
            (const addr_msg *)(const void *)((const char *)all + (size_t)pe * msg_len);
        st->peers[pe].hello_addr = pm->hello_addr;
        st->peers[pe].hello_key = pm->hello_key;
        char *b;
        rc = ofi__bounce_get(st, 8, &b);
        if (rc) break;
        ofi_op o = {.kind = OP_READ, .buf = b, .len = 8, .desc = st->bounce_desc,
                .raddr = pm->hello_addr, .rkey = pm->hello_key};
        rc = ofi__post(st, pe, &o, 1, 1, &got[pe], b, 8, limit);
    }
    /* one wait for all: the stall bound is SYMM_TIMEOUT_MS here */
    uint32_t saved = st->stall_ms;
    st->stall_ms = (uint32_t)limit;
    if (!rc) rc = ofi__wait_for(st, -1, 0);
    st->stall_ms = saved;
    for (int32_t pe = 0; pe < st->n && !rc; pe++) {
        if (!st->peers[pe].reach) continue;
        if (got[pe] != (0x5359000000000000ull | (uint64_t)pe)) {
            snprintf(why, why_len, "reading PE %d's check word returned %#llx, not its PE number: "
                     "the addresses or keys do not match", pe, (unsigned long long)got[pe]);
            rc = SYMM_ERR_SYSTEM;
        }
    }
    for (int32_t pe = 0; rc && !why[0] && pe < st->n; pe++)
        if (st->peers[pe].failed)
            snprintf(why, why_len, "reaching PE %d: %s", pe, st->peers[pe].why);
    if (rc && !why[0]) snprintf(why, why_len, "could not reach every PE (the job lost a PE, or "
                                "the provider failed: see the warnings above)");
    free(got);
    return rc;
}

/* A new instance, before any libfabric object (NULL: out of memory). */
static ofi_tp *open_new(const symm_tp_core *core, uint32_t loopback) {
    ofi_tp *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    pthread_mutex_init(&st->mu, NULL);
    pthread_mutex_init(&st->cq_mu, NULL);
    st->core = core;
    st->n = core->n_pes;
    st->me = core->my_pe;
    st->wait_fd = st->wake[0] = st->wake[1] = -1;
    /* A dead process is the core's news (check_failed) within the peer
     * timeout; this bound is for a peer that went silent. It is generous: on
     * a loaded machine (2 cores, load 30, measured) a live peer went 2.4 s
     * without being scheduled. */
    st->stall_ms = 8000u + 2u * core->peer_timeout_ms;
    st->peers = calloc((size_t)st->n, sizeof *st->peers);
    if (!st->peers) {
        ofi_close(st);
        return NULL;
    }
    for (int32_t i = 0; i < st->n; i++)
        st->peers[i].reach = core->remote[i] ||
                             (loopback && core->host_id[i] == core->host_id[st->me]);
    return st;
}

/* Milestones of open, for the info log. */
typedef struct open_times {
    uint64_t t0, choose, local, names, connect;
} open_times;

/* The provider, the local objects and the atomics plan: 0 or a status (why). */
static int32_t open_here(ofi_tp *st, open_times *t, char *why, size_t why_len) {
    choice c;
    char reason[700] = "";
    int32_t status = ofi__choose(st->core, &c, why, why_len, reason, sizeof reason);
    t->choose = now_ms();
    if (status) return status;
    st->info = c.info;
    st->amo = c.amo;
    st->delivery = c.delivery;
    st->rma_event = c.rma_event;
    snprintf(st->prov, sizeof st->prov, "%s", c.info->fabric_attr->prov_name);
    snprintf(st->dom, sizeof st->dom, "%s",
             c.info->domain_attr->name ? c.info->domain_attr->name : "?");
    snprintf(st->choice, sizeof st->choice, "%s", reason);
    status = open_local(st, why, why_len);
    t->local = now_ms();
    return status;
}

/* This PE's part of the address exchange (status: why it could not open). */
static void my_name(ofi_tp *st, addr_msg *mine, int32_t *status, char *why, size_t why_len) {
    if (!*status) {
        size_t len = ADDR_MAX;
        int e = fi_getname(&st->ep->fid, mine->name, &len);
        if (e) {
            *status = SYMM_ERR_SYSTEM;
            snprintf(why, why_len, "fi_getname failed (%s%s)", ferr(e),
                     e == -FI_ETOOSMALL ? ": the endpoint name is longer than 200 bytes" : "");
        }
        mine->len = (uint32_t)len;
        mine->amo = (uint32_t)st->amo;
        mine->slot = st->msgs ? (uint32_t)st->am_slot_bytes : 0;
        mine->hello_addr = (st->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)st->hello : 0;
        mine->hello_key = fi_mr_key(st->hello_mr);
        mine->am_key = st->am_key;
        snprintf(mine->prov, sizeof mine->prov, "%.31s", st->prov);
    }
    mine->status = (uint32_t)*status;
}

/* Collective: everyone learns who could not open, and every address, which
 * goes into the AV. Returns a failure already reported (error set), else 0
 * with *status set when this PE cannot go on (why). */
static int32_t exchange_names(ofi_tp *st, addr_msg *all, int32_t *status, char *why,
                              size_t why_len) {
    const symm_tp_core *core = st->core;
    addr_msg mine;
    memset(&mine, 0, sizeof mine);
    my_name(st, &mine, status, why, why_len);
    int32_t rc = core->allgather(core->core, &mine, all, sizeof mine);
    if (*status) return fail(core, *status, "PE %d: %s", st->me, why);
    if (rc) return rc;
    for (int32_t i = 0; i < st->n && !*status; i++) {
        const addr_msg *pm = &all[i];
        if (pm->status)
            return fail(core, (int32_t)pm->status, "PE %d could not open its libfabric endpoint "
                        "(status %u; its error says why)", i, pm->status);
        if (strncmp(pm->prov, st->prov, sizeof pm->prov) || pm->amo != (uint32_t)st->amo ||
            pm->slot != (st->msgs ? (uint32_t)st->am_slot_bytes : 0)) {
            *status = SYMM_ERR_MISMATCH;
            snprintf(why, why_len, "PE %d uses provider %.31s (atomics path %u, message slots "
                     "of %u bytes), this PE %s (%d, %u): set SYMM_OFI_PROVIDER alike on every "
                     "host, and the same backend", i, pm->prov, pm->amo, pm->slot, st->prov,
                     st->amo, st->msgs ? (uint32_t)st->am_slot_bytes : 0);
        }
    }
    for (int32_t i = 0; i < st->n && !*status; i++) {
        if (!st->peers[i].reach) continue;
        st->peers[i].am_key = all[i].am_key;
        int k = fi_av_insert(st->av, all[i].name, 1, &st->peers[i].addr, 0, NULL);
        if (k != 1) {
            *status = SYMM_ERR_SYSTEM;
            snprintf(why, why_len, "fi_av_insert of PE %d's address failed (%s)", i,
                     k < 0 ? ferr(k) : "not inserted");
        }
    }
    return 0;
}

/* Collective: did every PE reach and authenticate its peers? */
static int32_t final_exchange(ofi_tp *st, int32_t status, const char *why) {
    const symm_tp_core *core = st->core;
    uint32_t ok = (uint32_t)status, *oks = calloc((size_t)st->n, sizeof *oks);
    uint32_t spare[1];
    int32_t rc = core->allgather(core->core, &ok, oks ? (void *)oks : (void *)spare, sizeof ok);
    if (status) {
        rc = fail(core, status, "PE %d: %s", st->me, why);
    } else if (!rc) {
        if (!oks) rc = fail(core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
        for (int32_t i = 0; i < st->n && oks; i++)
            if (oks[i]) {
                rc = fail(core, (int32_t)oks[i], "PE %d could not reach or authenticate its "
                          "peers (status %u; its error says why)", i, oks[i]);
                break;
            }
    }
    free(oks);
    return rc;
}

/* What open settled: the caps for the core, the choice for the info log. */
static void open_report(ofi_tp *st, symm_tp_info *info, const open_times *t) {
    const symm_tp_core *core = st->core;
    st->global = st->amo == AMO_AM || ofi__software_atomics(st->prov);
    const char *amo_txt = st->amo == AMO_AM ? "messages applied by the target's CPU"
                          : st->amo == AMO_CAS ? "provider atomics, missing ops as CSWAP loops"
                          : st->amo == AMO_NATIVE ? "provider atomics" : "none";
    if (info) {
        info->caps = SYMM_TP_CAP_LOOPBACK | (st->global ? SYMM_TP_CAP_ATOMIC_GLOBAL : 0) |
                     (st->hmem || st->staging ? SYMM_TP_CAP_GPU_MEM : 0);
        info->max_msg = 0; /* larger transfers are split here */
        snprintf(info->device, sizeof info->device, "%.24s on %.32s", st->prov, st->dom);
    }
    logf_(core, 1, "provider %s, domain %s (libfabric %u.%u, API %u.%u), chosen by %s", st->prov,
          st->dom, FI_MAJOR(ofi__F->version()), FI_MINOR(ofi__F->version()),
          FI_MAJOR(ofi__api_version()), FI_MINOR(ofi__api_version()), st->choice);
    logf_(core, 1, "mr_mode %#llx, %s, %s; atomics: %s%s; %s; progress %s; "
          "queue depth %u", (unsigned long long)st->mr_mode,
          st->delivery ? "delivery completion"
                       : "transmit completion only (quiet flushes with a read)",
          "signals and fences wait for the data's delivery",
          amo_txt, st->global ? " (coherent with CPU atomics)" : " (not coherent with CPU atomics)",
          st->hmem      ? "GPU memory through FI_HMEM"
          : st->staging ? "no FI_HMEM: GPU memory staged through the core's service (messages)"
                        : "no FI_HMEM (host memory only)",
          st->wait_fd >= 0 ? "thread on the CQ's wait fd"
          : st->rx_cntr    ? "thread napping, short naps while peers write (FI_RMA_EVENT)"
                           : "thread napping", st->depth);
    logf_(core, 1, "open took %llu ms: provider choice %llu, endpoint %llu, address exchange %llu, "
          "connecting %llu, the rest %llu", (unsigned long long)(now_ms() - t->t0),
          (unsigned long long)(t->choose - t->t0), (unsigned long long)(t->local - t->choose),
          (unsigned long long)(t->names - t->local), (unsigned long long)(t->connect - t->names),
          (unsigned long long)(now_ms() - t->connect));
}

static int32_t ofi_open(const symm_tp_core *core, uint32_t loopback, void **state,
                        symm_tp_info *info) {
    open_times t = {.t0 = now_ms()};
    ofi_tp *st = open_new(core, loopback);
    addr_msg *all = calloc((size_t)core->n_pes, sizeof *all);
    if (!st || !all) {
        free(all);
        if (st) ofi_close(st);
        return fail(core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    char why[600] = {0};
    int32_t status = open_here(st, &t, why, sizeof why);
    t.choose = t.choose ? t.choose : now_ms();
    t.local = t.local ? t.local : t.choose;
    int32_t rc = exchange_names(st, all, &status, why, sizeof why);
    t.names = now_ms();
    if (!rc) {
        if (!status) status = warm_up(st, all, sizeof *all, why, sizeof why);
        t.connect = now_ms();
        status = ofi__authenticate_peers(st, status, why, sizeof why);
        rc = final_exchange(st, status, why);
    }
    free(all);
    if (rc) {
        ofi_close(st);
        return rc;
    }
    open_report(st, info, &t);
    *state = st;
    return 0;
}

static const symm_tp_ops ops = {
    .size = sizeof(symm_tp_ops),
    .iface = SYMM_TP_IFACE,
    .name = "ofi",
    .probe = ofi__probe,
    .open = ofi_open,
    .mem_add = ofi__mem_add,
    .mem_remove = ofi__mem_remove,
    .put = ofi__put,
    .get = ofi__get,
    .atomic = ofi__atomic,
    .put_signal = ofi__put_signal,
    .fence = ofi__fence,
    .quiet = ofi__quiet,
    .progress = ofi__progress,
    .peer_failed = ofi__peer_failed,
    .close = ofi_close,
};

const symm_tp_ops *symm__ofi_ops(const struct ofi_fns *fns, const char *why) {
    ofi__F = fns;
    ofi__F_why = why ? why : "libfabric is not available";
    return &ops;
}
