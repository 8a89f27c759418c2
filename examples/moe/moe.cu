/*
 * moe: mixture-of-experts dispatch and combine with device-side counts.
 *
 * Each PE holds a batch of tokens (HID floats each) with a random expert per
 * token; PE p owns experts p*EXP_PER_PE .. (p+1)*EXP_PER_PE-1. On the GPU, a
 * kernel counts the tokens per destination PE (the counts exist only in GPU
 * memory) and packs them by destination; an all-to-all-v sends each token to
 * the PE of its expert; the expert applies y = x * (e + 1) + 0.5 (fmaf); a
 * second all-to-all-v (the counts received, sent back) returns every token
 * to the slot it left from; a last step unpacks into token order. The host
 * checks every output bitwise against the same expert computed locally.
 *
 * Done twice: once all in one kernel (symm_dev_team_alltoallvmem_block inside
 * the kernel), once as separate kernels with the stream form
 * (symm_dev_alltoallv_on_stream: one cooperative grid, a block a SM) between
 * them.
 *
 *   symmrun -n 2 ./moe          (CUDA backend; PEs share GPUs if need be)
 *   symmrun -n 2 --hosts 2 ./moe   (2 simulated hosts: the exchanges go
 *                                    through the GPU proxy and tcp)
 *
 * Build: nvcc -std=c++17 moe.cu -lsymm (no -rdc needed).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symm/symm.h>
#include <symm/symm_device.cuh>

#define HID 64        /* floats per token                       */
#define ROW (HID + 1) /* a packed row: expert id, then the token */
#define EXP_PER_PE 4
#define MAX_TOKENS 4096

struct Bufs {
    int ntok;           /* this PE's tokens                              */
    const float *x;     /* [ntok][HID] tokens (device memory)            */
    const int *expert;  /* [ntok] expert of each token                   */
    int *pos;           /* [ntok] packed slot of each token              */
    float *out;         /* [ntok][HID] combined results                  */
    float *send;        /* symmetric [MAX_TOKENS][ROW]: packed by PE     */
    float *recv;        /* symmetric [n_pes * MAX_TOKENS][ROW]           */
    float *back;        /* [MAX_TOKENS][ROW] tokens returned             */
    uint64_t *counts;   /* symmetric [n_pes]: tokens for each PE         */
    uint64_t *rcounts;  /* symmetric [n_pes]: tokens from each PE        */
    uint64_t *roffs;    /* [n_pes] where they start in recv              */
    uint64_t *bcounts, *boffs; /* [n_pes] the combine's counts/offsets  */
    int *bad;           /* tokens that reached the wrong PE              */
};

/* Count per destination PE and pack (thread 0 assigns slots in token order,
 * so the layout is deterministic; the copy is shared). */
__device__ void route(const symm_device_team &t, const Bufs &b) {
    if (threadIdx.x == 0) {
        for (int j = 0; j < t.n_pes; j++) b.counts[j] = 0;
        for (int i = 0; i < b.ntok; i++) b.counts[b.expert[i] / EXP_PER_PE]++;
        uint64_t start[64], off = 0; /* this example runs up to 64 PEs */
        for (int j = 0; j < t.n_pes; j++) {
            start[j] = off;
            off += b.counts[j];
        }
        for (int i = 0; i < b.ntok; i++) b.pos[i] = (int)start[b.expert[i] / EXP_PER_PE]++;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < b.ntok * ROW; k += blockDim.x) {
        const int i = k / ROW, c = k % ROW;
        b.send[(size_t)b.pos[i] * ROW + c] =
            c == 0 ? (float)b.expert[i] : b.x[(size_t)i * HID + c - 1];
    }
    __syncthreads();
}

__device__ void experts(const symm_device_team &t, const Bufs &b) {
    const uint64_t total = b.roffs[t.n_pes - 1] + b.rcounts[t.n_pes - 1];
    for (uint64_t k = threadIdx.x; k < total * ROW; k += blockDim.x) {
        float *row = b.recv + (k / ROW) * ROW;
        const int e = (int)row[0];
        if (k % ROW == 0) {
            if (e / EXP_PER_PE != t.my_pe) atomicAdd(b.bad, 1);
        } else {
            row[k % ROW] = fmaf(row[k % ROW], (float)(e + 1), 0.5f);
        }
    }
    __syncthreads();
}

__device__ void unpack(const Bufs &b) {
    for (int k = threadIdx.x; k < b.ntok * HID; k += blockDim.x)
        b.out[k] = b.back[(size_t)b.pos[k / HID] * ROW + 1 + k % HID];
}

/* Everything in one kernel: one block per PE. */
__global__ void moe_fused(symm_device_ctx c, symm_device_team t, Bufs b, int *status) {
    route(t, b);
    symm_status s1 = symm_dev_team_alltoallvmem_block(c, t, b.recv, (uint64_t)t.n_pes * MAX_TOKENS,
                                                      b.send, b.counts, ROW * sizeof(float),
                                                      b.rcounts, b.roffs);
    if (s1 == SYMM_SUCCESS) experts(t, b);
    /* combine: what came from PE j goes back to PE j (it left from there) */
    symm_status s2 = symm_dev_team_alltoallvmem_block(c, t, b.back, MAX_TOKENS, b.recv, b.rcounts,
                                                      ROW * sizeof(float), b.bcounts, b.boffs);
    if (s1 == SYMM_SUCCESS && s2 == SYMM_SUCCESS) unpack(b);
    if (threadIdx.x == 0) *status = s1 != SYMM_SUCCESS ? (int)s1 : (int)s2;
}

__global__ void route_kernel(symm_device_team t, Bufs b) { route(t, b); }
__global__ void experts_kernel(symm_device_team t, Bufs b) { experts(t, b); }
__global__ void unpack_kernel(Bufs b) { unpack(b); }

static int fail(const char *what, const char *why) {
    fprintf(stderr, "moe: %s: %s\n", what, why);
    return 1;
}
#define SY(call)                                                                         \
    do {                                                                                 \
        symm_status st_ = (call);                                                        \
        if (st_) return fail(#call, symm_last_error());                                  \
    } while (0)
#define CU(call)                                                                         \
    do {                                                                                 \
        cudaError_t ce_ = (call);                                                        \
        if (ce_ != cudaSuccess) return fail(#call, cudaGetErrorString(ce_));             \
    } while (0)

static void *sym(symm_ctx ctx, uint32_t dtype, uint64_t count, symm_buf *b) {
    void *p = NULL;
    if (symm_buf_alloc(ctx, dtype, count, b) || symm_buf_ptr(*b, &p)) return NULL;
    return p;
}

int main(void) {
    symm_init_attr attr;
    SYMM_INIT_ATTR_INIT(&attr);
    attr.backend = SYMM_BACKEND_CUDA;
    symm_ctx ctx;
    symm_status st = symm_init(&attr, &ctx);
    if (st == SYMM_ERR_NO_DEVICE) {
        printf("SKIP: no usable GPU (%s)\n", symm_last_error());
        return 77;
    }
    if (st) return fail("symm_init", symm_last_error());
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    SY(symm_ctx_query(ctx, &info));
    CU(cudaSetDevice(info.device));
    symm_device_ctx dc;
    memset(&dc, 0, sizeof dc);
    dc.struct_size = sizeof dc;
    SY(symm_device_ctx_get(ctx, &dc));
    const int me = dc.my_pe, np = dc.n_pes;
    if (np > 64) return fail("setup", "this example runs up to 64 PEs");
    /* A PE without a peer_base (another host's, e.g. under symmrun --hosts 2)
     * is reached through the proxy when the context has rings (1.3). */
    int proxied = 0;
    for (int pe = 0; pe < np; pe++) {
        if (dc.peer_base[pe]) continue;
        if (dc.n_rings == 0) {
            printf("SKIP: no usable GPU (PE %d is not load/store reachable, and no proxy)\n", pe);
            return 77;
        }
        proxied++;
    }
    symm_team world;
    SY(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    symm_device_team dt;
    memset(&dt, 0, sizeof dt);
    dt.struct_size = sizeof dt;
    SY(symm_device_team_get(world, &dt));

    /* this PE's tokens and their experts (random, uneven across PEs) */
    const int ntok = 1000 + 379 * me % 2000;
    const int nexp = EXP_PER_PE * np;
    float *hx = (float *)malloc(sizeof(float) * ntok * HID);
    int *he = (int *)malloc(sizeof(int) * ntok);
    srand(1234 + 77 * me);
    for (int i = 0; i < ntok; i++) {
        he[i] = rand() % nexp;
        for (int h = 0; h < HID; h++) hx[i * HID + h] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
    }
    Bufs b;
    memset(&b, 0, sizeof b);
    b.ntok = ntok;
    float *dx;
    int *de;
    CU(cudaMalloc(&dx, sizeof(float) * ntok * HID));
    CU(cudaMalloc(&de, sizeof(int) * ntok));
    CU(cudaMemcpy(dx, hx, sizeof(float) * ntok * HID, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(de, he, sizeof(int) * ntok, cudaMemcpyHostToDevice));
    b.x = dx;
    b.expert = de;
    CU(cudaMalloc(&b.pos, sizeof(int) * ntok));
    CU(cudaMalloc(&b.out, sizeof(float) * ntok * HID));
    CU(cudaMalloc(&b.back, sizeof(float) * MAX_TOKENS * ROW));
    CU(cudaMalloc(&b.roffs, sizeof(uint64_t) * np));
    CU(cudaMalloc(&b.bcounts, sizeof(uint64_t) * np));
    CU(cudaMalloc(&b.boffs, sizeof(uint64_t) * np));
    CU(cudaMalloc(&b.bad, sizeof(int) * 3));
    symm_buf bs, br, bc, brc;
    b.send = (float *)sym(ctx, SYMM_DTYPE_FLOAT32, (uint64_t)MAX_TOKENS * ROW, &bs);
    b.recv = (float *)sym(ctx, SYMM_DTYPE_FLOAT32, (uint64_t)np * MAX_TOKENS * ROW, &br);
    b.counts = (uint64_t *)sym(ctx, SYMM_DTYPE_UINT64, (uint64_t)np, &bc);
    b.rcounts = (uint64_t *)sym(ctx, SYMM_DTYPE_UINT64, (uint64_t)np, &brc);
    if (!b.send || !b.recv || !b.counts || !b.rcounts) return fail("symm_buf_alloc", symm_last_error());
    int *status = b.bad + 1; /* dispatch's, then combine's */
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    /* Under CUDA's lazy loading a kernel is loaded at its first launch, and the
     * load waits for the device's queued work: a kernel launched for the first
     * time while the dispatch's grid waits for a PE of another host can hang
     * the job. So the kernels are loaded before any stream waits (docs/
     * PROXY.md "Lazy loading"; GPU_TEST_NO_WARMUP=1 leaves them lazy). */
    if (!getenv("GPU_TEST_NO_WARMUP")) {
        cudaFuncAttributes fa;
        CU(cudaFuncGetAttributes(&fa, moe_fused));
        CU(cudaFuncGetAttributes(&fa, route_kernel));
        CU(cudaFuncGetAttributes(&fa, experts_kernel));
        CU(cudaFuncGetAttributes(&fa, unpack_kernel));
    }
    float *got = (float *)malloc(sizeof(float) * ntok * HID);
    int errors = 0;
    for (int pass = 0; pass < 2; pass++) {
        CU(cudaMemset(b.out, 0, sizeof(float) * ntok * HID));
        CU(cudaMemset(b.bad, 0, sizeof(int) * 3));
        CU(cudaDeviceSynchronize());
        if (pass == 0) {
            moe_fused<<<1, 512, 0, s>>>(dc, dt, b, status);
            CU(cudaMemsetAsync(status + 1, 0, sizeof(int), s));
        } else {
            const size_t row = ROW * sizeof(float);
            /* GPU_TEST_TRACE: a line a step on stderr (where a hang is) */
            const bool tr = getenv("GPU_TEST_TRACE") != NULL;
            route_kernel<<<1, 512, 0, s>>>(dt, b);
            if (tr) fprintf(stderr, "[trace pe %d] moe: route launched\n", me);
            CU(symm_dev_alltoallv_on_stream(dc, dt, b.recv, (uint64_t)np * MAX_TOKENS, b.send,
                                            b.counts, row, b.rcounts, b.roffs, status, s));
            if (tr) fprintf(stderr, "[trace pe %d] moe: dispatch enqueued\n", me);
            experts_kernel<<<1, 512, 0, s>>>(dt, b);
            if (tr) fprintf(stderr, "[trace pe %d] moe: experts launched\n", me);
            CU(symm_dev_alltoallv_on_stream(dc, dt, b.back, MAX_TOKENS, b.recv, b.rcounts, row,
                                            b.bcounts, b.boffs, status + 1, s));
            if (tr) fprintf(stderr, "[trace pe %d] moe: combine enqueued\n", me);
            unpack_kernel<<<1, 512, 0, s>>>(b);
            if (tr) fprintf(stderr, "[trace pe %d] moe: unpack launched\n", me);
        }
        CU(cudaGetLastError());
        CU(cudaStreamSynchronize(s));
        int h[3];
        CU(cudaMemcpy(h, b.bad, sizeof h, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(got, b.out, sizeof(float) * ntok * HID, cudaMemcpyDeviceToHost));
        int wrong = 0;
        for (int i = 0; i < ntok; i++)
            for (int k = 0; k < HID; k++) {
                float want = fmaf(hx[i * HID + k], (float)(he[i] + 1), 0.5f);
                if (memcmp(&want, &got[i * HID + k], sizeof want)) wrong++;
            }
        printf("[pe %d/%d] moe %s (%d peers through the proxy): %d tokens, status %s, "
               "%d misrouted, %d wrong values\n", me, np, pass ? "stream form" : "fused kernel",
               proxied, ntok, symm_status_string((symm_status)(h[1] ? h[1] : h[2])), h[0],
               wrong);
        errors += h[0] + wrong + (h[1] != 0) + (h[2] != 0);
        SY(symm_barrier_all(ctx));
    }
    symm_buf_free(brc);
    symm_buf_free(bc);
    symm_buf_free(br);
    symm_buf_free(bs);
    symm_finalize(&ctx);
    return errors ? 1 : 0;
}
