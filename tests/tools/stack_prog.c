/* The stack dump's test program (test_stackdump.py): a worker thread waits
 * on a mutex that main holds while main sleeps, so both are inside blocking
 * calls when the dump comes; then main lets it go and both end normally. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static int worker_ran;

/* exported (the program links with -rdynamic) so dladdr names it */
void *stack_prog_worker(void *arg);
void *stack_prog_worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&gate);
    worker_ran = 1;
    pthread_mutex_unlock(&gate);
    return NULL;
}

int main(int argc, char **argv) {
    const double hold_s = argc > 1 ? atof(argv[1]) : 2.0;
    pthread_mutex_lock(&gate);
    pthread_t t;
    if (pthread_create(&t, NULL, stack_prog_worker, NULL) != 0) return 2;
    struct timespec left = {(time_t)hold_s, (long)((hold_s - (double)(time_t)hold_s) * 1e9)};
    while (nanosleep(&left, &left) != 0) {
    }
    pthread_mutex_unlock(&gate);
    pthread_join(t, NULL);
    printf("worker ran: %d\n", worker_ran);
    return worker_ran ? 0 : 1;
}
