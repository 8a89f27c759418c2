// The symm loader, compiled into the Go package: csrc/symm_loader.c is a
// verbatim copy of loader/symm_loader.c (sync_csrc.sh keeps it in step; the
// ABI test fails when it differs). It opens libsymm_runtime.so.1 with dlopen
// on the first call that needs it, so a program using this package always
// starts, with or without an installed symm.
#include "csrc/symm_loader.c"
