/*
 * A PE for the symmrun tests (test_symmrun.c). Plain libc: it does not join
 * the job, it only behaves as told:
 *   env                  check the variables symmrun sets, exit 0
 *   exit RANK CODE       PE RANK exits with CODE after 100 ms, the others sleep
 *   kill RANK            PE RANK sends itself SIGKILL after 100 ms, the others sleep
 *   sleep SEC            every PE sleeps
 *   term-ignore          every PE ignores SIGTERM; PE 0 exits 5, the others sleep
 *   int-ignore           every PE ignores SIGINT and sleeps
 *   pidfile DIR          write DIR/<rank>.pid, then sleep
 *   affinity             print "PE <rank> cpus <list>." (its sched_getaffinity,
 *                        comma-separated), for the --bind checks
 *   hosts H              check the simulated host of --hosts H: SYMM_HOST_ID
 *                        and the local rank/count of contiguous groups
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void nap(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int fail(const char *what) {
    fprintf(stderr, "symmrun_pe: %s\n", what);
    return 1;
}

int main(int argc, char **argv) {
    const char *rank_s = getenv("SYMM_RANK"), *n_s = getenv("SYMM_N_PES");
    if (!rank_s || !n_s || argc < 2) return fail("missing SYMM_RANK/SYMM_N_PES or mode");
    int rank = atoi(rank_s), n = atoi(n_s);
    const char *mode = argv[1];
    if (strcmp(mode, "env") == 0) {
        const char *lr = getenv("SYMM_LOCAL_RANK"), *ln = getenv("SYMM_LOCAL_N_PES"),
                   *addr = getenv("SYMM_BOOTSTRAP_ADDR"), *sec = getenv("SYMM_JOB_SECRET"),
                   *launcher = getenv("SYMM_LAUNCHER");
        if (rank < 0 || rank >= n) return fail("rank out of range");
        if (!lr || atoi(lr) != rank || !ln || atoi(ln) != n) return fail("local rank/size");
        if (!addr || strncmp(addr, "unix:@", 6) != 0) return fail("SYMM_BOOTSTRAP_ADDR");
        if (!sec || strlen(sec) != 64 || strspn(sec, "0123456789abcdef") != 64)
            return fail("SYMM_JOB_SECRET");
        if (!launcher || strcmp(launcher, "symmrun") != 0) return fail("SYMM_LAUNCHER");
        if (argc > 2 && strcmp(argv[2], "--expect-runtime") == 0 && !getenv("SYMM_RUNTIME"))
            return fail("SYMM_RUNTIME not set");
        return 0;
    }
    if (strcmp(mode, "hosts") == 0 && argc == 3) {
        /* PE r on host r * H / n; local rank/count within that group. */
        int h = atoi(argv[2]), host = rank * h / n, first = 0, count = 0;
        for (int r = 0; r < n; r++) {
            if (r * h / n != host) continue;
            if (count++ == 0) first = r;
        }
        char want[64];
        snprintf(want, sizeof want, "symmrun-host-%d", host);
        const char *id = getenv("SYMM_HOST_ID"), *lr = getenv("SYMM_LOCAL_RANK"),
                   *ln = getenv("SYMM_LOCAL_N_PES");
        if (!id || strcmp(id, want) != 0) return fail("SYMM_HOST_ID");
        if (!lr || atoi(lr) != rank - first || !ln || atoi(ln) != count)
            return fail("local rank/size of the simulated host");
        return 0;
    }
    if (strcmp(mode, "exit") == 0 && argc == 4) {
        if (rank == atoi(argv[2])) {
            nap(0.1);
            return atoi(argv[3]);
        }
        nap(30);
        return 0;
    }
    if (strcmp(mode, "kill") == 0 && argc == 3) {
        if (rank == atoi(argv[2])) {
            nap(0.1);
            kill(getpid(), SIGKILL);
        }
        nap(30);
        return 0;
    }
    if (strcmp(mode, "sleep") == 0 && argc == 3) {
        nap(atof(argv[2]));
        return 0;
    }
    if (strcmp(mode, "term-ignore") == 0) {
        signal(SIGTERM, SIG_IGN);
        if (rank == 0) {
            nap(0.2);
            return 5;
        }
        nap(30);
        return 0;
    }
    if (strcmp(mode, "int-ignore") == 0) {
        signal(SIGINT, SIG_IGN);
        nap(30);
        return 0;
    }
    if (strcmp(mode, "affinity") == 0) {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) != 0) return fail("sched_getaffinity");
        char line[8192];
        int len = snprintf(line, sizeof line, "PE %d cpus ", rank);
        for (int c = 0, first = 1; c < CPU_SETSIZE && len < (int)sizeof line - 16; c++) {
            if (!CPU_ISSET(c, &set)) continue;
            len += snprintf(line + len, sizeof line - (size_t)len, "%s%d", first ? "" : ",", c);
            first = 0;
        }
        printf("%s.\n", line);
        return 0;
    }
    if (strcmp(mode, "pidfile") == 0 && argc == 3) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%d.pid", argv[2], rank);
        FILE *f = fopen(path, "w");
        if (!f) return fail("cannot write the pid file");
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        nap(30);
        return 0;
    }
    return fail("unknown mode");
}
