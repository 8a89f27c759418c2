/*
 * A context's proxy: the engine (engine.c) with an executor that runs each
 * request through the core's routing (core/route.c), so a request to a PE of
 * another host goes to the transport and one to a PE of this host to the
 * backend, exactly as the blocking host calls do.
 *
 * Checks: the producer is GPU code the runtime cannot vouch for, so every
 * request is checked here as the public entries check theirs (PE, heap range
 * against the mapped heap, alignment, atomic op x dtype, signal op); a bad
 * one fails alone with a message (symm__async_record and the ring's error
 * word), never touches memory outside the heap.
 *
 * Local memory a request names (a put's source, a get's destination, an
 * atomic's result) is host memory for CPU producers. For GPU producers it may
 * be device memory: the routing already stages puts and gets of device
 * buffers through the backend's local_copy (route.c), and local_write below
 * does the same for fetched values. That is the hook the GPU wiring relies
 * on; it also supplies pinned and device memory for the rings
 * (symm__proxy_mem), which start in plain host memory here.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

/* Until the context holds its proxy (a field of symm__ctx that the GPU wiring
 * adds), a small table maps a context to its proxy. */
#define MAX_PROXIES 64

typedef struct symm__proxy {
    symm__ctx *ctx;
    symm__engine *eng;
} symm__proxy;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static symm__proxy *reg[MAX_PROXIES];

static symm__proxy *proxy_of(const symm__ctx *ctx) {
    symm__proxy *p = NULL;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < MAX_PROXIES && !p; i++)
        if (reg[i] && reg[i]->ctx == ctx) p = reg[i];
    pthread_mutex_unlock(&reg_lock);
    return p;
}

/* ---- request checks ---- */

static const char *op_name(uint32_t op) {
    static const char *const names[] = {"?", "nop", "put", "get", "atomic", "put_signal",
                                        "fence", "quiet"};
    return op <= SYMM_RING_OP_LAST ? names[op] : "?";
}

static uint32_t amo_size(uint32_t dtype, uint32_t op) {
    const bool fl = dtype == SYMM_DTYPE_FLOAT32 || dtype == SYMM_DTYPE_FLOAT64;
    if (fl && op != SYMM_AMO_FETCH && op != SYMM_AMO_SET && op != SYMM_AMO_SWAP) return 0;
    switch (dtype) {
    case SYMM_DTYPE_INT32: case SYMM_DTYPE_UINT32: case SYMM_DTYPE_FLOAT32: return 4;
    case SYMM_DTYPE_INT64: case SYMM_DTYPE_UINT64: case SYMM_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

static bool amo_fetches(uint32_t op) {
    return op == SYMM_AMO_FETCH || op == SYMM_AMO_COMPARE_SWAP || op == SYMM_AMO_SWAP ||
           op == SYMM_AMO_FETCH_INC || op == SYMM_AMO_FETCH_ADD || op == SYMM_AMO_FETCH_AND ||
           op == SYMM_AMO_FETCH_OR || op == SYMM_AMO_FETCH_XOR;
}

/* [off, off + n) inside the heap every PE has mapped (it only grows). */
static symm_status in_heap(const symm__ctx *ctx, const char *what, uint64_t off, uint64_t n) {
    const uint64_t mapped = __atomic_load_n(&ctx->heap_mapped, __ATOMIC_ACQUIRE);
    if (off > mapped || n > mapped - off)
        return symm__err(SYMM_ERR_OUT_OF_BOUNDS,
                         "%s bytes [%" PRIu64 ", +%" PRIu64 ") are outside the symmetric heap "
                         "(%" PRIu64 " bytes mapped)", what, off, n, mapped);
    return SYMM_SUCCESS;
}

/* Write n bytes to local memory the request named: device memory through
 * the backend's local_copy (the staging hook), host memory directly. */
static symm_status local_write(symm__ctx *ctx, void *dst, const void *src, size_t n) {
    const symm__backend_ops *o = ctx->ops;
    if (o->is_device_mem && o->local_copy && o->is_device_mem(ctx, dst))
        return o->local_copy(ctx, dst, src, n);
    memcpy(dst, src, n);
    return SYMM_SUCCESS;
}

static symm_status run_amo(symm__ctx *ctx, const symm_ring_req *q) {
    const uint32_t size = q->sub <= SYMM_AMO_XOR ? amo_size(q->dtype, q->sub) : 0;
    if (!size)
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "atomic op %u is not defined on dtype %u (32/64-bit integers: every "
                         "SYMM_AMO_*; floats: FETCH, SET, SWAP)", q->sub, q->dtype);
    if (q->off % size)
        return symm__err(SYMM_ERR_INVALID_ARG, "atomic at heap offset %" PRIu64
                         " is not aligned to its %u-byte element", q->off, size);
    SYMM_TRY(in_heap(ctx, "atomic", q->off, size));
    /* Operands in the low bytes (little-endian), as the core takes them. */
    uint64_t v = q->value, cmp = q->compare, old = 0;
    if (q->sub == SYMM_AMO_INC || q->sub == SYMM_AMO_FETCH_INC) v = 1;
    if (size == 4) {
        v &= 0xffffffffu;
        cmp &= 0xffffffffu;
    }
    SYMM_TRY(symm__atomic(ctx, q->pe, q->off, q->dtype, q->sub, &v,
                          q->sub == SYMM_AMO_COMPARE_SWAP ? &cmp : NULL, &old));
    if (q->local && amo_fetches(q->sub))
        return local_write(ctx, (void *)(uintptr_t)q->local, &old, size);
    return SYMM_SUCCESS;
}

static symm_status run_request(symm__ctx *ctx, const symm_ring_req *q, bool *pending) {
    if (q->op == SYMM_RING_OP_FENCE) return symm__fence(ctx);
    if (q->pe < 0 || q->pe >= ctx->n_pes)
        return symm__err(SYMM_ERR_INVALID_ARG, "pe %d is outside [0, %d)", q->pe, ctx->n_pes);
    void *local = (void *)(uintptr_t)q->local;
    switch (q->op) {
    case SYMM_RING_OP_PUT:
        SYMM_TRY(in_heap(ctx, "put", q->off, q->n));
        if (!q->n) return SYMM_SUCCESS;
        SYMM_CHECK(local, SYMM_ERR_INVALID_ARG, "put of %" PRIu64 " bytes from NULL", q->n);
        *pending = true; /* completed once the engine's flush (a quiet) returned */
        return symm__put(ctx, q->pe, q->off, local, q->n, SYMM__NBI);
    case SYMM_RING_OP_GET:
        SYMM_TRY(in_heap(ctx, "get", q->off, q->n));
        if (!q->n) return SYMM_SUCCESS;
        SYMM_CHECK(local, SYMM_ERR_INVALID_ARG, "get of %" PRIu64 " bytes into NULL", q->n);
        return symm__get(ctx, local, q->pe, q->off, q->n, 0);
    case SYMM_RING_OP_AMO:
        return run_amo(ctx, q);
    case SYMM_RING_OP_PUT_SIGNAL: {
        SYMM_CHECK(q->sub == SYMM_SIGNAL_SET || q->sub == SYMM_SIGNAL_ADD, SYMM_ERR_INVALID_ARG,
                   "put_signal: signal op %u (expected SYMM_SIGNAL_SET or SYMM_SIGNAL_ADD)",
                   q->sub);
        SYMM_CHECK(q->sig_off % 8 == 0, SYMM_ERR_INVALID_ARG,
                   "put_signal: the signal at heap offset %" PRIu64 " is not 8-byte aligned",
                   q->sig_off);
        SYMM_TRY(in_heap(ctx, "put_signal data", q->off, q->n));
        SYMM_TRY(in_heap(ctx, "put_signal signal", q->sig_off, 8));
        SYMM_CHECK(local || !q->n, SYMM_ERR_INVALID_ARG,
                   "put_signal of %" PRIu64 " bytes from NULL", q->n);
        const uint32_t amo = q->sub == SYMM_SIGNAL_ADD ? SYMM_AMO_ADD : SYMM_AMO_SET;
        *pending = true;
        return symm__put_signal(ctx, q->pe, q->off, local, q->n, q->sig_off, q->value, amo,
                                SYMM__NBI);
    }
    default:
        return symm__err(SYMM_ERR_INVALID_ARG, "unknown request op %u", q->op);
    }
}

/* ---- the executor ---- */

static symm_status px_run(void *arg, const symm_ring_req *q, bool *pending) {
    return run_request(arg, q, pending);
}

static symm_status px_flush(void *arg) { return symm__quiet(arg); }

static symm_status px_check(void *arg) { return symm__check_failed(arg); }

static void px_failed(void *arg, uint32_t ring, uint64_t ticket, const symm_ring_req *q,
                      symm_status st, const char *msg) {
    symm__ctx *ctx = arg;
    if (!q && !ticket)
        symm__async_record(ctx, st, "proxy: the job failed; ring requests end with %s: %s",
                           symm__status_name(st), msg);
    else if (!q)
        symm__async_record(ctx, st, "proxy ring %u: a put issued from request %" PRIu64
                           " on failed to complete: %s", ring, ticket, msg);
    else
        symm__async_record(ctx, st, "proxy ring %u, request %" PRIu64 " (%s to PE %d): %s",
                           ring, ticket, op_name(q->op), q->pe, msg);
}

/* ---- the context's proxy ---- */

bool symm__proxy_wanted(const symm__ctx *ctx, uint32_t flags) {
    if (flags & SYMM__PROXY_FORCE) return true;
    if (ctx->n_remote == 0) return false;
    return !(flags & SYMM__PROXY_NEED_GPU) || (ctx->ops && ctx->ops->has_device);
}

symm_status symm__proxy_start(symm__ctx *ctx, const symm__proxy_opts *o) {
    symm__proxy_opts env;
    if (!o) {
        SYMM_TRY(symm__proxy_opts_env(&env));
        o = &env;
    }
    if (!symm__proxy_wanted(ctx, o->flags)) return SYMM_SUCCESS;
    symm__proxy *p = calloc(1, sizeof *p);
    if (!p) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "proxy: out of host memory");
    p->ctx = ctx;
    const symm__proxy_exec x = {ctx, px_run, px_flush, px_check, px_failed};
    symm_status st = symm__engine_create(o, &x, NULL, &p->eng);
    if (st) {
        free(p);
        return st;
    }
    pthread_mutex_lock(&reg_lock);
    int slot = -1;
    for (int i = 0; i < MAX_PROXIES; i++) {
        if (reg[i] && reg[i]->ctx == ctx) {
            slot = -2;
            break;
        }
        if (!reg[i] && slot == -1) slot = i;
    }
    if (slot >= 0) reg[slot] = p;
    pthread_mutex_unlock(&reg_lock);
    if (slot < 0) {
        symm__engine_destroy(p->eng);
        free(p);
        return slot == -2 ? symm__err(SYMM_ERR_INVALID_STATE, "proxy: the context has one already")
                          : symm__err(SYMM_ERR_OUT_OF_MEMORY, "proxy: more than %d contexts "
                                      "with a proxy", MAX_PROXIES);
    }
    st = symm__engine_start(p->eng);
    if (st) {
        symm__proxy_destroy(ctx);
        return st;
    }
    SYMM_INFO(SYMM_LOG_INIT, "proxy: %u ring(s) of %u slots, thread started (%d remote PEs)",
              o->n_rings, o->depth, ctx->n_remote);
    return SYMM_SUCCESS;
}

bool symm__proxy_running(symm__ctx *ctx) {
    symm__proxy *p = proxy_of(ctx);
    return p && symm__engine_running(p->eng);
}

symm_status symm__proxy_ring(symm__ctx *ctx, uint32_t i, uint32_t version, symm_ring *out) {
    symm__proxy *p = proxy_of(ctx);
    if (!p)
        return symm__err(SYMM_ERR_NOT_SUPPORTED, "proxy: the context has no proxy (no PE on "
                         "another host, or it was not started)");
    return symm__engine_ring(p->eng, i, version, out);
}

uint32_t symm__proxy_n_rings(symm__ctx *ctx) {
    symm__proxy *p = proxy_of(ctx);
    return p ? symm__engine_n_rings(p->eng) : 0;
}

symm_status symm__proxy_quiet(symm__ctx *ctx) {
    symm__proxy *p = proxy_of(ctx);
    return p ? symm__engine_quiet(p->eng) : SYMM_SUCCESS;
}

void symm__proxy_stop(symm__ctx *ctx) {
    symm__proxy *p = proxy_of(ctx);
    if (p) symm__engine_stop(p->eng);
}

void symm__proxy_destroy(symm__ctx *ctx) {
    symm__proxy *p = NULL;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < MAX_PROXIES && !p; i++) {
        if (reg[i] && reg[i]->ctx == ctx) {
            p = reg[i];
            reg[i] = NULL;
        }
    }
    pthread_mutex_unlock(&reg_lock);
    if (!p) return;
    symm__engine_destroy(p->eng);
    free(p);
}

void symm__proxy_stats_get(symm__ctx *ctx, symm__proxy_stats *s) {
    symm__proxy *p = proxy_of(ctx);
    symm__engine_stats(p ? p->eng : NULL, s);
}
