/*
 * CUDA backend, 2+ PEs: collectives through the backend's kernels, blocking
 * and on a stream: reduce for every dtype and op (odd length: vector body and
 * scalar tail), in place, broadcast, fcollect, collect, alltoall,
 * reducescatter, on the world team and on a split team.
 */
#include "gpu_test.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include <vector>

static const uint32_t all_dtypes[] = {
    SYMM_DTYPE_INT8,   SYMM_DTYPE_INT16,  SYMM_DTYPE_INT32,   SYMM_DTYPE_INT64,
    SYMM_DTYPE_UINT8,  SYMM_DTYPE_UINT16, SYMM_DTYPE_UINT32,  SYMM_DTYPE_UINT64,
    SYMM_DTYPE_FLOAT16, SYMM_DTYPE_BFLOAT16, SYMM_DTYPE_FLOAT32, SYMM_DTYPE_FLOAT64};

static bool is_float(uint32_t dt) {
    return dt == SYMM_DTYPE_FLOAT16 || dt == SYMM_DTYPE_BFLOAT16 || dt == SYMM_DTYPE_FLOAT32 ||
           dt == SYMM_DTYPE_FLOAT64;
}

/* Encode a small integral value as one element of dt (integers wrap). */
static void enc(uint32_t dt, int64_t x, void *out) {
    switch (dt) {
    case SYMM_DTYPE_INT8: { int8_t v = (int8_t)x; memcpy(out, &v, 1); break; }
    case SYMM_DTYPE_UINT8: { uint8_t v = (uint8_t)x; memcpy(out, &v, 1); break; }
    case SYMM_DTYPE_INT16: { int16_t v = (int16_t)x; memcpy(out, &v, 2); break; }
    case SYMM_DTYPE_UINT16: { uint16_t v = (uint16_t)x; memcpy(out, &v, 2); break; }
    case SYMM_DTYPE_INT32: { int32_t v = (int32_t)x; memcpy(out, &v, 4); break; }
    case SYMM_DTYPE_UINT32: { uint32_t v = (uint32_t)x; memcpy(out, &v, 4); break; }
    case SYMM_DTYPE_INT64:
    case SYMM_DTYPE_UINT64: memcpy(out, &x, 8); break;
    case SYMM_DTYPE_FLOAT16: { __half v = __float2half((float)x); memcpy(out, &v, 2); break; }
    case SYMM_DTYPE_BFLOAT16: { __nv_bfloat16 v = __float2bfloat16((float)x); memcpy(out, &v, 2); break; }
    case SYMM_DTYPE_FLOAT32: { float v = (float)x; memcpy(out, &v, 4); break; }
    case SYMM_DTYPE_FLOAT64: { double v = (double)x; memcpy(out, &v, 8); break; }
    }
}

/* Input element i of PE pe for op (values keep every result exact). */
static int64_t input(uint32_t op, int pe, uint64_t i) {
    switch (op) {
    case SYMM_OP_SUM: return (int64_t)(i % 5) + 1 + pe;
    case SYMM_OP_PROD: return 1 + (int64_t)((i + (uint64_t)pe) % 2);
    case SYMM_OP_MIN:
    case SYMM_OP_MAX: return (int64_t)((i * 13 + (uint64_t)pe * 7) % 50) + 1;
    default: return (int64_t)((i * 37 + (uint64_t)pe * 11) & 0x7f);
    }
}

static int64_t expected(uint32_t op, int n, uint64_t i) {
    int64_t acc = input(op, 0, i);
    for (int pe = 1; pe < n; pe++) {
        int64_t v = input(op, pe, i);
        switch (op) {
        case SYMM_OP_SUM: acc += v; break;
        case SYMM_OP_PROD: acc *= v; break;
        case SYMM_OP_MIN: acc = v < acc ? v : acc; break;
        case SYMM_OP_MAX: acc = v > acc ? v : acc; break;
        case SYMM_OP_AND: acc &= v; break;
        case SYMM_OP_OR: acc |= v; break;
        default: acc ^= v; break;
        }
    }
    return acc;
}

static void test_reduce_all(symm_ctx ctx, symm_team world, cudaStream_t s) {
    const uint64_t ne = 1001;
    int checked = 0;
    for (uint32_t dt : all_dtypes) {
        const size_t es = symm_dtype_size(dt);
        symm_buf src = NULL, dst = NULL;
        CHECK_OK(symm_buf_alloc(ctx, dt, ne, &src));
        CHECK_OK(symm_buf_alloc(ctx, dt, ne, &dst));
        std::vector<uint8_t> in(ne * es), want(ne * es), got(ne * es);
        for (uint32_t op = SYMM_OP_SUM; op <= SYMM_OP_XOR; op++) {
            if (is_float(dt) && op >= SYMM_OP_AND) {
                CHECK_STATUS(symm_reduce(world, dst, 0, src, 0, ne, op), SYMM_ERR_NOT_SUPPORTED);
                continue;
            }
            for (uint64_t i = 0; i < ne; i++) {
                enc(dt, input(op, gpu_me, i), &in[i * es]);
                enc(dt, expected(op, gpu_n, i), &want[i * es]);
            }
            for (int form = 0; form < 2; form++) {
                gpu_write(src, 0, in.data(), in.size());
                CUDA_OK(cudaMemset(gpu_ptr(dst), 0xee, ne * es));
                CUDA_OK(cudaDeviceSynchronize());
                CHECK_OK(symm_barrier_all(ctx));
                if (form == 0) {
                    CHECK_OK(symm_reduce(world, dst, 0, src, 0, ne, op));
                } else {
                    CHECK_OK(symm_reduce_on_stream(world, dst, 0, src, 0, ne, op, s));
                    CUDA_OK(cudaStreamSynchronize(s));
                }
                gpu_read(got.data(), dst, 0, got.size());
                for (uint64_t i = 0; i < ne; i++)
                    if (memcmp(&got[i * es], &want[i * es], es) != 0)
                        TEST_FAIL_("reduce dtype %u op %u form %d: element %llu differs", dt, op,
                                   form, (unsigned long long)i);
                checked++;
            }
        }
        CHECK_OK(symm_buf_free(dst));
        CHECK_OK(symm_buf_free(src));
    }
    if (gpu_me == 0) printf("reduce: %d dtype/op/form combinations checked\n", checked);
}

static void test_reduce_inplace(symm_ctx ctx, symm_team world, cudaStream_t s) {
    const uint64_t ne = 70001;
    symm_buf b = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, ne, &b));
    std::vector<int32_t> v(ne), got(ne);
    for (int form = 0; form < 2; form++) {
        for (uint64_t i = 0; i < ne; i++) v[i] = (int32_t)(i * 3 + (uint64_t)gpu_me);
        gpu_write(b, 0, v.data(), ne * 4);
        CHECK_OK(symm_barrier_all(ctx));
        if (form == 0) {
            CHECK_OK(symm_reduce(world, b, 0, b, 0, ne, SYMM_OP_SUM));
        } else {
            CHECK_OK(symm_reduce_on_stream(world, b, 0, b, 0, ne, SYMM_OP_SUM, s));
            CUDA_OK(cudaStreamSynchronize(s));
        }
        gpu_read(got.data(), b, 0, ne * 4);
        for (uint64_t i = 0; i < ne; i++) {
            int64_t want = 0;
            for (int pe = 0; pe < gpu_n; pe++) want += (int64_t)(i * 3 + (uint64_t)pe);
            if (got[i] != (int32_t)want)
                TEST_FAIL_("in-place reduce form %d: [%llu] = %d, expected %lld", form,
                           (unsigned long long)i, got[i], (long long)want);
        }
        CHECK_OK(symm_barrier_all(ctx));
    }
    CHECK_OK(symm_buf_free(b));
}

static int32_t pv(int pe, uint64_t blk, uint64_t i) {
    return (int32_t)(pe * 1000000 + (int)blk * 10000 + (int)i);
}

static void test_data_movement(symm_ctx ctx, symm_team t, cudaStream_t s) {
    const int n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const uint64_t ne = 777;
    symm_buf src = NULL, dst = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, ne * (uint64_t)n + 64, &src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, ne * (uint64_t)n + 64, &dst));
    std::vector<int32_t> h(ne * (uint64_t)n + 64), got(ne * (uint64_t)n + 64);
    for (int form = 0; form < 2; form++) {
        /* broadcast from the last team PE */
        const int root = n - 1;
        for (uint64_t i = 0; i < ne; i++) h[i] = pv(me, 0, i);
        gpu_write(src, 0, h.data(), ne * 4);
        CUDA_OK(cudaMemset(gpu_ptr(dst), 0, ne * 4));
        CUDA_OK(cudaDeviceSynchronize());
        CHECK_OK(symm_barrier_all(ctx));
        if (form == 0) CHECK_OK(symm_broadcast(t, dst, 0, src, 0, ne, root));
        else CHECK_OK(symm_broadcast_on_stream(t, dst, 0, src, 0, ne, root, s));
        CUDA_OK(cudaStreamSynchronize(s));
        gpu_read(got.data(), dst, 0, ne * 4);
        for (uint64_t i = 0; i < ne; i++) ASSERT_EQ(got[i], pv(root, 0, i));

        /* fcollect */
        CHECK_OK(symm_barrier_all(ctx));
        if (form == 0) CHECK_OK(symm_fcollect(t, dst, 0, src, 0, ne));
        else CHECK_OK(symm_fcollect_on_stream(t, dst, 0, src, 0, ne, s));
        CUDA_OK(cudaStreamSynchronize(s));
        gpu_read(got.data(), dst, 0, ne * (uint64_t)n * 4);
        for (int j = 0; j < n; j++)
            for (uint64_t i = 0; i < ne; i++) ASSERT_EQ(got[(uint64_t)j * ne + i], pv(j, 0, i));

        /* fcollect in place: my src is my own block of dst */
        for (uint64_t i = 0; i < ne; i++) h[i] = pv(me, 5, i);
        CUDA_OK(cudaMemset(gpu_ptr(dst), 0, ne * (uint64_t)n * 4));
        gpu_write(dst, (uint64_t)me * ne * 4, h.data(), ne * 4);
        CHECK_OK(symm_barrier_all(ctx));
        if (form == 0) CHECK_OK(symm_fcollect(t, dst, 0, dst, (uint64_t)me * ne, ne));
        else CHECK_OK(symm_fcollect_on_stream(t, dst, 0, dst, (uint64_t)me * ne, ne, s));
        CUDA_OK(cudaStreamSynchronize(s));
        gpu_read(got.data(), dst, 0, ne * (uint64_t)n * 4);
        for (int j = 0; j < n; j++)
            for (uint64_t i = 0; i < ne; i++) ASSERT_EQ(got[(uint64_t)j * ne + i], pv(j, 5, i));

        /* alltoall: block j of my src goes to PE j's block me */
        const uint64_t bl = 50;
        for (int j = 0; j < n; j++)
            for (uint64_t i = 0; i < bl; i++) h[(uint64_t)j * bl + i] = pv(me, (uint64_t)j, i);
        gpu_write(src, 0, h.data(), bl * (uint64_t)n * 4);
        CHECK_OK(symm_barrier_all(ctx));
        if (form == 0) CHECK_OK(symm_alltoall(t, dst, 0, src, 0, bl));
        else CHECK_OK(symm_alltoall_on_stream(t, dst, 0, src, 0, bl, s));
        CUDA_OK(cudaStreamSynchronize(s));
        gpu_read(got.data(), dst, 0, bl * (uint64_t)n * 4);
        for (int j = 0; j < n; j++)
            for (uint64_t i = 0; i < bl; i++)
                ASSERT_EQ(got[(uint64_t)j * bl + i], pv(j, (uint64_t)me, i));

        /* reducescatter (SUM): PE me gets the sum of every PE's block me */
        CHECK_OK(symm_barrier_all(ctx));
        if (form == 0) CHECK_OK(symm_reducescatter(t, dst, 0, src, 0, bl, SYMM_OP_SUM));
        else CHECK_OK(symm_reducescatter_on_stream(t, dst, 0, src, 0, bl, SYMM_OP_SUM, s));
        CUDA_OK(cudaStreamSynchronize(s));
        gpu_read(got.data(), dst, 0, bl * 4);
        for (uint64_t i = 0; i < bl; i++) {
            int64_t want = 0;
            for (int pe = 0; pe < n; pe++) want += pv(pe, (uint64_t)me, i);
            ASSERT_EQ(got[i], (int32_t)want);
        }
        CHECK_OK(symm_barrier_all(ctx));
    }
    /* collect (blocking only): PE j contributes j + 3 elements */
    const uint64_t mine = (uint64_t)me + 3;
    for (uint64_t i = 0; i < mine; i++) h[i] = pv(me, 9, i);
    gpu_write(src, 0, h.data(), mine * 4);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_collect(t, dst, 0, src, 0, mine));
    uint64_t total = 0;
    for (int j = 0; j < n; j++) total += (uint64_t)j + 3;
    gpu_read(got.data(), dst, 0, total * 4);
    uint64_t at = 0;
    for (int j = 0; j < n; j++)
        for (uint64_t i = 0; i < (uint64_t)j + 3; i++) ASSERT_EQ(got[at++], pv(j, 9, i));
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(dst));
    CHECK_OK(symm_buf_free(src));
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    symm_team world = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    test_reduce_all(ctx, world, s);
    test_reduce_inplace(ctx, world, s);
    test_data_movement(ctx, world, s);
    /* a split team (its own sync slot, zeroed at creation) */
    symm_team t = NULL;
    CHECK_OK(symm_team_split_strided(world, 0, 1, gpu_n, NULL, &t));
    ASSERT_TRUE(t != NULL);
    test_data_movement(ctx, t, s);
    for (int i = 0; i < 50; i++) CHECK_OK(symm_barrier_on_stream(t, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CHECK_OK(symm_barrier(t));
    CHECK_OK(symm_team_destroy(t));
    CUDA_OK(cudaStreamDestroy(s));
    gpu_test_fini(&ctx);
    return 0;
}
