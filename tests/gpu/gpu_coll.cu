/*
 * CUDA backend, 2+ PEs: collectives through the backend's kernels, blocking
 * and on a stream: reduce and reducescatter for every dtype and op (odd
 * length: vector body and scalar tail), in place, broadcast, fcollect,
 * collect, alltoall, alltoallv (the C ABI's, counts made on the GPU), on the
 * world team and on a split team; sizes around the one-shot LL thresholds,
 * unaligned and in place, hundreds of calls back to back, the same shapes
 * called again and again with new data, and a replayed CUDA graph. meson runs it also with
 * SYMM_CUDA_COLL_ALGO=ll (LL up to 512 KiB per pair) and =twoshot.
 */
#include "gpu_test.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include <chrono>
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

/* Every dtype and op: an all-reduce of ne elements, then a reduce-scatter of
 * ne elements a PE (block j of PE pe holds input(op, pe, j * ne + i)), each
 * blocking and on a stream, against the exact expected values. */
static void test_reduce_all(symm_ctx ctx, symm_team world, cudaStream_t s) {
    const uint64_t ne = 1001, nall = ne * (uint64_t)gpu_n;
    int checked = 0;
    for (uint32_t dt : all_dtypes) {
        const size_t es = symm_dtype_size(dt);
        symm_buf src = NULL, dst = NULL;
        CHECK_OK(symm_buf_alloc(ctx, dt, nall, &src));
        CHECK_OK(symm_buf_alloc(ctx, dt, ne, &dst));
        std::vector<uint8_t> in(ne * es), want(ne * es), got(ne * es), in_rs(nall * es);
        for (uint32_t op = SYMM_OP_SUM; op <= SYMM_OP_XOR; op++) {
            if (is_float(dt) && op >= SYMM_OP_AND) {
                CHECK_STATUS(symm_reduce(world, dst, 0, src, 0, ne, op), SYMM_ERR_NOT_SUPPORTED);
                continue;
            }
            /* one kind (0: all-reduce of in, 1: reduce-scatter of in_rs), both
             * forms, against want */
            auto check = [&](int rs, const std::vector<uint8_t> &input_bytes) {
                for (int form = 0; form < 2; form++) {
                    gpu_write(src, 0, input_bytes.data(), input_bytes.size());
                    CUDA_OK(cudaMemset(gpu_ptr(dst), 0xee, ne * es));
                    CUDA_OK(cudaDeviceSynchronize());
                    CHECK_OK(symm_barrier_all(ctx));
                    if (form == 0) {
                        CHECK_OK(rs ? symm_reducescatter(world, dst, 0, src, 0, ne, op)
                                    : symm_reduce(world, dst, 0, src, 0, ne, op));
                    } else {
                        CHECK_OK(rs ? symm_reducescatter_on_stream(world, dst, 0, src, 0, ne, op, s)
                                    : symm_reduce_on_stream(world, dst, 0, src, 0, ne, op, s));
                        CUDA_OK(cudaStreamSynchronize(s));
                    }
                    gpu_read(got.data(), dst, 0, got.size());
                    for (uint64_t i = 0; i < ne; i++)
                        if (memcmp(&got[i * es], &want[i * es], es) != 0)
                            TEST_FAIL_("%s dtype %u op %u form %d: element %llu differs",
                                       rs ? "reduce-scatter" : "reduce", dt, op, form,
                                       (unsigned long long)i);
                    checked++;
                }
            };
            for (uint64_t i = 0; i < ne; i++) {
                enc(dt, input(op, gpu_me, i), &in[i * es]);
                enc(dt, expected(op, gpu_n, i), &want[i * es]);
            }
            check(0, in);
            for (uint64_t i = 0; i < nall; i++) enc(dt, input(op, gpu_me, i), &in_rs[i * es]);
            for (uint64_t i = 0; i < ne; i++)
                enc(dt, expected(op, gpu_n, (uint64_t)gpu_me * ne + i), &want[i * es]);
            check(1, in_rs);
        }
        CHECK_OK(symm_buf_free(dst));
        CHECK_OK(symm_buf_free(src));
    }
    if (gpu_me == 0)
        printf("reduce, reduce-scatter: %d dtype/op/form/kind combinations checked\n", checked);
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

/* An nbi put into this PE's src that no quiet waited for, then a blocking
 * reduce of that src: the reduce runs on the team's stream, which follows
 * the context's pending nbi work (cuda_state.c symm__cu_lane), so it reads the
 * put's data, not what was there before. On a team of one PE (a row of
 * split_2d with xrange 1) the reduce is one copy kernel enqueued at once (no
 * agree, no peer), and the put is 128 MiB from pinned host memory
 * (milliseconds of DMA), so a reduce that did not wait reads zeros: nearly
 * every element was stale when the wait was taken out (docs/GPU-RESULTS.md
 * "2026-11-29: lanes, ranges, teams out of step", calls 3-6). */
static void test_nbi_then_blocking(symm_ctx ctx, symm_team world) {
    const uint64_t ne = 32u << 20;
    symm_team row = NULL, col = NULL;
    CHECK_OK(symm_team_split_2d(world, 1, NULL, NULL, &row, &col));
    ASSERT_EQ(symm_team_n_pes(row), 1);
    symm_buf src = NULL, dst = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, ne, &src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, ne, &dst));
    int32_t *host = NULL;
    CUDA_OK(cudaMallocHost((void **)&host, ne * 4));
    for (uint64_t i = 0; i < ne; i++) host[i] = (int32_t)(i * 5 + (uint64_t)gpu_me + 1);
    /* the team's first blocking call makes its stream: before the put, so
     * that the put and the reduce are all this case orders */
    CHECK_OK(symm_reduce(row, dst, 0, src, 0, 1, SYMM_OP_SUM));
    CUDA_OK(cudaMemset(gpu_ptr(src), 0, ne * 4));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_put_nbi(src, 0, host, ne, gpu_me));
    CHECK_OK(symm_reduce(row, dst, 0, src, 0, ne, SYMM_OP_SUM));
    std::vector<int32_t> got(ne);
    gpu_read(got.data(), dst, 0, ne * 4);
    for (uint64_t i = 0; i < ne; i++)
        if (got[i] != host[i])
            TEST_FAIL_("reduce after an nbi put into src: [%llu] = %d, expected %d (the reduce "
                       "overtook the put)", (unsigned long long)i, got[i], host[i]);
    CHECK_OK(symm_quiet(ctx));
    CUDA_OK(cudaFreeHost(host));
    CHECK_OK(symm_buf_free(dst));
    CHECK_OK(symm_buf_free(src));
    CHECK_OK(symm_team_destroy(col));
    CHECK_OK(symm_team_destroy(row));
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

/* Sizes around the one-shot LL algorithm's thresholds (128 KiB per pair for
 * teams of up to 4 PEs, 32 KiB for 5-8, 512 KiB for all-gather and
 * all-to-all on 2 PEs; capacity SYMM_CUDA_LL_BYTES, the largest threshold by
 * default) and above them, odd ones included, and one above the size from
 * which a 3-PE all-gather pulls: every data kind, blocking and on a stream,
 * checked element by element. */
static void test_sizes(symm_ctx ctx, symm_team t, cudaStream_t s) {
    const int n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const uint64_t sizes[] = {1, 2, 3, 255, 1023, 4095, 4096, 4097, 8191, 8193, 16383, 16384,
                              16385, 32767, 32768, 32769, 50001, 65535, 65536, 65537, 70001,
                              131071, 131072, 131073,
                              /* above 2 MiB a PE: a 3-PE all-gather pulls (cuda_tuning.c symm__cu_copy_pulls) */
                              600001};
    const uint64_t maxe = 600001;
    symm_buf src = NULL, dst = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, maxe * (uint64_t)n, &src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, maxe * (uint64_t)n, &dst));
    std::vector<int32_t> h(maxe * (uint64_t)n), got(maxe * (uint64_t)n);
    int checked = 0;
    for (uint64_t ne : sizes) {
        for (int form = 0; form < 2; form++) {
            /* all-reduce */
            for (uint64_t i = 0; i < ne; i++) h[i] = pv(me, 1, i);
            gpu_write(src, 0, h.data(), ne * 4);
            CUDA_OK(cudaMemset(gpu_ptr(dst), 0xee, ne * 4));
            CUDA_OK(cudaDeviceSynchronize());
            CHECK_OK(symm_barrier_all(ctx));
            if (form == 0) CHECK_OK(symm_reduce(t, dst, 0, src, 0, ne, SYMM_OP_SUM));
            else CHECK_OK(symm_reduce_on_stream(t, dst, 0, src, 0, ne, SYMM_OP_SUM, s));
            CUDA_OK(cudaStreamSynchronize(s));
            gpu_read(got.data(), dst, 0, ne * 4);
            for (uint64_t i = 0; i < ne; i++) {
                int64_t want = 0;
                for (int pe = 0; pe < n; pe++) want += pv(pe, 1, i);
                if (got[i] != (int32_t)want)
                    TEST_FAIL_("all-reduce of %llu (form %d): [%llu] = %d, expected %lld",
                               (unsigned long long)ne, form, (unsigned long long)i, got[i],
                               (long long)want);
            }
            /* all-gather */
            CHECK_OK(symm_barrier_all(ctx));
            if (form == 0) CHECK_OK(symm_fcollect(t, dst, 0, src, 0, ne));
            else CHECK_OK(symm_fcollect_on_stream(t, dst, 0, src, 0, ne, s));
            CUDA_OK(cudaStreamSynchronize(s));
            gpu_read(got.data(), dst, 0, ne * (uint64_t)n * 4);
            for (int j = 0; j < n; j++)
                for (uint64_t i = 0; i < ne; i++)
                    if (got[(uint64_t)j * ne + i] != pv(j, 1, i))
                        TEST_FAIL_("all-gather of %llu (form %d): block %d [%llu] = %d",
                                   (unsigned long long)ne, form, j, (unsigned long long)i,
                                   got[(uint64_t)j * ne + i]);
            /* broadcast */
            const int root = (int)(ne % (uint64_t)n);
            CHECK_OK(symm_barrier_all(ctx));
            if (form == 0) CHECK_OK(symm_broadcast(t, dst, 0, src, 0, ne, root));
            else CHECK_OK(symm_broadcast_on_stream(t, dst, 0, src, 0, ne, root, s));
            CUDA_OK(cudaStreamSynchronize(s));
            gpu_read(got.data(), dst, 0, ne * 4);
            for (uint64_t i = 0; i < ne; i++)
                if (got[i] != pv(root, 1, i))
                    TEST_FAIL_("broadcast of %llu from %d (form %d): [%llu] = %d",
                               (unsigned long long)ne, root, form, (unsigned long long)i, got[i]);
            /* all-to-all and reduce-scatter: block j of my src is pv(me, j, .) */
            for (int j = 0; j < n; j++)
                for (uint64_t i = 0; i < ne; i++) h[(uint64_t)j * ne + i] = pv(me, (uint64_t)j, i);
            gpu_write(src, 0, h.data(), ne * (uint64_t)n * 4);
            CUDA_OK(cudaDeviceSynchronize());
            CHECK_OK(symm_barrier_all(ctx));
            if (form == 0) CHECK_OK(symm_alltoall(t, dst, 0, src, 0, ne));
            else CHECK_OK(symm_alltoall_on_stream(t, dst, 0, src, 0, ne, s));
            CUDA_OK(cudaStreamSynchronize(s));
            gpu_read(got.data(), dst, 0, ne * (uint64_t)n * 4);
            for (int j = 0; j < n; j++)
                for (uint64_t i = 0; i < ne; i++)
                    if (got[(uint64_t)j * ne + i] != pv(j, (uint64_t)me, i))
                        TEST_FAIL_("all-to-all of %llu (form %d): block %d [%llu] = %d",
                                   (unsigned long long)ne, form, j, (unsigned long long)i,
                                   got[(uint64_t)j * ne + i]);
            CHECK_OK(symm_barrier_all(ctx));
            if (form == 0) CHECK_OK(symm_reducescatter(t, dst, 0, src, 0, ne, SYMM_OP_SUM));
            else CHECK_OK(symm_reducescatter_on_stream(t, dst, 0, src, 0, ne, SYMM_OP_SUM, s));
            CUDA_OK(cudaStreamSynchronize(s));
            gpu_read(got.data(), dst, 0, ne * 4);
            for (uint64_t i = 0; i < ne; i++) {
                int64_t want = 0;
                for (int pe = 0; pe < n; pe++) want += pv(pe, (uint64_t)me, i);
                if (got[i] != (int32_t)want)
                    TEST_FAIL_("reduce-scatter of %llu (form %d): [%llu] = %d, expected %lld",
                               (unsigned long long)ne, form, (unsigned long long)i, got[i],
                               (long long)want);
            }
            CHECK_OK(symm_barrier_all(ctx));
            checked += 5;
        }
    }
    /* unaligned (2-byte aligned int16, odd offsets) all-reduce and in place */
    {
        const uint64_t ne = 3001;
        std::vector<int16_t> a(ne), b(ne);
        for (uint64_t i = 0; i < ne; i++) a[i] = (int16_t)(i % 1000 + (uint64_t)me);
        symm_buf s16 = NULL;
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT16, 2 * ne + 8, &s16));
        CUDA_OK(cudaMemcpy((char *)gpu_ptr(s16) + 2, a.data(), ne * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaDeviceSynchronize());
        CHECK_OK(symm_barrier_all(ctx));
        CHECK_OK(symm_reduce_on_stream(t, s16, ne + 3, s16, 1, ne, SYMM_OP_SUM, s));
        CHECK_OK(symm_reduce_on_stream(t, s16, 1, s16, 1, ne, SYMM_OP_MAX, s)); /* in place */
        CUDA_OK(cudaStreamSynchronize(s));
        CUDA_OK(cudaMemcpy(b.data(), (char *)gpu_ptr(s16) + 2 * (ne + 3), ne * 2,
                           cudaMemcpyDeviceToHost));
        for (uint64_t i = 0; i < ne; i++) {
            int64_t want = 0;
            for (int pe = 0; pe < n; pe++) want += (int64_t)(i % 1000 + (uint64_t)pe);
            if (b[i] != (int16_t)want) TEST_FAIL_("unaligned int16 all-reduce: [%llu] = %d",
                                                  (unsigned long long)i, b[i]);
        }
        CUDA_OK(cudaMemcpy(b.data(), (char *)gpu_ptr(s16) + 2, ne * 2, cudaMemcpyDeviceToHost));
        for (uint64_t i = 0; i < ne; i++)
            if (b[i] != (int16_t)(i % 1000 + (uint64_t)(n - 1)))
                TEST_FAIL_("unaligned in-place int16 max: [%llu] = %d", (unsigned long long)i, b[i]);
        CHECK_OK(symm_barrier_all(ctx));
        CHECK_OK(symm_buf_free(s16));
        checked += 2;
    }
    CHECK_OK(symm_buf_free(dst));
    CHECK_OK(symm_buf_free(src));
    if (gpu_me == 0) printf("sizes: %d collectives checked on a team of %d\n", checked, n);
}

static uint32_t bv(int pe, int k, uint64_t i) {
    return (uint32_t)pe * 7919u + (uint32_t)k * 104729u + (uint32_t)i * 31u;
}

/* Hundreds of collectives back to back on one stream with no host sync:
 * all-reduce, in-place all-reduce and all-gather of changing sizes, each
 * with its own inputs and outputs, now and then a stream barrier (which
 * shifts the LL parity) and a large all-reduce (the two-shot algorithm);
 * checked once at the end. Consecutive LL calls alternate scratch parities,
 * so a line left from two calls back, or an epoch that did not advance,
 * shows up as a wrong value or a hang. */
static void test_back_to_back(symm_ctx ctx, symm_team t, cudaStream_t s) {
    const int n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const int K = 300;
    const uint64_t R = 2048, big = 80000; /* big: above every LL threshold */
    symm_buf src = NULL, dst = NULL, bsrc = NULL, bdst = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, (uint64_t)K * R, &src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, (uint64_t)K * R, &dst));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, big, &bsrc));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, big, &bdst));
    std::vector<uint32_t> h((uint64_t)K * R), got((uint64_t)K * R);
    auto count = [&](int k) -> uint64_t {
        uint64_t m = 1 + ((uint64_t)k * 397u) % (R - 1);
        return k % 3 == 1 ? m / (uint64_t)n + 1 : m; /* all-gather: per PE */
    };
    for (int k = 0; k < K; k++)
        for (uint64_t i = 0; i < R; i++) h[(uint64_t)k * R + i] = bv(me, k, i);
    gpu_write(src, 0, h.data(), h.size() * 4);
    gpu_write(dst, 0, h.data(), h.size() * 4); /* the in-place calls' inputs */
    for (uint64_t i = 0; i < big; i++) h[i] = bv(me, 7, i);
    gpu_write(bsrc, 0, h.data(), big * 4);
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_barrier_all(ctx));
    for (int k = 0; k < K; k++) {
        const uint64_t at = (uint64_t)k * R, m = count(k);
        if (k % 3 == 0)
            CHECK_OK(symm_reduce_on_stream(t, dst, at, src, at, m, SYMM_OP_SUM, s));
        else if (k % 3 == 1)
            CHECK_OK(symm_fcollect_on_stream(t, dst, at, src, at, m, s));
        else
            CHECK_OK(symm_reduce_on_stream(t, dst, at, dst, at, m, SYMM_OP_SUM, s));
        if (k % 50 == 49) CHECK_OK(symm_barrier_on_stream(t, s));
        if (k % 40 == 39) CHECK_OK(symm_reduce_on_stream(t, bdst, 0, bsrc, 0, big, SYMM_OP_SUM, s));
    }
    CUDA_OK(cudaStreamSynchronize(s));
    gpu_read(got.data(), dst, 0, got.size() * 4);
    for (int k = 0; k < K; k++) {
        const uint64_t at = (uint64_t)k * R, m = count(k);
        for (uint64_t i = 0; i < (k % 3 == 1 ? m * (uint64_t)n : m); i++) {
            uint32_t want = 0;
            if (k % 3 == 1) {
                want = bv((int)(i / m), k, i % m);
            } else {
                for (int pe = 0; pe < n; pe++) want += bv(pe, k, i);
            }
            if (got[at + i] != want)
                TEST_FAIL_("back-to-back call %d (kind %d, %llu elements): [%llu] = %u, expected %u",
                           k, k % 3, (unsigned long long)m, (unsigned long long)i, got[at + i], want);
        }
    }
    gpu_read(got.data(), bdst, 0, big * 4);
    for (uint64_t i = 0; i < big; i++) {
        uint32_t want = 0;
        for (int pe = 0; pe < n; pe++) want += bv(pe, 7, i);
        if (got[i] != want) TEST_FAIL_("back-to-back large all-reduce: [%llu]", (unsigned long long)i);
    }
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(bdst));
    CHECK_OK(symm_buf_free(bsrc));
    CHECK_OK(symm_buf_free(dst));
    CHECK_OK(symm_buf_free(src));
    if (gpu_me == 0) printf("back to back: %d collectives checked\n", K);
}

/* The same calls again and again, new data every time: five shapes (an
 * all-reduce out of place and in place, a reduce-scatter, an all-gather, an
 * all-to-all), each called three times in a row in each of three rounds,
 * every result checked. Under SYMM_CUDA_COLL_ALGO=ce a shape's first call
 * is enqueued as always, its second captured into a cached graph and the
 * third replays it (SYMM_CUDA_CE_GRAPHS; meson gives the copy-engine tests
 * caches of 3 and 1 shapes as well as the default, so shapes also fall out
 * and come back); a graph that replayed old data or old offsets, or missed
 * a copy, shows up as a wrong value here. Blocks of 20001 elements: two
 * rounds of the 64 KiB slots the copy-engine tests use. */
static uint32_t rv(int pe, int r, int j, uint64_t i) {
    return (uint32_t)pe * 7919u + (uint32_t)r * 104729u + (uint32_t)j * 131u + (uint32_t)i * 31u;
}

static void test_repeat(symm_ctx ctx, symm_team t, cudaStream_t s) {
    const int n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const uint64_t m = 20001, big = m * (uint64_t)n;
    enum { AR, AR_IN, RS, AG, A2A, SHAPES };
    static const char *const name[SHAPES] = {"all-reduce", "in-place all-reduce", "reduce-scatter",
                                             "all-gather", "all-to-all"};
    symm_buf src[SHAPES], dst[SHAPES];
    for (int k = 0; k < SHAPES; k++) {
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, big, &src[k]));
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, big, &dst[k]));
    }
    std::vector<uint32_t> h(big), got(big);
    int checked = 0;
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < SHAPES; k++) {
            for (int j = 0; j < 3; j++) {
                const int tag = r * 3 + j;
                /* inputs: m elements for the all-gather, m * n otherwise */
                const uint64_t in_n = k == AG ? m : big;
                for (uint64_t i = 0; i < in_n; i++) h[i] = rv(me, tag, k, i);
                gpu_write(k == AR_IN ? dst[k] : src[k], 0, h.data(), in_n * 4);
                CUDA_OK(cudaDeviceSynchronize());
                CHECK_OK(symm_barrier_all(ctx));
                switch (k) {
                case AR: CHECK_OK(symm_reduce_on_stream(t, dst[k], 0, src[k], 0, big, SYMM_OP_SUM, s)); break;
                case AR_IN: CHECK_OK(symm_reduce_on_stream(t, dst[k], 0, dst[k], 0, big, SYMM_OP_SUM, s)); break;
                case RS: CHECK_OK(symm_reducescatter_on_stream(t, dst[k], 0, src[k], 0, m, SYMM_OP_SUM, s)); break;
                case AG: CHECK_OK(symm_fcollect_on_stream(t, dst[k], 0, src[k], 0, m, s)); break;
                default: CHECK_OK(symm_alltoall_on_stream(t, dst[k], 0, src[k], 0, m, s)); break;
                }
                CUDA_OK(cudaStreamSynchronize(s));
                const uint64_t out_n = k == RS ? m : big;
                gpu_read(got.data(), dst[k], 0, out_n * 4);
                for (uint64_t i = 0; i < out_n; i++) {
                    uint32_t want = 0;
                    if (k == AR || k == AR_IN) {
                        for (int pe = 0; pe < n; pe++) want += rv(pe, tag, k, i);
                    } else if (k == RS) { /* block me of every PE's input */
                        for (int pe = 0; pe < n; pe++) want += rv(pe, tag, k, (uint64_t)me * m + i);
                    } else if (k == AG) { /* block b: PE b's input */
                        want = rv((int)(i / m), tag, k, i % m);
                    } else { /* block b: block me of PE b's input */
                        want = rv((int)(i / m), tag, k, (uint64_t)me * m + i % m);
                    }
                    if (got[i] != want)
                        TEST_FAIL_("repeat: %s, round %d, call %d: [%llu] = %u, expected %u", name[k], r,
                                   j, (unsigned long long)i, got[i], want);
                }
                checked++;
                CHECK_OK(symm_barrier_all(ctx)); /* every PE read its dst before it is written again */
            }
        }
    }
    for (int k = 0; k < SHAPES; k++) {
        CHECK_OK(symm_buf_free(dst[k]));
        CHECK_OK(symm_buf_free(src[k]));
    }
    if (gpu_me == 0) printf("repeat: %d calls of %d shapes checked\n", checked, (int)SHAPES);
}

/* A broadcast's root waits for nobody: it must not get ahead of a late
 * receiver by more than the algorithm allows. The root enqueues 6 small
 * broadcasts (each into its own block of dst) at once; every other PE waits
 * 100 ms first. Each block must hold its call's data, and nothing may time
 * out (an LL broadcast once overwrote lines a late receiver had not read:
 * the receivers then waited for ever). */
static void test_broadcast_root_ahead(symm_ctx ctx, symm_team t, cudaStream_t s) {
    const int me = symm_team_my_pe(t), root = symm_team_n_pes(t) - 1;
    const int K = 6;
    const uint64_t R = 512;
    symm_buf src = NULL, dst = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, (uint64_t)K * R, &src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, (uint64_t)K * R, &dst));
    std::vector<uint32_t> h((uint64_t)K * R), got((uint64_t)K * R);
    for (int k = 0; k < K; k++)
        for (uint64_t i = 0; i < R; i++) h[(uint64_t)k * R + i] = bv(me, 30 + k, i);
    gpu_write(src, 0, h.data(), h.size() * 4);
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_barrier_all(ctx));
    if (me != root) usleep(100000);
    for (int k = 0; k < K; k++)
        CHECK_OK(symm_broadcast_on_stream(t, dst, (uint64_t)k * R, src, (uint64_t)k * R, R, root, s));
    CUDA_OK(cudaStreamSynchronize(s));
    symm_status ast = SYMM_SUCCESS;
    char msg[256] = "";
    CHECK_OK(symm_ctx_async_error(ctx, SYMM_ASYNC_CLEAR, sizeof msg, &ast, msg));
    if (ast != SYMM_SUCCESS) TEST_FAIL_("broadcasts with a late receiver: %s (%s)",
                                        symm_status_string(ast), msg);
    gpu_read(got.data(), dst, 0, got.size() * 4);
    for (int k = 0; k < K; k++)
        for (uint64_t i = 0; i < R; i++)
            if (got[(uint64_t)k * R + i] != bv(root, 30 + k, i))
                TEST_FAIL_("broadcast %d with a late receiver: [%llu] = %u, expected %u", k,
                           (unsigned long long)i, got[(uint64_t)k * R + i], bv(root, 30 + k, i));
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(dst));
    CHECK_OK(symm_buf_free(src));
    if (gpu_me == 0) printf("broadcast, root ahead of late receivers: %d calls checked\n", K);
}

/* A collective of 0 elements still synchronises the team (core/coll.c), on a
 * stream too: PE 0 calls at once, the others 100 ms late, and PE 0's call
 * must not complete before they arrive. (The LL and LL128 kernels once ran
 * a 0-byte call without hearing from anyone: with a slow peer, a PE then ran
 * two calls ahead of it, overwrote the lines of the parity it was still
 * reading, and both waited for ever.) Each kind, then a call with data. */
static void test_zero_elements(symm_ctx ctx, symm_team t, cudaStream_t s) {
    const int me = symm_team_my_pe(t), n = symm_team_n_pes(t);
    const uint64_t R = 64;
    symm_buf src = NULL, dst = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, R * (uint64_t)n, &src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, R * (uint64_t)n, &dst));
    const char *kinds[] = {"all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast"};
    for (int k = 0; k < 5; k++) {
        CHECK_OK(symm_barrier_all(ctx));
        if (me != 0) usleep(100000);
        const auto t0 = std::chrono::steady_clock::now();
        switch (k) {
        case 0: CHECK_OK(symm_reduce_on_stream(t, dst, 0, src, 0, 0, SYMM_OP_SUM, s)); break;
        case 1: CHECK_OK(symm_reducescatter_on_stream(t, dst, 0, src, 0, 0, SYMM_OP_SUM, s)); break;
        case 2: CHECK_OK(symm_fcollect_on_stream(t, dst, 0, src, 0, 0, s)); break;
        case 3: CHECK_OK(symm_alltoall_on_stream(t, dst, 0, src, 0, 0, s)); break;
        default: CHECK_OK(symm_broadcast_on_stream(t, dst, 0, src, 0, 0, 0, s)); break;
        }
        CUDA_OK(cudaStreamSynchronize(s));
        const double ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - t0).count();
        if (me == 0 && ms < 50)
            TEST_FAIL_("%s of 0 elements on %d PEs completed on PE 0 after %.1f ms, before the "
                       "peers (100 ms late) took part", kinds[k], n, ms);
    }
    /* and calls with data after them still agree */
    std::vector<int32_t> h(R), got(R);
    for (uint64_t i = 0; i < R; i++) h[i] = pv(me, 5, i);
    gpu_write(src, 0, h.data(), R * 4);
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_reduce_on_stream(t, dst, 0, src, 0, 0, SYMM_OP_SUM, s));
    CHECK_OK(symm_reduce_on_stream(t, dst, 0, src, 0, R, SYMM_OP_SUM, s));
    CUDA_OK(cudaStreamSynchronize(s));
    gpu_read(got.data(), dst, 0, R * 4);
    for (uint64_t i = 0; i < R; i++) {
        int64_t want = 0;
        for (int pe = 0; pe < n; pe++) want += pv(pe, 5, i);
        if (got[i] != (int32_t)want)
            TEST_FAIL_("all-reduce after one of 0 elements: [%llu] = %d, expected %lld",
                       (unsigned long long)i, got[i], (long long)want);
    }
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(dst));
    CHECK_OK(symm_buf_free(src));
    if (gpu_me == 0) printf("collectives of 0 elements synchronise the team: 5 kinds checked\n");
}

/* A CUDA graph of an all-reduce of ne elements, an all-gather of ng a PE,
 * a reduce-scatter of ne / n a PE and an in-place all-reduce, replayed
 * several times: each replay must
 * advance the device-side epoch (the in-place all-reduce's input is the
 * previous replay's output). Small sizes take the LL algorithm, larger ones
 * LL128, the staged kernels (6 MiB and a bit: the peer form, on 2 PEs in
 * halves, on 3 and 4 a slice each) or the barrier algorithms, whose closing
 * barrier is a kernel of its own in a graph (and fused into the data kernel
 * outside one); the copy-engine reduce-scatter (SYMM_CUDA_COLL_ALGO=ce) must
 * find its flags back at 0 on every replay. */
static void test_graph(symm_ctx ctx, symm_team t, cudaStream_t s, uint64_t ne, uint64_t ng) {
    const int n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    symm_buf a = NULL, b = NULL, c = NULL, d = NULL;
    const uint64_t nb = ne / (uint64_t)n; /* reduce-scatter: elements a PE */
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, nb + 1, &d));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, ne, &a));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, ne, &b));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, ng * (uint64_t)n, &c));
    std::vector<std::vector<uint32_t>> sim((size_t)n, std::vector<uint32_t>(ne));
    for (int pe = 0; pe < n; pe++)
        for (uint64_t i = 0; i < ne; i++) sim[(size_t)pe][i] = bv(pe, 3, i);
    gpu_write(a, 0, sim[(size_t)me].data(), ne * 4);
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_barrier_all(ctx));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK_OK(symm_reduce_on_stream(t, b, 0, a, 0, ne, SYMM_OP_SUM, s));
    CHECK_OK(symm_fcollect_on_stream(t, c, 0, a, 0, ng, s));
    CHECK_OK(symm_reducescatter_on_stream(t, d, 0, a, 0, nb, SYMM_OP_SUM, s));
    CHECK_OK(symm_reduce_on_stream(t, a, 0, a, 0, ne, SYMM_OP_SUM, s));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    std::vector<uint32_t> got(ne * 2 + ng * (uint64_t)n);
    for (int r = 0; r < 6; r++) {
        CUDA_OK(cudaGraphLaunch(ge, s));
        CUDA_OK(cudaStreamSynchronize(s));
        std::vector<uint32_t> sum(ne, 0);
        for (int pe = 0; pe < n; pe++)
            for (uint64_t i = 0; i < ne; i++) sum[i] += sim[(size_t)pe][i];
        gpu_read(got.data(), b, 0, ne * 4);
        for (uint64_t i = 0; i < ne; i++)
            if (got[i] != sum[i]) TEST_FAIL_("graph replay %d: all-reduce [%llu]", r, (unsigned long long)i);
        gpu_read(got.data(), c, 0, ng * (uint64_t)n * 4);
        for (int j = 0; j < n; j++)
            for (uint64_t i = 0; i < ng; i++)
                if (got[(uint64_t)j * ng + i] != sim[(size_t)j][i])
                    TEST_FAIL_("graph replay %d: all-gather block %d [%llu]", r, j, (unsigned long long)i);
        gpu_read(got.data(), d, 0, nb * 4);
        for (uint64_t i = 0; i < nb; i++)
            if (got[i] != sum[(uint64_t)me * nb + i])
                TEST_FAIL_("graph replay %d: reduce-scatter [%llu]", r, (unsigned long long)i);
        gpu_read(got.data(), a, 0, ne * 4);
        for (uint64_t i = 0; i < ne; i++)
            if (got[i] != sum[i]) TEST_FAIL_("graph replay %d: in-place all-reduce [%llu]", r, (unsigned long long)i);
        for (int pe = 0; pe < n; pe++) sim[(size_t)pe] = sum;
    }
    CUDA_OK(cudaGraphExecDestroy(ge));
    CUDA_OK(cudaGraphDestroy(g));
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(c));
    CHECK_OK(symm_buf_free(b));
    CHECK_OK(symm_buf_free(a));
    CHECK_OK(symm_buf_free(d));
    if (gpu_me == 0)
        printf("graph: 6 replays checked (%llu and %llu elements)\n", (unsigned long long)ne,
               (unsigned long long)ng);
}

/* symm_alltoallv_on_stream (the C ABI's, counts in symmetric memory): the
 * send counts and the src are made by kernels from a round number that a
 * kernel bumps, all captured in one CUDA graph with the exchange and its
 * combine; every replay is a new exchange the host never saw the counts
 * of. Checked after each replay against counts and values recomputed here:
 * dst, the receive counts and offsets, and the combine's return of every
 * element to where it left. lim: the largest count. */
__host__ __device__ static uint64_t a2v_cnt(int k, int s, int r, uint64_t lim) {
    uint64_t x = ((uint64_t)k * 7919u + (uint64_t)s * 131u + (uint64_t)r * 17u + 1u) *
                 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    return x % 5 == 0 ? 0 : x % (lim + 1);
}
__host__ __device__ static float a2v_val(int k, int s, uint64_t i) {
    return (float)(((uint64_t)k * 1000003u + (uint64_t)s * 7919u + i) % 16777216u);
}
__global__ void a2v_round(int *round, uint64_t *sc, float *src, int me, int n, uint64_t lim,
                          uint64_t cap) {
    const int k = *round + 1; /* a2v_bump, after this kernel, makes it the round */
    for (int r = (int)threadIdx.x; r < n && blockIdx.x == 0; r += (int)blockDim.x)
        sc[r] = a2v_cnt(k, me, r, lim);
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < cap;
         i += (uint64_t)gridDim.x * blockDim.x)
        src[i] = a2v_val(k, me, i);
}
__global__ void a2v_bump(int *round) { *round += 1; }

static void test_alltoallv_stream(symm_ctx ctx, symm_team t, cudaStream_t s, uint64_t lim) {
    const int n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const uint64_t cap = (uint64_t)n * lim + 1;
    symm_buf src = NULL, dst = NULL, back = NULL, sc = NULL, rc = NULL, rc2 = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, cap, &src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, cap, &dst));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, cap, &back));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, (uint64_t)n, &sc));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 2 * (uint64_t)n, &rc));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 2 * (uint64_t)n, &rc2));
    int *round = NULL;
    CUDA_OK(cudaMalloc(&round, sizeof(int)));
    CUDA_OK(cudaMemset(round, 0, sizeof(int)));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_barrier_all(ctx));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    a2v_round<<<64, 256, 0, s>>>(round, (uint64_t *)gpu_ptr(sc), (float *)gpu_ptr(src), me, n,
                                 lim, cap);
    a2v_bump<<<1, 1, 0, s>>>(round);
    CHECK_OK(symm_alltoallv_on_stream(t, dst, 0, cap, src, 0, cap, sc, 0, rc, 0, s));
    CHECK_OK(symm_alltoallv_on_stream(t, back, 0, cap, dst, 0, cap, rc, 0, rc2, 0, s));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    std::vector<float> got(cap);
    std::vector<int64_t> grc(2 * (size_t)n);
    for (int k = 1; k <= 4; k++) {
        CUDA_OK(cudaGraphLaunch(ge, s));
        CUDA_OK(cudaStreamSynchronize(s));
        gpu_read(got.data(), dst, 0, cap * 4);
        gpu_read(grc.data(), rc, 0, 2 * (size_t)n * 8);
        uint64_t at = 0;
        for (int j = 0; j < n; j++) {
            const int w = j; /* value seeds use the team PE */
            uint64_t off = 0;
            for (int q = 0; q < me; q++) off += a2v_cnt(k, j, q, lim);
            const uint64_t c = a2v_cnt(k, j, me, lim);
            if ((uint64_t)grc[(size_t)j] != c || (uint64_t)grc[(size_t)n + j] != at)
                TEST_FAIL_("alltoallv round %d (lim %llu): from PE %d: count %lld offset %lld, want "
                           "%llu %llu", k, (unsigned long long)lim, j, (long long)grc[(size_t)j],
                           (long long)grc[(size_t)n + j], (unsigned long long)c,
                           (unsigned long long)at);
            for (uint64_t i = 0; i < c; i++)
                if (got[at + i] != a2v_val(k, w, off + i))
                    TEST_FAIL_("alltoallv round %d (lim %llu): dst[%llu] from PE %d is %g, want %g",
                               k, (unsigned long long)lim, (unsigned long long)(at + i), j,
                               (double)got[at + i], (double)a2v_val(k, w, off + i));
            at += c;
        }
        uint64_t sent = 0;
        for (int r = 0; r < n; r++) sent += a2v_cnt(k, me, r, lim);
        gpu_read(got.data(), back, 0, cap * 4);
        for (uint64_t i = 0; i < sent; i++)
            if (got[i] != a2v_val(k, me, i))
                TEST_FAIL_("alltoallv round %d (lim %llu): combine did not return element %llu", k,
                           (unsigned long long)lim, (unsigned long long)i);
    }
    CUDA_OK(cudaGraphExecDestroy(ge));
    CUDA_OK(cudaGraphDestroy(g));

    /* dst too small on the last team PE: its failure is recorded on its
     * context (symm_ctx_async_error), its dst keeps its values, recv counts
     * say what would have come; the others succeed. Counts: 3 to every PE. */
    std::vector<uint64_t> three((size_t)n, 3);
    gpu_write(sc, 0, three.data(), (size_t)n * 8);
    CUDA_OK(cudaMemset(gpu_ptr(dst), 0xff, cap * 4));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_barrier_all(ctx));
    const bool small = me == n - 1;
    CHECK_OK(symm_alltoallv_on_stream(t, dst, 0, small ? 3 * (uint64_t)n - 1 : cap, src, 0, cap, sc,
                                      0, rc, 0, s));
    CUDA_OK(cudaStreamSynchronize(s));
    symm_status ast = SYMM_SUCCESS;
    char msg[512];
    CHECK_OK(symm_ctx_async_error(ctx, SYMM_ASYNC_CLEAR, sizeof msg, &ast, msg));
    ASSERT_EQ((int)ast, small ? (int)SYMM_ERR_OUT_OF_BOUNDS : (int)SYMM_SUCCESS);
    if (small) ASSERT_TRUE(strstr(msg, "symm_alltoallv_on_stream") && strstr(msg, "dst_nelems"));
    gpu_read(grc.data(), rc, 0, 2 * (size_t)n * 8);
    std::vector<uint32_t> raw(3 * (size_t)n);
    gpu_read(raw.data(), dst, 0, raw.size() * 4);
    for (int j = 0; j < n; j++) {
        ASSERT_EQ(grc[(size_t)j], 3);
        ASSERT_EQ(grc[(size_t)n + j], 3 * j);
        for (int i = 0; i < 3; i++)
            if (small) ASSERT_EQ(raw[(size_t)j * 3 + i], 0xffffffffu);
    }
    CHECK_OK(symm_barrier_all(ctx));
    CUDA_OK(cudaFree(round));
    CHECK_OK(symm_buf_free(rc2));
    CHECK_OK(symm_buf_free(rc));
    CHECK_OK(symm_buf_free(sc));
    CHECK_OK(symm_buf_free(back));
    CHECK_OK(symm_buf_free(dst));
    CHECK_OK(symm_buf_free(src));
    if (gpu_me == 0)
        printf("alltoallv on a stream: 4 graph replays with counts made on the GPU (up to %llu "
               "elements a pair), combine, a dst too small\n", (unsigned long long)lim);
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    symm_team world = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    test_reduce_all(ctx, world, s);
    test_reduce_inplace(ctx, world, s);
    test_nbi_then_blocking(ctx, world);
    test_data_movement(ctx, world, s);
    test_sizes(ctx, world, s);
    test_back_to_back(ctx, world, s);
    test_repeat(ctx, world, s);
    test_broadcast_root_ahead(ctx, world, s);
    test_zero_elements(ctx, world, s);
    test_graph(ctx, world, s, 1001, 77);
    test_graph(ctx, world, s, 1u << 20, 1u << 18); /* 4 MiB, 1 MiB a PE: above LL */
    test_graph(ctx, world, s, (3u << 19) + 1001, 1u << 18); /* 6 MiB + 4004 bytes */
    test_alltoallv_stream(ctx, world, s, 37);
    test_alltoallv_stream(ctx, world, s, 300000); /* up to 1.2 MB a pair */
    /* a split team (its own sync slot, zeroed at creation) */
    symm_team t = NULL;
    CHECK_OK(symm_team_split_strided(world, 0, 1, gpu_n, NULL, &t));
    ASSERT_TRUE(t != NULL);
    test_data_movement(ctx, t, s);
    test_back_to_back(ctx, t, s);
    test_graph(ctx, t, s, 1001, 77);
    test_alltoallv_stream(ctx, t, s, 1000);
    for (int i = 0; i < 50; i++) CHECK_OK(symm_barrier_on_stream(t, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CHECK_OK(symm_barrier(t));
    CHECK_OK(symm_team_destroy(t));
    CUDA_OK(cudaStreamDestroy(s));
    gpu_test_fini(&ctx);
    return 0;
}
