/*
 * The ofi transport (ofi_internal.h): authentication at open: every PE proves the job secret to
 * the PEs it reaches (docs/OFI.md, Authentication).
 */
#include "ofi_internal.h"

/* ---- authentication ------------------------------------------------------ */

/* What a proof covers: label (with its NUL), the proving PE, the PE it
 * proves itself to, and that PE's fresh challenge. */
static size_t auth_msg(uint8_t *out, int32_t from, int32_t to, const uint8_t *chal) {
    size_t n = sizeof AUTH_LABEL;
    memcpy(out, AUTH_LABEL, n);
    for (int i = 0; i < 4; i++) {
        out[n + i] = (uint8_t)((uint32_t)from >> (8 * i));
        out[n + 4 + i] = (uint8_t)((uint32_t)to >> (8 * i));
    }
    memcpy(out + n + 8, chal, AUTH_NONCE);
    return n + 8 + AUTH_NONCE;
}

/* Collective: every PE says whether it is still fine; nonzero when any is
 * not (the caller's final exchange then names it). */
static int32_t auth_sync(ofi_tp *st, int32_t status) {
    uint32_t *all = calloc((size_t)st->n, sizeof *all), mine = (uint32_t)status;
    int32_t rc = all ? st->core->allgather(st->core->core, &mine, all, sizeof mine)
                     : SYMM_ERR_OUT_OF_MEMORY;
    for (int32_t i = 0; all && !rc && i < st->n; i++)
        if (all[i]) rc = (int32_t)all[i];
    free(all);
    return rc;
}

/* Round 1: write a fresh challenge into slot `me` of each reached PE's page
 * (at the address the AV holds for it: what answers there is what is
 * proven), and wait for its delivery. */
static int32_t auth_challenge(ofi_tp *st, char *why, size_t why_len) {
    for (int32_t pe = 0; pe < st->n; pe++) {
        if (!st->peers[pe].reach) continue;
        uint8_t *c = st->auth_chal + (size_t)pe * AUTH_NONCE;
        if (getrandom(c, AUTH_NONCE, 0) != (ssize_t)AUTH_NONCE) {
            snprintf(why, why_len, "getrandom failed: %s", strerror(errno));
            return SYMM_ERR_SYSTEM;
        }
        char *b;
        int32_t rc = ofi__bounce_get(st, AUTH_NONCE, &b);
        if (rc) return rc;
        memcpy(b, c, AUTH_NONCE);
        ofi_op o = {.kind = OP_WRITE, .buf = b, .len = AUTH_NONCE, .desc = st->bounce_desc,
                .raddr = st->peers[pe].hello_addr + AUTH_HEAD + (uint64_t)st->me * AUTH_SLOT,
                .rkey = st->peers[pe].hello_key};
        rc = ofi__post(st, pe, &o, 0, 1, NULL, NULL, 0, 0);
        if (!rc) rc = ofi__flush(st, pe);
        if (rc) return rc;
    }
    return 0;
}

/* Round 2: answer each reached PE's challenge in its slot of this PE's page
 * (it reads the proof back from this endpoint). */
static void auth_answer(ofi_tp *st) {
    uint8_t msg[AUTH_MSG_MAX];
    for (int32_t pe = 0; pe < st->n; pe++) {
        if (!st->peers[pe].reach) continue;
        uint8_t *slot = (uint8_t *)st->hello + AUTH_HEAD + (size_t)pe * AUTH_SLOT;
        size_t len = auth_msg(msg, st->me, pe, slot);
        st->core->auth_mac(st->core->core, msg, len, slot + AUTH_NONCE);
    }
}

/* Round 3: read each reached PE's proof over this PE's challenge and check
 * it with the core; the first that fails is named. */
static int32_t auth_check(ofi_tp *st, char *why, size_t why_len) {
    uint8_t *got = calloc((size_t)st->n, AUTH_MAC);
    if (!got) return SYMM_ERR_OUT_OF_MEMORY;
    int32_t rc = 0;
    for (int32_t pe = 0; pe < st->n && !rc; pe++) {
        if (!st->peers[pe].reach) continue;
        char *b;
        rc = ofi__bounce_get(st, AUTH_MAC, &b);
        if (rc) break;
        ofi_op o = {.kind = OP_READ, .buf = b, .len = AUTH_MAC, .desc = st->bounce_desc,
                .raddr = st->peers[pe].hello_addr + AUTH_HEAD + (uint64_t)st->me * AUTH_SLOT +
                         AUTH_NONCE,
                .rkey = st->peers[pe].hello_key};
        rc = ofi__post(st, pe, &o, 1, 1, got + (size_t)pe * AUTH_MAC, b, AUTH_MAC, 0);
    }
    if (!rc) rc = ofi__wait_for(st, -1, 0);
    uint8_t msg[AUTH_MSG_MAX];
    for (int32_t pe = 0; pe < st->n && !rc; pe++) {
        if (!st->peers[pe].reach) continue;
        size_t len = auth_msg(msg, pe, st->me, st->auth_chal + (size_t)pe * AUTH_NONCE);
        if (st->core->auth_verify(st->core->core, pe, msg, len, got + (size_t)pe * AUTH_MAC)) {
            snprintf(why, why_len, "PE %d did not prove that it holds the job secret (its proof "
                     "over this PE's challenge is wrong): the two PEs were given different "
                     "SYMM_JOB_SECRETs, or another process answers at PE %d's fabric address", pe,
                     pe);
            rc = SYMM_ERR_BOOTSTRAP;
        }
    }
    free(got);
    return rc;
}

/* Collective, after the connections are up and before any heap range is
 * registered: each PE proves to every PE it reaches, over the fabric, that
 * it holds the job secret as the PE it claims to be (docs/OFI.md,
 * Authentication). Three rounds, each closed by an exchange of statuses so
 * every PE runs them in step even when one has failed: a fresh challenge
 * written into the peer's page, the peer's proof (core->auth_mac over
 * label | prover | verifier | challenge) written into its own page, the
 * proof read back from the peer's address and checked (core->auth_verify).
 * status: this PE's status so far (nonzero: it only keeps in step).
 * Returns this PE's status (why set); a failure of another PE is left to
 * the caller's final exchange. */
int32_t ofi__authenticate_peers(ofi_tp *st, int32_t status, char *why, size_t why_len) {
    if (!status) status = auth_challenge(st, why, why_len);
    if (auth_sync(st, status)) return status;
    auth_answer(st);
    if (auth_sync(st, status)) return status;
    if (!status) status = auth_check(st, why, why_len);
    return status;
}
