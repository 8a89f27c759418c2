/*
 * Env bootstrap through the public API: the test starts its own PEs (fork +
 * exec of itself) with the variables of each launcher symm understands, and
 * each PE checks symm_my_pe/symm_n_pes and a symm_barrier_all, twice (two
 * consecutive contexts: sessions 0 and 1 of the job).
 *
 *   test_env_boot                  the driver
 *   test_env_boot --pe LAUNCHER R  one PE (started by the driver)
 */
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include "symm_test.h"

#define N 3

static void setenv_int(const char *name, long v) {
    char b[32];
    snprintf(b, sizeof b, "%ld", v);
    setenv(name, b, 1);
}

static int pe_main(const char *launcher, int rank) {
    symm_test_pe = rank;
    for (int round = 0; round < 2; round++) {
        symm_init_attr attr;
        CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
        attr.backend = SYMM_BACKEND_HOST;
        attr.bootstrap = strcmp(launcher, "auto") == 0 ? SYMM_BOOTSTRAP_AUTO : SYMM_BOOTSTRAP_ENV;
        attr.timeout_ms = 30000;
        symm_ctx ctx = NULL;
        CHECK_OK(symm_init(&attr, &ctx));
        ASSERT_EQ(symm_my_pe(ctx), rank);
        ASSERT_EQ(symm_n_pes(ctx), N);
        CHECK_OK(symm_barrier_all(ctx));
        symm_ctx_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        CHECK_OK(symm_ctx_query(ctx, &info));
        ASSERT_EQ(info.local_n_pes, N);
        ASSERT_EQ(info.local_pe, rank);
        CHECK_OK(symm_finalize(&ctx));
        ASSERT_TRUE(ctx == NULL);
    }
    return 0;
}

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static const char *const launcher_vars[] = {
    "SYMM_RANK", "SYMM_N_PES", "SYMM_LOCAL_RANK", "SYMM_LOCAL_N_PES", "SYMM_BOOTSTRAP_ADDR",
    "SYMM_JOB_SECRET", "SYMM_LAUNCHER", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
    "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid", "SLURM_PROCID", "SLURM_NTASKS",
    "SLURM_LOCALID", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NNODES", NULL};

/* Start N PEs with the variables of `launcher`; 0 when all succeed. */
static int run_job(const char *launcher, int port, const char *tag) {
    pid_t pids[N];
    fflush(NULL);
    for (int r = 0; r < N; r++) {
        pids[r] = fork();
        if (pids[r] != 0) continue;
        for (int i = 0; launcher_vars[i]; i++) unsetenv(launcher_vars[i]);
        if (strcmp(launcher, "torchrun") == 0) {
            setenv_int("RANK", r);
            setenv_int("WORLD_SIZE", N);
            setenv_int("LOCAL_RANK", r);
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            setenv_int("MASTER_PORT", port - 1); /* symm listens on MASTER_PORT + 1 */
        } else if (strcmp(launcher, "ompi") == 0) {
            setenv_int("OMPI_COMM_WORLD_RANK", r);
            setenv_int("OMPI_COMM_WORLD_SIZE", N);
            setenv_int("OMPI_COMM_WORLD_LOCAL_RANK", r);
            setenv_int("OMPI_COMM_WORLD_LOCAL_SIZE", N);
            setenv("OMPI_MCA_ess_base_jobid", tag, 1);
        } else if (strcmp(launcher, "slurm") == 0) {
            setenv_int("SLURM_PROCID", r);
            setenv_int("SLURM_NTASKS", N);
            setenv_int("SLURM_LOCALID", r);
            setenv("SLURM_JOB_ID", tag, 1);
            setenv("SLURM_STEP_ID", "0", 1);
            setenv("SLURM_NNODES", "1", 1);
        } else { /* SYMM_* set by hand, no symmrun: rank 0 serves */
            char addr[128];
            setenv_int("SYMM_RANK", r);
            setenv_int("SYMM_N_PES", N);
            snprintf(addr, sizeof addr, "unix:@symm-test-env-%s", tag);
            setenv("SYMM_BOOTSTRAP_ADDR", addr, 1);
            setenv("SYMM_JOB_SECRET", "a hand-made secret", 1);
        }
        char rank[16];
        snprintf(rank, sizeof rank, "%d", r);
        execl("/proc/self/exe", "test_env_boot", "--pe", launcher, rank, (char *)NULL);
        _exit(99);
    }
    int failed = 0;
    for (int r = 0; r < N; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "%s: PE %d failed (status 0x%x)\n", launcher, r, st);
            failed++;
        }
    }
    printf("%-10s %s\n", launcher, failed ? "FAILED" : "ok");
    fflush(stdout);
    return failed;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--pe") == 0) {
        alarm(120);
        return pe_main(argv[2], atoi(argv[3]));
    }
    char tag[64];
    snprintf(tag, sizeof tag, "envboot-%d", (int)getpid());
    int failed = 0;
    failed += run_job("symm", 0, tag);
    failed += run_job("torchrun", free_port(), tag);
    failed += run_job("ompi", 0, tag);
    failed += run_job("slurm", 0, tag);
    failed += run_job("auto", 0, tag); /* SYMM_* again, through AUTO */
    return failed ? 1 : 0;
}
