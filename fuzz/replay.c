/*
 * Replay driver: runs every file of the given corpus directories (or files)
 * through a harness's LLVMFuzzerTestOneInput, with any compiler, so CI
 * without libFuzzer still exercises the seeds and every crash reproducer
 * committed next to them. Seeds named "valid-*" must be accepted and "bad-*"
 * refused by the decoders (symm_fuzz_valid).
 *
 *   replay_wire fuzz/corpus/wire [more dirs or files...]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int failures, files;

static void run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        failures++;
        return;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    for (size_t n; buf && (n = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += n;
        if (len == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory for %s\n", path);
        failures++;
        return;
    }
    LLVMFuzzerTestOneInput(buf, len);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int expect = strncmp(base, "valid-", 6) == 0 ? 1 : strncmp(base, "bad-", 4) == 0 ? 0 : -1;
    if (expect >= 0 && symm_fuzz_valid(buf, len) != expect) {
        fprintf(stderr, "replay: %s was %s, expected %s\n", path, expect ? "refused" : "accepted",
                expect ? "accepted" : "refused");
        failures++;
    }
    free(buf);
    files++;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            run_file(argv[i]);
            continue;
        }
        struct dirent **list;
        int n = scandir(argv[i], &list, NULL, by_name);
        for (int k = 0; k < n; k++) {
            if (list[k]->d_name[0] != '.') {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[i], list[k]->d_name);
                run_file(path);
            }
            free(list[k]);
        }
        free(list);
    }
    printf("replayed %d inputs, %d failures\n", files, failures);
    return failures || files == 0 ? 1 : 0;
}
