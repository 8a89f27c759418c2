// The symm loader, compiled into the Go package. cgo's include path (errors.go)
// finds symm_loader.c in csrc/ of a vendored copy (sync_csrc.sh), else in the
// checkout's loader/ folder. It opens libsymm_runtime.so.1 with dlopen on the
// first call that needs it, so a program using this package always starts,
// with or without an installed symm.
#include "symm_loader.c"
