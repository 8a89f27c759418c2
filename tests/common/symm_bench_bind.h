/*
 * BENCH_BIND=core for programs that fork their own PEs (the transport
 * benchmarks, whose children symmrun does not start): child `rank` runs on the
 * rank-th CPU its parent may use (mod their count), as `symmrun --bind core`
 * places PEs; unset or "none": unchanged. Call it in the child after fork.
 */
#ifndef SYMM_BENCH_BIND_H
#define SYMM_BENCH_BIND_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void symm_bench_bind(int rank) {
    const char *v = getenv("BENCH_BIND");
    if (!v || !*v || strcmp(v, "none") == 0) return;
    if (strcmp(v, "core") != 0) {
        fprintf(stderr, "BENCH_BIND=\"%s\": expected core or none; not bound\n", v);
        return;
    }
    cpu_set_t own, one;
    if (sched_getaffinity(0, sizeof own, &own) != 0) return;
    int n = CPU_COUNT(&own), k = rank % (n > 0 ? n : 1);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &own) || k-- > 0) continue;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) perror("BENCH_BIND: sched_setaffinity");
        return;
    }
}

#endif /* SYMM_BENCH_BIND_H */
