/* The job watcher. GPU-side waits (the runtime's kernels on user streams,
 * waits inside user kernels given a symm_device_ctx) end when the backend's
 * failure word says a PE died, but nothing sets that word while the host
 * thread sits in cudaStreamSynchronize or computes: every other check runs
 * inside a symm call. This thread sleeps in poll() on the bootstrap's news
 * socket (the launcher's or rendezvous server's connection, which turns
 * readable with an ABORT or when the server goes away) and on an eventfd that
 * stop writes; on news it runs the same check as every call and, when the
 * job lost a PE, tells its owner once (the core marks the context failed,
 * which tells the backend). An idle job costs no CPU: no timer, no polling
 * loop. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap.h"

struct symm__boot_watch {
    symm__boot *boot;
    void (*on_lost)(void *arg);
    void *arg;
    int stop_fd; /* eventfd: written to stop the watcher */
    pthread_t thread;
};

static void *watch_main(void *p) {
    symm__boot_watch *w = p;
    const int news = symm__boot_news_fd(w->boot);
    /* SYMM_INTERRUPT_FD too (-1: ignored by poll): waiting calls read only
     * the context's failed flag, so the interrupt reaches them from here. */
    const int intr = symm__boot_intr_fd(w->boot);
    for (;;) {
        struct pollfd fds[3] = {{.fd = w->stop_fd, .events = POLLIN},
                                {.fd = news, .events = POLLIN},
                                {.fd = intr, .events = POLLIN}};
        int r = poll(fds, 3, -1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 || fds[0].revents) break;
        if (!fds[1].revents && !fds[2].revents) continue;
        if (symm__boot_check_now(w->boot) != SYMM_SUCCESS) {
            SYMM_INFO(SYMM_LOG_BOOTSTRAP, "job watcher: %s; GPU-side waits of this context end",
                      symm__last_error());
            w->on_lost(w->arg);
            break;
        }
        /* Readable but no failure: the reply to a bootstrap collective that
         * another thread is reading, or a message still arriving. Let it be
         * read, then look again (or stop). */
        struct pollfd q = {.fd = w->stop_fd, .events = POLLIN};
        if (poll(&q, 1, 2) > 0) break;
    }
    return NULL;
}

symm__boot_watch *symm__boot_watch_start(symm__boot *b, void (*on_lost)(void *arg), void *arg) {
    if (symm__boot_news_fd(b) < 0) return NULL;
    symm__boot_watch *w = calloc(1, sizeof *w);
    if (!w) {
        SYMM_WARN(SYMM_LOG_INIT, "job watcher not started (out of memory): waits in kernels end "
                  "on a dead PE only when a host call notices it");
        return NULL;
    }
    *w = (symm__boot_watch){.boot = b, .on_lost = on_lost, .arg = arg};
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->stop_fd < 0) {
        SYMM_WARN(SYMM_LOG_INIT, "job watcher not started (eventfd: %s): waits in kernels end "
                  "on a dead PE only when a host call notices it", strerror(errno));
        free(w);
        return NULL;
    }
    /* The application's signals are not for this thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, watch_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        SYMM_WARN(SYMM_LOG_INIT, "job watcher not started (pthread_create: %s): waits in kernels "
                  "end on a dead PE only when a host call notices it", strerror(rc));
        close(w->stop_fd);
        free(w);
        return NULL;
    }
    return w;
}

void symm__boot_watch_stop(symm__boot_watch *w) {
    if (!w) return;
    uint64_t one = 1;
    while (write(w->stop_fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
    pthread_join(w->thread, NULL);
    close(w->stop_fd);
    free(w);
}
