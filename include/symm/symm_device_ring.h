/*
 * symm — the proxy ring: how GPU code (and any other producer) asks the
 * runtime's proxy thread to run a one-sided operation on a PE that only a
 * transport reaches (a PE of another host). Header-only; compiles as C99/C11,
 * C++ and CUDA (device and host passes). docs/PROXY.md has the design.
 *
 * Memory
 *  - The ring: a header (symm_ring_header) and `depth` slots of 64 bytes (one
 *    cache line each) in memory both sides see: host-pinned, mapped into the
 *    GPU, for a GPU producer; plain host memory for a CPU producer.
 *  - The producer index (`head`) and the producer's cached copy of the
 *    consumer index (`credit`): words only producers touch (device memory on
 *    a GPU, so the fetch-add that claims a slot never crosses PCIe).
 *  - The runtime fills a symm_ring (the producer's handle) with these
 *    addresses; GPU code receives it by value (kernel parameter).
 *
 * A request is one slot: 8 words of 8 bytes. Bit 63 of EVERY word carries the
 * lap flag of the ticket that wrote it (1 on laps 0, 2, 4..., 0 on odd laps;
 * the slots start zeroed, so a fresh ring shows "lap -1" everywhere). The
 * consumer reads slot t % depth for ticket t and takes it once all 8 flags
 * equal ticket t's flag: no doorbell, no word written last, no fence between
 * the words, and the consumer never clears a slot. A slot is written again
 * (ticket t + depth) only after the consumer gave its credit back, so a word
 * with the expected flag can only come from ticket t.
 *
 * Claiming: ticket = fetch_add(head, 1). The slot is free once
 * ticket < consumed + depth, where `consumed` (header) is the consumer index:
 * slots it has copied out. Producers first compare with `credit` (a stale,
 * never too high copy) and read `consumed` only when that says "full"; a full
 * ring makes the producer wait (back-pressure): nothing is dropped or
 * overwritten. Waits give up when the context's fail word says a peer died or
 * the ring's state word says the consumer stopped.
 *
 * Completion: `completed` (header) counts requests the consumer finished, in
 * ticket order. A post returns ticket + 1; symm_ring_wait(r, t) waits until
 * completed >= t. Finished means remotely complete: a put's data is visible
 * at the target and its source may be reused, a get's data and an atomic's
 * fetched value are in the local memory the request named. A failed request
 * also counts as finished; the header keeps the first failure and its ticket,
 * and a wait for that ticket or a later one returns its status. Bit 63 of
 * `completed` (SYMM_RING_COMPLETED_FAILED) is set once the header holds a
 * failure (written before it), so a waiter reads one word on the fast path:
 * from a GPU every read of host memory is a PCIe round trip (about 1 µs).
 *
 * Version: the handle and the header carry SYMM_RING_VERSION and the slot
 * size. Every post compares the handle's (kernel parameter: no memory read)
 * with the ones this header was built with and returns
 * SYMM_ERR_ABI_MISMATCH on a difference, so code built against another
 * format is refused, never misread; symm_ring_check() also reads the header.
 *
 * Memory operations are the few macros below (SYMM_RING_*): CUDA intrinsics
 * and PTX in device code, GCC/Clang __atomic builtins elsewhere, so a CPU
 * producer thread runs exactly the code a GPU thread runs.
 */
#ifndef SYMM_SYMM_DEVICE_RING_H
#define SYMM_SYMM_DEVICE_RING_H

#include <stddef.h>
#include <stdint.h>

#include <symm/symm.h>

#if !defined(__CUDA_ARCH__)
#include <sched.h> /* sched_yield: host producers give the core away while they wait */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Format constants                                                          */
/* ------------------------------------------------------------------------ */

#define SYMM_RING_MAGIC 0x31474e4952594d53ull /* "SYMRING1" in memory order (little-endian) */
#define SYMM_RING_VERSION 1u
#define SYMM_RING_SLOT_BYTES 64u
#define SYMM_RING_WORDS 8u
#define SYMM_RING_HEADER_BYTES 256u
#define SYMM_RING_MIN_DEPTH 2u
#define SYMM_RING_MAX_DEPTH (1u << 20)

/* Request ops (word 0, bits 0-7). 0 is never a request. */
#define SYMM_RING_OP_NOP 1u        /* nothing: round-trip probes                     */
#define SYMM_RING_OP_PUT 2u        /* n bytes from local to pe's heap at off         */
#define SYMM_RING_OP_GET 3u        /* n bytes from pe's heap at off into local       */
#define SYMM_RING_OP_AMO 4u        /* SYMM_AMO_* (sub) on a 4/8-byte dtype at off;
                                      fetched value to local when local != 0         */
#define SYMM_RING_OP_PUT_SIGNAL 5u /* PUT, then SYMM_SIGNAL_SET/ADD (sub) of value on
                                      the uint64 at sig_off: data before signal      */
#define SYMM_RING_OP_FENCE 6u      /* this ring's earlier requests reach each PE
                                      before its later ones                          */
#define SYMM_RING_OP_QUIET 7u      /* finishes after every earlier request of the
                                      ring completed remotely                        */
#define SYMM_RING_OP_CALL 8u       /* run host call number `value` that the runtime
                                      registered (stream collectives and barriers to
                                      PEs of other hosts); after the ring's earlier
                                      requests completed                            */
#define SYMM_RING_OP_LAST 8u

/* The state word (header): 0 while the consumer runs; otherwise the status
 * why it finishes no further request (INVALID_STATE: the proxy stopped;
 * PEER_FAILED: the job lost a PE; INTERNAL: a slot broke the format). */
#define SYMM_RING_STATE_RUNNING 0u

/* Word layout (bit 63 of every word is the lap flag):
 *   w0: op (0-7), sub (8-15: SYMM_AMO_* / SYMM_SIGNAL_*), dtype (16-23),
 *       reserved (24-31, zero), pe (32-62)
 *   w1: off     remote heap byte offset
 *   w2: local   local address (put/put_signal source, get destination,
 *               atomic result; 0: no result)
 *   w3: n       bytes (put, get, put_signal)
 *   w4: value   bits 0-62 (atomic operand, signal value)
 *   w5: compare bits 0-62 (SYMM_AMO_COMPARE_SWAP)
 *   w6: sig_off signal word's heap byte offset (put_signal)
 *   w7: bit 0 = value bit 63, bit 1 = compare bit 63, bits 2-7 reserved,
 *       bits 8-62 = ticket (low 55 bits): the consumer checks it, so a slot
 *       written for another ticket is caught, not executed */
#define SYMM_RING_FLAG_BIT (1ull << 63)
#define SYMM_RING_PAYLOAD ((1ull << 63) - 1u)
#define SYMM_RING_TAG_SHIFT 8u
#define SYMM_RING_TAG_MASK ((1ull << 55) - 1u)
/* hdr->completed: the count, and the flag that the ring recorded a failure. */
#define SYMM_RING_COMPLETED_FAILED (1ull << 63)
#define SYMM_RING_COMPLETED_COUNT(w) ((w) & ~SYMM_RING_COMPLETED_FAILED)

/* ------------------------------------------------------------------------ */
/* Shared structures                                                         */
/* ------------------------------------------------------------------------ */

/* The ring's header, SYMM_RING_HEADER_BYTES in memory both sides see. Line 0
 * is written once by the runtime before any producer sees the ring; each
 * counter the consumer moves has a cache line of its own. */
typedef struct symm_ring_header {
    uint64_t magic;         /* SYMM_RING_MAGIC                                 */
    uint32_t version;       /* SYMM_RING_VERSION                               */
    uint32_t slot_bytes;    /* SYMM_RING_SLOT_BYTES                            */
    uint32_t depth;         /* slots, a power of two                           */
    uint32_t ring_id;       /* index of the ring in its context                */
    uint64_t reserved0[5];
    uint64_t consumed;      /* consumer index: slots copied out (credits)      */
    uint64_t reserved1[7];
    uint64_t completed;     /* requests finished, in ticket order (bits 0-62);
                               bit 63: `error` holds a failure              */
    uint64_t reserved2[7];
    uint64_t error;         /* status of the first failed request, 0: none     */
    uint64_t error_ticket;  /* its ticket (1-based, as posts return)           */
    uint64_t state;         /* SYMM_RING_STATE_RUNNING, or why it stopped      */
    uint64_t reserved3[5];
} symm_ring_header;

/* The producer's handle (64 bytes; pass by value to kernels). version and
 * slot_bytes come first and stay first in every format version. */
typedef struct symm_ring {
    uint32_t version;          /* SYMM_RING_VERSION of the runtime that filled it */
    uint32_t slot_bytes;       /* SYMM_RING_SLOT_BYTES of that runtime            */
    uint32_t depth;            /* slots (power of two)                            */
    uint32_t log2_depth;
    symm_ring_header *hdr;     /* shared header (GPU-visible host memory)         */
    uint64_t *slots;           /* depth * SYMM_RING_WORDS words, beside hdr        */
    uint64_t *head;            /* producer index (device memory on a GPU)         */
    uint64_t *credit;          /* producers' cached copy of hdr->consumed         */
    const int32_t *fail_word;  /* nonzero once the job lost a PE; NULL: none      */
    uint64_t *scratch;         /* depth 8-byte cells, one a slot (cell t % depth
                                  belongs to ticket t until it finished): where a
                                  GPU producer puts a value it sends (p) or
                                  fetches (g, fetching atomics); device memory on
                                  a GPU. NULL: none (was `reserved`, zero) */
} symm_ring;

/* A request before encoding (what the consumer decodes). */
typedef struct symm_ring_req {
    uint32_t op;       /* SYMM_RING_OP_*                                    */
    uint32_t sub;      /* SYMM_AMO_* (AMO), SYMM_SIGNAL_* (PUT_SIGNAL)      */
    uint32_t dtype;    /* SYMM_DTYPE_* (AMO)                                */
    int32_t pe;
    uint64_t off;      /* remote heap byte offset                           */
    uint64_t local;    /* local address as an integer (0: none)             */
    uint64_t n;        /* bytes                                             */
    uint64_t value;    /* atomic operand / signal value                     */
    uint64_t compare;  /* compare-and-swap operand                          */
    uint64_t sig_off;  /* signal word's heap byte offset                    */
    uint64_t tag;      /* ticket - 1 (low 55 bits), filled by decode        */
} symm_ring_req;

/* ------------------------------------------------------------------------ */
/* Qualifiers, casts and memory operations                                   */
/* ------------------------------------------------------------------------ */

#if defined(__CUDACC__)
#define SYMM_RING_FN static __host__ __device__ __forceinline__
#else
#define SYMM_RING_FN static inline
#endif

#ifdef __cplusplus
#define SYMM_RING_SCAST(T, x) static_cast<T>(x)
#define SYMM_RING_RCAST(T, x) reinterpret_cast<T>(x)
#else
#define SYMM_RING_SCAST(T, x) ((T)(x))
#define SYMM_RING_RCAST(T, x) ((T)(x))
#endif

#if defined(__CUDA_ARCH__)
/* Device code. Slots and header are host memory mapped into the GPU: stores
 * and loads there are system scope. */
#define SYMM_RING_FETCH_ADD_U64(p, v)                                                      \
    SYMM_RING_SCAST(uint64_t, atomicAdd(SYMM_RING_RCAST(unsigned long long *, (p)),         \
                                        SYMM_RING_SCAST(unsigned long long, (v))))
#define SYMM_RING_STORE_U64(p, v) (*SYMM_RING_RCAST(volatile uint64_t *, (p)) = (v))
#define SYMM_RING_LOAD_U64(p) (*SYMM_RING_RCAST(const volatile uint64_t *, (p)))
#define SYMM_RING_LOAD_I32(p) (*SYMM_RING_RCAST(const volatile int32_t *, (p)))
#if __CUDA_ARCH__ >= 700
SYMM_RING_FN uint64_t symm__ring_load_acquire(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
#define SYMM_RING_PAUSE(ns) __nanosleep(ns)
#else
SYMM_RING_FN uint64_t symm__ring_load_acquire(const uint64_t *p) {
    uint64_t v = SYMM_RING_LOAD_U64(p);
    __threadfence_system();
    return v;
}
#define SYMM_RING_PAUSE(ns) ((void)(ns))
#endif
#define SYMM_RING_LOAD_ACQUIRE_U64(p) symm__ring_load_acquire(p)
/* Orders the thread's earlier writes (the source of a put) before the slot's
 * words for every observer, the proxy's copy engine included. */
#define SYMM_RING_FENCE_RELEASE() __threadfence_system()
#define SYMM_RING_FENCE_SYSTEM() __threadfence_system()
#define SYMM_RING_YIELD() ((void)0)
#define SYMM_RING_SPIN_POLLS 1024u
#else
/* Host code (C, C++, or the host pass of nvcc). */
#define SYMM_RING_FETCH_ADD_U64(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define SYMM_RING_STORE_U64(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define SYMM_RING_LOAD_U64(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define SYMM_RING_LOAD_I32(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define SYMM_RING_LOAD_ACQUIRE_U64(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define SYMM_RING_FENCE_RELEASE() __atomic_thread_fence(__ATOMIC_RELEASE)
#define SYMM_RING_FENCE_SYSTEM() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#if defined(__x86_64__) || defined(__i386__)
#define SYMM_RING_PAUSE(ns) __builtin_ia32_pause()
#elif defined(__aarch64__)
#define SYMM_RING_PAUSE(ns) __asm__ __volatile__("yield" ::: "memory")
#else
#define SYMM_RING_PAUSE(ns) ((void)0)
#endif
#define SYMM_RING_YIELD() ((void)sched_yield())
#define SYMM_RING_SPIN_POLLS 64u
#endif

/* ------------------------------------------------------------------------ */
/* Encoding (both sides)                                                     */
/* ------------------------------------------------------------------------ */

/* The lap flag (in bit 63) of ticket t (0-based) on a ring of 2^log2 slots. */
SYMM_RING_FN uint64_t symm_ring_flag(uint64_t t, uint32_t log2_depth) {
    return (((t >> log2_depth) & 1u) ^ 1u) << 63;
}

/* The 8 words of request q for ticket t (0-based). */
SYMM_RING_FN void symm_ring_encode(const symm_ring_req *q, uint64_t t, uint32_t log2_depth,
                                   uint64_t w[SYMM_RING_WORDS]) {
    const uint64_t f = symm_ring_flag(t, log2_depth), m = SYMM_RING_PAYLOAD;
    w[0] = f | (SYMM_RING_SCAST(uint64_t, q->op) & 0xffu) |
           ((SYMM_RING_SCAST(uint64_t, q->sub) & 0xffu) << 8) |
           ((SYMM_RING_SCAST(uint64_t, q->dtype) & 0xffu) << 16) |
           ((SYMM_RING_SCAST(uint64_t, SYMM_RING_SCAST(uint32_t, q->pe)) & 0x7fffffffu) << 32);
    w[1] = f | (q->off & m);
    w[2] = f | (q->local & m);
    w[3] = f | (q->n & m);
    w[4] = f | (q->value & m);
    w[5] = f | (q->compare & m);
    w[6] = f | (q->sig_off & m);
    w[7] = f | (q->value >> 63) | ((q->compare >> 63) << 1) |
           ((t & SYMM_RING_TAG_MASK) << SYMM_RING_TAG_SHIFT);
}

/* Request of 8 words (flags already checked). */
SYMM_RING_FN void symm_ring_decode(const uint64_t w[SYMM_RING_WORDS], symm_ring_req *q) {
    const uint64_t m = SYMM_RING_PAYLOAD;
    q->op = SYMM_RING_SCAST(uint32_t, w[0] & 0xffu);
    q->sub = SYMM_RING_SCAST(uint32_t, (w[0] >> 8) & 0xffu);
    q->dtype = SYMM_RING_SCAST(uint32_t, (w[0] >> 16) & 0xffu);
    q->pe = SYMM_RING_SCAST(int32_t, (w[0] >> 32) & 0x7fffffffu);
    q->off = w[1] & m;
    q->local = w[2] & m;
    q->n = w[3] & m;
    q->value = (w[4] & m) | ((w[7] & 1u) << 63);
    q->compare = (w[5] & m) | (((w[7] >> 1) & 1u) << 63);
    q->sig_off = w[6] & m;
    q->tag = (w[7] >> SYMM_RING_TAG_SHIFT) & SYMM_RING_TAG_MASK;
}

/* Every word of slot s carries flag f (bit 63 only). */
SYMM_RING_FN int symm_ring_slot_ready(const uint64_t *s, uint64_t f) {
    for (uint32_t i = 0; i < SYMM_RING_WORDS; i++)
        if ((SYMM_RING_LOAD_U64(&s[i]) & SYMM_RING_FLAG_BIT) != f) return 0;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Producer                                                                  */
/* ------------------------------------------------------------------------ */

/* The handle was filled for this header's format (parameters only). */
SYMM_RING_FN symm_status symm_ring_usable(const symm_ring *r) {
    if (!r || r->version != SYMM_RING_VERSION || r->slot_bytes != SYMM_RING_SLOT_BYTES)
        return SYMM_ERR_ABI_MISMATCH;
    return SYMM_SUCCESS;
}

/* The handle and the shared header agree with this header's format (reads
 * the header: once per kernel, not per request). */
SYMM_RING_FN symm_status symm_ring_check(const symm_ring *r) {
    if (symm_ring_usable(r) != SYMM_SUCCESS || !r->hdr || !r->slots || !r->head || !r->credit)
        return SYMM_ERR_ABI_MISMATCH;
    const symm_ring_header *h = r->hdr;
    if (h->magic != SYMM_RING_MAGIC || h->version != SYMM_RING_VERSION ||
        h->slot_bytes != SYMM_RING_SLOT_BYTES || h->depth != r->depth ||
        r->log2_depth > 20 || (1u << r->log2_depth) != r->depth)
        return SYMM_ERR_ABI_MISMATCH;
    return SYMM_SUCCESS;
}

/* SUCCESS while the ring may still finish requests; PEER_FAILED once the
 * job lost a PE; the state's status once the consumer stopped. */
SYMM_RING_FN symm_status symm_ring_alive(const symm_ring *r) {
    if (r->fail_word && SYMM_RING_LOAD_I32(r->fail_word) != 0) return SYMM_ERR_PEER_FAILED;
    const uint64_t s = SYMM_RING_LOAD_ACQUIRE_U64(&r->hdr->state);
    return SYMM_RING_SCAST(symm_status, s & 0xffffffffu);
}

/* The ring's first failed request: its status (SUCCESS when none) and, when
 * ticket is not NULL, its ticket. */
SYMM_RING_FN symm_status symm_ring_error(const symm_ring *r, uint64_t *ticket) {
    const uint64_t e = SYMM_RING_LOAD_ACQUIRE_U64(&r->hdr->error);
    if (ticket) *ticket = e ? SYMM_RING_LOAD_U64(&r->hdr->error_ticket) : 0u;
    return SYMM_RING_SCAST(symm_status, e & 0xffffffffu);
}

/* One step of a waiting producer: spin SYMM_RING_SPIN_POLLS polls, then
 * (host) yield the core or (device) sleep half a microsecond between polls.
 * Nonzero every 16th poll: time to read the fail word and the state, which on
 * a GPU are PCIe reads the fast path should not pay for. */
SYMM_RING_FN int symm__ring_backoff(uint32_t *polls) {
    const uint32_t n = (*polls)++;
    if (n < SYMM_RING_SPIN_POLLS) {
        SYMM_RING_PAUSE(20);
    } else {
        SYMM_RING_PAUSE(500);
        SYMM_RING_YIELD();
    }
    return (n & 15u) == 15u;
}

/* Post request q: claim a ticket, wait for its slot's credit (back-pressure),
 * write the slot. *ticket (may be NULL) receives the value symm_ring_wait
 * takes (ticket index + 1). A request that reads local memory (put,
 * put_signal) orders the caller's earlier writes before it. The local memory
 * a request names (source, destination, result) must stay valid and, for a
 * source, unchanged until the ticket has completed. */
/* The two halves of symm_ring_post, for a producer that needs its ticket
 * before it writes the request (to use the ticket's scratch cell):
 * symm_ring_claim takes a ticket (0-based in *t) and waits for its slot's
 * credit; symm_ring_write writes request q into the claimed slot. Every
 * claimed ticket must be written (a NOP when there is nothing to do), or the
 * ring stalls at it. */
SYMM_RING_FN symm_status symm_ring_claim(const symm_ring *r, uint64_t *t_out) {
    if (symm_ring_usable(r) != SYMM_SUCCESS) return SYMM_ERR_ABI_MISMATCH;
    const uint64_t t = SYMM_RING_FETCH_ADD_U64(r->head, SYMM_RING_SCAST(uint64_t, 1u));
    *t_out = t;
    uint64_t credit = SYMM_RING_LOAD_U64(r->credit);
    if (t >= credit + r->depth) {
        uint32_t polls = 0;
        for (;;) {
            credit = SYMM_RING_LOAD_ACQUIRE_U64(&r->hdr->consumed);
            if (t < credit + r->depth) break;
            if (symm__ring_backoff(&polls)) {
                /* The slot stays claimed: the consumer is stopping or the job
                 * is lost, and the ring finishes nothing more either way. */
                const symm_status st = symm_ring_alive(r);
                if (st != SYMM_SUCCESS) return st;
            }
        }
        SYMM_RING_STORE_U64(r->credit, credit);
    }
    return SYMM_SUCCESS;
}

SYMM_RING_FN void symm_ring_write(const symm_ring *r, const symm_ring_req *q, uint64_t t) {
    if (q->op == SYMM_RING_OP_PUT || q->op == SYMM_RING_OP_PUT_SIGNAL) SYMM_RING_FENCE_RELEASE();
    uint64_t w[SYMM_RING_WORDS];
    symm_ring_encode(q, t, r->log2_depth, w);
    uint64_t *s = r->slots + (t & (r->depth - 1u)) * SYMM_RING_WORDS;
    for (uint32_t i = 0; i < SYMM_RING_WORDS; i++) SYMM_RING_STORE_U64(&s[i], w[i]);
}

/* The scratch cell of ticket t (0-based), NULL when the ring has none. */
SYMM_RING_FN uint64_t *symm_ring_cell(const symm_ring *r, uint64_t t) {
    return r->scratch ? r->scratch + (t & (r->depth - 1u)) : SYMM_RING_RCAST(uint64_t *, 0);
}

SYMM_RING_FN symm_status symm_ring_post(const symm_ring *r, const symm_ring_req *q,
                                        uint64_t *ticket) {
    if (symm_ring_usable(r) != SYMM_SUCCESS) return SYMM_ERR_ABI_MISMATCH;
    if (q->op == 0 || q->op > SYMM_RING_OP_LAST || q->pe < 0) return SYMM_ERR_INVALID_ARG;
    uint64_t t = 0;
    const symm_status st = symm_ring_claim(r, &t);
    if (st != SYMM_SUCCESS) return st;
    symm_ring_write(r, q, t);
    if (ticket) *ticket = t + 1u;
    return SYMM_SUCCESS;
}

/* Wait until the request with this ticket (and every earlier one of the ring)
 * has finished. Returns the status of the ring's first failed request when
 * that request is this one or an earlier one (like a quiet, it reports what
 * failed before it), PEER_FAILED when the job lost a PE, the state's status
 * when the consumer stopped before it finished the ticket. */
SYMM_RING_FN symm_status symm_ring_wait(const symm_ring *r, uint64_t ticket) {
    if (symm_ring_usable(r) != SYMM_SUCCESS) return SYMM_ERR_ABI_MISMATCH;
    uint32_t polls = 0;
    for (;;) {
        const uint64_t c = SYMM_RING_LOAD_ACQUIRE_U64(&r->hdr->completed);
        if (SYMM_RING_COMPLETED_COUNT(c) >= ticket) {
            if (!(c & SYMM_RING_COMPLETED_FAILED)) return SYMM_SUCCESS; /* one read */
            uint64_t failed_at = 0;
            const symm_status st = symm_ring_error(r, &failed_at);
            return st != SYMM_SUCCESS && failed_at <= ticket ? st : SYMM_SUCCESS;
        }
        if (symm__ring_backoff(&polls)) {
            const symm_status st = symm_ring_alive(r);
            if (st != SYMM_SUCCESS) return st;
        }
    }
}

/* Has the ticket finished? (1/0, no wait) */
SYMM_RING_FN int symm_ring_test(const symm_ring *r, uint64_t ticket) {
    return SYMM_RING_COMPLETED_COUNT(SYMM_RING_LOAD_ACQUIRE_U64(&r->hdr->completed)) >= ticket;
}

SYMM_RING_FN void symm__ring_req_init(symm_ring_req *q, uint32_t op, int32_t pe) {
    q->op = op;
    q->sub = 0;
    q->dtype = 0;
    q->pe = pe;
    q->off = q->local = q->n = q->value = q->compare = q->sig_off = q->tag = 0;
}

/* n bytes from src (local) to pe's heap at byte offset off. */
SYMM_RING_FN symm_status symm_ring_put(const symm_ring *r, int32_t pe, uint64_t off,
                                       const void *src, uint64_t n, uint64_t *ticket) {
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_PUT, pe);
    q.off = off;
    q.local = SYMM_RING_SCAST(uint64_t, SYMM_RING_RCAST(uintptr_t, src));
    q.n = n;
    return symm_ring_post(r, &q, ticket);
}

/* n bytes of pe's heap at off into dst (local; valid once the ticket finished). */
SYMM_RING_FN symm_status symm_ring_get(const symm_ring *r, void *dst, int32_t pe, uint64_t off,
                                       uint64_t n, uint64_t *ticket) {
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_GET, pe);
    q.off = off;
    q.local = SYMM_RING_SCAST(uint64_t, SYMM_RING_RCAST(uintptr_t, dst));
    q.n = n;
    return symm_ring_post(r, &q, ticket);
}

/* Atomic op (SYMM_AMO_*) on the dtype element (4 or 8 bytes) at pe's off.
 * value/compare are the operand bits in the low bytes; the prior value goes
 * to result (4 or 8 bytes; NULL: not wanted) once the ticket finished. */
SYMM_RING_FN symm_status symm_ring_amo(const symm_ring *r, int32_t pe, uint64_t off,
                                       uint32_t dtype, uint32_t op, uint64_t value,
                                       uint64_t compare, void *result, uint64_t *ticket) {
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_AMO, pe);
    q.sub = op;
    q.dtype = dtype;
    q.off = off;
    q.value = value;
    q.compare = compare;
    q.local = SYMM_RING_SCAST(uint64_t, SYMM_RING_RCAST(uintptr_t, result));
    return symm_ring_post(r, &q, ticket);
}

/* put, then the signal update (SYMM_SIGNAL_SET/ADD of sig_value on the uint64
 * at sig_off): a PE that sees the new signal sees the data. */
SYMM_RING_FN symm_status symm_ring_put_signal(const symm_ring *r, int32_t pe, uint64_t off,
                                              const void *src, uint64_t n, uint64_t sig_off,
                                              uint64_t sig_value, uint32_t sig_op,
                                              uint64_t *ticket) {
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_PUT_SIGNAL, pe);
    q.sub = sig_op;
    q.off = off;
    q.local = SYMM_RING_SCAST(uint64_t, SYMM_RING_RCAST(uintptr_t, src));
    q.n = n;
    q.sig_off = sig_off;
    q.value = sig_value;
    return symm_ring_post(r, &q, ticket);
}

/* Order this ring's earlier requests before its later ones at every PE. */
SYMM_RING_FN symm_status symm_ring_fence(const symm_ring *r, uint64_t *ticket) {
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_FENCE, 0);
    return symm_ring_post(r, &q, ticket);
}

/* A probe that does nothing (ring round trip). */
SYMM_RING_FN symm_status symm_ring_nop(const symm_ring *r, uint64_t *ticket) {
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_NOP, 0);
    return symm_ring_post(r, &q, ticket);
}

/* Post a QUIET and wait for it: every earlier request of this ring has
 * completed remotely (or the first failure is returned). */
SYMM_RING_FN symm_status symm_ring_quiet(const symm_ring *r) {
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_QUIET, 0);
    uint64_t t = 0;
    const symm_status st = symm_ring_post(r, &q, &t);
    if (st != SYMM_SUCCESS) return st;
    return symm_ring_wait(r, t);
}

#ifdef __cplusplus
}
#endif

#endif /* SYMM_SYMM_DEVICE_RING_H */
