/* The env bootstrap's reading of the environment (boot_env.c), private to
 * the bootstrap library. */
#ifndef SYMM_BOOT_ENV_H
#define SYMM_BOOT_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

typedef struct symm__env_job {
    int32_t rank, n_pes;
    char addr[SYMM__ADDR_TEXT_MAX];
    bool addr_fallback;  /* abstract socket named from the launcher's job id */
    bool external;       /* symmrun runs the server                          */
    uint8_t secret[SYMM__SECRET_BYTES];
    const char *source;  /* launcher named in messages                       */
} symm__env_job;

/* The shortest SYMM_JOB_SECRET accepted (a text is stretched with PBKDF2;
 * exactly 64 hex digits are the key itself). */
#define SYMM__SECRET_MIN_CHARS 16u

/* getenv, with an empty value read as unset. */
const char *symm__boot_env(const char *name);
/* Does the environment name a launcher (symmrun, torchrun, Open MPI, Slurm)? */
bool symm__boot_env_has_launcher(void);
/* Rank, size, address and secret from the environment (every check made). */
symm_status symm__boot_env_parse(symm__env_job *j);
/* Same value <=> same host *and* network namespace; SYMM_HOST_ID replaces
 * it (simulated hosts). */
uint64_t symm__boot_host_identity(void);

#endif
