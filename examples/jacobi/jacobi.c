/*
 * jacobi: 2-D Jacobi relaxation of Laplace's equation on an NX x NY grid,
 * split into blocks of rows across PEs.
 *
 *   symmrun -n 4 ./jacobi [--nx 130] [--ny 128] [--iters 500] [--check]
 *
 * Each PE keeps its rows (plus one halo row above and below) in private host
 * memory. After every sweep it sends its first and last rows to the PEs above
 * and below with symm_put_signal into a symmetric halo buffer (two copies,
 * alternating by iteration), and the neighbour waits for the signal before
 * its next sweep. The residual sqrt(sum (u_new - u)^2) over the interior is
 * combined with symm_reduce (SUM, FLOAT64) on the world team.
 *
 * --check also solves the whole problem on every PE alone and fails (exit 1)
 * unless each PE's rows are bitwise identical to the serial grid and the
 * residuals agree to 1e-12 (the sum may be added up in another order).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symm/symm.h>

typedef struct opts {
    int nx, ny, iters;
    bool check;
} opts;

static int fail(int me, const char *what, symm_status st) {
    fprintf(stderr, "jacobi [pe %d]: %s failed: %s (%s)\n", me, what, symm_status_string(st),
            symm_last_error());
    return 1;
}

#define TRY(what, call)                                                        \
    do {                                                                       \
        symm_status st_ = (call);                                              \
        if (st_ != SYMM_SUCCESS) return fail(me, (what), st_);                 \
    } while (0)

/* Fixed boundary: 1 on the top edge, falling linearly to 0 down the left
 * edge, 0 on the bottom and right edges. Interior starts at 0. */
static double initial(const opts *o, int i, int j) {
    if (i == 0) return 1.0;
    if (j == 0) return 1.0 - (double)i / (o->nx - 1);
    return 0.0;
}

/* One sweep over rows [1, rows] of a (rows + 2) x ny array: returns the sum of
 * squared updates, accumulated row by row, left to right. */
static double sweep(const double *u, double *un, int rows, int ny) {
    double sum = 0.0;
    for (int i = 1; i <= rows; i++) {
        for (int j = 1; j < ny - 1; j++) {
            double v = 0.25 * (u[(i - 1) * ny + j] + u[(i + 1) * ny + j] + u[i * ny + j - 1] +
                               u[i * ny + j + 1]);
            double d = v - u[i * ny + j];
            un[i * ny + j] = v;
            sum += d * d;
        }
    }
    return sum;
}

/* The same problem on one PE: fills grid (nx x ny) and returns the residual. */
static double serial(const opts *o, double *grid) {
    double *u = grid, *un = malloc((size_t)o->nx * o->ny * sizeof *un);
    if (!un) return NAN;
    for (int i = 0; i < o->nx; i++)
        for (int j = 0; j < o->ny; j++) u[i * o->ny + j] = un[i * o->ny + j] = initial(o, i, j);
    double res = 0.0;
    for (int it = 0; it < o->iters; it++) {
        res = sqrt(sweep(u, un, o->nx - 2, o->ny));
        double *t = u;
        u = un;
        un = t;
    }
    if (u != grid) {
        memcpy(grid, u, (size_t)o->nx * o->ny * sizeof *grid);
        un = u;
    }
    free(un);
    return res;
}

static int usage(void) {
    fprintf(stderr, "usage: jacobi [--nx N] [--ny N] [--iters K] [--check]\n");
    return 2;
}

static int parse(int argc, char **argv, opts *o) {
    *o = (opts){130, 128, 500, false};
    for (int a = 1; a < argc; a++) {
        int *dst = NULL;
        if (!strcmp(argv[a], "--check")) o->check = true;
        else if (!strcmp(argv[a], "--nx")) dst = &o->nx;
        else if (!strcmp(argv[a], "--ny")) dst = &o->ny;
        else if (!strcmp(argv[a], "--iters")) dst = &o->iters;
        else return usage();
        if (dst) {
            if (++a >= argc) return usage();
            *dst = atoi(argv[a]);
        }
    }
    if (o->nx < 3 || o->ny < 3 || o->iters < 1) return usage();
    return 0;
}

int main(int argc, char **argv) {
    opts o;
    if (parse(argc, argv, &o)) return 2;
    int me = -1;
    symm_ctx ctx = NULL;
    TRY("symm_init", symm_init(NULL, &ctx));
    me = symm_my_pe(ctx);
    const int n = symm_n_pes(ctx), ny = o.ny, interior = o.nx - 2;
    if (interior < n) {
        if (me == 0) fprintf(stderr, "jacobi: %d interior rows cannot be split over %d PEs\n",
                             interior, n);
        symm_finalize(&ctx);
        return 2;
    }
    /* Rows [first, first + rows) of the interior (global rows 1 .. nx-2). */
    const int rows = interior / n + (me < interior % n);
    const int first = 1 + me * (interior / n) + (me < interior % n ? me : interior % n);
    const int up = me - 1, down = me + 1 < n ? me + 1 : -1;

    symm_team world;
    symm_buf halo, sig, part, total;
    TRY("symm_team_get", symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    /* halo[(parity * 2 + side) * ny]: side 0 = row above, 1 = row below. */
    TRY("symm_buf_alloc", symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT64, 4 * (uint64_t)ny, &halo));
    /* sig[side] = 1 + the version (sweeps done) of the row last delivered. */
    TRY("symm_buf_alloc", symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 2, &sig));
    TRY("symm_buf_alloc", symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT64, 1, &part));
    TRY("symm_buf_alloc", symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT64, 1, &total));

    size_t cells = (size_t)(rows + 2) * ny;
    double *u = malloc(cells * sizeof *u), *un = malloc(cells * sizeof *un);
    if (!u || !un) return fail(me, "malloc", SYMM_ERR_OUT_OF_MEMORY);
    for (int i = 0; i < rows + 2; i++)
        for (int j = 0; j < ny; j++) u[i * ny + j] = un[i * ny + j] = initial(&o, first - 1 + i, j);

    /* Deliver version v of my first/last rows (taken from a) to my neighbours. */
#define SEND(a, v)                                                                              \
    do {                                                                                        \
        uint64_t par_ = (uint64_t)((v) % 2);                                                    \
        if (up >= 0)                                                                            \
            TRY("symm_put_signal", symm_put_signal(halo, (par_ * 2 + 1) * ny, &(a)[1 * ny], ny, \
                                                   sig, 1, (uint64_t)(v) + 1, SYMM_SIGNAL_SET,  \
                                                   up));                                        \
        if (down >= 0)                                                                          \
            TRY("symm_put_signal", symm_put_signal(halo, (par_ * 2 + 0) * ny, &(a)[rows * ny],  \
                                                   ny, sig, 0, (uint64_t)(v) + 1,               \
                                                   SYMM_SIGNAL_SET, down));                     \
    } while (0)

    SEND(u, 0);
    double res = 0.0;
    for (int it = 0; it < o.iters; it++) {
        uint64_t par = (uint64_t)(it % 2);
        /* Halo rows of version it: signal it + 1 or later (the neighbour may
         * already have sent version it + 1, into the other parity). The
         * boundary rows of the grid never change. */
        if (up >= 0) {
            TRY("symm_signal_wait_until",
                symm_signal_wait_until(sig, 0, SYMM_CMP_GT, (uint64_t)it, NULL));
            TRY("symm_get", symm_get(&u[0], halo, (par * 2 + 0) * ny, ny, me));
        }
        if (down >= 0) {
            TRY("symm_signal_wait_until",
                symm_signal_wait_until(sig, 1, SYMM_CMP_GT, (uint64_t)it, NULL));
            TRY("symm_get", symm_get(&u[(rows + 1) * ny], halo, (par * 2 + 1) * ny, ny, me));
        }
        double local = sweep(u, un, rows, ny);
        SEND(un, it + 1);
        TRY("symm_p", symm_p(part, 0, &local, me));
        TRY("symm_reduce", symm_reduce(world, total, 0, part, 0, 1, SYMM_OP_SUM));
        double sum;
        TRY("symm_g", symm_g(total, 0, me, &sum));
        res = sqrt(sum);
        double *t = u;
        u = un;
        un = t;
    }
    if (me == 0)
        printf("jacobi: %dx%d grid on %d PEs: %d iterations, residual %.17g\n", o.nx, o.ny, n,
               o.iters, res);

    int bad = 0;
    if (o.check) {
        double *grid = calloc((size_t)o.nx * ny, sizeof *grid);
        if (!grid) return fail(me, "malloc", SYMM_ERR_OUT_OF_MEMORY);
        double res_serial = serial(&o, grid);
        if (memcmp(&grid[(size_t)first * ny], &u[ny], (size_t)rows * ny * sizeof *u) != 0) {
            fprintf(stderr, "jacobi [pe %d]: rows %d..%d differ from the serial solution\n", me,
                    first, first + rows - 1);
            bad = 1;
        }
        double diff = fabs(res - res_serial);
        if (!(diff <= 1e-12)) {
            fprintf(stderr, "jacobi [pe %d]: residual %.17g, serial %.17g (|diff| %g > 1e-12)\n",
                    me, res, res_serial, diff);
            bad = 1;
        }
        if (me == 0 && !bad)
            printf("jacobi: check ok: serial residual %.17g, |diff| %g, rows bitwise equal\n",
                   res_serial, diff);
        free(grid);
    }
    free(u);
    free(un);
    TRY("symm_buf_free", symm_buf_free(total));
    TRY("symm_buf_free", symm_buf_free(part));
    TRY("symm_buf_free", symm_buf_free(sig));
    TRY("symm_buf_free", symm_buf_free(halo));
    TRY("symm_finalize", symm_finalize(&ctx));
    return bad;
}
