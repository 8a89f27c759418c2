/*
 * Unique-id bootstrap through the public API, the NCCL way: rank 0 makes the
 * id and hands it to the other PEs over the application's own channel (here a
 * pipe to the driver, then the command line); every PE initialises with the
 * id, its rank and the size, checks symm_my_pe/symm_n_pes and a
 * symm_barrier_all.
 *
 *   test_uid_boot                       the driver
 *   test_uid_boot --root N              rank 0: prints the id (hex), then joins
 *   test_uid_boot --pe R N HEX          another PE
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symm_test.h"

#define N 4

static void to_hex(char *out, const symm_unique_id *id) {
    for (int i = 0; i < SYMM_UNIQUE_ID_BYTES; i++) sprintf(out + 2 * i, "%02x", id->bytes[i]);
}

static void from_hex(symm_unique_id *id, const char *hex) {
    ASSERT_EQ(strlen(hex), 2 * SYMM_UNIQUE_ID_BYTES);
    for (int i = 0; i < SYMM_UNIQUE_ID_BYTES; i++) {
        unsigned v;
        ASSERT_EQ(sscanf(hex + 2 * i, "%2x", &v), 1);
        id->bytes[i] = (uint8_t)v;
    }
}

static int join(int rank, int n, const symm_unique_id *id) {
    symm_test_pe = rank;
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_HOST;
    attr.bootstrap = SYMM_BOOTSTRAP_UID;
    attr.rank = rank;
    attr.n_pes = n;
    attr.unique_id = *id;
    attr.timeout_ms = 30000;
    symm_ctx ctx = NULL;
    CHECK_OK(symm_init(&attr, &ctx));
    ASSERT_EQ(symm_my_pe(ctx), rank);
    ASSERT_EQ(symm_n_pes(ctx), n);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_finalize(&ctx));
    return 0;
}

int main(int argc, char **argv) {
    alarm(120);
    char hex[2 * SYMM_UNIQUE_ID_BYTES + 1];
    if (argc == 3 && strcmp(argv[1], "--root") == 0) {
        symm_unique_id id;
        CHECK_OK(symm_get_unique_id(&id));
        to_hex(hex, &id);
        printf("%s\n", hex);
        fflush(stdout);
        fclose(stdout);
        return join(0, atoi(argv[2]), &id);
    }
    if (argc == 5 && strcmp(argv[1], "--pe") == 0) {
        symm_unique_id id;
        from_hex(&id, argv[4]);
        return join(atoi(argv[2]), atoi(argv[3]), &id);
    }

    /* A bad id is refused with a message, without a job. */
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.bootstrap = SYMM_BOOTSTRAP_UID;
    attr.backend = SYMM_BACKEND_HOST;
    attr.rank = 1;
    attr.n_pes = 2;
    memset(&attr.unique_id, 0x5a, sizeof attr.unique_id);
    symm_ctx ctx = NULL;
    CHECK_STATUS(symm_init(&attr, &ctx), SYMM_ERR_INVALID_ARG);

    char n_text[16];
    snprintf(n_text, sizeof n_text, "%d", N);
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    fflush(NULL);
    pid_t pids[N];
    pids[0] = fork();
    if (pids[0] == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execl("/proc/self/exe", "test_uid_boot", "--root", n_text, (char *)NULL);
        _exit(99);
    }
    close(p[1]);
    size_t got = 0;
    while (got < sizeof hex - 1) {
        ssize_t k = read(p[0], hex + got, sizeof hex - 1 - got);
        if (k <= 0) TEST_FAIL_("rank 0 did not print a unique id");
        got += (size_t)k;
    }
    hex[got] = '\0';
    close(p[0]);
    for (int r = 1; r < N; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            char rank[16];
            snprintf(rank, sizeof rank, "%d", r);
            execl("/proc/self/exe", "test_uid_boot", "--pe", rank, n_text, hex, (char *)NULL);
            _exit(99);
        }
    }
    int failed = 0;
    for (int r = 0; r < N; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "PE %d failed (status 0x%x)\n", r, st);
            failed++;
        }
    }
    printf("unique id, %d PEs: %s\n", N, failed ? "FAILED" : "ok");
    return failed ? 1 : 0;
}
