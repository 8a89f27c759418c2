/*
 * ring: each PE puts a message into the next PE's buffer, waits at a barrier,
 * and checks what it received from the previous one.
 *
 *   symmrun -n 4 ./ring
 */
#include <stdio.h>
#include <symm/symm.h>

#define COUNT 1024

static int fail(const char *what, symm_status st) {
    fprintf(stderr, "ring: %s failed: %s (%s)\n", what, symm_status_string(st), symm_last_error());
    return 1;
}

int main(void) {
    symm_ctx ctx = NULL;
    symm_status st = symm_init(NULL, &ctx);
    if (st) return fail("symm_init", st);
    int me = symm_my_pe(ctx), n = symm_n_pes(ctx);

    symm_buf buf = NULL;
    if ((st = symm_buf_alloc(ctx, SYMM_DTYPE_INT64, COUNT, &buf))) return fail("symm_buf_alloc", st);

    int64_t msg[COUNT];
    for (int i = 0; i < COUNT; i++) msg[i] = (int64_t)me * 1000000 + i;
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    if ((st = symm_put(buf, 0, msg, COUNT, next))) return fail("symm_put", st);
    if ((st = symm_barrier_all(ctx))) return fail("symm_barrier_all", st);

    int64_t *got = NULL;
    if ((st = symm_buf_ptr(buf, (void **)&got))) return fail("symm_buf_ptr", st);
    /* On the CUDA backend the buffer is GPU memory: read it with a get. */
    symm_ctx_info info = {.struct_size = sizeof info};
    symm_ctx_query(ctx, &info);
    int64_t local[COUNT];
    if (info.backend != SYMM_BACKEND_HOST) {
        if ((st = symm_get(local, buf, 0, COUNT, me))) return fail("symm_get", st);
        got = local;
    }
    int bad = 0;
    for (int i = 0; i < COUNT; i++) bad += got[i] != (int64_t)prev * 1000000 + i;
    printf("PE %d of %d (%s backend): received %d elements from PE %d: %s\n", me, n,
           info.backend == SYMM_BACKEND_HOST ? "host" : "cuda", COUNT, prev, bad ? "WRONG" : "ok");

    if ((st = symm_buf_free(buf))) return fail("symm_buf_free", st);
    if ((st = symm_finalize(&ctx))) return fail("symm_finalize", st);
    return bad ? 1 : 0;
}
