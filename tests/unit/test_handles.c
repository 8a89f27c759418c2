/*
 * Handle tables (runtime/core/handles.c), linked against the runtime's
 * objects:
 *   reuse     a slot released and reused 2^24 + 2 times never gives back a
 *             stale handle's generation (the 24-bit generation of the first
 *             design came round after 2^23 reuses)
 *   retire    a slot whose generation would pass the last one a handle can
 *             carry is retired, not reused (a test hook sets the generation
 *             near the end)
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "symm_test.h"

const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

#define IDX_MASK ((1ull << 21) - 1)
#define GEN_LAST ((1ull << 41) - 1)

static void test_reuse(void) {
    int x, y;
    uint64_t h0 = symm__handle_new(SYMM__KIND_BUF, &x);
    ASSERT_TRUE(h0 != 0);
    symm__handle_release(SYMM__KIND_BUF, h0);
    const uint64_t cycles = (1ull << 24) + 2;
    for (uint64_t k = 0; k < cycles; k++) {
        uint64_t h = symm__handle_new(SYMM__KIND_BUF, &y);
        ASSERT_TRUE(h != 0);
        ASSERT_U64_EQ(h & IDX_MASK, h0 & IDX_MASK); /* the same slot, reused */
        if (h == h0 || symm__handle_get(SYMM__KIND_BUF, h0) != NULL)
            TEST_FAIL_("after %llu reuses of its slot the stale handle %#llx names a live "
                       "object", (unsigned long long)k + 1, (unsigned long long)h0);
        symm__handle_release(SYMM__KIND_BUF, h);
    }
}

static void test_retire(void) {
    int x, y, z;
    uint64_t h = symm__handle_new(SYMM__KIND_TEAM, &x);
    ASSERT_TRUE(h != 0);
    /* the hook only names live handles with a valid generation */
    ASSERT_U64_EQ(symm__handle_set_gen_for_test(SYMM__KIND_TEAM, h, 0), 0);
    ASSERT_U64_EQ(symm__handle_set_gen_for_test(SYMM__KIND_TEAM, h, GEN_LAST + 1), 0);
    uint64_t h1 = symm__handle_set_gen_for_test(SYMM__KIND_TEAM, h, GEN_LAST - 1);
    ASSERT_TRUE(h1 != 0 && h1 != h);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h) == NULL);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h1) == &x);
    symm__handle_release(SYMM__KIND_TEAM, h1);
    /* the slot's last generation */
    uint64_t h2 = symm__handle_new(SYMM__KIND_TEAM, &y);
    ASSERT_U64_EQ(h2 & IDX_MASK, h1 & IDX_MASK);
    ASSERT_TRUE(h2 != h1);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h1) == NULL);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h2) == &y);
    symm__handle_release(SYMM__KIND_TEAM, h2);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h2) == NULL);
    /* out of generations: retired, never handed out again */
    for (int k = 0; k < 100; k++) {
        uint64_t h3 = symm__handle_new(SYMM__KIND_TEAM, &z);
        ASSERT_TRUE(h3 != 0);
        ASSERT_TRUE((h3 & IDX_MASK) != (h2 & IDX_MASK));
        ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h3) == &z);
        ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h2) == NULL);
        ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h1) == NULL);
        ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h) == NULL);
        symm__handle_release(SYMM__KIND_TEAM, h3);
    }
    /* a forged handle with the retired slot and any high generation is refused */
    uint64_t forged = (h2 & ~(GEN_LAST << 21)) | (GEN_LAST << 21);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, forged) == NULL);
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || strcmp(only, "reuse") == 0) test_reuse();
    if (!only || strcmp(only, "retire") == 0) test_retire();
    printf("handles%s%s: passed\n", only ? " " : "", only ? only : "");
    return 0;
}
