/*
 * Every thread's native stack, printed once to stderr after SYMM_STACKS_S
 * seconds: a preload for runs that hang on machines without a debugger (the
 * lent GPU machines have no gdb). Not part of the library.
 *
 *   cc -shared -fPIC -O1 -o stackdump.so tests/tools/stackdump.c -lpthread
 *   LD_PRELOAD=$PWD/stackdump.so SYMM_STACKS_S=60 python3 ...
 *
 * A process prints only when a loaded module's path contains SYMM_STACKS_IF
 * ("libsymm_runtime" when unset, "" for any process), so the launcher,
 * timeout and the like stay quiet. A thread at a time gets a signal whose
 * handler prints its frames, one a line:
 *   stackdump pid 812 tid 815 (python3) #3 /path/libcuda.so.1+0x2d81f0 cuStreamSynchronize+0x40
 * module and offset for `addr2line -f -e MODULE OFFSET` (the runtime's
 * static functions), and the nearest exported symbol. A thread that does not
 * answer within a second (in an uninterruptible call) is named and skipped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 48

static int dump_sig;
static atomic_int answered;

static void say(const char *s, size_t n) {
    while (n) {
        ssize_t w = write(2, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void thread_name(pid_t tid, char *out, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, out, cap - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) n = 0;
    out[n] = 0;
    char *nl = strchr(out, '\n');
    if (nl) *nl = 0;
}

/* Runs in the signalled thread. snprintf and dladdr are not on the list of
 * async-signal-safe functions; the process is stuck already, and this is
 * what a debugger would have shown. */
static void on_dump(int s, siginfo_t *info, void *uc) {
    (void)s;
    (void)info;
    (void)uc;
    const int saved = errno;
    void *f[MAX_FRAMES];
    const int n = backtrace(f, MAX_FRAMES);
    const pid_t tid = (pid_t)syscall(SYS_gettid);
    char name[32], line[768];
    thread_name(tid, name, sizeof name);
    for (int i = 0; i < n; i++) {
        Dl_info d;
        memset(&d, 0, sizeof d);
        const uintptr_t a = (uintptr_t)f[i];
        int k;
        if (dladdr(f[i], &d) && d.dli_fname) {
            k = snprintf(line, sizeof line, "stackdump pid %d tid %d (%s) #%d %s+0x%lx", (int)getpid(),
                         (int)tid, name, i, d.dli_fname,
                         (unsigned long)(a - (uintptr_t)d.dli_fbase));
            if (d.dli_sname && k > 0 && (size_t)k < sizeof line)
                k += snprintf(line + k, sizeof line - (size_t)k, " %s+0x%lx", d.dli_sname,
                              (unsigned long)(a - (uintptr_t)d.dli_saddr));
        } else {
            k = snprintf(line, sizeof line, "stackdump pid %d tid %d (%s) #%d 0x%lx", (int)getpid(),
                         (int)tid, name, i, (unsigned long)a);
        }
        if (k < 0) continue;
        if ((size_t)k >= sizeof line - 1) k = (int)sizeof line - 2;
        line[k++] = '\n';
        say(line, (size_t)k);
    }
    atomic_fetch_add(&answered, 1);
    errno = saved;
}

static int has_module(struct dl_phdr_info *info, size_t size, void *want) {
    (void)size;
    return info->dlpi_name && strstr(info->dlpi_name, want) != NULL;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) < 0 && errno == EINTR) {
    }
}

static void *dumper(void *arg) {
    const long after_ms = (long)(intptr_t)arg;
    sleep_ms(after_ms);
    const char *want = getenv("SYMM_STACKS_IF");
    if (!want) want = "libsymm_runtime";
    if (*want && !dl_iterate_phdr(has_module, (void *)want)) return NULL;
    char head[128];
    int k = snprintf(head, sizeof head, "stackdump pid %d: every thread's stack after %ld ms\n",
                     (int)getpid(), after_ms);
    say(head, (size_t)k);
    const pid_t me = (pid_t)syscall(SYS_gettid);
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return NULL;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        const pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == me) continue;
        const int before = atomic_load(&answered);
        if (syscall(SYS_tgkill, getpid(), tid, dump_sig) != 0) continue;
        int waited = 0;
        while (atomic_load(&answered) == before && waited < 1000) {
            sleep_ms(5);
            waited += 5;
        }
        if (atomic_load(&answered) == before) {
            char name[32];
            thread_name(tid, name, sizeof name);
            k = snprintf(head, sizeof head, "stackdump pid %d tid %d (%s): no answer in 1 s\n",
                         (int)getpid(), (int)tid, name);
            say(head, (size_t)k);
        }
    }
    closedir(dir);
    k = snprintf(head, sizeof head, "stackdump pid %d: done\n", (int)getpid());
    say(head, (size_t)k);
    return NULL;
}

__attribute__((constructor)) static void stackdump_start(void) {
    const char *s = getenv("SYMM_STACKS_S");
    if (!s || !*s) return;
    const double sec = strtod(s, NULL);
    if (!(sec > 0)) return;
    void *warm[2];
    (void)backtrace(warm, 2); /* loads the unwinder now, not inside the handler */
    dump_sig = SIGRTMIN + 5;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_dump;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(dump_sig, &sa, NULL) != 0) return;
    /* the dumper takes no signal of the process's own */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    (void)pthread_create(&t, &at, dumper, (void *)(intptr_t)(long)(sec * 1000.0));
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}
