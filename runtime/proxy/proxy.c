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

/* Host calls (SYMM_RING_OP_CALL): work a stream form hands to the proxy's
 * thread (a collective or barrier over PEs of other hosts), by number. A
 * call made for a graph capture stays until the context goes (each replay
 * runs it again); the others are freed once they ran. */
typedef struct px_call {
    symm__proxy_call_fn fn;
    void *arg;
    size_t arg_bytes;
    void (*free_arg)(void *arg);
    bool once;
} px_call;

typedef struct symm__proxy {
    symm__ctx *ctx;
    symm__engine *eng;
    bool stream_ring;       /* the last ring is reserved for stream forms    */
    pthread_mutex_t lock;   /* calls, dev_rings                              */
    px_call *calls;
    uint32_t n_calls, cap_calls;
    void *dev_rings;        /* device copy of the kernels' ring handles      */
    size_t dev_rings_bytes;
    /* wake words handed out (symm__proxy_stream_wake): word i is stream i's,
     * reused (a stream runs its operations one after another), until finalize */
    struct px_wake {
        const void *stream;
        uint32_t word;
    } *wakes;
    uint32_t n_wakes, cap_wakes;
} symm__proxy;

static symm__proxy *proxy_of(const symm__ctx *ctx) { return ctx->proxy; }

/* ---- request checks ---- */

static const char *op_name(uint32_t op) {
    static const char *const names[] = {"?", "nop", "put", "get", "atomic", "put_signal",
                                        "fence", "quiet", "call"};
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
        return symm__local_copy(ctx, dst, src, n);
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

/* ---- host calls ---- */

symm_status symm__proxy_call_add(symm__ctx *ctx, symm__proxy_call_fn fn, void *arg,
                                 size_t arg_bytes, void (*free_arg)(void *arg), bool once,
                                 uint64_t *id) {
    symm__proxy *p = proxy_of(ctx);
    if (!p) return symm__err(SYMM_ERR_INTERNAL, "proxy: the context has none");
    pthread_mutex_lock(&p->lock);
    /* the same call again (a loop's all-reduce on the same buffers): its number */
    for (uint32_t k = 0; arg_bytes && !once && k < p->n_calls; k++) {
        const px_call *c = &p->calls[k];
        if (c->fn == fn && !c->once && c->arg_bytes == arg_bytes &&
            memcmp(c->arg, arg, arg_bytes) == 0) {
            pthread_mutex_unlock(&p->lock);
            if (free_arg) free_arg(arg);
            *id = (uint64_t)k + 1;
            return SYMM_SUCCESS;
        }
    }
    uint32_t i = 0;
    while (i < p->n_calls && p->calls[i].fn) i++;
    if (i == p->n_calls) {
        if (p->n_calls == p->cap_calls) {
            uint32_t cap = p->cap_calls ? 2 * p->cap_calls : 16;
            px_call *c = realloc(p->calls, cap * sizeof *c);
            if (!c) {
                pthread_mutex_unlock(&p->lock);
                return symm__err(SYMM_ERR_OUT_OF_MEMORY, "proxy: out of host memory");
            }
            p->calls = c;
            p->cap_calls = cap;
        }
        p->n_calls++;
    }
    p->calls[i] = (px_call){fn, arg, arg_bytes, free_arg, once};
    pthread_mutex_unlock(&p->lock);
    *id = (uint64_t)i + 1;
    return SYMM_SUCCESS;
}

void symm__proxy_call_drop(symm__ctx *ctx, uint64_t id) {
    symm__proxy *p = proxy_of(ctx);
    if (!p || !id) return;
    px_call c = {0};
    pthread_mutex_lock(&p->lock);
    if (id <= p->n_calls) {
        c = p->calls[id - 1];
        p->calls[id - 1] = (px_call){0};
    }
    pthread_mutex_unlock(&p->lock);
    if (c.free_arg) c.free_arg(c.arg);
}

static symm_status run_call(symm__ctx *ctx, uint64_t id) {
    symm__proxy *p = proxy_of(ctx);
    px_call c = {0};
    pthread_mutex_lock(&p->lock);
    if (id && id <= p->n_calls) c = p->calls[id - 1];
    pthread_mutex_unlock(&p->lock);
    if (!c.fn)
        return symm__err(SYMM_ERR_INVALID_ARG, "proxy: host call %" PRIu64 " does not exist "
                         "(a graph replayed after its context's finalize?)", id);
    symm_status st = c.fn(ctx, c.arg);
    if (c.once) symm__proxy_call_drop(ctx, id);
    return st;
}

/* ---- the executor ---- */

static symm_status px_run(void *arg, const symm_ring_req *q, bool *pending) {
    if (q->op == SYMM_RING_OP_CALL) return run_call(arg, q->value);
    return run_request(arg, q, pending);
}

static symm_status px_flush(void *arg) { return symm__quiet(arg); }

static symm_status px_check(void *arg) { return symm__check_failed(arg); }

/* The engine's thread copies local memory through the transport's memory
 * service (ctx->svc_thread, route.c): with a GPU, pinned staging on a
 * stream of the service's own; on the host backend a memmove, as its put. */
static void px_thread(void *arg, bool started) {
    symm__ctx *ctx = arg;
    atomic_store(&ctx->svc_thread, started ? symm__thread_ptr() : (uintptr_t)0);
}

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

/* ---- ring memory from the backend (pinned host memory mapped into the
 * device for the shared part, device memory for the producer words) ---- */

static void *pm_alloc_shared(void *arg, size_t n) {
    symm__ctx *ctx = arg;
    return ctx->ops->pinned_alloc(ctx, n);
}
static void pm_free_shared(void *arg, void *p, size_t n) {
    symm__ctx *ctx = arg;
    ctx->ops->pinned_free(ctx, p, n);
}
static void *pm_alloc_producer(void *arg, size_t n) {
    symm__ctx *ctx = arg;
    return ctx->ops->device_alloc(ctx, n);
}
static void pm_free_producer(void *arg, void *p, size_t n) {
    symm__ctx *ctx = arg;
    ctx->ops->device_free(ctx, p, n);
}
static void *pm_device(void *arg, void *p) {
    symm__ctx *ctx = arg;
    return ctx->ops->pinned_device(ctx, p);
}
static uint64_t pm_read_producer(void *arg, const uint64_t *p) {
    symm__ctx *ctx = arg;
    uint64_t v = 0;
    if (ctx->ops->local_copy(ctx, &v, p, sizeof v)) v = 0;
    return v;
}

static bool gpu_mem(const symm__ctx *ctx) {
    const symm__backend_ops *o = ctx->ops;
    return o && o->pinned_alloc && o->pinned_free && o->pinned_device && o->device_alloc &&
           o->device_free && o->local_copy;
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
    if (ctx->proxy) return symm__err(SYMM_ERR_INVALID_STATE, "proxy: the context has one already");
    symm__proxy *p = calloc(1, sizeof *p);
    if (!p) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "proxy: out of host memory");
    p->ctx = ctx;
    pthread_mutex_init(&p->lock, NULL);
    symm__proxy_opts oo = *o;
    /* A device backend's stream forms get a ring of their own (the last), so
     * a stream waiting on its request never queues behind a kernel's. */
    p->stream_ring = ctx->ops && ctx->ops->ring_stream && gpu_mem(ctx);
    if (p->stream_ring && oo.n_rings < SYMM__PROXY_MAX_RINGS) oo.n_rings++;
    else p->stream_ring = false;
    const symm__proxy_exec x = {ctx, px_run, px_flush, px_check, px_failed, px_thread};
    const symm__proxy_mem m = {ctx, pm_alloc_shared, pm_free_shared, pm_alloc_producer,
                               pm_free_producer, pm_device, pm_read_producer};
    symm_status st = symm__engine_create(&oo, &x, gpu_mem(ctx) ? &m : NULL, &p->eng);
    if (st) {
        pthread_mutex_destroy(&p->lock);
        free(p);
        return st;
    }
    ctx->proxy = p;
    st = symm__engine_start(p->eng);
    if (st) {
        symm__proxy_destroy(ctx);
        return st;
    }
    SYMM_INFO(SYMM_LOG_INIT, "proxy: %u ring(s) of %u slots%s, thread started (%d remote PEs)",
              oo.n_rings, oo.depth, p->stream_ring ? " (the last for stream forms)" : "",
              ctx->n_remote);
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

symm_status symm__proxy_stream_ring(symm__ctx *ctx, symm_ring *out) {
    symm__proxy *p = proxy_of(ctx);
    if (!p || !p->stream_ring)
        return symm__err(SYMM_ERR_INTERNAL, "proxy: the context has no stream ring");
    return symm__engine_ring(p->eng, symm__engine_n_rings(p->eng) - 1, SYMM_RING_VERSION, out);
}

symm_status symm__proxy_device_rings(symm__ctx *ctx, const void **rings, uint32_t *n) {
    symm__proxy *p = proxy_of(ctx);
    *rings = NULL;
    *n = 0;
    if (!p || !gpu_mem(ctx)) return SYMM_SUCCESS;
    const uint32_t k = symm__engine_n_rings(p->eng) - (p->stream_ring ? 1u : 0u);
    symm_status st = SYMM_SUCCESS;
    pthread_mutex_lock(&p->lock);
    if (!p->dev_rings && k) {
        symm_ring *h = calloc(k, sizeof *h);
        const size_t bytes = k * sizeof *h;
        void *d = h ? ctx->ops->device_alloc(ctx, bytes) : NULL;
        for (uint32_t i = 0; d && i < k && st == SYMM_SUCCESS; i++)
            st = symm__engine_ring(p->eng, i, SYMM_RING_VERSION, &h[i]);
        if (d && st == SYMM_SUCCESS) st = ctx->ops->local_copy(ctx, d, h, bytes);
        if (!d && st == SYMM_SUCCESS)
            st = symm__err(SYMM_ERR_OUT_OF_MEMORY, "proxy: out of memory for the ring handles");
        if (st && d) ctx->ops->device_free(ctx, d, bytes);
        if (st == SYMM_SUCCESS) {
            p->dev_rings = d;
            p->dev_rings_bytes = bytes;
        }
        free(h);
    }
    pthread_mutex_unlock(&p->lock);
    SYMM_TRY(st);
    *rings = p->dev_rings;
    *n = k;
    return SYMM_SUCCESS;
}

symm_status symm__proxy_stream_wake(symm__ctx *ctx, const void *stream, uint32_t ring,
                                    symm__px_wake *out) {
    symm__proxy *p = proxy_of(ctx);
    memset(out, 0, sizeof *out);
    if (!p) return symm__err(SYMM_ERR_NOT_SUPPORTED, "proxy: the context has none");
    uint64_t *notify = NULL;
    uint32_t *words = NULL;
    SYMM_TRY(symm__engine_wake(p->eng, ring, &notify, &words));
    pthread_mutex_lock(&p->lock);
    symm_status st = SYMM_SUCCESS;
    uint32_t w = UINT32_MAX;
    for (uint32_t i = 0; i < p->n_wakes && w == UINT32_MAX; i++)
        if (p->wakes[i].stream == stream) w = p->wakes[i].word;
    if (w == UINT32_MAX) {
        if (p->n_wakes >= SYMM__PROXY_WAKE_WORDS) {
            st = symm__err(SYMM_ERR_NOT_SUPPORTED, "proxy: all %u wake words are taken",
                           SYMM__PROXY_WAKE_WORDS);
        } else if (p->n_wakes == p->cap_wakes) {
            uint32_t cap = p->cap_wakes ? 2 * p->cap_wakes : 16;
            void *nw = realloc(p->wakes, cap * sizeof *p->wakes);
            if (!nw) st = symm__err(SYMM_ERR_OUT_OF_MEMORY, "proxy: out of host memory");
            else {
                p->wakes = nw;
                p->cap_wakes = cap;
            }
        }
        if (!st) {
            w = p->n_wakes;
            p->wakes[p->n_wakes++] = (struct px_wake){stream, w};
        }
    }
    pthread_mutex_unlock(&p->lock);
    SYMM_TRY(st);
    out->notify = notify;
    out->word = words + w;
    out->cell = (uint64_t)w + 1u;
    return SYMM_SUCCESS;
}

symm_status symm__proxy_quiet(symm__ctx *ctx) {
    symm__proxy *p = proxy_of(ctx);
    return p ? symm__engine_quiet(p->eng) : SYMM_SUCCESS;
}

void symm__proxy_ack(symm__ctx *ctx) {
    symm__proxy *p = proxy_of(ctx);
    if (p) symm__engine_ack(p->eng);
}

void symm__proxy_stop(symm__ctx *ctx) {
    symm__proxy *p = proxy_of(ctx);
    if (p) symm__engine_stop(p->eng);
}

void symm__proxy_destroy(symm__ctx *ctx) {
    symm__proxy *p = proxy_of(ctx);
    if (!p) return;
    symm__proxy_stats st;
    symm__engine_stats(p->eng, &st);
    SYMM_INFO(SYMM_LOG_INIT,
              "proxy: %" PRIu64 " requests (%" PRIu64 " failed) in %" PRIu64 " passes, %" PRIu64
              " naps; run %.1f us avg, %.1f max; %" PRIu64 " flushes %.1f us avg, %.1f max",
              st.requests, st.failed, st.passes, st.naps,
              st.requests ? st.run_ns / 1e3 / (double)st.requests : 0.0, st.run_max_ns / 1e3,
              st.flushes, st.flushes ? st.flush_ns / 1e3 / (double)st.flushes : 0.0,
              st.flush_max_ns / 1e3);
    symm__engine_destroy(p->eng); /* stops the thread first */
    ctx->proxy = NULL;
    for (uint32_t i = 0; i < p->n_calls; i++)
        if (p->calls[i].free_arg) p->calls[i].free_arg(p->calls[i].arg);
    free(p->calls);
    free(p->wakes);
    if (p->dev_rings) ctx->ops->device_free(ctx, p->dev_rings, p->dev_rings_bytes);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void symm__proxy_stats_get(symm__ctx *ctx, symm__proxy_stats *s) {
    symm__proxy *p = proxy_of(ctx);
    symm__engine_stats(p ? p->eng : NULL, s);
}
