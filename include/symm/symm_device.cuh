/*
 * symm — device API (CUDA C++, header-only: no -rdc, no device library).
 *
 * Kernels receive a symm_device_ctx (from symm_device_ctx_get(), copied into a
 * kernel parameter or device memory) and address symmetric memory by the
 * local symmetric address: the address of this PE's copy, as returned by
 * symm_buf_ptr(). Every function works on every PE of the job: a peer that is
 * load/store reachable (symm_dev_peer_base(c, pe) != NULL, e.g. GPUs joined
 * by NVLink or PCIe P2P on one host) is accessed directly; any other PE (a PE
 * of another host) through the runtime's proxy: the call writes a request
 * into a ring in host-pinned memory (symm_device_ring.h, the ring of the
 * calling block: c.rings[block % c.n_rings]) and a runtime thread runs it
 * over the transport (docs/PROXY.md).
 *
 * Proxied operations: put, get, p, g, put_signal and fetching atomics return
 * once the request completed remotely (the source may be reused, the value is
 * there); non-fetching atomics and signal_op return once posted and complete
 * at the next symm_dev_quiet(c) or barrier. The proxy reads a put's source
 * and writes a get's destination in global memory (device or host-mapped);
 * one in a thread's local memory or in shared memory travels 8 bytes a
 * request through the ring's scratch cells instead (correct, but a round
 * trip each). A failed proxied request (a dead
 * PE, a bad range) does nothing; the ring keeps the failure and the next
 * symm_dev_quiet(c) returns it (the host reads it from symm_ctx_async_error).
 * Device ABI: a context filled by a runtime older than 1.3 (no rings, see
 * symm_device_ctx.struct_size) or of another SYMM_DEVICE_ABI_VERSION has no
 * proxy for this header: operations to a PE that is not load/store reachable
 * then do nothing and symm_dev_quiet(c) returns SYMM_ERR_ABI_MISMATCH (never
 * a misread ring).
 *
 * Scopes: plain functions are called by one thread and act for it; _warp
 * functions must be called by all 32 lanes of a warp with the same arguments;
 * _block functions by every thread of the block with the same arguments (they
 * contain __syncthreads()).
 *
 * Ordering: stores to peers are weakly ordered. symm_dev_fence(c) orders the
 * calling thread's earlier puts/AMOs before its later ones (to every PE);
 * symm_dev_quiet(c) makes them complete (visible to every PE and the host).
 * The forms without the context (symm_dev_fence(), symm_dev_quiet()) cover
 * load/store peers only. put_signal makes the data visible before the
 * signal. Barriers imply quiet. docs/ABI.md "Proxied operations" has the
 * rules for PEs reached through the proxy.
 *
 * Barrier compatibility: symm_dev_barrier_all / symm_dev_team_barrier use the
 * same flags and epoch counter as the runtime's stream barriers
 * (symm_barrier_all_on_stream, symm_barrier_on_stream, ...) and the start/end
 * of the CUDA backend's collectives: each team slot's sync area holds, from
 * byte SYMM_DEVICE_BARRIER_OFF, one uint64_t per team PE; PE i's own entry i
 * is its epoch counter, entry j the last epoch PE j announced. On the CUDA
 * backend the host-side barriers (symm_barrier_all, symm_team_sync, ...) run
 * the same barrier kernel, so host, stream and device barriers on one team may
 * be mixed in any order, as long as every PE of the team performs the same
 * sequence and no two run concurrently on the team (one thread or one block
 * per PE).
 *
 * Requires sm_70 or newer (acquire/release PTX) and C++17 (nvcc's default).
 * Compile with nvcc; symm.h is the only other header needed.
 */
#ifndef SYMM_SYMM_DEVICE_CUH
#define SYMM_SYMM_DEVICE_CUH

#ifndef __CUDACC__
#error "symm_device.cuh is CUDA C++: compile with nvcc"
#endif

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include <symm/symm.h>
#include <symm/symm_device_ring.h>

/* Layout shared with the runtime (runtime/core/internal.h). Slot s's sync area
 * starts at heap_base + s * symm_device_ctx.slot_bytes (1024 for jobs of up
 * to 64 PEs, more for larger jobs); symm_device_ctx.team_slots is the number
 * of slots, symm_device_team.slot a team's slot. */
#define SYMM_DEVICE_BARRIER_OFF 512u  /* device/stream barrier flags within a slot      */
#define SYMM_DEVICE_WORLD_SLOT 0      /* slot of SYMM_TEAM_WORLD                         */

#define SYMM_DEV_FN static __device__ __forceinline__

/* Dead peers. symm_device_ctx.fail_word (1.1) is 0 while the job is healthy
 * and SYMM_DEVICE_FAIL_PEER once the runtime learned that a peer PE died (a
 * runtime thread watches the job while the host waits elsewhere, e.g. in
 * cudaStreamSynchronize). Every wait of this header that is given the context
 * (symm_dev_wait_until(c, ...), symm_dev_signal_wait_until(c, ...), barriers,
 * collectives) reads it every SYMM_DEVICE_FAIL_POLL spins and then gives up,
 * returning SYMM_ERR_PEER_FAILED; the host reads the same failure from
 * symm_ctx_async_error or its next call. The waits that take no context
 * cannot see it and spin until their condition holds. */
#define SYMM_DEVICE_FAIL_PEER 2
#define SYMM_DEVICE_FAIL_POLL 1024u

/* ------------------------------------------------------------------------ */
/* Identity and addresses                                                    */
/* ------------------------------------------------------------------------ */

SYMM_DEV_FN int symm_dev_my_pe(const symm_device_ctx &c) { return c.my_pe; }
SYMM_DEV_FN int symm_dev_n_pes(const symm_device_ctx &c) { return c.n_pes; }

/* Heap base of pe, NULL if unreachable: the first SYMM_DEVICE_FAST_PES come
 * from the struct (parameter space), the rest from the device peer table. */
SYMM_DEV_FN void *symm_dev_peer_base(const symm_device_ctx &c, int pe) {
    return pe < SYMM_DEVICE_FAST_PES ? c.peer_base[pe] : c.peer_table[pe];
}

/* The context's failure word, or NULL when the runtime that filled it (1.0)
 * or the struct the caller passed (an older header) has none. */
SYMM_DEV_FN int *symm__fail_word(const symm_device_ctx &c) {
    return c.struct_size >= offsetof(symm_device_ctx, fail_word) + sizeof c.fail_word
               ? (int *)c.fail_word
               : (int *)NULL;
}
/* True once the runtime learned that a peer PE of this job died. */
SYMM_DEV_FN bool symm_dev_job_failed(const symm_device_ctx &c) {
    const int *w = symm__fail_word(c);
    return w && *(const volatile int *)w == SYMM_DEVICE_FAIL_PEER;
}

/* Address of pe's copy of the symmetric address sym, NULL if unreachable. */
SYMM_DEV_FN void *symm_dev_ptr(const symm_device_ctx &c, const void *sym, int pe) {
    char *b = (char *)symm_dev_peer_base(c, pe);
    if (!b) return NULL;
    return b + ((const char *)sym - (const char *)c.heap_base);
}
template <typename T>
__device__ __forceinline__ T *symm_dev_ptr(const symm_device_ctx &c, T *sym, int pe) {
    return (T *)symm_dev_ptr(c, (const void *)sym, pe);
}

/* ------------------------------------------------------------------------ */
/* Memory-model helpers (internal)                                           */
/* ------------------------------------------------------------------------ */

SYMM_DEV_FN uint64_t symm__ld_acquire_u64(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
SYMM_DEV_FN uint32_t symm__ld_acquire_u32(const uint32_t *p) {
    uint32_t v;
    asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
/* Acquire re-read of a flag that a relaxed spin saw change: pairs with the
 * writer's release (a release fence, or st.release, before its store) at the
 * cost of one load instead of a system-scope fence. */
template <typename U>
__device__ __forceinline__ U symm__ld_acquire(const U *p) {
    if (sizeof(U) == 8) return (U)symm__ld_acquire_u64((const uint64_t *)p);
    return (U)symm__ld_acquire_u32((const uint32_t *)p);
}
SYMM_DEV_FN uint64_t symm__ld_relaxed_u64(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
SYMM_DEV_FN void symm__st_release_u64(uint64_t *p, uint64_t v) {
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
SYMM_DEV_FN void symm__st_relaxed_u64(uint64_t *p, uint64_t v) {
    asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/* fence.acq_rel.sys: lighter than __threadfence_system() (fence.sc.sys) and
 * enough for release (before a relaxed flag store) and acquire (after a
 * relaxed flag load) patterns. */
SYMM_DEV_FN void symm__fence_acq_rel_sys(void) {
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}
SYMM_DEV_FN uint64_t symm__globaltimer(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
SYMM_DEV_FN unsigned symm__block_tid(void) {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
SYMM_DEV_FN unsigned symm__block_nthreads(void) { return blockDim.x * blockDim.y * blockDim.z; }

template <int N> struct symm__uint;
template <> struct symm__uint<1> { typedef unsigned char type; };
template <> struct symm__uint<2> { typedef unsigned short type; };
template <> struct symm__uint<4> { typedef unsigned int type; };
template <> struct symm__uint<8> { typedef unsigned long long type; };

template <typename To, typename From>
__device__ __forceinline__ To symm__bitcast(From f) {
    static_assert(sizeof(To) == sizeof(From), "bitcast between different sizes");
    To t;
    memcpy(&t, &f, sizeof t);
    return t;
}

/* ------------------------------------------------------------------------ */
/* The proxy (internal): PEs that are not load/store reachable               */
/* ------------------------------------------------------------------------ */

/* Does the context carry rings this header can use? (1.3 fields filled, the
 * same device ABI.) */
SYMM_DEV_FN bool symm__dev_has_ring_fields(const symm_device_ctx &c) {
    return c.struct_size >= offsetof(symm_device_ctx, rings) + sizeof c.rings &&
           c.device_abi == SYMM_DEVICE_ABI_VERSION;
}
/* The calling block's ring, NULL when the context has none for this header. */
SYMM_DEV_FN const symm_ring *symm__dev_ring(const symm_device_ctx &c) {
    if (!symm__dev_has_ring_fields(c) || c.n_rings == 0 || !c.rings) return (const symm_ring *)0;
    const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    return (const symm_ring *)c.rings + (b % c.n_rings);
}
SYMM_DEV_FN uint64_t symm__dev_off(const symm_device_ctx &c, const void *sym) {
    return (uint64_t)((const char *)sym - (const char *)c.heap_base);
}
/* Post q and wait for it (put, get, put_signal: the caller's memory is
 * used until then). */
SYMM_DEV_FN symm_status symm__px_post_wait(const symm_device_ctx &c, const symm_ring_req &q) {
    const symm_ring *r = symm__dev_ring(c);
    if (!r) return SYMM_ERR_ABI_MISMATCH;
    uint64_t t = 0;
    symm_status st = symm_ring_post(r, &q, &t);
    return st != SYMM_SUCCESS ? st : symm_ring_wait(r, t);
}
SYMM_DEV_FN symm_status symm__px_post(const symm_device_ctx &c, const symm_ring_req &q) {
    const symm_ring *r = symm__dev_ring(c);
    if (!r) return SYMM_ERR_ABI_MISMATCH;
    return symm_ring_post(r, &q, (uint64_t *)0);
}
/* A request whose local memory is the ticket's scratch cell: *cell holds
 * `in` (first n_in bytes) before the request is written; returns the cell's
 * content once the request finished (g, fetching atomics). */
SYMM_DEV_FN symm_status symm__px_cell(const symm_device_ctx &c, symm_ring_req q, uint64_t in,
                                      uint64_t *out) {
    const symm_ring *r = symm__dev_ring(c);
    if (!r || !r->scratch) return SYMM_ERR_ABI_MISMATCH;
    uint64_t t = 0;
    symm_status st = symm_ring_claim(r, &t);
    if (st != SYMM_SUCCESS) return st;
    uint64_t *cell = symm_ring_cell(r, t);
    *(volatile uint64_t *)cell = in;
    q.local = (uint64_t)(uintptr_t)cell;
    __threadfence_system(); /* the cell before the request (the proxy copies it) */
    symm_ring_write(r, &q, t);
    st = symm_ring_wait(r, t + 1);
    if (out) *out = *(volatile uint64_t *)cell;
    return st;
}
/* A put's source or a get's destination that the proxy cannot address (a
 * thread's local memory, e.g. an array on its stack, or shared memory): the
 * bytes travel through the tickets' scratch cells, 8 a request, each waited
 * for (a round trip each: keep large buffers in global memory). */
SYMM_DEV_FN symm_status symm__px_rma_cells(const symm_device_ctx &c, uint32_t op, int pe,
                                           const void *sym, const void *local, size_t n) {
    for (size_t o = 0; o < n; o += 8) {
        const size_t k = n - o < 8 ? n - o : 8;
        symm_ring_req q;
        symm__ring_req_init(&q, op, pe);
        q.off = symm__dev_off(c, sym) + o;
        q.n = k;
        uint64_t v = 0;
        if (op == SYMM_RING_OP_PUT) memcpy(&v, (const char *)local + o, k);
        const symm_status st = symm__px_cell(c, q, v, op == SYMM_RING_OP_GET ? &v : NULL);
        if (st != SYMM_SUCCESS) return st;
        if (op == SYMM_RING_OP_GET) memcpy((char *)local + o, &v, k);
    }
    return SYMM_SUCCESS;
}
SYMM_DEV_FN void symm__px_rma(const symm_device_ctx &c, uint32_t op, int pe, const void *sym,
                              const void *local, size_t n) {
    if (n == 0) return;
    if (!__isGlobal(local)) {
        (void)symm__px_rma_cells(c, op, pe, sym, local, n);
        return;
    }
    symm_ring_req q;
    symm__ring_req_init(&q, op, pe);
    q.off = symm__dev_off(c, sym);
    q.local = (uint64_t)(uintptr_t)local;
    q.n = n;
    (void)symm__px_post_wait(c, q);
}
/* SYMM_DTYPE_* of an atomic's element type. */
template <typename T>
__device__ __forceinline__ uint32_t symm__dtype_of() {
    if (std::is_floating_point<T>::value) return sizeof(T) == 4 ? SYMM_DTYPE_FLOAT32 : SYMM_DTYPE_FLOAT64;
    if (std::is_signed<T>::value) return sizeof(T) == 4 ? SYMM_DTYPE_INT32 : SYMM_DTYPE_INT64;
    return sizeof(T) == 4 ? SYMM_DTYPE_UINT32 : SYMM_DTYPE_UINT64;
}
/* An atomic through the proxy: the fetched bits when fetch, else posted only. */
template <typename T>
__device__ __forceinline__ uint64_t symm__px_amo(const symm_device_ctx &c, const void *sym,
                                                 uint32_t op, uint64_t value, uint64_t cmp,
                                                 int pe, bool fetch) {
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_AMO, pe);
    q.sub = op;
    q.dtype = symm__dtype_of<T>();
    q.off = symm__dev_off(c, sym);
    q.value = value;
    q.compare = cmp;
    if (!fetch) {
        (void)symm__px_post(c, q);
        return 0;
    }
    uint64_t v = 0;
    (void)symm__px_cell(c, q, 0, &v);
    return v;
}

/* ------------------------------------------------------------------------ */
/* Ordering                                                                  */
/* ------------------------------------------------------------------------ */

/* Order this thread's earlier puts/AMOs to load/store peers before later ones. */
SYMM_DEV_FN void symm_dev_fence(void) { __threadfence_system(); }
/* Complete this thread's earlier puts/AMOs to load/store peers (stores to
 * peers are posted: a system-scope fence makes them visible everywhere). */
SYMM_DEV_FN void symm_dev_quiet(void) { __threadfence_system(); }
/* The same for every PE: also orders the requests of the calling block's
 * proxy ring (a FENCE request: earlier ones reach each PE before later ones). */
SYMM_DEV_FN void symm_dev_fence(const symm_device_ctx &c) {
    __threadfence_system();
    const symm_ring *r = symm__dev_ring(c);
    if (r) (void)symm_ring_fence(r, (uint64_t *)0);
}
/* Complete every earlier put/AMO of the calling thread to every PE: the
 * load/store ones by a fence, the proxied ones (the calling block's ring) by a
 * QUIET request. SYMM_SUCCESS; the first failure of the ring's requests;
 * PEER_FAILED once the job lost a PE; ABI_MISMATCH when the context has no
 * proxy this header can use (see the top of this file). */
SYMM_DEV_FN symm_status symm_dev_quiet(const symm_device_ctx &c) {
    __threadfence_system();
    const symm_ring *r = symm__dev_ring(c);
    if (r) return symm_ring_quiet(r);
    if (!symm__dev_has_ring_fields(c)) return SYMM_ERR_ABI_MISMATCH;
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Contiguous copies (internal): threads tid of nthr share the copy           */
/* ------------------------------------------------------------------------ */

template <typename V>
__device__ __forceinline__ void symm__copy_vec(V *d, const V *s, size_t n, size_t tid,
                                               size_t nthr) {
    size_t i = tid;
    /* 4 loads in flight per thread before the stores (remote reads are slow). */
    for (; i + 3 * nthr < n; i += 4 * nthr) {
        V a = s[i], b = s[i + nthr], e = s[i + 2 * nthr], f = s[i + 3 * nthr];
        d[i] = a;
        d[i + nthr] = b;
        d[i + 2 * nthr] = e;
        d[i + 3 * nthr] = f;
    }
    for (; i < n; i += nthr) d[i] = s[i];
}

SYMM_DEV_FN void symm__copy(void *dst, const void *src, size_t n, size_t tid, size_t nthr) {
    char *d = (char *)dst;
    const char *s = (const char *)src;
    uintptr_t mis = (uintptr_t)d | (uintptr_t)s;
    size_t done = 0;
    if ((mis & 15) == 0) {
        symm__copy_vec((uint4 *)d, (const uint4 *)s, n >> 4, tid, nthr);
        done = n & ~(size_t)15;
    } else if ((mis & 7) == 0) {
        symm__copy_vec((uint2 *)d, (const uint2 *)s, n >> 3, tid, nthr);
        done = n & ~(size_t)7;
    } else if ((mis & 3) == 0) {
        symm__copy_vec((unsigned *)d, (const unsigned *)s, n >> 2, tid, nthr);
        done = n & ~(size_t)3;
    }
    for (size_t i = done + tid; i < n; i += nthr) d[i] = s[i];
}

/* ------------------------------------------------------------------------ */
/* Put / get (bytes and typed elements)                                      */
/* ------------------------------------------------------------------------ */

/* Copy nbytes from local src to pe's copy of dst_sym. */
SYMM_DEV_FN void symm_dev_putmem(const symm_device_ctx &c, void *dst_sym, const void *src,
                                 size_t nbytes, int pe) {
    void *d = symm_dev_ptr(c, dst_sym, pe);
    if (d) symm__copy(d, src, nbytes, 0, 1);
    else symm__px_rma(c, SYMM_RING_OP_PUT, pe, dst_sym, src, nbytes);
}
SYMM_DEV_FN void symm_dev_putmem_warp(const symm_device_ctx &c, void *dst_sym, const void *src,
                                      size_t nbytes, int pe) {
    void *d = symm_dev_ptr(c, dst_sym, pe);
    if (d) symm__copy(d, src, nbytes, symm__block_tid() & 31u, 32);
    else if ((symm__block_tid() & 31u) == 0) symm__px_rma(c, SYMM_RING_OP_PUT, pe, dst_sym, src, nbytes);
    __syncwarp();
}
SYMM_DEV_FN void symm_dev_putmem_block(const symm_device_ctx &c, void *dst_sym, const void *src,
                                       size_t nbytes, int pe) {
    void *d = symm_dev_ptr(c, dst_sym, pe);
    if (d) {
        symm__copy(d, src, nbytes, symm__block_tid(), symm__block_nthreads());
    } else {
        __syncthreads(); /* the block's writes of src come before the post */
        if (symm__block_tid() == 0) symm__px_rma(c, SYMM_RING_OP_PUT, pe, dst_sym, src, nbytes);
    }
    __syncthreads();
}
/* Copy nbytes from pe's copy of src_sym to local dst. */
SYMM_DEV_FN void symm_dev_getmem(const symm_device_ctx &c, void *dst, const void *src_sym,
                                 size_t nbytes, int pe) {
    const void *s = symm_dev_ptr(c, src_sym, pe);
    if (s) symm__copy(dst, s, nbytes, 0, 1);
    else symm__px_rma(c, SYMM_RING_OP_GET, pe, src_sym, dst, nbytes);
}
SYMM_DEV_FN void symm_dev_getmem_warp(const symm_device_ctx &c, void *dst, const void *src_sym,
                                      size_t nbytes, int pe) {
    const void *s = symm_dev_ptr(c, src_sym, pe);
    if (s) symm__copy(dst, s, nbytes, symm__block_tid() & 31u, 32);
    else if ((symm__block_tid() & 31u) == 0) symm__px_rma(c, SYMM_RING_OP_GET, pe, src_sym, dst, nbytes);
    __syncwarp();
}
SYMM_DEV_FN void symm_dev_getmem_block(const symm_device_ctx &c, void *dst, const void *src_sym,
                                       size_t nbytes, int pe) {
    const void *s = symm_dev_ptr(c, src_sym, pe);
    if (s) symm__copy(dst, s, nbytes, symm__block_tid(), symm__block_nthreads());
    else if (symm__block_tid() == 0) symm__px_rma(c, SYMM_RING_OP_GET, pe, src_sym, dst, nbytes);
    __syncthreads();
}

template <typename T>
__device__ __forceinline__ void symm_dev_put(const symm_device_ctx &c, T *dst_sym, const T *src,
                                             size_t nelems, int pe) {
    symm_dev_putmem(c, dst_sym, src, nelems * sizeof(T), pe);
}
template <typename T>
__device__ __forceinline__ void symm_dev_put_warp(const symm_device_ctx &c, T *dst_sym,
                                                  const T *src, size_t nelems, int pe) {
    symm_dev_putmem_warp(c, dst_sym, src, nelems * sizeof(T), pe);
}
template <typename T>
__device__ __forceinline__ void symm_dev_put_block(const symm_device_ctx &c, T *dst_sym,
                                                   const T *src, size_t nelems, int pe) {
    symm_dev_putmem_block(c, dst_sym, src, nelems * sizeof(T), pe);
}
template <typename T>
__device__ __forceinline__ void symm_dev_get(const symm_device_ctx &c, T *dst, const T *src_sym,
                                             size_t nelems, int pe) {
    symm_dev_getmem(c, dst, src_sym, nelems * sizeof(T), pe);
}
template <typename T>
__device__ __forceinline__ void symm_dev_get_warp(const symm_device_ctx &c, T *dst,
                                                  const T *src_sym, size_t nelems, int pe) {
    symm_dev_getmem_warp(c, dst, src_sym, nelems * sizeof(T), pe);
}
template <typename T>
__device__ __forceinline__ void symm_dev_get_block(const symm_device_ctx &c, T *dst,
                                                   const T *src_sym, size_t nelems, int pe) {
    symm_dev_getmem_block(c, dst, src_sym, nelems * sizeof(T), pe);
}

/* One element (T of 1, 2, 4 or 8 bytes). */
template <typename T>
__device__ __forceinline__ void symm_dev_p(const symm_device_ctx &c, T *dst_sym, T value, int pe) {
    typedef typename symm__uint<sizeof(T)>::type U;
    U *d = (U *)symm_dev_ptr(c, dst_sym, pe);
    if (d) {
        *(volatile U *)d = symm__bitcast<U>(value);
        return;
    }
    symm_ring_req q; /* the value travels in the ticket's scratch cell */
    symm__ring_req_init(&q, SYMM_RING_OP_PUT, pe);
    q.off = symm__dev_off(c, dst_sym);
    q.n = sizeof(T);
    (void)symm__px_cell(c, q, (uint64_t)symm__bitcast<U>(value), (uint64_t *)0);
}
template <typename T>
__device__ __forceinline__ T symm_dev_g(const symm_device_ctx &c, const T *src_sym, int pe) {
    typedef typename symm__uint<sizeof(T)>::type U;
    const U *s = (const U *)symm_dev_ptr(c, src_sym, pe);
    if (s) return symm__bitcast<T>(*(const volatile U *)s);
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_GET, pe);
    q.off = symm__dev_off(c, src_sym);
    q.n = sizeof(T);
    uint64_t v = 0;
    (void)symm__px_cell(c, q, 0, &v);
    return symm__bitcast<T>((U)v);
}

/* ------------------------------------------------------------------------ */
/* Atomics on pe's copy (system scope: exact against every PE and the host)  */
/* ------------------------------------------------------------------------ */
/* Integer ops take 4- or 8-byte integer types; fetch/set/swap/compare_swap
 * also float and double (compare_swap compares bit patterns). */

#define SYMM__AMO_PTR(T, U, c, dst, pe) ((U *)symm_dev_ptr((c), (const void *)(dst), (pe)))
#define SYMM__AMO_INT(T)                                                                   \
    static_assert(std::is_integral<T>::value && (sizeof(T) == 4 || sizeof(T) == 8),       \
                  "integer atomics take 4- or 8-byte integers")
#define SYMM__AMO_ANY(T) \
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics take 4- or 8-byte elements")

/* Bits of an atomic operand for the ring (low bytes). */
template <typename T>
__device__ __forceinline__ uint64_t symm__amo_bits(T v) {
    typedef typename symm__uint<sizeof(T)>::type U;
    return (uint64_t)symm__bitcast<U>(v);
}
template <typename T>
__device__ __forceinline__ T symm__amo_val(uint64_t bits) {
    typedef typename symm__uint<sizeof(T)>::type U;
    return symm__bitcast<T>((U)bits);
}

template <typename T>
__device__ __forceinline__ T symm_dev_atomic_fetch(const symm_device_ctx &c, const T *src, int pe) {
    SYMM__AMO_ANY(T);
    typedef typename symm__uint<sizeof(T)>::type U;
    const U *p = SYMM__AMO_PTR(T, const U, c, src, pe);
    if (!p) return symm__amo_val<T>(symm__px_amo<T>(c, src, SYMM_AMO_FETCH, 0, 0, pe, true));
    U v;
    if constexpr (sizeof(T) == 8)
        asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else
        asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return symm__bitcast<T>(v);
}
template <typename T>
__device__ __forceinline__ T symm_dev_atomic_swap(const symm_device_ctx &c, T *dst, T value,
                                                  int pe) {
    SYMM__AMO_ANY(T);
    typedef typename symm__uint<sizeof(T)>::type U;
    U *p = SYMM__AMO_PTR(T, U, c, dst, pe);
    if (!p)
        return symm__amo_val<T>(
            symm__px_amo<T>(c, dst, SYMM_AMO_SWAP, symm__amo_bits(value), 0, pe, true));
    return symm__bitcast<T>(atomicExch_system(p, symm__bitcast<U>(value)));
}
template <typename T>
__device__ __forceinline__ void symm_dev_atomic_set(const symm_device_ctx &c, T *dst, T value,
                                                    int pe) {
    SYMM__AMO_ANY(T);
    if (!symm_dev_ptr(c, (const void *)dst, pe)) {
        (void)symm__px_amo<T>(c, dst, SYMM_AMO_SET, symm__amo_bits(value), 0, pe, false);
        return;
    }
    (void)symm_dev_atomic_swap(c, dst, value, pe);
}
template <typename T>
__device__ __forceinline__ T symm_dev_atomic_compare_swap(const symm_device_ctx &c, T *dst,
                                                          T cond, T value, int pe) {
    SYMM__AMO_ANY(T);
    typedef typename symm__uint<sizeof(T)>::type U;
    U *p = SYMM__AMO_PTR(T, U, c, dst, pe);
    if (!p)
        return symm__amo_val<T>(symm__px_amo<T>(c, dst, SYMM_AMO_COMPARE_SWAP,
                                                symm__amo_bits(value), symm__amo_bits(cond), pe,
                                                true));
    return symm__bitcast<T>(atomicCAS_system(p, symm__bitcast<U>(cond), symm__bitcast<U>(value)));
}

#define SYMM__AMO_FETCH_OP(name, fn, OP, FOP)                                               \
    template <typename T>                                                                   \
    __device__ __forceinline__ T symm_dev_atomic_fetch_##name(const symm_device_ctx &c,     \
                                                              T *dst, T value, int pe) {    \
        SYMM__AMO_INT(T);                                                                   \
        typedef typename symm__uint<sizeof(T)>::type U;                                     \
        U *p = SYMM__AMO_PTR(T, U, c, dst, pe);                                             \
        if (!p)                                                                             \
            return symm__amo_val<T>(                                                        \
                symm__px_amo<T>(c, dst, FOP, symm__amo_bits(value), 0, pe, true));          \
        return (T)fn(p, (U)value);                                                          \
    }                                                                                       \
    template <typename T>                                                                   \
    __device__ __forceinline__ void symm_dev_atomic_##name(const symm_device_ctx &c, T *dst, \
                                                           T value, int pe) {               \
        SYMM__AMO_INT(T);                                                                   \
        if (!symm_dev_ptr(c, (const void *)dst, pe)) {                                      \
            (void)symm__px_amo<T>(c, dst, OP, symm__amo_bits(value), 0, pe, false);         \
            return;                                                                         \
        }                                                                                   \
        (void)symm_dev_atomic_fetch_##name(c, dst, value, pe);                              \
    }
SYMM__AMO_FETCH_OP(add, atomicAdd_system, SYMM_AMO_ADD, SYMM_AMO_FETCH_ADD)
SYMM__AMO_FETCH_OP(and, atomicAnd_system, SYMM_AMO_AND, SYMM_AMO_FETCH_AND)
SYMM__AMO_FETCH_OP(or, atomicOr_system, SYMM_AMO_OR, SYMM_AMO_FETCH_OR)
SYMM__AMO_FETCH_OP(xor, atomicXor_system, SYMM_AMO_XOR, SYMM_AMO_FETCH_XOR)
#undef SYMM__AMO_FETCH_OP

template <typename T>
__device__ __forceinline__ T symm_dev_atomic_fetch_inc(const symm_device_ctx &c, T *dst, int pe) {
    return symm_dev_atomic_fetch_add(c, dst, (T)1, pe);
}
template <typename T>
__device__ __forceinline__ void symm_dev_atomic_inc(const symm_device_ctx &c, T *dst, int pe) {
    symm_dev_atomic_add(c, dst, (T)1, pe);
}

/* ------------------------------------------------------------------------ */
/* Waits and signals                                                         */
/* ------------------------------------------------------------------------ */

template <typename T>
__device__ __forceinline__ bool symm_dev_compare(T x, int cmp, T v) {
    switch (cmp) {
    case SYMM_CMP_EQ: return x == v;
    case SYMM_CMP_NE: return x != v;
    case SYMM_CMP_GT: return x > v;
    case SYMM_CMP_GE: return x >= v;
    case SYMM_CMP_LT: return x < v;
    case SYMM_CMP_LE: return x <= v;
    default: return false;
    }
}

/* Every SYMM_DEVICE_FAIL_POLL calls of a spin: has the job failed? (fail
 * NULL: never; the waits without a context pass NULL, and the check folds
 * away.) */
SYMM_DEV_FN bool symm__fail_poll(const int *fail, unsigned &spins) {
    return fail && (++spins % SYMM_DEVICE_FAIL_POLL) == 0 &&
           *(const volatile int *)fail == SYMM_DEVICE_FAIL_PEER;
}

/* The wait of both symm_dev_wait_until forms: false when the job failed
 * first, else true with the value seen in *seen. */
template <typename T>
__device__ __forceinline__ bool symm__wait_until(const T *ivar, int cmp, T v, const int *fail,
                                                 T *seen) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "waits take 4- or 8-byte integers");
    typedef typename symm__uint<sizeof(T)>::type U;
    unsigned spins = 0;
    T x;
    for (;;) {
        x = symm__bitcast<T>(*(const volatile U *)ivar);
        if (symm_dev_compare(x, cmp, v)) break;
        if (symm__fail_poll(fail, spins)) return false;
    }
    /* acquire: one acquire load of the satisfied value (flags only move
     * forward under the waits' contract, so the re-read still satisfies) */
    T y = symm__bitcast<T>(symm__ld_acquire((const U *)ivar));
    *seen = symm_dev_compare(y, cmp, v) ? y : x;
    return true;
}

/* Spin until this PE's *ivar compares true against v (SYMM_CMP_*); returns the
 * value seen. Later loads see what the writer published before it. T is an
 * integer of 4 or 8 bytes. */
template <typename T>
__device__ __forceinline__ T symm_dev_wait_until(const T *ivar, int cmp, T v) {
    T x;
    symm__wait_until(ivar, cmp, v, (const int *)NULL, &x);
    return x;
}
/* The same wait, ending early when a peer PE of the job dies (see
 * SYMM_DEVICE_FAIL_PEER): SYMM_SUCCESS when the condition holds (the value
 * seen in *seen, if seen is not NULL), SYMM_ERR_PEER_FAILED when the job
 * failed first. */
template <typename T>
__device__ __forceinline__ symm_status symm_dev_wait_until(const symm_device_ctx &c,
                                                           const T *ivar, int cmp, T v,
                                                           T *seen = (T *)NULL) {
    T x;
    if (!symm__wait_until(ivar, cmp, v, symm__fail_word(c), &x)) return SYMM_ERR_PEER_FAILED;
    if (seen) *seen = x;
    return SYMM_SUCCESS;
}
/* Non-blocking test of the same condition. */
template <typename T>
__device__ __forceinline__ bool symm_dev_test(const T *ivar, int cmp, T v) {
    typedef typename symm__uint<sizeof(T)>::type U;
    return symm_dev_compare(symm__bitcast<T>(symm__ld_acquire((const U *)ivar)), cmp, v);
}

/* Update pe's signal (uint64_t): SYMM_SIGNAL_SET or SYMM_SIGNAL_ADD. The
 * update is atomic; it is not ordered after earlier puts (see put_signal). */
SYMM_DEV_FN void symm_dev_signal_op(const symm_device_ctx &c, uint64_t *sig_sym, uint64_t value,
                                    int sig_op, int pe) {
    unsigned long long *p = (unsigned long long *)symm_dev_ptr(c, sig_sym, pe);
    if (!p) {
        (void)symm__px_amo<uint64_t>(c, sig_sym,
                                     sig_op == SYMM_SIGNAL_ADD ? SYMM_AMO_ADD : SYMM_AMO_SET,
                                     value, 0, pe, false);
        return;
    }
    if (sig_op == SYMM_SIGNAL_ADD)
        atomicAdd_system(p, (unsigned long long)value);
    else
        atomicExch_system(p, (unsigned long long)value);
}
SYMM_DEV_FN uint64_t symm_dev_signal_fetch(const uint64_t *sig_sym) {
    return symm__ld_acquire_u64(sig_sym);
}
/* The wait of both symm_dev_signal_wait_until forms (false: the job failed). */
SYMM_DEV_FN bool symm__signal_wait_until(const uint64_t *sig_sym, int cmp, uint64_t value,
                                         const int *fail, uint64_t *seen) {
    unsigned spins = 0;
    while (!symm_dev_compare(*seen = symm__ld_acquire_u64(sig_sym), cmp, value))
        if (symm__fail_poll(fail, spins)) return false;
    return true;
}
SYMM_DEV_FN uint64_t symm_dev_signal_wait_until(const uint64_t *sig_sym, int cmp, uint64_t value) {
    uint64_t x;
    symm__signal_wait_until(sig_sym, cmp, value, (const int *)NULL, &x);
    return x;
}
/* The same wait, ending early when a peer PE of the job dies: SYMM_SUCCESS
 * (the signal's value in *seen, if not NULL) or SYMM_ERR_PEER_FAILED. */
SYMM_DEV_FN symm_status symm_dev_signal_wait_until(const symm_device_ctx &c,
                                                   const uint64_t *sig_sym, int cmp,
                                                   uint64_t value, uint64_t *seen = NULL) {
    uint64_t x;
    if (!symm__signal_wait_until(sig_sym, cmp, value, symm__fail_word(c), &x))
        return SYMM_ERR_PEER_FAILED;
    if (seen) *seen = x;
    return SYMM_SUCCESS;
}

/* Put nbytes, then update pe's signal once the data is visible there. */
SYMM_DEV_FN void symm__px_put_signal(const symm_device_ctx &c, void *dst_sym, const void *src,
                                     size_t nbytes, uint64_t *sig_sym, uint64_t value,
                                     int sig_op, int pe) {
    if (nbytes && !__isGlobal(src)) { /* the data through the cells, completed, then the signal */
        if (symm__px_rma_cells(c, SYMM_RING_OP_PUT, pe, dst_sym, src, nbytes) != SYMM_SUCCESS)
            return;
        symm_ring_req a;
        symm__ring_req_init(&a, SYMM_RING_OP_AMO, pe);
        a.sub = sig_op == SYMM_SIGNAL_ADD ? SYMM_AMO_ADD : SYMM_AMO_SET;
        a.dtype = SYMM_DTYPE_UINT64;
        a.off = symm__dev_off(c, sig_sym);
        a.value = value;
        (void)symm__px_post_wait(c, a);
        return;
    }
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_PUT_SIGNAL, pe);
    q.sub = (uint32_t)sig_op;
    q.off = symm__dev_off(c, dst_sym);
    q.local = (uint64_t)(uintptr_t)src;
    q.n = nbytes;
    q.sig_off = symm__dev_off(c, sig_sym);
    q.value = value;
    (void)symm__px_post_wait(c, q);
}
SYMM_DEV_FN void symm_dev_putmem_signal(const symm_device_ctx &c, void *dst_sym, const void *src,
                                        size_t nbytes, uint64_t *sig_sym, uint64_t value,
                                        int sig_op, int pe) {
    if (!symm_dev_peer_base(c, pe)) {
        symm__px_put_signal(c, dst_sym, src, nbytes, sig_sym, value, sig_op, pe);
        return;
    }
    symm_dev_putmem(c, dst_sym, src, nbytes, pe);
    __threadfence_system();
    symm_dev_signal_op(c, sig_sym, value, sig_op, pe);
}
SYMM_DEV_FN void symm_dev_putmem_signal_warp(const symm_device_ctx &c, void *dst_sym,
                                             const void *src, size_t nbytes, uint64_t *sig_sym,
                                             uint64_t value, int sig_op, int pe) {
    if (!symm_dev_peer_base(c, pe)) {
        __syncwarp();
        if ((symm__block_tid() & 31u) == 0)
            symm__px_put_signal(c, dst_sym, src, nbytes, sig_sym, value, sig_op, pe);
        __syncwarp();
        return;
    }
    symm__copy(symm_dev_ptr(c, dst_sym, pe), src, nbytes, symm__block_tid() & 31u, 32);
    __threadfence_system();
    __syncwarp();
    if ((symm__block_tid() & 31u) == 0) symm_dev_signal_op(c, sig_sym, value, sig_op, pe);
    __syncwarp();
}
SYMM_DEV_FN void symm_dev_putmem_signal_block(const symm_device_ctx &c, void *dst_sym,
                                              const void *src, size_t nbytes, uint64_t *sig_sym,
                                              uint64_t value, int sig_op, int pe) {
    if (!symm_dev_peer_base(c, pe)) {
        __syncthreads();
        if (symm__block_tid() == 0)
            symm__px_put_signal(c, dst_sym, src, nbytes, sig_sym, value, sig_op, pe);
        __syncthreads();
        return;
    }
    symm__copy(symm_dev_ptr(c, dst_sym, pe), src, nbytes, symm__block_tid(),
               symm__block_nthreads());
    __threadfence_system();
    __syncthreads();
    if (symm__block_tid() == 0) symm_dev_signal_op(c, sig_sym, value, sig_op, pe);
    __syncthreads();
}

/* ------------------------------------------------------------------------ */
/* Barriers                                                                  */
/* ------------------------------------------------------------------------ */

/* Building blocks of every device/stream barrier (internal, shared with the
 * runtime's kernels). The area of a team slot starts at area_off from a heap
 * base; world(j) gives the heap base (char *) of team PE j's mapping.
 * A barrier: e = symm__barrier_epoch() + 1 (read by every participating
 * thread, then a block sync), symm__barrier_arrive_wait(e), a block sync,
 * symm__barrier_advance(e) by one thread. */
SYMM_DEV_FN uint64_t symm__barrier_epoch(char *my_base, uint64_t area_off, int me) {
    return *(volatile uint64_t *)((uint64_t *)(my_base + area_off) + me);
}
SYMM_DEV_FN void symm__barrier_advance(char *my_base, uint64_t area_off, int me, uint64_t e) {
    *(volatile uint64_t *)((uint64_t *)(my_base + area_off) + me) = e;
}
/* One round of a spin that may give up (spins and t0 start at 0): every
 * SYMM_DEVICE_FAIL_POLL rounds, true when *err says a peer PE died, or when
 * timeout_ns (0 = none) has passed since the first such check; then *err,
 * if still 0, becomes 1. */
SYMM_DEV_FN bool symm__spin_give_up(unsigned &spins, uint64_t &t0, uint64_t timeout_ns,
                                    int *err) {
    if ((++spins % SYMM_DEVICE_FAIL_POLL) != 0) return false;
    if (err && *(volatile int *)err == SYMM_DEVICE_FAIL_PEER) return true;
    if (!timeout_ns) return false;
    const uint64_t t = symm__globaltimer();
    if (!t0) {
        t0 = t;
        return false;
    }
    if (t - t0 <= timeout_ns) return false;
    if (err) atomicCAS_system(err, 0, 1);
    return true;
}

/* Spin until the flag *w (written by a peer) is at least want, then acquire
 * it: one acquire load, which pairs with the writer's release fence before
 * its flag store and is cheaper than a system-scope fence. timeout_ns (0 =
 * none): give up after that long and set *err (if err, and still 0) to 1;
 * returns false then. err (the runtime kernels' error word, or the device
 * context's fail_word): *err == SYMM_DEVICE_FAIL_PEER means the host learned
 * that a peer PE died: give up at once (checked every SYMM_DEVICE_FAIL_POLL
 * spins). */
SYMM_DEV_FN bool symm__wait_ge_u64(const uint64_t *w, uint64_t want, uint64_t timeout_ns,
                                   int *err) {
    unsigned spins = 0;
    uint64_t t0 = 0;
    while (symm__ld_relaxed_u64(w) < want)
        if ((timeout_ns || err) && symm__spin_give_up(spins, t0, timeout_ns, err)) return false;
    (void)symm__ld_acquire_u64(w);
    return true;
}

/* Threads tid of nthr announce epoch e to every other team PE and wait until
 * each announced e (or later). The k-th other PE (k = 0 .. n - 2) is served by
 * thread k % nthr, so with two PEs thread 0 does all of it. Gives up (false)
 * as symm__wait_ge_u64 does. owners_fence: the caller synchronised its
 * threads right before (__syncthreads), so only the threads that announce
 * need the release fence: it is cumulative, and covers every store that the
 * block's sync ordered before it (the pattern of a fence and a flag after a
 * barrier). Without it every thread fences, for callers whose threads arrive
 * straight from their own stores. */
template <typename World>
__device__ __forceinline__ bool symm__barrier_arrive_wait(char *my_base, uint64_t area_off,
                                                          int me, int n, World world, uint64_t e,
                                                          unsigned tid, unsigned nthr,
                                                          uint64_t timeout_ns, int *err,
                                                          bool owners_fence = false) {
    uint64_t *area = (uint64_t *)(my_base + area_off);
    /* release: earlier stores (this thread's, and the block's before its
     * barrier) are visible before the flag */
    if (!owners_fence || (int)tid < n - 1) symm__fence_acq_rel_sys();
    for (int k = (int)tid; k < n - 1; k += (int)nthr) {
        const int j = k < me ? k : k + 1;
        symm__st_relaxed_u64((uint64_t *)(world(j) + area_off) + me, e);
    }
    for (int k = (int)tid; k < n - 1; k += (int)nthr) {
        const int j = k < me ? k : k + 1;
        if (!symm__wait_ge_u64(&area[j], e, timeout_ns, err)) return false;
    }
    return true;
}

struct symm__world_strided {
    const symm_device_ctx *c;
    int start, stride;
    __device__ __forceinline__ char *operator()(int j) const {
        return (char *)symm_dev_peer_base(*c, start + j * stride);
    }
};

/* Does the strided team hold a PE that is not load/store reachable? */
SYMM_DEV_FN bool symm__team_proxied(const symm_device_ctx &c, int n, int start, int stride) {
    for (int j = 0; j < n; j++)
        if (!symm_dev_peer_base(c, start + j * stride)) return true;
    return false;
}
/* The status for a PE that neither load/store nor a ring reaches:
 * ABI_MISMATCH for a context of a runtime older than 1.3 (no rings this
 * header can use), NOT_SUPPORTED for one with no proxy at all (GPUs of one
 * host without peer access). */
SYMM_DEV_FN symm_status symm__dev_no_route(const symm_device_ctx &c) {
    return symm__dev_has_ring_fields(c) ? SYMM_ERR_NOT_SUPPORTED : SYMM_ERR_ABI_MISMATCH;
}
/* How a barrier reaches the strided team: SYMM_SUCCESS with *px set (true:
 * some PE through the calling block's ring), or, when some PE is reachable
 * neither way, symm__dev_no_route's status, to return before any
 * synchronisation. Never a load through a NULL peer base. */
SYMM_DEV_FN symm_status symm__team_route(const symm_device_ctx &c, int n, int start, int stride,
                                         bool *px) {
    *px = symm__team_proxied(c, n, start, stride);
    return *px && !symm__dev_ring(c) ? symm__dev_no_route(c) : SYMM_SUCCESS;
}
/* symm__barrier_arrive_wait for the header's own barriers, where a team PE
 * may be reached through the proxy: its announcement is an atomic SET of the
 * epoch on its flag, posted to the calling block's ring (the ring's earlier
 * requests were quieted before: barriers imply quiet). */
SYMM_DEV_FN bool symm__barrier_arrive_wait_px(const symm_device_ctx &c, uint64_t area_off,
                                              int me, int n, int start, int stride, uint64_t e,
                                              unsigned tid, unsigned nthr, int *err,
                                              bool owners_fence) {
    uint64_t *area = (uint64_t *)((char *)c.heap_base + area_off);
    if (!owners_fence || (int)tid < n - 1) symm__fence_acq_rel_sys();
    for (int k = (int)tid; k < n - 1; k += (int)nthr) {
        const int j = k < me ? k : k + 1;
        char *b = (char *)symm_dev_peer_base(c, start + j * stride);
        if (b) {
            symm__st_relaxed_u64((uint64_t *)(b + area_off) + me, e);
        } else {
            symm_ring_req q;
            symm__ring_req_init(&q, SYMM_RING_OP_AMO, start + j * stride);
            q.sub = SYMM_AMO_SET;
            q.dtype = SYMM_DTYPE_UINT64;
            q.off = area_off + (uint64_t)me * 8u;
            q.value = e;
            if (symm__px_post(c, q) != SYMM_SUCCESS) return false;
        }
    }
    for (int k = (int)tid; k < n - 1; k += (int)nthr) {
        const int j = k < me ? k : k + 1;
        if (!symm__wait_ge_u64(&area[j], e, 0, err)) return false;
    }
    return true;
}

SYMM_DEV_FN symm_status symm__barrier_thread(const symm_device_ctx &c, int slot, int me, int n,
                                             int start, int stride) {
    symm__world_strided w = {&c, start, stride};
    char *base = (char *)c.heap_base;
    uint64_t off = (uint64_t)slot * c.slot_bytes + SYMM_DEVICE_BARRIER_OFF;
    bool px = false;
    const symm_status rs = symm__team_route(c, n, start, stride, &px);
    if (rs != SYMM_SUCCESS) return rs;
    uint64_t e = symm__barrier_epoch(base, off, me) + 1;
    if (px) {
        symm_status st = symm_ring_quiet(symm__dev_ring(c));
        if (st != SYMM_SUCCESS) return st;
        if (!symm__barrier_arrive_wait_px(c, off, me, n, start, stride, e, 0, 1,
                                          (int *)symm__fail_word(c), false))
            return SYMM_ERR_PEER_FAILED;
    } else if (!symm__barrier_arrive_wait(base, off, me, n, w, e, 0, 1, 0, symm__fail_word(c))) {
        return SYMM_ERR_PEER_FAILED;
    }
    symm__barrier_advance(base, off, me, e);
    __threadfence_system();
    return SYMM_SUCCESS;
}
/* timeout_ns and err: the runtime's kernels give up after their timeout and
 * say so in their error word (0 and NULL: no timeout, the context's
 * fail_word, as every user-facing form). */
SYMM_DEV_FN symm_status symm__barrier_block(const symm_device_ctx &c, int slot, int me, int n,
                                            int start, int stride, uint64_t timeout_ns = 0,
                                            int *err = nullptr) {
    symm__world_strided w = {&c, start, stride};
    char *base = (char *)c.heap_base;
    uint64_t off = (uint64_t)slot * c.slot_bytes + SYMM_DEVICE_BARRIER_OFF;
    /* Only the threads that announce to a peer fence (after this sync), and
     * no thread fences on the way out: the acquire loads of the waiting
     * threads and the block's sync after them order every thread's later
     * accesses after the peers' arrivals. On 2 x H200 with 512 threads this
     * was much faster than every thread fencing on the way in and out
     * (docs/GPU-RESULTS.md "2026-11-28: the device team barrier"). */
    bool px = false;
    const symm_status rs = symm__team_route(c, n, start, stride, &px); /* same in every thread */
    if (rs != SYMM_SUCCESS) return rs;
    __syncthreads();
    /* through the proxy: the block's earlier proxied requests complete first */
    int qerr = 0;
    if (px && symm__block_tid() == 0) qerr = (int)symm_ring_quiet(symm__dev_ring(c));
    if (__syncthreads_or(qerr)) return SYMM_ERR_PEER_FAILED;
    uint64_t e = symm__barrier_epoch(base, off, me) + 1;
    __syncthreads();
    int *ew = err ? err : (int *)symm__fail_word(c);
    const bool ok = px ? symm__barrier_arrive_wait_px(c, off, me, n, start, stride, e,
                                                      symm__block_tid(), symm__block_nthreads(),
                                                      ew, true)
                       : symm__barrier_arrive_wait(base, off, me, n, w, e, symm__block_tid(),
                                                   symm__block_nthreads(), timeout_ns, ew, true);
    /* one thread's peer may have arrived while another's died: all agree */
    if (__syncthreads_or(!ok)) return SYMM_ERR_PEER_FAILED;
    if (symm__block_tid() == 0) symm__barrier_advance(base, off, me, e);
    __syncthreads();
    return SYMM_SUCCESS;
}

/* Barrier over every PE (slot SYMM_DEVICE_WORLD_SLOT): quiet, then wait until
 * every PE arrived. One thread per PE calls it. Returns SYMM_SUCCESS, or
 * SYMM_ERR_PEER_FAILED when a peer PE died (the barrier is then broken for
 * good: the context is unusable); before any synchronisation,
 * SYMM_ERR_ABI_MISMATCH / SYMM_ERR_NOT_SUPPORTED when some PE can be reached
 * neither by load/store nor through a proxy ring (symm__team_route). */
SYMM_DEV_FN symm_status symm_dev_barrier_all(const symm_device_ctx &c) {
    return symm__barrier_thread(c, SYMM_DEVICE_WORLD_SLOT, c.my_pe, c.n_pes, 0, 1);
}
/* Same, called by every thread of one block per PE (every thread gets the
 * same status). */
SYMM_DEV_FN symm_status symm_dev_barrier_all_block(const symm_device_ctx &c) {
    return symm__barrier_block(c, SYMM_DEVICE_WORLD_SLOT, c.my_pe, c.n_pes, 0, 1);
}
/* Wait for every PE. Stores to load/store peers are fenced anyway, so on
 * these peers a sync is a barrier. */
SYMM_DEV_FN symm_status symm_dev_sync_all(const symm_device_ctx &c) {
    return symm_dev_barrier_all(c);
}
SYMM_DEV_FN symm_status symm_dev_sync_all_block(const symm_device_ctx &c) {
    return symm_dev_barrier_all_block(c);
}

/* Barrier over a team (from symm_device_team_get). Returns as above. */
SYMM_DEV_FN symm_status symm_dev_team_barrier(const symm_device_ctx &c,
                                              const symm_device_team &t) {
    return symm__barrier_thread(c, t.slot, t.my_pe, t.n_pes, t.start, t.stride);
}
SYMM_DEV_FN symm_status symm_dev_team_barrier_block(const symm_device_ctx &c,
                                                    const symm_device_team &t) {
    return symm__barrier_block(c, t.slot, t.my_pe, t.n_pes, t.start, t.stride);
}
/* World PE number of team PE i. */
SYMM_DEV_FN int symm_dev_team_world_pe(const symm_device_team &t, int i) {
    return t.start + i * t.stride;
}

#undef SYMM__AMO_PTR
#undef SYMM__AMO_INT
#undef SYMM__AMO_ANY

/* Collectives inside kernels (broadcast, fcollect, alltoall, reduce,
 * reducescatter, alltoallv over a device team): symm_device_coll.cuh. */
#include <symm/symm_device_coll.cuh>

#endif /* SYMM_SYMM_DEVICE_CUH */
