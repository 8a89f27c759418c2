/*
 * Randomized sequences: every PE runs a seeded stream of RMA puts/gets,
 * atomics and put_signal messages between random PE pairs, checking what it
 * can check on the spot (gets of its own slots, fetched values of counters only
 * it touches, message ordering through signal peeks). At the end of each epoch
 * every PE replays every other PE's stream (the streams depend only on the
 * seed) and checks its own memory exactly: data slots, private and shared
 * counters, signal counts and the last message of each sender.
 *
 * Seed: SYMM_TEST_SEED (printed by PE 0), default below.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "p2p_util.h"

#define EPOCHS 6
#define OPS 1000  /* per PE per epoch */
#define SLOT 64   /* int64 elements: PE s writes only slot s of every PE */
#define MSG 16    /* int64 elements per message */

enum { OP_PUT, OP_GET, OP_PRIV_AMO, OP_SHARED_AMO, OP_MSG, OP_PEEK, N_OPS };
enum { PRIV_FADD, PRIV_CSWAP_HIT, PRIV_CSWAP_MISS, PRIV_SWAP, PRIV_INC, N_PRIV };

typedef struct op {
    uint32_t type, variant;
    int32_t pe;          /* target (or source, for OP_PEEK) */
    uint64_t off, len;   /* OP_PUT / OP_GET: range inside the slot */
    uint64_t v;          /* atomic operand                          */
    bool nbi;
} op_t;

static uint64_t seed;

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t s = a * 0x9e3779b97f4a7c15ull ^ b;
    return p2p_rand(&s);
}

/* The stream of PE pe in epoch e. Depends on nothing but the seed. */
static void gen_ops(int32_t pe, int32_t n, int epoch, op_t *ops) {
    uint64_t rng = mix(mix(seed, (uint64_t)epoch), (uint64_t)pe);
    for (int i = 0; i < OPS; i++) {
        op_t *o = &ops[i];
        memset(o, 0, sizeof *o);
        o->type = (uint32_t)p2p_rand_below(&rng, N_OPS);
        o->pe = (int32_t)p2p_rand_below(&rng, (uint64_t)n);
        o->off = p2p_rand_below(&rng, SLOT);
        o->len = 1 + p2p_rand_below(&rng, SLOT - o->off);
        o->v = p2p_rand(&rng);
        o->variant = (uint32_t)p2p_rand_below(&rng, N_PRIV);
        o->nbi = p2p_rand_below(&rng, 2);
    }
}

/* Element i of the data PE s put with its op number k of epoch e. */
static int64_t put_value(int32_t s, int epoch, int k, uint64_t i) {
    return (int64_t)mix(mix((uint64_t)s << 32 | (uint64_t)epoch, (uint64_t)k), i);
}

/* Message j from s to d: element i encodes all four. */
static int64_t msg_value(int32_t s, int32_t d, uint64_t j, uint64_t i) {
    return (int64_t)(((uint64_t)s << 52) | ((uint64_t)d << 40) | (j << 8) | i);
}

/* A private counter (only PE s touches ctr[s] on each PE): the new value and
 * what the op fetches. */
static uint64_t apply_private(const op_t *o, uint64_t *value) {
    uint64_t old = *value;
    switch (o->variant) {
    case PRIV_FADD: *value = old + o->v; break;
    case PRIV_CSWAP_HIT: *value = o->v; break;
    case PRIV_CSWAP_MISS: break;
    case PRIV_SWAP: *value = o->v; break;
    default: *value = old + 1; break;
    }
    return old;
}

typedef struct state {
    symm_ctx ctx;
    int32_t me, n;
    symm_buf data, ctr, mail, sig;
    /* What this PE wrote / expects as the writer. */
    int64_t *shadow;       /* [n][SLOT]: my slot on every PE */
    uint64_t *priv;        /* [n]: my private counter on every PE */
    uint64_t *sent;        /* [n]: messages sent to every PE */
    /* What this PE's memory must hold (replayed). */
    int64_t *model_data;   /* [n][SLOT] */
    uint64_t *model_priv;  /* [n] */
    uint64_t model_sum, model_xor;
    uint64_t *model_msgs;  /* [n]: messages received from every PE */
    uint64_t counts[N_OPS];
} state;

static void run_op(state *st, const op_t *o, int epoch, int k) {
    int32_t me = st->me, n = st->n, d = o->pe;
    st->counts[o->type]++;
    switch (o->type) {
    case OP_PUT: {
        int64_t buf[SLOT];
        for (uint64_t i = 0; i < o->len; i++) buf[i] = put_value(me, epoch, k, o->off + i);
        uint64_t at = (uint64_t)me * SLOT + o->off;
        if (o->nbi) {
            CHECK_OK(symm_put_nbi(st->data, at, buf, o->len, d));
            CHECK_OK(symm_quiet(st->ctx)); /* buf is about to go away */
        } else {
            CHECK_OK(symm_put(st->data, at, buf, o->len, d));
        }
        memcpy(&st->shadow[(uint64_t)d * SLOT + o->off], buf, o->len * sizeof(int64_t));
        break;
    }
    case OP_GET: {
        int64_t buf[SLOT];
        uint64_t at = (uint64_t)me * SLOT + o->off;
        if (o->nbi) {
            CHECK_OK(symm_get_nbi(buf, st->data, at, o->len, d));
            CHECK_OK(symm_quiet(st->ctx));
        } else {
            CHECK_OK(symm_get(buf, st->data, at, o->len, d));
        }
        for (uint64_t i = 0; i < o->len; i++) {
            int64_t want = st->shadow[(uint64_t)d * SLOT + o->off + i];
            if (buf[i] != want)
                TEST_FAIL_("epoch %d op %d: get of my slot on pe %d, element %" PRIu64
                           ": %" PRId64 ", expected %" PRId64, epoch, k, d, o->off + i, buf[i],
                           want);
        }
        break;
    }
    case OP_PRIV_AMO: {
        uint64_t before = st->priv[d], f = 0, cmp = before, one = 1;
        uint64_t want_fetch = apply_private(o, &st->priv[d]);
        switch (o->variant) {
        case PRIV_FADD:
            CHECK_OK(symm_atomic(st->ctr, (uint64_t)me, SYMM_AMO_FETCH_ADD, &o->v, NULL, d, &f));
            break;
        case PRIV_CSWAP_HIT:
        case PRIV_CSWAP_MISS:
            if (o->variant == PRIV_CSWAP_MISS) cmp = before + 1;
            CHECK_OK(symm_atomic(st->ctr, (uint64_t)me, SYMM_AMO_COMPARE_SWAP, &o->v, &cmp, d,
                                 &f));
            break;
        case PRIV_SWAP:
            CHECK_OK(symm_atomic_nbi(st->ctr, (uint64_t)me, SYMM_AMO_SWAP, &o->v, NULL, d, &f));
            CHECK_OK(symm_quiet(st->ctx));
            break;
        default:
            CHECK_OK(symm_atomic(st->ctr, (uint64_t)me, SYMM_AMO_FETCH_INC, &one, NULL, d, &f));
            break;
        }
        if (f != want_fetch)
            TEST_FAIL_("epoch %d op %d: private atomic %u on pe %d fetched %" PRIu64
                       ", expected %" PRIu64, epoch, k, o->variant, d, f, want_fetch);
        break;
    }
    case OP_SHARED_AMO:
        if (o->variant % 2)
            CHECK_OK(symm_atomic(st->ctr, (uint64_t)n, SYMM_AMO_ADD, &o->v, NULL, d, NULL));
        else
            CHECK_OK(symm_atomic(st->ctr, (uint64_t)n + 1, SYMM_AMO_XOR, &o->v, NULL, d, NULL));
        break;
    case OP_MSG: {
        int64_t buf[MSG];
        uint64_t j = st->sent[d]++;
        for (uint64_t i = 0; i < MSG; i++) buf[i] = msg_value(me, d, j, i);
        if (o->nbi) {
            CHECK_OK(symm_put_signal_nbi(st->mail, (uint64_t)me * MSG, buf, MSG, st->sig,
                                         (uint64_t)me, 1, SYMM_SIGNAL_ADD, d));
            CHECK_OK(symm_quiet(st->ctx));
        } else {
            CHECK_OK(symm_put_signal(st->mail, (uint64_t)me * MSG, buf, MSG, st->sig,
                                     (uint64_t)me, 1, SYMM_SIGNAL_ADD, d));
        }
        break;
    }
    default: { /* OP_PEEK: messages from o->pe seen so far must be complete */
        int32_t s = o->pe;
        uint64_t c = 0;
        CHECK_OK(symm_signal_fetch(st->sig, (uint64_t)s, &c));
        if (c == 0) break;
        int64_t buf[MSG];
        CHECK_OK(symm_get(buf, st->mail, (uint64_t)s * MSG, MSG, me));
        for (uint64_t i = 0; i < MSG; i++) {
            uint64_t x = (uint64_t)buf[i];
            uint64_t js = (x >> 8) & 0xffffffffull;
            if ((x >> 52) != (uint64_t)s || ((x >> 40) & 0xfff) != (uint64_t)me ||
                (x & 0xff) != i || js + 1 < c)
                TEST_FAIL_("epoch %d op %d: after signal %" PRIu64 " from pe %d, mailbox "
                           "element %" PRIu64 " is 0x%" PRIx64 " (message %" PRIu64 ")",
                           epoch, k, c, s, i, x, js);
        }
        break;
    }
    }
}

/* Apply PE s's stream to the model of this PE's memory. */
static void replay(state *st, int32_t s, const op_t *ops, int epoch) {
    int32_t me = st->me;
    for (int k = 0; k < OPS; k++) {
        const op_t *o = &ops[k];
        if (o->pe != me) continue;
        switch (o->type) {
        case OP_PUT:
            for (uint64_t i = 0; i < o->len; i++)
                st->model_data[(uint64_t)s * SLOT + o->off + i] =
                    put_value(s, epoch, k, o->off + i);
            break;
        case OP_PRIV_AMO:
            apply_private(o, &st->model_priv[s]);
            break;
        case OP_SHARED_AMO:
            if (o->variant % 2) st->model_sum += o->v;
            else st->model_xor ^= o->v;
            break;
        case OP_MSG:
            st->model_msgs[s]++;
            break;
        default:
            break;
        }
    }
}

static void verify(state *st, int epoch) {
    int32_t me = st->me, n = st->n;
    uint64_t nn = (uint64_t)n;
    /* Signals first, through a vector wait (already satisfied after the
     * barrier), then each message. */
    CHECK_OK(symm_wait_until_all_vector(st->sig, 0, nn, NULL, SYMM_CMP_EQ, st->model_msgs));
    for (int32_t s = 0; s < n; s++) {
        uint64_t c = 0;
        CHECK_OK(symm_signal_fetch(st->sig, (uint64_t)s, &c));
        ASSERT_U64_EQ(c, st->model_msgs[s]);
        if (c == 0) continue;
        int64_t buf[MSG];
        CHECK_OK(symm_get(buf, st->mail, (uint64_t)s * MSG, MSG, me));
        for (uint64_t i = 0; i < MSG; i++)
            if (buf[i] != msg_value(s, me, c - 1, i))
                TEST_FAIL_("epoch %d: last message from pe %d, element %" PRIu64 " wrong", epoch,
                           s, i);
    }
    int64_t *data = malloc(sizeof(int64_t) * nn * SLOT);
    ASSERT_TRUE(data != NULL);
    CHECK_OK(symm_get(data, st->data, 0, nn * SLOT, me));
    for (uint64_t i = 0; i < nn * SLOT; i++)
        if (data[i] != st->model_data[i])
            TEST_FAIL_("epoch %d: data element %" PRIu64 " (slot of pe %" PRIu64 ") is %" PRId64
                       ", expected %" PRId64, epoch, i, i / SLOT, data[i], st->model_data[i]);
    free(data);
    uint64_t *ctr = malloc(sizeof(uint64_t) * (nn + 2));
    ASSERT_TRUE(ctr != NULL);
    CHECK_OK(symm_get(ctr, st->ctr, 0, nn + 2, me));
    for (uint64_t s = 0; s < nn; s++) ASSERT_U64_EQ(ctr[s], st->model_priv[s]);
    ASSERT_U64_EQ(ctr[nn], st->model_sum);
    ASSERT_U64_EQ(ctr[nn + 1], st->model_xor);
    free(ctr);
}

int main(void) {
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_AUTO);
    state st;
    memset(&st, 0, sizeof st);
    st.ctx = ctx;
    st.me = symm_my_pe(ctx);
    st.n = symm_n_pes(ctx);
    uint64_t nn = (uint64_t)st.n;
    seed = p2p_seed(0x2024c0ffeeull);
    if (st.me == 0)
        printf("test_random: seed 0x%" PRIx64 " (set SYMM_TEST_SEED to replay), %d PEs\n", seed,
               st.n);
    fflush(stdout);

    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, nn * SLOT, &st.data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, nn + 2, &st.ctr));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, nn * MSG, &st.mail));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, nn, &st.sig));
    st.shadow = calloc(nn * SLOT, sizeof(int64_t));
    st.model_data = calloc(nn * SLOT, sizeof(int64_t));
    st.priv = calloc(nn, sizeof(uint64_t));
    st.sent = calloc(nn, sizeof(uint64_t));
    st.model_priv = calloc(nn, sizeof(uint64_t));
    st.model_msgs = calloc(nn, sizeof(uint64_t));
    op_t *ops = malloc(sizeof(op_t) * OPS);
    ASSERT_TRUE(st.shadow && st.model_data && st.priv && st.sent && st.model_priv &&
                st.model_msgs && ops);

    for (int epoch = 0; epoch < EPOCHS; epoch++) {
        gen_ops(st.me, st.n, epoch, ops);
        for (int k = 0; k < OPS; k++) {
            run_op(&st, &ops[k], epoch, k);
            if (k % 50 == 49) sched_yield(); /* let other PEs interleave */
        }
        CHECK_OK(symm_barrier_all(ctx));
        for (int32_t s = 0; s < st.n; s++) {
            gen_ops(s, st.n, epoch, ops);
            replay(&st, s, ops, epoch);
        }
        verify(&st, epoch);
        CHECK_OK(symm_barrier_all(ctx));
    }

    if (st.me == 0)
        printf("test_random: ok; PE 0 ran %" PRIu64 " puts, %" PRIu64 " gets, %" PRIu64
               " private and %" PRIu64 " shared atomics, %" PRIu64 " messages, %" PRIu64
               " peeks\n", st.counts[OP_PUT], st.counts[OP_GET], st.counts[OP_PRIV_AMO],
               st.counts[OP_SHARED_AMO], st.counts[OP_MSG], st.counts[OP_PEEK]);
    free(ops);
    free(st.model_msgs);
    free(st.model_priv);
    free(st.sent);
    free(st.priv);
    free(st.model_data);
    free(st.shadow);
    CHECK_OK(symm_buf_free(st.sig));
    CHECK_OK(symm_buf_free(st.mail));
    CHECK_OK(symm_buf_free(st.ctr));
    CHECK_OK(symm_buf_free(st.data));
    CHECK_OK(symm_finalize(&ctx));
    return 0;
}
