/*
 * Shared by the harnesses and the replay driver: the libFuzzer entry point and
 * a verdict the replay driver checks against seed names ("valid-*" must be
 * accepted, "bad-*" refused).
 */
#ifndef SYMM_FUZZ_H
#define SYMM_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* 1 when the decoders accept the whole input, 0 when they refuse it. */
int symm_fuzz_valid(const uint8_t *data, size_t size);

#endif /* SYMM_FUZZ_H */
