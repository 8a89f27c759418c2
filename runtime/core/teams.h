/*
 * Team internals shared by init.c, sync.c, teams.c and coll.c.
 *
 * Every symm__team is made by teams.c (predefined teams in symm__teams_init,
 * split teams in the split calls) as the first member of a symm__team_x, so
 * teams.c and coll.c may reach the private part with symm__team_x_of().
 */
#ifndef SYMM_RUNTIME_TEAMS_H
#define SYMM_RUNTIME_TEAMS_H

#include "internal.h"

/* Create the predefined teams (world slot 0, shared 1, node 2, same local PE 3)
 * in ctx->predef[]. Called by symm_init after the system area is zeroed and
 * before the bootstrap barrier that precedes any use. Local. */
symm_status symm__teams_init(symm__ctx *ctx);
/* Release every team of ctx (predefined and split). Local, never fails. */
void symm__teams_fini(symm__ctx *ctx);

/* Team slot layout (SYMM__TEAM_SLOT_BYTES per slot, at symm__team_sync_off):
 *   [0, 256)    host barrier flags (sync.c): one uint64 per dissemination
 *               round, at most 31 rounds for an int32 team size;
 *   [256, 512)  scratch for teams.c / coll.c: each PE publishes one
 *               symm__xrec there (written only by its owner, read by peers);
 *               its last 96 bytes (SYMM__SLOT_AGREE_OFF) hold the CUDA
 *               backend's agree records (ops->coll_agree: two parities of
 *               SYMM__AGREE_WORDS words, owner-written, read by peers);
 *   [512, slot_bytes) device/stream barrier flags of the CUDA backend
 *               (symm_device.cuh: SYMM_DEVICE_BARRIER_OFF, one uint64 per
 *               team PE; slot_bytes grows with the job, internal.h).
 * The whole slot is zeroed on every member of a new split team before the
 * parent's closing sync, so a team always starts from a zeroed slot with
 * epoch 0. */
#define SYMM__SLOT_BARRIER_OFF 0u
#define SYMM__SLOT_BARRIER_BYTES 256u
#define SYMM__SLOT_SCRATCH_OFF 256u
#define SYMM__SLOT_SCRATCH_BYTES 256u
#define SYMM__SLOT_DEVICE_OFF 512u
#define SYMM__SLOT_AGREE_OFF (SYMM__SLOT_DEVICE_OFF - 2u * SYMM__AGREE_WORDS * 8u)

/* In the barrier area: the dissemination rounds (at most 24: 2^24 PEs), then
 * the hierarchical barrier's words (sync.c): a host leader's arrival counter
 * and each member's release word. Its last word is the CUDA backend's grid
 * ticket (kernels_common.cuh symm__grid_last): a counter that only this
 * PE's own collective kernels touch, 0 between kernels. */
#define SYMM__SLOT_ARRIVE_OFF (24u * 8u)
#define SYMM__SLOT_RELEASE_OFF (25u * 8u)
#define SYMM__SLOT_TICKET_OFF (31u * 8u)
_Static_assert(SYMM__SLOT_RELEASE_OFF + 8u <= SYMM__SLOT_TICKET_OFF, "host barrier words fit");
_Static_assert(SYMM__SLOT_TICKET_OFF + 8u <= SYMM__SLOT_BARRIER_BYTES, "the ticket fits");
_Static_assert(SYMM__SLOT_SCRATCH_OFF + SYMM__SLOT_SCRATCH_BYTES <= SYMM__SLOT_DEVICE_OFF,
               "scratch ends where the device barrier starts");
_Static_assert(SYMM__SLOT_DEVICE_OFF + 64 * sizeof(uint64_t) <= SYMM__TEAM_SLOT_BYTES,
               "the smallest slot holds the device barrier flags of 64 PEs");

#define SYMM__SLOT_PREDEF_COUNT 4 /* slots 0..3 belong to the predefined teams */
#define SYMM__SLOT_BITMAP_BYTES (SYMM__MAX_TEAMS / 8)

/* What a PE is doing in an exchange: a collective (SYMM__COLL_*) or one of: */
#define SYMM__X_SPLIT_STRIDED 16u
#define SYMM__X_SPLIT_2D 17u
#define SYMM__X_DESTROY 18u

#define SYMM__XF_INPLACE 1u /* flags: this PE's call is in place */

/* One PE's description of the call it is making, exchanged among the members
 * of the team before any data moves. Each PE checks every record, so all PEs
 * reach the same verdict (MISMATCH, a peer's argument error, exhaustion). */
typedef struct symm__xrec {
    uint32_t kind;     /* SYMM__COLL_* or SYMM__X_*                          */
    int32_t status;    /* the PE's own argument checks (SYMM_SUCCESS or err) */
    uint32_t dtype, op;
    int32_t root;
    uint32_t flags;    /* SYMM__XF_*                                         */
    uint64_t nelems;
    uint64_t src_off;  /* heap byte offsets of the PE's own ranges           */
    uint64_t dst_off;
    uint64_t dst_end;  /* end of the dst buffer (collect bounds)             */
    uint64_t aux_off;  /* alltoallv: heap byte offset of the send counts     */
    int32_t arg[4];    /* splits: start, stride, size / xrange               */
    uint8_t free_slots[SYMM__SLOT_BITMAP_BYTES]; /* splits: bit s = slot free */
} symm__xrec;

_Static_assert(SYMM__SLOT_SCRATCH_OFF + sizeof(symm__xrec) <= SYMM__SLOT_AGREE_OFF,
               "exchange record must fit the slot scratch, before the agree records");
_Static_assert(SYMM__SLOT_AGREE_OFF + 2 * SYMM__AGREE_WORDS * 8 <= SYMM__SLOT_DEVICE_OFF,
               "two parities of agree records fit the scratch");
_Static_assert(SYMM__MAX_TEAMS % 8 == 0, "slot bitmap is whole bytes");

typedef struct symm__team_x {
    symm__team t;                     /* must stay first                 */
    symm__xrec *xbuf;                 /* [t.n_pes]: the last exchange     */
    struct symm__team_x *next, *prev; /* every live team of the process  */
} symm__team_x;

static inline symm__team_x *symm__team_x_of(symm__team *t) {
    return (symm__team_x *)t;
}

/* Team objects (core/teams.c): a team of n PEs; members[] (world PEs, team
 * order) is copied unless it is an arithmetic progression; NULL when out of
 * memory or handles. link/unlink keep the process's list of live teams. */
symm__team_x *symm__team_new(symm__ctx *ctx, const int32_t *members, int32_t n);
void symm__team_free(symm__team_x *tx);
void symm__team_link(symm__team_x *tx);
void symm__team_unlink(symm__team_x *tx);
symm_team symm__team_handle(const symm__team *t);

/* Publish *mine in this PE's scratch of the team's slot, sync the team and
 * read every member's record: (*all)[i] is team PE i's. The records stay valid
 * until the next exchange on the team. The caller must sync the team again
 * (its data movement's closing sync does it) before the next exchange, so no
 * PE overwrites its record while a peer still reads it. */
symm_status symm__team_exchange(symm__team *team, const symm__xrec *mine,
                                const symm__xrec **all);

#endif
