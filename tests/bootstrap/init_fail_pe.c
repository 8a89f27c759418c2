/*
 * Under symmrun -n 2: PE 1's symm_init fails after the job formed (backing
 * its heap fails: RLIMIT_FSIZE caps the memfd). PE 0's init must fail with
 * PEER_FAILED giving PE 1's reason ("gave up: symm_init failed"), not that
 * PE 1 "left the job (finalized)" or "sent nothing". Both exit 0 when so.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "symm_test.h"

int main(void) {
    const char *rank = getenv("SYMM_RANK");
    ASSERT_TRUE(rank != NULL);
    symm_test_pe = atoi(rank);
    if (symm_test_pe == 1) {
        signal(SIGXFSZ, SIG_IGN); /* ftruncate past the limit: EFBIG, not a signal */
        struct rlimit lim = {64 * 1024, 64 * 1024};
        ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
    }
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_HOST;
    attr.timeout_ms = 20000;
    symm_ctx ctx = NULL;
    if (symm_test_pe == 1) {
        CHECK_STATUS(symm_init(&attr, &ctx), SYMM_ERR_OUT_OF_MEMORY);
        return 0;
    }
    CHECK_STATUS(symm_init(&attr, &ctx), SYMM_ERR_PEER_FAILED);
    const char *msg = symm_last_error();
    printf("PE 0: %s\n", msg);
    if (!strstr(msg, "PE 1") || !strstr(msg, "gave up: symm_init failed (SYMM_ERR_OUT_OF_MEMORY)"))
        TEST_FAIL_("PE 0 was not told why PE 1 left: %s", msg);
    if (strstr(msg, "finalized") || strstr(msg, "sent nothing"))
        TEST_FAIL_("misleading: %s", msg);
    return 0;
}
