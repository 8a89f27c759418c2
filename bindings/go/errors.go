package symm

/*
#cgo CFLAGS: -I${SRCDIR} -I${SRCDIR}/csrc -I${SRCDIR}/../../include -I${SRCDIR}/../../loader -I${SRCDIR}/../../abi
#cgo LDFLAGS: -ldl -lpthread
#include "symm_go.h"
*/
import "C"

import (
	"fmt"
	"runtime"
)

// Status is a symm status code (symm_status). Every code but Success is also
// an error value: the sentinel that errors.Is matches against an *Error
// carrying that code, in the way syscall.Errno works:
//
//	if errors.Is(err, symm.ErrLibraryNotFound) { /* run single-process */ }
type Status int32

// The status codes of include/symm/symm.h (SYMM_SUCCESS, SYMM_ERR_*), with the
// same values.
const (
	Success            Status = 0  // SYMM_SUCCESS: success
	ErrInvalidArg      Status = 1  // an argument is out of its domain
	ErrInvalidHandle   Status = 2  // stale, foreign or NULL handle
	ErrOutOfBounds     Status = 3  // element or byte range outside a buffer or the heap
	ErrOutOfMemory     Status = 4  // heap cap reached or host memory exhausted
	ErrLibraryNotFound Status = 5  // loader: no usable runtime was found
	ErrABIMismatch     Status = 6  // loader: the runtime implements another ABI major
	ErrNotSupported    Status = 7  // entry or feature not available here
	ErrNoDevice        Status = 8  // a GPU backend was asked for and no GPU is usable
	ErrBootstrap       Status = 9  // could not form or talk to the job
	ErrPeerFailed      Status = 10 // a peer PE died or left the job
	ErrTimeout         Status = 11 // a bounded wait expired
	ErrMismatch        Status = 12 // PEs disagree on a collective's arguments
	ErrTeamExhausted   Status = 13 // no free team slot
	ErrCUDA            Status = 14 // the CUDA driver reported an error
	ErrSystem          Status = 15 // an operating-system call failed (the message has errno)
	ErrThreadLevel     Status = 16 // the call violates the context's thread level
	ErrInternal        Status = 17 // a bug in symm: please report it
	ErrInvalidState    Status = 18 // the call is not valid now (e.g. the runtime is loaded)
)

// statusDescriptions are the status table's descriptions (SYMM_STATUS_TABLE
// in symm.h); the ABI test checks them against abi/symm-abi.json.
var statusDescriptions = [...]string{
	Success:            "success",
	ErrInvalidArg:      "an argument is out of its domain",
	ErrInvalidHandle:   "stale, foreign or NULL handle",
	ErrOutOfBounds:     "element or byte range outside a buffer or the heap",
	ErrOutOfMemory:     "heap cap reached or host memory exhausted",
	ErrLibraryNotFound: "loader: no usable runtime was found",
	ErrABIMismatch:     "loader: the runtime implements another ABI major",
	ErrNotSupported:    "entry or feature not available here",
	ErrNoDevice:        "a GPU backend was asked for and no GPU is usable",
	ErrBootstrap:       "could not form or talk to the job",
	ErrPeerFailed:      "a peer PE died or left the job",
	ErrTimeout:         "a bounded wait expired",
	ErrMismatch:        "PEs disagree on a collective's arguments",
	ErrTeamExhausted:   "no free team slot",
	ErrCUDA:            "the CUDA driver reported an error",
	ErrSystem:          "an operating-system call failed (the message has errno)",
	ErrThreadLevel:     "the call violates the context's thread level",
	ErrInternal:        "a bug in symm: please report it",
	ErrInvalidState:    "the call is not valid now (e.g. the runtime is loaded)",
}

// Name is the C name of the code ("SYMM_ERR_OUT_OF_BOUNDS"), as
// symm_status_string gives it; "SYMM_ERR_UNKNOWN" for an unknown code.
func (s Status) Name() string {
	return C.GoString(C.symm_status_string(C.symm_status(s)))
}

// Description is the status table's one-line description of the code, or ""
// for an unknown code.
func (s Status) Description() string {
	if s >= 0 && int(s) < len(statusDescriptions) {
		return statusDescriptions[s]
	}
	return ""
}

// Error makes a Status an error value: "SYMM_ERR_TIMEOUT: a bounded wait
// expired".
func (s Status) Error() string {
	if d := s.Description(); d != "" {
		return s.Name() + ": " + d
	}
	return fmt.Sprintf("%s (%d)", s.Name(), int32(s))
}

// Error is a failed symm call: the C function, its status code and the
// message symm_last_error() gave on the calling thread right after the call.
// It unwraps to its Status, so errors.Is(err, symm.ErrOutOfBounds) and
// errors.As(err, &e) (e *symm.Error) both work.
type Error struct {
	Op      string // the C function that failed, e.g. "symm_put"
	Status  Status // the code it returned
	Message string // symm_last_error() right after the call (may be "")
}

// Code is the numeric status code.
func (e *Error) Code() int32 { return int32(e.Status) }

// Name is the status code's C name, e.g. "SYMM_ERR_OUT_OF_BOUNDS".
func (e *Error) Name() string { return e.Status.Name() }

// Error formats "SYMM_ERR_OUT_OF_BOUNDS (3): <message>" (the runtime's
// messages start with the function's name), or "symm_put: SYMM_ERR_... (3)"
// when there is no message.
func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s (%d)", e.Op, e.Status.Name(), int32(e.Status))
	}
	return fmt.Sprintf("%s (%d): %s", e.Status.Name(), int32(e.Status), e.Message)
}

// Unwrap returns the Status, the sentinel errors.Is compares with.
func (e *Error) Unwrap() error { return e.Status }

// lastError builds the *Error of a failed call. It must run on the OS thread
// that made the call (symm_last_error is thread-local): callers hold it with
// runtime.LockOSThread, see call.
func lastError(op string, st C.symm_status) error {
	if st == C.SYMM_SUCCESS {
		return nil
	}
	return &Error{Op: op, Status: Status(st), Message: C.GoString(C.symm_last_error())}
}

// call runs one fallible C call with the goroutine locked to its OS thread, so
// that the thread-local message read after it is the call's own.
func call(op string, f func() C.symm_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return lastError(op, f())
}

// argError is an error found by the binding before any C call (a Go slice of
// the wrong length, a negative index), reported like the runtime's own.
func argError(op string, st Status, format string, args ...any) error {
	return &Error{Op: op, Status: st, Message: op + ": " + fmt.Sprintf(format, args...)}
}
