/*
 * Host backend: each PE's heap is a memfd, mapped by every PE of the host
 * (SCM_RIGHTS through the bootstrap) inside a reserved address range, so
 * peers are reached with plain CPU loads, stores and atomics. It runs every
 * semantic of symm on machines without GPUs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transports/amo_cpu.h"
#include "internal.h"
#include "host_cpu.h"
#include "host_gpu_test.h"

/* A test switch: SYMM_TEST_HOST_DEFER_NBI=1 holds the nbi puts and gets in
 * a queue, run in issue order at the backend's next operation of another
 * kind (a blocking put or get, an atomic, quiet, memset0), as copies queued
 * on a stream run: what the CUDA backend's nbi copies on its internal stream
 * do. fence orders them by the queue alone, as on a stream. So the core's
 * ordering between the backend's path and the transport's (an atomic or
 * signal that goes through the transport after puts that went through the
 * backend) is tested on machines without a GPU (tests/remote, "stream_"). */
typedef struct deferred_copy {
    void *dst;
    const void *src;
    uint64_t n;
} deferred_copy;

typedef struct host_state {
    int *fds;          /* [n_pes]: memfd of each local PE, -1 otherwise */
    uint8_t **reserv;  /* [n_pes]: reserved range of each mapped PE      */
    bool defer;        /* SYMM_TEST_HOST_DEFER_NBI=1                     */
    pthread_mutex_t qlock;
    deferred_copy *q;  /* the queue, in issue order                      */
    size_t qn, qcap;
} host_state;

static void host_heap_fini(symm__ctx *ctx);

/* On failure everything made so far is released (like the CUDA backend's):
 * the core calls heap_fini only after a successful heap_init. */
static symm_status host_heap_init(symm__ctx *ctx) {
    host_state *hs = calloc(1, sizeof *hs);
    if (!hs) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "host backend: out of host memory");
    ctx->backend = hs;
    symm_status st = SYMM_SUCCESS;
    pthread_mutex_init(&hs->qlock, NULL);
    const char *defer = getenv("SYMM_TEST_HOST_DEFER_NBI");
    hs->defer = defer && strcmp(defer, "1") == 0;
    if (hs->defer)
        SYMM_INFO(SYMM_LOG_BACKEND, "host backend: SYMM_TEST_HOST_DEFER_NBI=1: nbi puts and gets "
                  "run at the next operation of another kind (a test switch)");
    hs->fds = malloc((size_t)ctx->n_pes * sizeof *hs->fds);
    hs->reserv = calloc((size_t)ctx->n_pes, sizeof *hs->reserv);
    int *local_fds = malloc((size_t)(ctx->local_n_pes > 0 ? ctx->local_n_pes : 1) * sizeof(int));
    if (!hs->fds || !hs->reserv || !local_fds) {
        st = symm__err(SYMM_ERR_OUT_OF_MEMORY, "host backend: out of host memory");
        goto fail;
    }
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) hs->fds[pe] = -1;

    int fd = memfd_create("symm-heap", MFD_CLOEXEC);
    if (fd < 0) {
        st = symm__err_errno(SYMM_ERR_SYSTEM, errno, "host backend: memfd_create");
        goto fail;
    }
    for (int32_t i = 0; i < ctx->local_n_pes; i++) local_fds[i] = -1;
    st = symm__boot_share_fd(ctx->boot, fd, local_fds);
    close(fd);
    if (st) goto fail;
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        int32_t li = ctx->boot_info.local_index[pe];
        if (li >= 0) hs->fds[pe] = local_fds[li];
    }
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        if (hs->fds[pe] < 0) continue;
        void *r = mmap(NULL, ctx->heap_cap, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (r == MAP_FAILED) {
            st = symm__err_errno(SYMM_ERR_OUT_OF_MEMORY, errno,
                                 "host backend: reserving %llu bytes of address space for PE %d "
                                 "(lower SYMM_HEAP_CAP)", (unsigned long long)ctx->heap_cap, pe);
            goto fail;
        }
        hs->reserv[pe] = r;
        ctx->peer_base[pe] = r;
    }
    free(local_fds);
    ctx->heap_base = ctx->peer_base[ctx->my_pe];
    ctx->cpu_peers = true; /* the ops below are host_cpu.h's */
    return SYMM_SUCCESS;

fail:
    free(local_fds);
    host_heap_fini(ctx);
    return st;
}

static symm_status host_heap_grow(symm__ctx *ctx, uint64_t new_mapped) {
    host_state *hs = ctx->backend;
    uint64_t old = ctx->heap_mapped;
    if (ftruncate(hs->fds[ctx->my_pe], (off_t)new_mapped) != 0)
        return symm__err_errno(SYMM_ERR_OUT_OF_MEMORY, errno,
                               "host backend: growing the heap to %llu bytes",
                               (unsigned long long)new_mapped);
    /* Map the new span of every local PE's memfd. A peer's memfd may not be
     * extended yet; nobody touches the span before the collective that
     * follows every growth completes. */
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        if (!hs->reserv[pe]) continue;
        void *p = mmap(hs->reserv[pe] + old, new_mapped - old, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_FIXED, hs->fds[pe], (off_t)old);
        if (p == MAP_FAILED)
            return symm__err_errno(SYMM_ERR_SYSTEM, errno, "host backend: mapping PE %d's heap", pe);
    }
    return SYMM_SUCCESS;
}

static void host_heap_fini(symm__ctx *ctx) {
    host_state *hs = ctx->backend;
    if (!hs) return;
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        if (hs->reserv && hs->reserv[pe]) munmap(hs->reserv[pe], ctx->heap_cap);
        if (hs->fds && hs->fds[pe] >= 0) close(hs->fds[pe]);
        if (ctx->peer_base) ctx->peer_base[pe] = NULL;
    }
    free(hs->fds);
    free(hs->reserv);
    free(hs->q);
    pthread_mutex_destroy(&hs->qlock);
    free(hs);
    ctx->backend = NULL;
    ctx->heap_base = NULL;
    ctx->cpu_peers = false;
}

static symm_status unreachable(int32_t pe) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "host backend: PE %d is not mapped", pe);
}

/* Runs the held nbi copies in issue order (SYMM_TEST_HOST_DEFER_NBI). */
static void drain(host_state *hs) {
    if (!hs->defer) return;
    pthread_mutex_lock(&hs->qlock);
    for (size_t i = 0; i < hs->qn; i++) symm__host_copy(hs->q[i].dst, hs->q[i].src, hs->q[i].n);
    hs->qn = 0;
    pthread_mutex_unlock(&hs->qlock);
}

/* A copy: held when it is nbi and the switch is on (run at once, after the
 * held ones, when the queue cannot grow), else after the held ones. */
static void copy_op(host_state *hs, void *dst, const void *src, uint64_t n, uint32_t flags) {
    if (hs->defer && (flags & SYMM__NBI)) {
        pthread_mutex_lock(&hs->qlock);
        if (hs->qn == hs->qcap) {
            size_t cap = hs->qcap ? 2 * hs->qcap : 64;
            deferred_copy *q = realloc(hs->q, cap * sizeof *q);
            if (q) {
                hs->q = q;
                hs->qcap = cap;
            }
        }
        const bool held = hs->qn < hs->qcap;
        if (held) hs->q[hs->qn++] = (deferred_copy){dst, src, n};
        pthread_mutex_unlock(&hs->qlock);
        if (held) return;
    }
    drain(hs);
    symm__host_copy(dst, src, n);
}

static symm_status host_put(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src, uint64_t n,
                            uint32_t flags) {
    if (!ctx->peer_base[pe]) return unreachable(pe);
    copy_op(ctx->backend, ctx->peer_base[pe] + off, src, n, flags);
    return SYMM_SUCCESS;
}

static symm_status host_get(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                            uint32_t flags) {
    if (!ctx->peer_base[pe]) return unreachable(pe);
    copy_op(ctx->backend, dst, ctx->peer_base[pe] + off, n, flags);
    return SYMM_SUCCESS;
}

static symm_status host_atomic(symm__ctx *ctx, int32_t pe, uint64_t off, uint32_t dtype,
                               uint32_t op, const void *value, const void *compare, void *fetched) {
    if (!ctx->peer_base[pe]) return unreachable(pe);
    uint32_t size = symm__amo_size(dtype);
    bool is_float = dtype == SYMM_DTYPE_FLOAT32 || dtype == SYMM_DTYPE_FLOAT64;
    if (!size || op > SYMM_AMO_XOR ||
        (is_float && op != SYMM_AMO_FETCH && op != SYMM_AMO_SET && op != SYMM_AMO_SWAP &&
         op != SYMM_AMO_COMPARE_SWAP))
        return symm__err(SYMM_ERR_INVALID_ARG, "host backend: atomic op %u on dtype %u", op, dtype);
    uint64_t v = 0, c = 0;
    if (value) symm__host_copy(&v, value, size);
    if (compare) symm__host_copy(&c, compare, size);
    if (op == SYMM_AMO_INC || op == SYMM_AMO_FETCH_INC) v = 1;
    drain(ctx->backend);
    uint64_t old = symm__host_amo(ctx->peer_base[pe] + off, size, op, v, c);
    if (fetched) symm__host_copy(fetched, &old, size);
    return SYMM_SUCCESS;
}

static symm_status host_quiet(symm__ctx *ctx) {
    drain(ctx->backend);
    symm__host_fence();
    return SYMM_SUCCESS;
}

static symm_status host_fence(symm__ctx *ctx) {
    symm__host_order();
    return SYMM_SUCCESS;
}

static symm_status host_memset0(symm__ctx *ctx, uint64_t off, uint64_t n) {
    drain(ctx->backend);
    memset(ctx->heap_base + off, 0, n);
    return SYMM_SUCCESS;
}

static void host_describe(symm__ctx *ctx, char *buf, size_t cap) {
    snprintf(buf, cap, "no device; the heap is host memory (memfd) shared by the PEs of this host");
}

/* ---- The GPU-memory service for transports: a test hook ----
 * The heap is host memory, so transports need no service (tp_gpu_open
 * leaves it empty) unless SYMM_TEST_HOST_GPU_MEM=1 asks for the test hook of
 * host_gpu_test.h: the heap then passes for GPU memory, reached through
 * counting copies and atomics only. */
#define GPU_TEST_TAG (UINT64_C(1) << 62)

static struct {
    uint8_t *heap;
    uint64_t cap;
    uint64_t fail_bytes; /* SYMM_TEST_HOST_GPU_FAIL_BYTES (host_gpu_test.h) */
    _Atomic uint64_t win_off, win_len;
    _Atomic uint64_t tgt_in, tgt_out, loc_in, loc_out, tgt_amo, loc_amo, calls;
} gpu_test;

void symm__host_gpu_test_window(uint64_t off, uint64_t len) {
    atomic_store(&gpu_test.win_off, off);
    atomic_store(&gpu_test.win_len, len);
    atomic_store(&gpu_test.tgt_in, 0);
    atomic_store(&gpu_test.tgt_out, 0);
    atomic_store(&gpu_test.loc_in, 0);
    atomic_store(&gpu_test.loc_out, 0);
    atomic_store(&gpu_test.tgt_amo, 0);
    atomic_store(&gpu_test.loc_amo, 0);
}

void symm__host_gpu_test_stats(symm__host_gpu_stats *out) {
    out->tgt_in = atomic_load(&gpu_test.tgt_in);
    out->tgt_out = atomic_load(&gpu_test.tgt_out);
    out->loc_in = atomic_load(&gpu_test.loc_in);
    out->loc_out = atomic_load(&gpu_test.loc_out);
    out->tgt_amo = atomic_load(&gpu_test.tgt_amo);
    out->loc_amo = atomic_load(&gpu_test.loc_amo);
    out->calls = atomic_load(&gpu_test.calls);
}

static void *gpu_test_view(void *st, void *p) {
    (void)st;
    return (void *)((uintptr_t)p ^ GPU_TEST_TAG);
}

/* The real address of p; *tgt: it came through view (the target side). */
static uint8_t *gpu_test_real(const void *p, bool *tgt) {
    *tgt = ((uintptr_t)p & GPU_TEST_TAG) != 0;
    return (uint8_t *)((uintptr_t)p & ~GPU_TEST_TAG);
}

/* Bytes of [p, p + n) inside the window, 0 outside the heap. */
static uint64_t gpu_test_in_window(const uint8_t *p, uint64_t n) {
    if (!gpu_test.heap || p < gpu_test.heap || p >= gpu_test.heap + gpu_test.cap) return 0;
    uint64_t a = (uint64_t)(p - gpu_test.heap), b = a + n;
    uint64_t lo = atomic_load(&gpu_test.win_off), hi = lo + atomic_load(&gpu_test.win_len);
    a = a > lo ? a : lo;
    b = b < hi ? b : hi;
    return b > a ? b - a : 0;
}

static symm_status gpu_test_copy(void *st, void *dst, const void *src, uint64_t n) {
    (void)st;
    bool dt, stg;
    uint8_t *d = gpu_test_real(dst, &dt);
    const uint8_t *s = gpu_test_real(src, &stg);
    atomic_fetch_add(&gpu_test.calls, 1);
    if (gpu_test.fail_bytes && n == gpu_test.fail_bytes + !(dt || stg))
        return symm__err(SYMM_ERR_CUDA, "host backend: a copy of %llu bytes fails (the test hook's "
                         "SYMM_TEST_HOST_GPU_FAIL_BYTES)", (unsigned long long)n);
    atomic_fetch_add(dt ? &gpu_test.tgt_in : &gpu_test.loc_in, gpu_test_in_window(d, n));
    atomic_fetch_add(stg ? &gpu_test.tgt_out : &gpu_test.loc_out, gpu_test_in_window(s, n));
    memmove(d, s, n);
    return SYMM_SUCCESS;
}

static symm_status gpu_test_atomic(void *st, void *addr, uint32_t dtype, uint32_t op,
                                   uint64_t value, uint64_t compare, uint64_t *fetched) {
    (void)st;
    bool tgt;
    uint8_t *a = gpu_test_real(addr, &tgt);
    atomic_fetch_add(&gpu_test.calls, 1);
    if (gpu_test_in_window(a, symm__amo_size(dtype)))
        atomic_fetch_add(tgt ? &gpu_test.tgt_amo : &gpu_test.loc_amo, 1);
    uint64_t old = 0;
    if (symm__amo_cpu(a, dtype, op, value, compare, &old) != 0)
        return symm__err(SYMM_ERR_INVALID_ARG, "host backend: atomic op %u on dtype %u", op, dtype);
    if (fetched) *fetched = old;
    return SYMM_SUCCESS;
}

static symm_status host_tp_gpu_open(symm__ctx *ctx, symm__tp_gpu *out) {
    const char *v = getenv("SYMM_TEST_HOST_GPU_MEM");
    if (!v || strcmp(v, "1") != 0) return SYMM_SUCCESS; /* host memory: no service */
    gpu_test.heap = ctx->heap_base;
    gpu_test.cap = ctx->heap_cap;
    const char *f = getenv("SYMM_TEST_HOST_GPU_FAIL_BYTES");
    gpu_test.fail_bytes = f ? strtoull(f, NULL, 10) : 0;
    *out = (symm__tp_gpu){.heap_is_gpu = true, .copy = gpu_test_copy, .atomic = gpu_test_atomic,
                          .view = gpu_test_view};
    SYMM_INFO(SYMM_LOG_BACKEND, "host backend: SYMM_TEST_HOST_GPU_MEM=1: transports see the heap "
              "as GPU memory (a test hook)");
    return SYMM_SUCCESS;
}

const symm__backend_ops symm__host_ops = {
    .name = "host",
    .id = SYMM_BACKEND_HOST,
    .has_device = false,
    .nic_coherent_atomics = true, /* CPU atomics on host memory */
    .reach = SYMM__REACH_HOST,    /* memfd maps every PE of this host */
    .heap_init = host_heap_init,
    .heap_grow = host_heap_grow,
    .heap_fini = host_heap_fini,
    .put = host_put,
    .get = host_get,
    .atomic = host_atomic,
    .quiet = host_quiet,
    .fence = host_fence,
    .memset0 = host_memset0,
    .describe = host_describe,
    .tp_gpu_open = host_tp_gpu_open,
};
