/*
 * Stream forms to PEs of other hosts (stream_px.c): the api's side of the GPU
 * proxy. A stream form whose target is a PE of another host enqueues on the
 * user's stream a one-thread kernel (the backend's ring_stream) that posts
 * its request to the proxy's stream ring and waits until it finished, so the
 * operation is ordered on the stream and capturable in a CUDA graph.
 * Collectives and barriers over teams with such PEs post a host call
 * (SYMM_RING_OP_CALL) that the proxy's thread runs as the blocking form.
 * docs/PROXY.md "Stream forms".
 */
#ifndef SYMM_API_STREAM_PX_H
#define SYMM_API_STREAM_PX_H

#include <symm/symm_device_ring.h>

#include "internal.h"
#include "proxy/proxy.h"

/* Is a stream form to pe run through the proxy? (pe of another host, and a
 * device backend with a proxy; the host backend runs the blocking form.) */
static inline bool symm__px_stream_to(const symm__ctx *ctx, int32_t pe) {
    return ctx->remote && ctx->remote[pe] && ctx->proxy && ctx->ops->ring_stream;
}
/* ... over a team that holds a PE of another host. */
bool symm__px_stream_team(const symm__team *team);
/* Enqueue request q on stream (n_inline > 0: its local memory is the first
 * n_inline bytes of inline_bytes, read now). */
symm_status symm__px_stream(symm__ctx *ctx, const symm_ring_req *q, uint64_t inline_bytes,
                            uint32_t n_inline, symm_stream_t stream);
/* Enqueue a host call: fn(ctx, copy of arg[0 .. arg_bytes)) on the proxy's
 * thread, in stream order. */
symm_status symm__px_stream_call(symm__ctx *ctx, symm__proxy_call_fn fn, const void *arg,
                                 size_t arg_bytes, symm_stream_t stream);
/* A team's stream barrier or collective through the proxy, in issue order
 * with the team's blocking calls (decision: docs/PROXY.md "Stream forms to
 * PEs of other hosts"): symm__px_team_call enqueues fn as
 * symm__px_stream_call does and, outside a capture, counts it as issued;
 * fn calls symm__px_team_done(team) when it finished (counted: what
 * symm__px_team_call set). A blocking call of the team first waits for
 * those issued before it (symm__team_px_drain). */
symm_status symm__px_team_call(symm__team *team, symm__proxy_call_fn fn, void *arg,
                               size_t arg_bytes, bool *counted, symm_stream_t stream);
void symm__px_team_done(symm__team *team, bool counted);
symm_status symm__team_px_drain(symm__team *team);
/* symm_quiet_on_stream's part: a QUIET on every ring of the proxy. */
symm_status symm__px_stream_quiet(symm__ctx *ctx, symm_stream_t stream);

#endif /* SYMM_API_STREAM_PX_H */
