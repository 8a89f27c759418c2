/* The job watcher. GPU-side waits (the runtime's kernels on user streams,
 * waits inside user kernels given a symm_device_ctx) end when the backend's
 * failure word says a PE died, but nothing sets that word while the host
 * thread sits in cudaStreamSynchronize or computes: every other check runs
 * inside a symm call. This thread sleeps in poll() on the bootstrap's news
 * socket (the launcher's or rendezvous server's connection, which turns
 * readable with an ABORT or when the server goes away) and on an eventfd that
 * finalize writes; on news it runs the same check as every call, which marks
 * the context failed and so tells the backend (symm__mark_failed ->
 * ops->peer_failed). An idle job costs no CPU: no timer, no polling loop. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"

static void *watch_main(void *arg) {
    symm__ctx *ctx = arg;
    const int news = symm__boot_news_fd(ctx->boot);
    for (;;) {
        struct pollfd p[2] = {{.fd = ctx->watch_stop_fd, .events = POLLIN},
                              {.fd = news, .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 || p[0].revents) break;
        if (!p[1].revents) continue;
        if (atomic_load(&ctx->failed)) break;
        if (symm__boot_check_now(ctx->boot) != SYMM_SUCCESS) {
            SYMM_INFO(SYMM_LOG_BOOTSTRAP, "job watcher: %s; GPU-side waits of this context end",
                      symm__last_error());
            symm__mark_failed(ctx);
            break;
        }
        /* Readable but no failure: the reply to a bootstrap collective that
         * another thread is reading, or a message still arriving. Let it be
         * read, then look again (or stop). */
        struct pollfd q = {.fd = ctx->watch_stop_fd, .events = POLLIN};
        if (poll(&q, 1, 2) > 0) break;
    }
    return NULL;
}

void symm__watch_start(symm__ctx *ctx) {
    ctx->watch_stop_fd = -1;
    if (!ctx->ops || !ctx->ops->peer_failed || ctx->n_pes < 2) return;
    if (symm__boot_news_fd(ctx->boot) < 0) return;
    ctx->watch_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ctx->watch_stop_fd < 0) {
        SYMM_WARN(SYMM_LOG_INIT, "job watcher not started (eventfd: %s): waits in kernels end "
                  "on a dead PE only when a host call notices it", strerror(errno));
        return;
    }
    /* The application's signals are not for this thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&ctx->watch_thread, NULL, watch_main, ctx);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        SYMM_WARN(SYMM_LOG_INIT, "job watcher not started (pthread_create: %s): waits in kernels "
                  "end on a dead PE only when a host call notices it", strerror(rc));
        close(ctx->watch_stop_fd);
        ctx->watch_stop_fd = -1;
        return;
    }
    ctx->watching = true;
}

void symm__watch_stop(symm__ctx *ctx) {
    if (ctx->watching) {
        uint64_t one = 1;
        while (write(ctx->watch_stop_fd, &one, sizeof one) < 0 && errno == EINTR) {
        }
        pthread_join(ctx->watch_thread, NULL);
        ctx->watching = false;
    }
    if (ctx->watch_stop_fd >= 0) close(ctx->watch_stop_fd);
    ctx->watch_stop_fd = -1;
}
