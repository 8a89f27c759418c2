/*
 * fallback: use symm when it is installed, run single-process when it is not.
 *
 * The application links only the loader (libsymm.so.1). If the runtime is
 * missing, symm_loader_probe() says so with SYMM_ERR_LIBRARY_NOT_FOUND and the
 * program computes the same result alone:
 *
 *   SYMM_RUNTIME=/nonexistent/libsymm_runtime.so.1 ./fallback    # exits 0
 */
#include <stdio.h>
#include <symm/symm.h>

#define N 1000

/* The computation: sum of i*i for i in [lo, hi). */
static double partial(int lo, int hi) {
    double s = 0;
    for (int i = lo; i < hi; i++) s += (double)i * i;
    return s;
}

int main(void) {
    double expected = partial(0, N);
    symm_status st = symm_loader_probe();
    if (st != SYMM_SUCCESS) {
        printf("symm is not usable here (%s): %s\n", symm_status_string(st), symm_last_error());
        double s = partial(0, N);
        printf("single-process result: %.0f (%s)\n", s, s == expected ? "ok" : "WRONG");
        return s == expected ? 0 : 1;
    }
    symm_ctx ctx = NULL;
    if ((st = symm_init(NULL, &ctx))) {
        printf("symm_init failed (%s: %s); running single-process\n", symm_status_string(st),
               symm_last_error());
        double s = partial(0, N);
        return s == expected ? 0 : 1;
    }
    int me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    symm_team world = NULL;
    symm_buf in = NULL, out = NULL;
    double mine = partial(me * N / n, (me + 1) * N / n), total = 0;
    if ((st = symm_team_get(ctx, SYMM_TEAM_WORLD, &world)) ||
        (st = symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT64, 1, &in)) ||
        (st = symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT64, 1, &out)) ||
        (st = symm_put(in, 0, &mine, 1, me)) ||
        (st = symm_reduce(world, out, 0, in, 0, 1, SYMM_OP_SUM)) ||
        (st = symm_get(&total, out, 0, 1, me))) {
        fprintf(stderr, "fallback: %s (%s)\n", symm_status_string(st), symm_last_error());
        return 1;
    }
    if (me == 0) printf("%d PEs: result %.0f (%s)\n", n, total, total == expected ? "ok" : "WRONG");
    symm_buf_free(out);
    symm_buf_free(in);
    symm_finalize(&ctx);
    return total == expected ? 0 : 1;
}
