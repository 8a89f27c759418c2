/*
 * probe_timeslice: what work a process puts on a GPU waits for while another
 * process holds that GPU, measured without symm.
 *
 * Two PEs of simulated hosts on one GPU are two processes, two CUDA contexts
 * the GPU time-slices. The GPU proxy's target (the process whose heap a
 * proxied put lands in) copies into its GPU memory while the initiator's
 * kernel (or stream-form kernel) waits for that very copy. This probe
 * measures the target's side: a "holder" process (forked before any CUDA
 * call) is put in one state, and the "target" process times its own GPU
 * work in that state:
 *
 *   idle     the holder has a context and nothing running
 *   kernel   the holder's one-thread kernel spins on a host-mapped word
 *            (what a proxied device put's or a stream form's wait is)
 *   waitval  the holder's stream waits on cuStreamWaitValue32 for the word
 *            (no kernel resident: a front-end semaphore wait)
 *   owngrid  the holder is idle; the target itself runs a cooperative grid
 *            that holds every SM and spins (a stream form's alltoallv grid
 *            waiting for the proxy), and its work goes on another stream;
 *            work that has not finished after 1 s is shown as -1
 *   qwait    the holder is idle; 16 streams of the target wait in
 *            cuStreamWaitValue32 and its work goes on a stream made after
 *            them: -1 says it waited behind another stream's wait (more
 *            streams than hardware queues, CUDA_DEVICE_MAX_CONNECTIONS, 8
 *            by default). Not more than 16: on driver 580.159.04 (H100,
 *            2026-12-06) cuStreamCreate blocked for good once 33 streams of
 *            the process waited (PROBE_TRACE=1 PROBE_ONLY_Q=1: a line per
 *            step, the q columns alone)
 *   qprio    as qwait, the work on a stream of the greatest priority
 *
 * The target's work, each enqueued on its own non-blocking stream and waited
 * for (median of ITERS, microseconds): a host-to-device copy from pinned
 * memory of 8 B to 1 MiB, a device-to-host copy of 8 B and 64 KiB, a device-
 * to-device copy of 8 B and 16 KiB, a staged host-to-device copy (64 KiB
 * into a scratch buffer, then device-to-device),
 * cuStreamWriteValue64, a one-thread kernel.
 *
 *   probe_timeslice [iters]      (default 40)
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <vector>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "probe_timeslice: %s: %s (line %d)\n", #x,                 \
                    cudaGetErrorString(e_), __LINE__);                                 \
            return 1;                                                                  \
        }                                                                              \
    } while (0)
#define CKD(x)                                                                         \
    do {                                                                               \
        CUresult r_ = (x);                                                             \
        if (r_ != CUDA_SUCCESS) {                                                      \
            const char *s_ = "?";                                                      \
            cuGetErrorString(r_, &s_);                                                 \
            fprintf(stderr, "probe_timeslice: %s: %s (line %d)\n", #x, s_, __LINE__); \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

/* Shared between the two processes (an anonymous shared mapping made before
 * fork); the holder registers it with CUDA so its GPU reads `release`. */
struct shared_words {
    volatile uint32_t release; /* the holder's GPU wait ends when it reaches `epoch` */
    volatile uint32_t started; /* the holder's kernel is running (kernel state) */
    volatile int cmd;          /* 0 none, 1 idle, 2 kernel, 3 waitval, 9 quit */
    volatile int ack;          /* the holder's answer: the state's number once in it, -1 failed */
    char pad[4096 - 16];
};

enum { ST_IDLE = 1, ST_KERNEL = 2, ST_WAITVAL = 3, ST_QUIT = 9 };

__global__ void spin_until(volatile uint32_t *release, volatile uint32_t *started, uint32_t epoch) {
    *started = epoch;
    __threadfence_system();
    while (*release < epoch) {
    }
}

__global__ void nop_kernel(int *p) {
    if (p) *p = 1;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int holder(shared_words *w) {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CK(cudaHostRegister((void *)w, sizeof *w, cudaHostRegisterMapped));
    uint32_t *d_release = nullptr, *d_started = nullptr;
    CK(cudaHostGetDevicePointer((void **)&d_release, (void *)&w->release, 0));
    CK(cudaHostGetDevicePointer((void **)&d_started, (void *)&w->started, 0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    uint32_t epoch = 0;
    w->ack = ST_IDLE; /* ready */
    for (;;) {
        int c = w->cmd;
        if (c == 0 || c == w->ack) {
            usleep(100);
            continue;
        }
        /* leaving a state: end the GPU wait, let the stream drain */
        w->release = epoch;
        __sync_synchronize();
        CK(cudaStreamSynchronize(s));
        if (c == ST_QUIT) break;
        epoch++;
        if (c == ST_KERNEL) {
            spin_until<<<1, 1, 0, s>>>(d_release, d_started, epoch);
            CK(cudaGetLastError());
            double t0 = now_us();
            while (w->started != epoch) {
                if (now_us() - t0 > 5e6) {
                    fprintf(stderr, "probe_timeslice: the holder's kernel did not start\n");
                    w->ack = -1;
                    return 1;
                }
            }
        } else if (c == ST_WAITVAL) {
            CKD(cuStreamWaitValue32((CUstream)s, (CUdeviceptr)(uintptr_t)d_release, epoch,
                                    CU_STREAM_WAIT_VALUE_GEQ));
            usleep(1000); /* the front end reaches the wait */
        }
        w->ack = c;
    }
    cudaHostUnregister((void *)w);
    return 0;
}

static int set_state(shared_words *w, int st) {
    w->cmd = st;
    double t0 = now_us();
    while (w->ack != st) {
        if (w->ack == -1 || now_us() - t0 > 10e6) {
            fprintf(stderr, "probe_timeslice: the holder did not reach state %d\n", st);
            return 1;
        }
        usleep(50);
    }
    return 0;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/* One measurement: enqueue `what` on s, wait (host spin on cudaStreamQuery). */
enum { W_H2D, W_D2H, W_D2D, W_STAGED, W_WRITEVAL, W_KERNEL };
static int measure(int what, size_t bytes, int iters, cudaStream_t s, void *pinned, void *dev,
                   double *med, double bound_us) {
    std::vector<double> v;
    static const bool trace = getenv("PROBE_TRACE") != nullptr;
    for (int i = 0; i < iters; i++) {
        if (trace) fprintf(stderr, "measure %d %zu #%d: enqueue\n", what, bytes, i);
        double t0 = now_us();
        if (what == W_H2D) CK(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s));
        else if (what == W_D2H) CK(cudaMemcpyAsync(pinned, dev, bytes, cudaMemcpyDeviceToHost, s));
        else if (what == W_D2D)
            CK(cudaMemcpyAsync((char *)dev + (512 << 10), dev, bytes, cudaMemcpyDeviceToDevice, s));
        else if (what == W_STAGED) { /* a staged small copy (tried, withdrawn: 96ba71b) */
            CK(cudaMemcpyAsync((char *)dev + (512 << 10), pinned, 65536, cudaMemcpyHostToDevice,
                               s));
            CK(cudaMemcpyAsync(dev, (char *)dev + (512 << 10), bytes, cudaMemcpyDeviceToDevice, s));
        }
        else if (what == W_WRITEVAL)
            CKD(cuStreamWriteValue64((CUstream)s, (CUdeviceptr)(uintptr_t)dev, (cuuint64_t)i,
                                     CU_STREAM_WRITE_VALUE_DEFAULT));
        else {
            nop_kernel<<<1, 1, 0, s>>>((int *)dev);
            CK(cudaGetLastError());
        }
        if (trace) fprintf(stderr, "measure %d %zu #%d: enqueued, waiting\n", what, bytes, i);
        cudaError_t e;
        while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
            if (bound_us > 0 && now_us() - t0 > bound_us) {
                *med = -1; /* stuck: the caller frees the GPU */
                return 0;
            }
        }
        CK(e);
        v.push_back(now_us() - t0);
    }
    *med = median(v);
    return 0;
}

/* The target's own grid: every SM, spinning until *rel reaches epoch. */
__global__ void grid_spin(volatile uint32_t *rel, uint32_t epoch) {
    while (*rel < epoch) {
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0); /* what was printed survives a timeout */
    int iters = argc > 1 ? atoi(argv[1]) : 40;
    if (iters < 3) iters = 3;
    shared_words *w = (shared_words *)mmap(nullptr, sizeof(shared_words), PROT_READ | PROT_WRITE,
                                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED) {
        perror("probe_timeslice: mmap");
        return 1;
    }
    memset((void *)w, 0, sizeof *w);
    pid_t pid = fork();
    if (pid < 0) {
        perror("probe_timeslice: fork");
        return 1;
    }
    if (pid == 0) _exit(holder(w));

    int rc = 0;
    {
        double t0 = now_us();
        while (w->ack != ST_IDLE) {
            if (w->ack == -1 || now_us() - t0 > 60e6 || waitpid(pid, nullptr, WNOHANG) == pid) {
                fprintf(stderr, "probe_timeslice: the holder did not start\n");
                return 1;
            }
            usleep(1000);
        }
    }
    CK(cudaSetDevice(0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t maxb = 1u << 20;
    void *pinned = nullptr, *dev = nullptr;
    CK(cudaMallocHost(&pinned, maxb));
    CK(cudaMalloc(&dev, maxb));
    memset(pinned, 1, maxb);

    struct row {
        const char *name;
        int what;
        size_t bytes;
    } rows[] = {
        {"h2d 8 B", W_H2D, 8},          {"h2d 1 KiB", W_H2D, 1024},
        {"h2d 16 KiB", W_H2D, 16384},   {"h2d 64 KiB", W_H2D, 65536},
        {"h2d 256 KiB", W_H2D, 262144}, {"h2d 1 MiB", W_H2D, 1u << 20},
        {"d2h 8 B", W_D2H, 8},          {"d2h 64 KiB", W_D2H, 65536},
        {"d2d 8 B", W_D2D, 8},          {"d2d 16 KiB", W_D2D, 16384},
        {"staged 8 B", W_STAGED, 8},    {"staged 16 KiB", W_STAGED, 16384},
        {"writeval64", W_WRITEVAL, 8},  {"kernel", W_KERNEL, 0},
    };
    const int nrows = sizeof rows / sizeof rows[0];
    const int states[] = {ST_IDLE, ST_KERNEL, ST_WAITVAL};
    double med[6][16];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 16; j++) med[i][j] = -3; /* not measured */
    const bool only_q = getenv("PROBE_ONLY_Q") != nullptr; /* diagnosis: the q columns alone */
    for (int si = 0; si < 3 && !rc && !only_q; si++) {
        if (set_state(w, states[si])) {
            rc = 1;
            break;
        }
        for (int r = 0; r < nrows && !rc; r++)
            rc = measure(rows[r].what, rows[r].bytes, iters, s, pinned, dev, &med[si][r], 0);
    }
    /* owngrid: the holder idle, this process's cooperative grid on every SM */
    if (!rc && set_state(w, ST_IDLE)) rc = 1;
    uint32_t *rel = nullptr, *d_rel = nullptr, epoch = 0;
    cudaStream_t gs;
    int per_sm = 0, sms = 0;
    if (!rc) {
        CK(cudaHostAlloc((void **)&rel, 4096, cudaHostAllocMapped));
        CK(cudaHostGetDevicePointer((void **)&d_rel, rel, 0));
        *(volatile uint32_t *)rel = 0;
        CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_spin, 1024, 0));
    }
    for (int r = 0; r < nrows && !rc && !only_q; r++) {
        epoch++;
        void *args[] = {(void *)&d_rel, (void *)&epoch};
        CK(cudaLaunchCooperativeKernel((const void *)grid_spin, dim3(sms * per_sm), dim3(1024),
                                       args, 0, gs));
        usleep(2000); /* the grid is resident */
        rc = measure(rows[r].what, rows[r].bytes, iters < 10 ? iters : 10, s, pinned, dev,
                     &med[3][r], 1e6);
        *(volatile uint32_t *)rel = epoch;
        __sync_synchronize();
        CK(cudaStreamSynchronize(gs));
        CK(cudaStreamSynchronize(s)); /* a stuck piece of work finishes now */
    }
    fprintf(stderr, "probe_timeslice: %s (rc %d)\n", "owngrid measured", rc);
    /* qwait: QWAIT streams of this process each wait in cuStreamWaitValue32
     * on a word nobody sets yet; the work goes on a stream made after them
     * (more streams than the device's hardware queues: CUDA_DEVICE_MAX_
     * CONNECTIONS, 8 by default). -1: the work waited behind another
     * stream's wait (a shared hardware queue). */
    enum { QWAIT = 16 };
    cudaStream_t qs[QWAIT], ms;
    uint32_t *d_qrel = d_rel ? d_rel + 16 : nullptr;
    if (!rc) {
        rel[16] = 0;
        for (int i = 0; i < QWAIT; i++) {
            CK(cudaStreamCreateWithFlags(&qs[i], cudaStreamNonBlocking));
            if (getenv("PROBE_TRACE")) fprintf(stderr, "qwait: stream %d made\n", i);
            CKD(cuStreamWaitValue32((CUstream)qs[i], (CUdeviceptr)(uintptr_t)d_qrel, 1,
                                    CU_STREAM_WAIT_VALUE_GEQ));
            if (getenv("PROBE_TRACE")) fprintf(stderr, "qwait: stream %d waits\n", i);
        }
        CK(cudaStreamCreateWithFlags(&ms, cudaStreamNonBlocking));
        for (int r = 0; r < nrows && !rc; r++)
            rc = measure(rows[r].what, rows[r].bytes, 5, ms, pinned, dev, &med[4][r], 1e6);
    }
    fprintf(stderr, "probe_timeslice: %s (rc %d)\n", "qwait measured", rc);
    /* qprio: the same waiters; the work on a stream of the greatest priority */
    if (!rc) {
        int lo = 0, hi = 0;
        cudaStream_t ps;
        CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
        CK(cudaStreamCreateWithPriority(&ps, cudaStreamNonBlocking, hi));
        for (int r = 0; r < nrows && !rc; r++)
            rc = measure(rows[r].what, rows[r].bytes, 5, ps, pinned, dev, &med[5][r], 1e6);
    }
    fprintf(stderr, "probe_timeslice: qprio measured (rc %d)\n", rc);
    if (!rc) {
        *(volatile uint32_t *)&rel[16] = 1;
        __sync_synchronize();
        for (int i = 0; i < QWAIT; i++) CK(cudaStreamSynchronize(qs[i]));
        CK(cudaStreamSynchronize(ms));
    }
    fprintf(stderr, "probe_timeslice: %s (rc %d)\n", "waiters released", rc);
    if (!rc) {
        const char *mc = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
        printf("target's GPU work while another process on the same GPU is idle / has a kernel "
               "spinning / has a stream in cuStreamWaitValue32, while the target's own "
               "cooperative grid holds every SM (%d blocks of 1024), and on a stream made after "
               "%d of its streams that wait in cuStreamWaitValue32 (CUDA_DEVICE_MAX_CONNECTIONS="
               "%s); -1: not done after 1 s, -3: not measured; median of %d (owngrid: %d, "
               "qwait: 5), us\n",
               sms * per_sm, (int)QWAIT, mc ? mc : "unset", iters, iters < 10 ? iters : 10);
        printf("qprio: the same 16 waiters, the work on a stream of the greatest priority\n");
        printf("%-14s %9s %9s %9s %9s %9s %9s\n", "work", "idle", "kernel", "waitval",
               "owngrid", "qwait", "qprio");
        for (int r = 0; r < nrows; r++) {
            printf("%-14s", rows[r].name);
            for (int c = 0; c < 6; c++) printf(" %9.1f", med[c][r]);
            printf("\n");
        }
    }
    w->cmd = ST_QUIT; /* the holder leaves its loop; waitpid below */
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "probe_timeslice: the holder failed\n");
        rc = 1;
    }
    return rc;
}
