/*
 * Fuzz target: sizes and the environment the runtime reads before a job
 * forms — symm__parse_size, symm__config_load (SYMM_BACKEND, SYMM_HEAP_CAP,
 * SYMM_HEAP_CHUNK, SYMM_TIMEOUT_MS, SYMM_PEER_TIMEOUT_MS and init attrs),
 * env bootstrap's reading of the launcher variables (symm__boot_env_probe:
 * rank/size of symmrun, torchrun, Open MPI and Slurm, addresses, job ids,
 * SYMM_JOB_SECRET, SYMM_LAUNCHER) and the log settings (SYMM_DEBUG,
 * SYMM_DEBUG_SUBSYS).
 *
 * Input: lines "NAME=VALUE" (NAME one of the variables below; other lines
 * are ignored), an optional line "attr.heap_cap=N" / "attr.timeout_ms=N"
 * (decimal, for symm_init_attr). Every variable is unset between inputs.
 *
 * Oracles: a size that parses equals an independent reference (128-bit
 * arithmetic); a loaded config is coherent (chunk a power of two in [64K,
 * 128T], cap a multiple of it covering the system area, timeouts in range);
 * every refusal is INVALID_ARG/BOOTSTRAP with a message.
 *
 * Not here: SYMM_DEBUG_FILE (opens files), SYMM_TRANSPORT_PATH and
 * SYMM_RUNTIME (dlopen paths), SYMM_HOST_ID (hashed, any text is valid),
 * the tcp plugin's SYMM_TCP_ADDR; see docs/FUZZING.md.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "internal.h"
#include "base/log.h"
#include "bootstrap/wire.h"

const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

static const char *const vars[] = {
    "SYMM_BACKEND", "SYMM_HEAP_CAP", "SYMM_HEAP_CHUNK", "SYMM_TIMEOUT_MS",
    "SYMM_PEER_TIMEOUT_MS", "SYMM_DEBUG", "SYMM_DEBUG_SUBSYS", "SYMM_RANK", "SYMM_N_PES",
    "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SYMM_LAUNCHER", "SYMM_BOOTSTRAP_ADDR",
    "MASTER_ADDR", "MASTER_PORT", "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "SLURM_STEP_ID",
    "SLURM_STEPID", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_STEP_NUM_NODES", "SLURM_NNODES",
    "SYMM_JOB_SECRET", "TORCHELASTIC_RUN_ID", NULL};

/* Reference size parser: digits, optional K/M/G/T, optional i, optional B. */
static int ref_size(const char *t, uint64_t *out) {
    if (!isdigit((unsigned char)*t)) return 0;
    uint64_t v = 0;
    while (isdigit((unsigned char)*t)) {
        unsigned d = (unsigned)(*t++ - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    int shift = 0;
    switch (toupper((unsigned char)*t)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        t++;
        if (*t == 'i' || *t == 'I') t++;
    }
    if (*t == 'B' || *t == 'b') t++;
    if (*t) return 0;
    if (shift && v > (UINT64_MAX >> shift)) return 0;
    v <<= shift;
    *out = (uint64_t)v;
    return 1;
}

static void check_size(const char *text) {
    uint64_t a = 0, b = 0;
    int ok = symm__parse_size(text, &a), rok = ref_size(text, &b);
    if (ok != rok || (ok && a != b)) {
        fprintf(stderr, "parse_size(\"%s\"): %d %llu, reference %d %llu\n", text, ok,
                (unsigned long long)a, rok, (unsigned long long)b);
        __builtin_trap();
    }
}

static void check_refusal(symm_status st, symm_status a, symm_status b) {
    if (st != a && st != b) {
        fprintf(stderr, "status %d (%s): %s\n", st, symm__status_name(st), symm__last_error());
        __builtin_trap();
    }
    if (!symm__last_error()[0]) __builtin_trap(); /* a refusal says why */
}

/* A tcp host env bootstrap would resolve by name (DNS): the harness gives
 * such jobs a secret, so the probe never asks the resolver. */
static int numeric_host(const char *h) {
    unsigned char buf[16];
    return inet_pton(AF_INET, h, buf) == 1 || inet_pton(AF_INET6, h, buf) == 1;
}

static int needs_resolver(void) {
    const char *addr = getenv("SYMM_BOOTSTRAP_ADDR"), *master = getenv("MASTER_ADDR");
    if (addr && *addr) {
        symm__addr a;
        if (symm__addr_parse(addr, &a) != SYMM_SUCCESS) return 0; /* refused before resolving */
        return a.kind == SYMM__ADDR_TCP && !numeric_host(a.host);
    }
    return master && *master && !numeric_host(master);
}

static char key_dir[] = "/tmp/symm-fuzz-env-XXXXXX";

static void remove_key_dir(void) {
    char path[sizeof key_dir + 32];
    snprintf(path, sizeof path, "%s/.symm-job-key", key_dir);
    unlink(path);
    rmdir(key_dir);
}

static int run(const uint8_t *data, size_t size) {
    static int once;
    if (!once) {
        /* The derived local secret keeps a per-user key file: a private
         * directory, removed at exit. */
        if (!mkdtemp(key_dir)) __builtin_trap();
        atexit(remove_key_dir);
        setenv("XDG_RUNTIME_DIR", key_dir, 1);
        unsetenv("HOME");
        once = 1;
    }
    for (size_t i = 0; vars[i]; i++) unsetenv(vars[i]);
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    symm_init_attr attr;
    symm_init_attr_init(&attr, sizeof attr);
    int use_attr = 0;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = '\0';
        const char *val = eq + 1;
        check_size(val);
        if (strcmp(line, "attr.heap_cap") == 0 || strcmp(line, "attr.timeout_ms") == 0) {
            unsigned long long v = strtoull(val, NULL, 10);
            if (line[5] == 'h') attr.heap_cap = v;
            else attr.timeout_ms = (uint32_t)v;
            use_attr = 1;
            continue;
        }
        for (size_t i = 0; vars[i]; i++)
            if (strcmp(line, vars[i]) == 0) setenv(vars[i], val, 1);
    }
    free(text);

    int accepted = 1;
    symm__config cfg;
    symm__err_clear();
    symm_status st = symm__config_load(use_attr ? &attr : NULL, &cfg);
    if (st == SYMM_SUCCESS) {
        uint64_t c = cfg.heap_chunk;
        if (c < (64u << 10) || c > SYMM__MAX_HEAP_BYTES || (c & (c - 1)) ||
            cfg.heap_cap % c || cfg.heap_cap < SYMM__SYS_BYTES + c ||
            cfg.heap_cap > SYMM__MAX_HEAP_BYTES + c || cfg.timeout_ms == 0 ||
            cfg.peer_timeout_ms == 0 || cfg.peer_timeout_ms > 3600000 ||
            cfg.backend > SYMM_BACKEND_CUDA)
            __builtin_trap();
    } else {
        check_refusal(st, SYMM_ERR_INVALID_ARG, SYMM_ERR_INVALID_ARG);
        accepted = 0;
    }

    int lvl = symm__log_parse_level(getenv("SYMM_DEBUG"), false);
    if (lvl < SYMM_LOG_NONE || lvl > SYMM_LOG_TRACE) __builtin_trap();
    (void)symm__log_parse_subsys(getenv("SYMM_DEBUG_SUBSYS"), false);

    /* 64 hex digits: the key itself (a text would cost a PBKDF2 per input) */
    if (needs_resolver() && !getenv("SYMM_JOB_SECRET"))
        setenv("SYMM_JOB_SECRET",
               "66757a7a66757a7a66757a7a66757a7a" "66757a7a66757a7a66757a7a66757a7a", 1);
    int32_t rank = -1, n_pes = -1;
    char addr[SYMM__ADDR_TEXT_MAX];
    symm__err_clear();
    st = symm__boot_env_probe(&rank, &n_pes, addr, sizeof addr);
    if (st == SYMM_SUCCESS) {
        if (n_pes < 1 || n_pes > SYMM__WIRE_MAX_PES || rank < 0 || rank >= n_pes) __builtin_trap();
        symm__addr a;
        if (n_pes > 1 && symm__addr_parse(addr, &a) != SYMM_SUCCESS) __builtin_trap();
    } else {
        check_refusal(st, SYMM_ERR_BOOTSTRAP, SYMM_ERR_INVALID_ARG);
        accepted = 0;
    }
    return accepted;
}

/* valid-*: config and launcher variables both accepted. */
int symm_fuzz_valid(const uint8_t *data, size_t size) { return run(data, size); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    run(data, size);
    return 0;
}
