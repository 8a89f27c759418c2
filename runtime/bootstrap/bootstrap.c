/*
 * Bootstrap client: forms the job (single, env, unique id) and leaves it.
 * Once formed, boot_sync.c serves the core's allgathers, barriers and failure
 * checks through the rendezvous server (rendezvous.c) over the wire protocol
 * (wire.c), and boot_fd.c passes descriptors among the PEs of one host; the
 * three share boot_internal.h.
 *
 * Where the server runs:
 *  - symmrun: in the launcher (SYMM_LAUNCHER=symmrun); every PE is a client.
 *  - env without symmrun: rank 0 runs it on a thread, one per address per
 *    process, shared (reference counted) by that process's live contexts.
 *  - unique id: the process that made the id runs it on the socket it bound
 *    in symm_get_unique_id, when it joins as rank 0.
 * A process's k-th env-mode context joins session k of its job (contexts are
 * created in the same order on every PE: symm_init is collective); unique-id
 * jobs have one session (make a new id for every context).
 *
 * Env variables (first found wins; SYMM_* override the launchers'):
 *   rank       SYMM_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID
 *   size       SYMM_N_PES, WORLD_SIZE, OMPI_COMM_WORLD_SIZE,
 *              SLURM_STEP_NUM_TASKS, SLURM_NTASKS
 *   address    SYMM_BOOTSTRAP_ADDR (unix:@NAME, unix:/PATH, tcp:HOST:PORT);
 *              else tcp:MASTER_ADDR:(MASTER_PORT + 1) (torchrun's TCPStore
 *              holds MASTER_PORT); else unix:@symm-ompi-<jobid> or
 *              unix:@symm-slurm-<job>.<step>, which only works on one host
 *   secret     SYMM_JOB_SECRET (64 hex digits, or any text, hashed); else,
 *              only when the address is local (unix:, or a TCP host that is
 *              loopback), derived from the launcher's job identity and this
 *              user's key file ($XDG_RUNTIME_DIR or $HOME/.symm-job-key,
 *              mode 0600, made on first use), which other users cannot read;
 *              an address other hosts can reach needs SYMM_JOB_SECRET
 *   server     rank 0 serves unless SYMM_LAUNCHER=symmrun
 *   locality   computed from host ids (hostname, boot id, network
 *              namespace); SYMM_HOST_ID replaces the host id (testing)
 * Local ranks are always computed from the host ids, in rank order.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "boot_env.h"
#include "boot_internal.h"
#include "bootstrap.h"
#include "crypto.h"
#include "rendezvous.h"
#include "wire.h"

/* ------------------------------------------------------------------------ */
/* Process-wide state                                                        */
/* ------------------------------------------------------------------------ */

/* A rank-0 env-mode server, shared by the process's contexts on one address. */
typedef struct symm__env_server {
    char addr[SYMM__ADDR_TEXT_MAX];
    uint8_t secret[SYMM__SECRET_BYTES];
    int32_t n_pes;
    int refs;
    symm__rdv_thread *thread;
    struct symm__env_server *next;
} env_server;

/* A listening socket made by symm_get_unique_id, waiting for rank 0's init. */
typedef struct uid_entry {
    uint8_t secret[SYMM__SECRET_BYTES];
    int fd;
    char addr[SYMM__ADDR_TEXT_MAX];
    struct uid_entry *next;
} uid_entry;

static pthread_mutex_t g_server_lock = PTHREAD_MUTEX_INITIALIZER; /* g_servers */
static pthread_mutex_t g_uid_lock = PTHREAD_MUTEX_INITIALIZER;    /* g_uids    */
static env_server *g_servers;
static uid_entry *g_uids;
static atomic_uint g_env_sessions; /* env-mode contexts opened by this process */

/* ------------------------------------------------------------------------ */
/* Servers run by this process                                               */
/* ------------------------------------------------------------------------ */

static symm_status server_start(int listen_fd, const char *addr, const uint8_t *secret,
                                int32_t n_pes, uint32_t timeout_ms, symm__rdv_thread **out) {
    symm__rdv_config rc;
    memset(&rc, 0, sizeof rc);
    rc.listen_fd = listen_fd;
    rc.addr_text = addr;
    rc.log_prefix = "symm rendezvous";
    memcpy(rc.secret, secret, SYMM__SECRET_BYTES);
    rc.n_pes = n_pes;
    rc.hello_timeout_ms = timeout_ms;
    symm__rdv *r;
    SYMM_TRY(symm__rdv_create(&rc, &r));
    return symm__rdv_thread_start(r, out);
}

static symm_status env_server_new(const symm__env_job *j, uint32_t timeout_ms, env_server **out) {
    symm__addr a;
    int fd = -1;
    SYMM_TRY(symm__addr_parse(j->addr, &a));
    /* Exactly the address given (tcp:0.0.0.0:PORT for every interface). */
    SYMM_TRY(symm__addr_listen(&a, false, &fd, NULL));
    env_server *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "env bootstrap: out of memory");
    }
    snprintf(s->addr, sizeof s->addr, "%s", j->addr);
    memcpy(s->secret, j->secret, SYMM__SECRET_BYTES);
    s->n_pes = j->n_pes;
    s->refs = 1;
    symm_status st = server_start(fd, j->addr, j->secret, j->n_pes, timeout_ms, &s->thread);
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return SYMM_SUCCESS;
}

static symm_status env_server_acquire(const symm__env_job *j, uint32_t timeout_ms, env_server **out) {
    pthread_mutex_lock(&g_server_lock);
    symm_status st = SYMM_SUCCESS;
    env_server *s;
    for (s = g_servers; s; s = s->next)
        if (strcmp(s->addr, j->addr) == 0) break;
    if (s) {
        if (s->n_pes != j->n_pes || !symm__secret_equal(s->secret, j->secret))
            st = symm__err(SYMM_ERR_BOOTSTRAP,
                           "env bootstrap: this process already serves another job on %s", j->addr);
        else
            s->refs++;
    } else {
        st = env_server_new(j, timeout_ms, &s);
        if (st == SYMM_SUCCESS) {
            s->next = g_servers;
            g_servers = s;
        } else {
            char msg[MSG_MAX];
            save_msg(msg, sizeof msg);
            st = symm__err(st, "env bootstrap (%s): PE 0 runs the rendezvous server: %s", j->source,
                           msg);
        }
    }
    pthread_mutex_unlock(&g_server_lock);
    if (st == SYMM_SUCCESS) *out = s;
    return st;
}

/* The last context leaving stops the server once every PE of its sessions
 * has left (bounded by the timeout). The lock is held throughout, so a new
 * context of this process cannot race the old server for the address. */
static void env_server_release(env_server *s, uint32_t timeout_ms) {
    if (!s) return;
    pthread_mutex_lock(&g_server_lock);
    if (--s->refs == 0) {
        for (env_server **ps = &g_servers; *ps; ps = &(*ps)->next)
            if (*ps == s) {
                *ps = s->next;
                break;
            }
        symm__rdv_thread_stop(s->thread, timeout_ms);
        free(s);
    }
    pthread_mutex_unlock(&g_server_lock);
}

/* ------------------------------------------------------------------------ */
/* Joining                                                                   */
/* ------------------------------------------------------------------------ */

static symm_status boot_alloc(int32_t rank, int32_t n_pes, uint32_t timeout_ms, symm__boot **out) {
    symm__boot *b = calloc(1, sizeof *b);
    if (!b) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "bootstrap: out of memory");
    b->rank = rank;
    b->n_pes = n_pes;
    b->timeout_ms = timeout_ms ? timeout_ms : SYMM__DEFAULT_TIMEOUT_MS;
    b->fd = -1;
    b->intr_fd = -1;
    b->share_fd = -1;
    pthread_mutex_init(&b->io, NULL);
    b->local_index = calloc((size_t)n_pes, sizeof *b->local_index);
    b->host_id = calloc((size_t)n_pes, sizeof *b->host_id);
    b->pid = calloc((size_t)n_pes, sizeof *b->pid);
    if (!b->local_index || !b->host_id || !b->pid) {
        symm__boot_close(b);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "bootstrap: out of memory for %d PEs", n_pes);
    }
    *out = b;
    return SYMM_SUCCESS;
}

static void compute_locality(symm__boot *b) {
    uint64_t me = b->host_id[b->rank];
    int32_t count = 0;
    for (int32_t i = 0; i < b->n_pes; i++) {
        if (b->host_id[i] == me) b->local_index[i] = count++;
        else b->local_index[i] = -1;
    }
    b->local_rank = b->local_index[b->rank];
    b->local_n_pes = count;
}

/* The handshake on a new connection (wire.h): HELLO with a fresh nonce; the
 * server's CHALLENGE must carry its proof of the key before this PE sends
 * its own (AUTH). *hdr and *p: the server's answer after that (WELCOME,
 * REJECT or ABORT), or its REJECT of the HELLO. Transport errors as
 * symm__wire_recv; BOOTSTRAP (no retry) when the server's proof is wrong. */
static symm_status handshake(symm__boot *b, int fd, int64_t deadline, const symm__wire_hello *h0,
                             symm__wire_header *hdr, uint8_t **p) {
    symm__wire_hello h = *h0;
    SYMM_TRY(symm__random(h.nonce, sizeof h.nonce));
    uint8_t hello[SYMM__WIRE_HELLO_BYTES];
    symm__wire_encode_hello(hello, &h);
    SYMM_TRY(symm__wire_send(fd, SYMM__MSG_HELLO, 0, hello, sizeof hello, deadline, b->peer));
    SYMM_TRY(symm__wire_recv(fd, hdr, p, deadline, b->peer));
    if (hdr->type != SYMM__MSG_CHALLENGE) return SYMM_SUCCESS; /* a REJECT: the caller reads it */
    uint8_t want[SYMM__PROOF_BYTES], proof[SYMM__PROOF_BYTES];
    symm__wire_proof(b->secret, SYMM__PROOF_SERVER, hello, *p, want);
    bool ok = hdr->length == SYMM__WIRE_CHALLENGE_BYTES &&
              symm__ct_equal(*p + SYMM__NONCE_BYTES, want, SYMM__PROOF_BYTES);
    if (ok) symm__wire_proof(b->secret, SYMM__PROOF_CLIENT, hello, *p, proof);
    free(*p);
    *p = NULL;
    if (!ok)
        return symm__err(SYMM_ERR_BOOTSTRAP,
                         "%s could not prove that it knows this job's key (its job secret is "
                         "another: another job's server on this address, or an impostor); not "
                         "joining it", b->peer);
    symm_status st = symm__wire_send(fd, SYMM__MSG_AUTH, 0, proof, sizeof proof, deadline, b->peer);
    symm__wipe(proof, sizeof proof);
    if (st == SYMM_SUCCESS) st = symm__wire_recv(fd, hdr, p, deadline, b->peer);
    return st;
}

/* Connect (retrying until rank 0's server is up), handshake, wait for WELCOME. */
static symm_status join(symm__boot *b, const char *hint) {
    int64_t start = symm__now_ms(), deadline = start + b->timeout_ms;
    char last[MSG_MAX] = "no attempt";
    int backoff = 5;
    symm__wire_hello h;
    memset(&h, 0, sizeof h);
    h.rank = b->rank;
    h.n_pes = b->n_pes;
    h.session = b->session;
    h.pid = (int32_t)getpid();
    h.host_id = b->host_id[b->rank];

    for (;;) {
        int fd = -1;
        symm_status st = symm__addr_connect(&b->addr, deadline, &fd);
        if (st == SYMM_ERR_INVALID_ARG) return st;
        if (st == SYMM_SUCCESS) {
            symm__wire_header hdr;
            uint8_t *p = NULL;
            st = handshake(b, fd, deadline, &h, &hdr, &p);
            if (st == SYMM_SUCCESS) {
                symm_status out = SYMM_SUCCESS;
                symm__wire_abort a;
                if (hdr.type == SYMM__MSG_WELCOME) {
                    out = symm__wire_parse_welcome(p, hdr.length, b->n_pes, b->host_id, b->pid);
                    if (out == SYMM_SUCCESS && (b->pid[b->rank] != h.pid ||
                                                b->host_id[b->rank] != h.host_id))
                        out = symm__err(SYMM_ERR_BOOTSTRAP, "WELCOME does not list this PE");
                    if (out != SYMM_SUCCESS) {
                        save_msg(last, sizeof last);
                        out = symm__err(SYMM_ERR_BOOTSTRAP, "PE %d: bad WELCOME from %s: %s",
                                        b->rank, b->peer, last);
                    }
                } else if ((hdr.type == SYMM__MSG_REJECT || hdr.type == SYMM__MSG_ABORT) &&
                           symm__wire_parse_abort(p, hdr.length, &a) == SYMM_SUCCESS) {
                    if (hdr.type == SYMM__MSG_REJECT)
                        out = symm__err(SYMM_ERR_BOOTSTRAP, "PE %d: %s refused it: %s", b->rank,
                                        b->peer, a.reason);
                    else
                        out = symm__err(SYMM_ERR_PEER_FAILED,
                                        "PE %d: the job failed while forming: %s", b->rank,
                                        a.reason);
                } else {
                    out = symm__err(SYMM_ERR_BOOTSTRAP, "PE %d: unexpected %s from %s during HELLO",
                                    b->rank, symm__wire_type_name(hdr.type), b->peer);
                }
                free(p);
                if (out == SYMM_SUCCESS) {
                    b->fd = fd;
                    return SYMM_SUCCESS;
                }
                close(fd);
                return out;
            }
            close(fd);
            if (st == SYMM_ERR_TIMEOUT)
                return symm__err(SYMM_ERR_TIMEOUT,
                                 "PE %d: connected to %s, but not all %d PEs joined session %u "
                                 "within %u ms (did every PE start, with the same job settings?)",
                                 b->rank, b->peer, b->n_pes, b->session, b->timeout_ms);
            if (st != SYMM_ERR_PEER_FAILED) {
                save_msg(last, sizeof last);
                return symm__err(st, "PE %d: %s", b->rank, last);
            }
            /* Closed before WELCOME: that server is going away; try again. */
            save_msg(last, sizeof last);
            symm__err(st, "%s before WELCOME (a server that closes every connection at once "
                      "may speak another protocol version)", last);
        }
        save_msg(last, sizeof last);
        int64_t now = symm__now_ms();
        if (now >= deadline)
            return symm__err(SYMM_ERR_TIMEOUT,
                             "PE %d: could not join the job at %s within %u ms (last error: %s)%s",
                             b->rank, b->addr.text, b->timeout_ms, last, hint);
        int64_t left = deadline - now;
        sleep_ms((int)(left < backoff ? left : backoff));
        if (backoff < 200) backoff *= 2;
    }
}

/* Everything after the rank, size, address and secret are known. */
static symm_status open_joined(symm__boot *b, const char *addr_text, const char *hint) {
    SYMM_TRY(symm__addr_parse(addr_text, &b->addr));
    snprintf(b->peer, sizeof b->peer, "rendezvous server %s", b->addr.text);
    b->host_id[b->rank] = symm__boot_host_identity();
    b->pid[b->rank] = (int32_t)getpid();
    /* Listen for descriptors before joining: once WELCOME arrives anywhere,
     * a local peer may connect. */
    symm__addr sa;
    symm__boot_share_name(b, b->rank, &sa);
    symm_status st = symm__addr_listen(&sa, false, &b->share_fd, NULL);
    if (st) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        return symm__err(st, "PE %d: descriptor-passing socket: %s", b->rank, msg);
    }
    SYMM_TRY(join(b, hint));
    compute_locality(b);
    if (b->local_n_pes == 1) {
        close(b->share_fd);
        b->share_fd = -1;
    }
    return SYMM_SUCCESS;
}

static void fill_info(const symm__boot *b, symm__boot_info *info) {
    info->rank = b->rank;
    info->n_pes = b->n_pes;
    info->local_rank = b->local_rank;
    info->local_n_pes = b->local_n_pes;
    info->local_index = b->local_index;
    info->host_id = b->host_id;
    info->pid = b->pid;
}

static void make_single(symm__boot *b) {
    b->host_id[0] = symm__boot_host_identity();
    b->pid[0] = (int32_t)getpid();
    b->local_index[0] = 0;
    b->local_rank = 0;
    b->local_n_pes = 1;
}

static symm_status open_env(const symm__boot_params *cfg, symm__boot **out) {
    symm__env_job j;
    SYMM_TRY(symm__boot_env_parse(&j));
    uint32_t session = atomic_fetch_add(&g_env_sessions, 1);
    symm__boot *b;
    SYMM_TRY(boot_alloc(j.rank, j.n_pes, cfg->timeout_ms, &b));
    b->session = session;
    b->external = j.external;
    memcpy(b->secret, j.secret, SYMM__SECRET_BYTES);
    if (j.n_pes == 1) {
        make_single(b);
        *out = b;
        return SYMM_SUCCESS;
    }
    symm_status st = SYMM_SUCCESS;
    if (j.rank == 0 && !j.external) st = env_server_acquire(&j, b->timeout_ms, &b->server);
    char hint[512] = "";
    if (j.addr_fallback)
        snprintf(hint, sizeof hint,
                 "; with no SYMM_BOOTSTRAP_ADDR or MASTER_ADDR the job meets on an abstract Unix "
                 "socket named from %s's job id, which works only when every PE runs on one host",
                 j.source);
    else if (!j.external && j.rank != 0)
        snprintf(hint, sizeof hint,
                 "; PE 0 serves this address (%s): is it running, and is the address reachable "
                 "from here?", j.source);
    if (st == SYMM_SUCCESS) st = open_joined(b, j.addr, hint);
    if (st != SYMM_SUCCESS) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        symm__boot_close(b);
        return symm__err(st, "%s", msg);
    }
    *out = b;
    return SYMM_SUCCESS;
}

static symm_status open_uid(const symm__boot_params *cfg, symm__boot **out) {
    uint8_t secret[SYMM__SECRET_BYTES];
    char addr[SYMM__UID_ADDR_MAX + 1];
    SYMM_TRY(symm__wire_decode_uid(cfg->unique_id.bytes, secret, addr));
    SYMM_CHECK(cfg->uid_n_pes >= 1 && cfg->uid_n_pes <= SYMM__WIRE_MAX_PES && cfg->uid_rank >= 0 &&
                   cfg->uid_rank < cfg->uid_n_pes,
               SYMM_ERR_INVALID_ARG, "unique-id bootstrap needs 0 <= rank (%d) < n_pes (%d) <= %d",
               cfg->uid_rank, cfg->uid_n_pes, SYMM__WIRE_MAX_PES);
    /* Rank 0 takes the socket symm_get_unique_id left in this process. */
    int listen_fd = -1;
    if (cfg->uid_rank == 0) {
        pthread_mutex_lock(&g_uid_lock);
        for (uid_entry **pe = &g_uids; *pe; pe = &(*pe)->next) {
            if (symm__secret_equal((*pe)->secret, secret)) {
                uid_entry *e = *pe;
                *pe = e->next;
                listen_fd = e->fd;
                free(e);
                break;
            }
        }
        pthread_mutex_unlock(&g_uid_lock);
        if (listen_fd < 0 && cfg->uid_n_pes > 1)
            return symm__err(SYMM_ERR_BOOTSTRAP,
                             "unique-id bootstrap: rank 0 must be the process that called "
                             "symm_get_unique_id, and each id serves one context (this process "
                             "has no unused id with this secret; address %s)", addr);
    }
    symm__boot *b;
    symm_status st = boot_alloc(cfg->uid_rank, cfg->uid_n_pes, cfg->timeout_ms, &b);
    if (st) {
        if (listen_fd >= 0) close(listen_fd);
        return st;
    }
    memcpy(b->secret, secret, SYMM__SECRET_BYTES);
    if (cfg->uid_n_pes == 1) {
        if (listen_fd >= 0) close(listen_fd);
        make_single(b);
        *out = b;
        return SYMM_SUCCESS;
    }
    if (listen_fd >= 0)
        st = server_start(listen_fd, addr, secret, cfg->uid_n_pes, b->timeout_ms, &b->own_server);
    if (st == SYMM_SUCCESS)
        st = open_joined(b, addr,
                         cfg->uid_rank
                             ? "; the process that made the unique id serves it as rank 0: is "
                               "it running, and is the address reachable from here?"
                             : "");
    if (st != SYMM_SUCCESS) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        symm__boot_close(b);
        return symm__err(st, "%s", msg);
    }
    *out = b;
    return SYMM_SUCCESS;
}

/* SYMM_INTERRUPT_FD: a descriptor that becomes readable when the process
 * is interrupted (Python's signal.set_wakeup_fd, or a C program's SIGINT
 * handler writing to a pipe). A PE waiting for its peers polls it with the
 * bootstrap's socket, so a blocking call ends within a poll interval of the
 * signal instead of never (docs/BAD-INPUT.md, Ctrl-C). Read, never drained:
 * its owner drains it. */
static symm_status interrupt_fd(int *out) {
    const char *v = symm__boot_env("SYMM_INTERRUPT_FD");
    *out = -1;
    if (!v) return SYMM_SUCCESS;
    char *end = NULL;
    errno = 0;
    long fd = strtol(v, &end, 10);
    if (errno || *end || end == v || v[0] == '-' || v[0] == '+' || fd > INT_MAX ||
        fcntl((int)fd, F_GETFD) < 0)
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "SYMM_INTERRUPT_FD=\"%s\": expected an open descriptor number", v);
    *out = (int)fd;
    return SYMM_SUCCESS;
}

symm_status symm__boot_open(const symm__boot_params *cfg, symm__boot **boot, symm__boot_info *info) {
    SYMM_CHECK(cfg && boot && info, SYMM_ERR_INVALID_ARG, "symm__boot_open: NULL argument");
    uint32_t mode = cfg->bootstrap;
    if (mode == SYMM_BOOTSTRAP_AUTO) mode = symm__boot_env_has_launcher() ? SYMM_BOOTSTRAP_ENV : SYMM_BOOTSTRAP_SINGLE;
    symm__boot *b = NULL;
    int intr_fd;
    SYMM_TRY(interrupt_fd(&intr_fd)); /* before joining: a bad value fails every PE alike */
    switch (mode) {
    case SYMM_BOOTSTRAP_SINGLE:
        SYMM_TRY(boot_alloc(0, 1, cfg->timeout_ms, &b));
        make_single(b);
        break;
    case SYMM_BOOTSTRAP_ENV: SYMM_TRY(open_env(cfg, &b)); break;
    case SYMM_BOOTSTRAP_UID: SYMM_TRY(open_uid(cfg, &b)); break;
    default: return symm__err(SYMM_ERR_INVALID_ARG, "unknown bootstrap mode %u", cfg->bootstrap);
    }
    if (b->n_pes > 1) b->intr_fd = intr_fd;
    symm__key_derive(b->secret, "symm transport v1", b->tp_key);
    /* A quarter of the bound: the news reaches a call well within it. */
    b->poll_ns = (long long)(cfg->peer_timeout_ms ? cfg->peer_timeout_ms
                                                  : SYMM__DEFAULT_PEER_TIMEOUT_MS) * 250000ll;
    atomic_store(&b->polled_tick, LLONG_MIN / 2);
    fill_info(b, info);
    symm__log_set_pe(b->rank);
    SYMM_INFO(SYMM_LOG_BOOTSTRAP, "joined a job of %d PE(s) as rank %d (%s mode%s%s%s)", b->n_pes,
              b->rank, mode == SYMM_BOOTSTRAP_ENV ? "env" : mode == SYMM_BOOTSTRAP_UID ? "uid" : "single",
              b->peer[0] ? ", " : "", b->peer, b->external ? ", served by symmrun" : "");
    *boot = b;
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Leaving                                                                   */
/* ------------------------------------------------------------------------ */

void symm__boot_close(symm__boot *b) {
    if (!b) return;
    pthread_mutex_lock(&b->io);
    if (b->fd >= 0) {
        /* BYE, then wait for its acknowledgement (or the end of the
         * connection), so the server never mistakes this exit for a death. */
        int64_t deadline = symm__now_ms() + (b->timeout_ms < 10000 ? b->timeout_ms : 10000);
        if (symm__wire_send(b->fd, SYMM__MSG_BYE, 0, NULL, 0, deadline, b->peer) == SYMM_SUCCESS) {
            for (;;) {
                symm__wire_header h;
                uint8_t *p = NULL;
                if (symm__wire_recv(b->fd, &h, &p, deadline, b->peer) != SYMM_SUCCESS) break;
                free(p);
                if (h.type == SYMM__MSG_BYE) break;
            }
        }
        close(b->fd);
        b->fd = -1;
    }
    pthread_mutex_unlock(&b->io);
    if (b->share_fd >= 0) close(b->share_fd);
    /* Rank 0: the server outlives this PE's BYE until every PE has left. */
    if (b->own_server) symm__rdv_thread_stop(b->own_server, b->timeout_ms);
    env_server_release(b->server, b->timeout_ms);
    pthread_mutex_destroy(&b->io);
    symm__wipe(b->secret, sizeof b->secret);
    symm__wipe(b->tp_key, sizeof b->tp_key);
    free(b->local_index);
    free(b->host_id);
    free(b->pid);
    free(b);
}

/* ------------------------------------------------------------------------ */
/* Unique id                                                                 */
/* ------------------------------------------------------------------------ */

symm_status symm_get_unique_id(symm_unique_id *id) {
    symm__err_clear();
    SYMM_CHECK(id, SYMM_ERR_INVALID_ARG, "symm_get_unique_id: id is NULL");
    uint8_t secret[SYMM__SECRET_BYTES];
    SYMM_TRY(symm__random(secret, sizeof secret));

    /* TCP on SYMM_BOOTSTRAP_ADDR's host (port 0: any free one), else on
     * 127.0.0.1; an abstract Unix name gets a random suffix per id. */
    const char *where = symm__boot_env("SYMM_BOOTSTRAP_ADDR");
    char text[SYMM__ADDR_TEXT_MAX];
    symm__addr a;
    if (!where) where = "tcp:127.0.0.1:0";
    SYMM_TRY(symm__addr_parse(where, &a));
    bool wildcard = false;
    if (a.kind == SYMM__ADDR_UNIX) {
        if (a.un.sun_path[0] != '\0')
            return symm__err(SYMM_ERR_NOT_SUPPORTED,
                             "symm_get_unique_id: SYMM_BOOTSTRAP_ADDR=%s: use tcp:HOST[:PORT] or "
                             "unix:@NAME for unique ids", where);
        uint8_t tag[8]; /* abstract names are public: not from the secret */
        char suffix[17];
        SYMM_TRY(symm__random(tag, sizeof tag));
        symm__hex(suffix, tag, sizeof tag);
        snprintf(text, sizeof text, "%.60s-%s", where, suffix);
        SYMM_TRY(symm__addr_parse(text, &a));
    } else {
        wildcard = strcmp(a.host, "0.0.0.0") == 0 || strcmp(a.host, "::") == 0;
    }
    int fd = -1;
    symm__addr bound;
    symm_status st = symm__addr_listen(&a, wildcard, &fd, &bound);
    if (st) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        return symm__err(st, "symm_get_unique_id: %s", msg);
    }
    if (wildcard) { /* peers need a name they can reach */
        char host[256];
        if (gethostname(host, sizeof host) == 0) {
            host[sizeof host - 1] = '\0';
            snprintf(bound.text, sizeof bound.text, "tcp:%s:%u", host, bound.port);
        }
    }
    uint8_t bytes[SYMM_UNIQUE_ID_BYTES];
    uid_entry *e = calloc(1, sizeof *e);
    st = e ? symm__wire_encode_uid(bytes, secret, bound.text)
           : symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_get_unique_id: out of memory");
    if (st) {
        free(e);
        close(fd);
        return st;
    }
    memcpy(e->secret, secret, SYMM__SECRET_BYTES);
    e->fd = fd;
    snprintf(e->addr, sizeof e->addr, "%s", bound.text);
    pthread_mutex_lock(&g_uid_lock);
    e->next = g_uids;
    g_uids = e;
    pthread_mutex_unlock(&g_uid_lock);
    memcpy(id->bytes, bytes, sizeof bytes);
    return SYMM_SUCCESS;
}
