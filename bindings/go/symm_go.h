/* C helpers of the Go package, included by every file that imports "C". */
#ifndef SYMM_GO_H
#define SYMM_GO_H
#include <stdint.h>
#include <stdlib.h>
#include <symm/symm.h>

/* An address that Go holds as a uintptr (a CUDA stream, device memory) as the
 * pointer C expects, converted here so Go code never turns an integer into an
 * unsafe.Pointer. */
static inline void *symm_go_addr(uintptr_t a) { return (void *)a; }
#endif
