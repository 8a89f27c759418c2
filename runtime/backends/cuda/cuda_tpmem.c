/*
 * CUDA backend: the GPU-memory service for transports that stage (backend.h
 * tp_gpu_open; transport.h symm_tp_core.mem_copy / mem_atomic), e.g. tcp.
 *
 * Who calls: a transport's own threads (tcp's service thread, serving peers)
 * and the application's (a put from the GPU heap), concurrently; so the
 * service has its own non-blocking stream, makes the context current in the
 * calling thread, and serialises its calls with a mutex. Its stream never
 * waits for the application's streams or the internal one: a copy into the
 * heap must not queue behind a kernel that is waiting for exactly that data.
 *
 * Copies between host and GPU memory go through two pinned bounce buffers
 * (allocated when the service opens, during symm_init: cuMemHostAlloc may
 * wait for the device, which later could be busy with kernels waiting on
 * peers), so each piece is one asynchronous DMA on the service's stream and
 * the CPU's memcpy of the next piece overlaps it.
 *
 * Atomics are the backend's one-thread kernel (symm_k_amo: a system-scope
 * atomic, the prior value written to pinned memory). Why a kernel: the word
 * may be updated at the same time by kernels (symm_dev_atomic*, signals),
 * by this host's other PEs through load/store, and by the backend's own
 * atomics; the CPU cannot make a read-modify-write on GPU memory atomic with
 * those (a copy out, the op, a copy back would lose their updates), while
 * the GPU's own atomic is atomic with all of them and returns the prior
 * value for fetching ops. The cost: a kernel launch and its wait, and a
 * free SM slot — a grid that holds every SM while it waits for this update
 * keeps it from running (the wait gives up at the job's timeout). So a SET,
 * what a device barrier's proxied announcement is, goes as a stream memory
 * operation where the device has them (tpmem_set): no SM needed.
 */
#include <sched.h>
#include <time.h>

#include "cuda_coll.h"
#include "cuda_internal.h"
#include "cuda_tpmem.h"

/* Each bounce buffer: large enough that a piece's fixed cost (launch of the
 * DMA, its wait) is small beside its bytes. */
#define TPMEM_BOUNCE (1u << 20)

typedef struct cu_tpmem {
    symm__ctx *ctx;
    cu_state *s;
    pthread_mutex_t lock;
    CUstream stream;
    uint8_t *bounce[2]; /* pinned, TPMEM_BOUNCE bytes each */
    uint64_t *word;     /* pinned: an atomic's prior value  */
} cu_tpmem;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait for the service's stream; bounded by the job's timeout (SYMM_ERR_TIMEOUT:
 * the GPU did not run the copy or the atomic kernel that long). */
static symm_status tpmem_wait(cu_tpmem *g, const char *what) {
    uint64_t t0 = 0, bound = (uint64_t)g->ctx->cfg.timeout_ms * 1000000u;
    bool told = false;
    for (unsigned spins = 0;; spins++) {
        CUresult r = symm__cu.StreamQuery(g->stream);
        if (r == CUDA_SUCCESS) return SYMM_SUCCESS;
        if (r != CUDA_ERROR_NOT_READY) return symm__cu_fail(r, what);
        if (spins < 64) continue;
        if (!t0) t0 = now_ns();
        if (!told && now_ns() - t0 > 1000000000u) {
            told = true; /* what a stalled peer waits for, named once */
            SYMM_WARN(SYMM_LOG_BACKEND, "cuda: %s for a transport has waited 1 s for the GPU "
                      "(every SM held by kernels that wait, or a first launch under lazy "
                      "loading? docs/PROXY.md \"Lazy loading\")", what);
        }
        if (bound && now_ns() - t0 > bound)
            return symm__err(SYMM_ERR_TIMEOUT, "cuda: %s for a transport did not complete in %u "
                             "ms (every SM held by kernels that wait?)", what,
                             g->ctx->cfg.timeout_ms);
        sched_yield();
    }
}

/* GPU memory the CPU cannot touch: this PE's heap, or what the driver says
 * is device memory (managed memory is not: the CPU reaches it). */
static bool tpmem_dev(const cu_tpmem *g, const void *p) {
    const uint8_t *b = p, *h = g->ctx->heap_base;
    if (h && b >= h && (uint64_t)(b - h) < g->s->span) return true;
    CUmemorytype type = (CUmemorytype)0;
    int managed = 0;
    CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[2] = {&type, &managed};
    if (symm__cu.PointerGetAttributes(2, attrs, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
        return false;
    return type == CU_MEMORYTYPE_DEVICE && !managed;
}

static bool tpmem_is_gpu(void *state, const void *p) {
    cu_tpmem *g = state;
    if (cu_enter(g->s) != SYMM_SUCCESS) return false;
    return tpmem_dev(g, p);
}

static symm_status dma(cu_tpmem *g, void *dst, const void *src, uint64_t n) {
    SYMM__CU(MemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n, g->stream));
    return SYMM_SUCCESS;
}

/* Host -> GPU in pieces: the memcpy of piece i into one bounce buffer
 * overlaps the DMA of piece i - 1 from the other. */
static symm_status to_gpu(cu_tpmem *g, uint8_t *dst, const uint8_t *src, uint64_t n) {
    symm_status st = SYMM_SUCCESS;
    for (uint64_t done = 0, i = 0; done < n && !st; i++) {
        uint64_t m = min_u64(n - done, TPMEM_BOUNCE);
        memcpy(g->bounce[i & 1], src + done, m);
        st = tpmem_wait(g, "a copy to GPU memory"); /* piece i - 1: frees nothing of ours */
        if (!st) st = dma(g, dst + done, g->bounce[i & 1], m);
        done += m;
    }
    symm_status w = tpmem_wait(g, "a copy to GPU memory");
    return st ? st : w;
}

/* GPU -> host: the DMA of piece i + 1 overlaps the memcpy of piece i out. */
static symm_status from_gpu(cu_tpmem *g, uint8_t *dst, const uint8_t *src, uint64_t n) {
    uint64_t m = min_u64(n, TPMEM_BOUNCE);
    symm_status st = dma(g, g->bounce[0], src, m);
    for (uint64_t done = 0, i = 0; done < n && !st; i++) {
        SYMM_TRY(tpmem_wait(g, "a copy from GPU memory"));
        uint64_t next = done + m, m2 = next < n ? min_u64(n - next, TPMEM_BOUNCE) : 0;
        if (m2) st = dma(g, g->bounce[(i + 1) & 1], src + next, m2);
        memcpy(dst + done, g->bounce[i & 1], m);
        done = next;
        m = m2;
    }
    symm_status w = tpmem_wait(g, "a copy from GPU memory");
    return st ? st : w;
}

/* GPU -> GPU: one DMA; overlapping ranges (cuMemcpy's are undefined) by
 * way of host memory, as memmove. */
static symm_status inside_gpu(cu_tpmem *g, uint8_t *dst, const uint8_t *src, uint64_t n) {
    if (dst < src + n && src < dst + n && dst != src) {
        uint8_t *tmp = malloc(n);
        if (!tmp) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
        symm_status st = from_gpu(g, tmp, src, n);
        if (!st) st = to_gpu(g, dst, tmp, n);
        free(tmp);
        return st;
    }
    if (dst == src) return SYMM_SUCCESS;
    SYMM_TRY(dma(g, dst, src, n));
    return tpmem_wait(g, "a copy inside GPU memory");
}

static symm_status tpmem_copy(void *state, void *dst, const void *src, uint64_t n) {
    cu_tpmem *g = state;
    if (!n) return SYMM_SUCCESS;
    pthread_mutex_lock(&g->lock);
    symm_status st = cu_enter(g->s);
    if (!st) {
        bool dd = tpmem_dev(g, dst), sd = tpmem_dev(g, src);
        if (!dd && !sd) memmove(dst, src, n);
        else if (dd && sd) st = inside_gpu(g, dst, src, n);
        else if (dd) st = to_gpu(g, dst, src, n);
        else st = from_gpu(g, dst, src, n);
    }
    pthread_mutex_unlock(&g->lock);
    return st;
}

/* A SET (it fetches nothing) as a stream memory operation: the GPU's front
 * end writes the word, no SM is needed, so the update reaches a heap whose
 * GPU is held whole by a kernel that waits for exactly this word (a
 * cooperative grid at a device barrier whose peer of another host announces
 * through the proxy: the atomic kernel could never start). An aligned store
 * of the word's size is single-copy atomic: against concurrent atomics it is
 * an exchange whose result nobody reads. 1: done (*st set); 0: use the
 * kernel (stream memory operations unusable, or refused). */
static int tpmem_set(cu_tpmem *g, void *addr, uint32_t size, uint64_t value, symm_status *st) {
    if (!atomic_load(&g->s->memops)) return 0;
    const CUdeviceptr a = (CUdeviceptr)(uintptr_t)addr;
    CUresult r = size == 8 ? symm__cu.StreamWriteValue64(g->stream, a, value,
                                                         CU_STREAM_WRITE_VALUE_DEFAULT)
               : symm__cu.StreamWriteValue32 ? symm__cu.StreamWriteValue32(
                                                   g->stream, a, (cuuint32_t)value,
                                                   CU_STREAM_WRITE_VALUE_DEFAULT)
                                             : CUDA_ERROR_NOT_SUPPORTED;
    if (r != CUDA_SUCCESS) return 0;
    *st = tpmem_wait(g, "a write of an atomic SET to GPU memory");
    return 1;
}

static symm_status tpmem_atomic(void *state, void *addr, uint32_t dtype, uint32_t op,
                                uint64_t value, uint64_t compare, uint64_t *fetched) {
    cu_tpmem *g = state;
    uint32_t size = dtype == SYMM_DTYPE_INT64 || dtype == SYMM_DTYPE_UINT64 ||
                            dtype == SYMM_DTYPE_FLOAT64 ? 8u : 4u;
    pthread_mutex_lock(&g->lock);
    symm_status st = cu_enter(g->s);
    if (!st && op == SYMM_AMO_SET && tpmem_set(g, addr, size, value, &st)) {
        pthread_mutex_unlock(&g->lock);
        if (!st && fetched) *fetched = 0; /* SET fetches nothing */
        return st;
    }
    uint64_t *out = g->word;
    void *args[] = {&addr, &size, &op, &value, &compare, &out};
    if (!st)
        st = symm__cu_launch(g->s, g->s->f_amo, "cuLaunchKernel(symm_k_amo) for a transport", 1,
                             1, 1, g->stream, args);
    if (!st) st = tpmem_wait(g, "an atomic on GPU memory");
    uint64_t r = *(volatile uint64_t *)g->word;
    pthread_mutex_unlock(&g->lock);
    if (!st && fetched) *fetched = size == 8 ? r : (uint32_t)r;
    return st;
}

/* CUDA's lazy loading (the default since 12.2) loads a kernel at its first
 * launch (or lookup), and the load waits for the device's queued work to
 * finish while it holds the context. A stream that waits for a PE of
 * another host ends only when this service has copied into the heap (here
 * or on the peer), and the service's calls wait for the same context: a
 * load in that window deadlocks the job (others met the same hazard:
 * docs/PROXY.md). So, when a staging transport opens the
 * service under lazy loading: the backend's kernels that are looked up on
 * first use (the reductions) are loaded now, and the application is told
 * once a process about its own; docs/PROXY.md "Lazy loading". */
static void lazy_guard(cu_state *s) {
    static atomic_bool said;
    CUmoduleLoadingMode m = CU_MODULE_EAGER_LOADING;
    if (!symm__cu.ModuleGetLoadingMode || symm__cu.ModuleGetLoadingMode(&m) != CUDA_SUCCESS ||
        m != CU_MODULE_LAZY_LOADING)
        return;
    uint64_t t0 = now_ns();
    unsigned n = symm__cu_preload_reduce(s);
    SYMM_INFO(SYMM_LOG_BACKEND, "cuda: lazy loading: %u reduction kernels loaded now (%.1f ms), "
              "before any stream waits for a PE of another host", n, (double)(now_ns() - t0) / 1e6);
    if (atomic_exchange(&said, true)) return;
    SYMM_WARN(SYMM_LOG_BACKEND, "cuda: CUDA lazy loading is on (CUDA_MODULE_LOADING unset or "
              "LAZY) and GPU memory reaches PEs of other hosts by staging copies: a kernel "
              "launched for the first time while a stream waits for such a PE can hang the "
              "job; launch each kernel once before, or set CUDA_MODULE_LOADING=EAGER "
              "(docs/PROXY.md \"Lazy loading\")");
}

static void tpmem_close(void *state) {
    cu_tpmem *g = state;
    if (!g) return;
    if (cu_enter(g->s) == SYMM_SUCCESS) {
        if (g->stream) {
            symm__cu.StreamSynchronize(g->stream);
            symm__cu.StreamDestroy(g->stream);
        }
        for (int i = 0; i < 2; i++)
            if (g->bounce[i]) symm__cu.MemFreeHost(g->bounce[i]);
        if (g->word) symm__cu.MemFreeHost(g->word);
    }
    pthread_mutex_destroy(&g->lock);
    free(g);
}

symm_status symm__cuda_tp_gpu_open(symm__ctx *ctx, symm__tp_gpu *out) {
    cu_state *s = ctx->backend;
    if (!s) return symm__err(SYMM_ERR_INTERNAL, "cuda: a transport's GPU-memory service before "
                             "the heap exists");
    cu_tpmem *g = calloc(1, sizeof *g);
    if (!g) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    g->ctx = ctx;
    g->s = s;
    pthread_mutex_init(&g->lock, NULL);
    symm_status st = cu_enter(s);
    CUresult r = CUDA_SUCCESS;
    if (!st && (r = symm__cu.StreamCreate(&g->stream, CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS &&
        (r = symm__cu.MemHostAlloc((void **)&g->bounce[0], TPMEM_BOUNCE, 0)) == CUDA_SUCCESS &&
        (r = symm__cu.MemHostAlloc((void **)&g->bounce[1], TPMEM_BOUNCE, 0)) == CUDA_SUCCESS)
        r = symm__cu.MemHostAlloc((void **)&g->word, sizeof *g->word, 0);
    if (!st && r != CUDA_SUCCESS)
        st = symm__cu_fail(r, "the transports' GPU-memory service (stream, pinned buffers)");
    if (st) {
        tpmem_close(g);
        return st;
    }
    lazy_guard(s);
    *out = (symm__tp_gpu){.state = g, .heap_is_gpu = true, .is_gpu = tpmem_is_gpu,
                          .copy = tpmem_copy, .atomic = tpmem_atomic, .close = tpmem_close};
    return SYMM_SUCCESS;
}
