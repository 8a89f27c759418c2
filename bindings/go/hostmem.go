package symm

// #include "symm_go.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// HostMem is an array of Len() elements of T in C heap memory, for the calls
// that use local memory after they return (the NBI forms until the next
// quiet, the OnStream forms until the stream reaches them): the Go garbage
// collector neither moves nor frees it, as the cgo pointer rules require.
// Read and write it through Slice; pass it (or part of it) as a Span.
//
// It is not page-locked for CUDA: on the CUDA backend, OnStream forms with host
// memory need memory pinned by your CUDA binding (wrap it with ExternalSpan).
//
// Free it explicitly, after the last operation using it completed; there is
// no finalizer (the collector cannot see whether symm still uses the memory).
type HostMem[T Element] struct {
	p unsafe.Pointer
	n int
}

// AllocHost allocates n zeroed elements of T in C heap memory.
func AllocHost[T Element](n int) (*HostMem[T], error) {
	if n < 0 {
		return nil, argError("AllocHost", ErrInvalidArg, "negative count %d", n)
	}
	size := unsafe.Sizeof(*new(T))
	if n > 0 && uintptr(n) > ^uintptr(0)/size {
		return nil, argError("AllocHost", ErrOutOfMemory, "%d elements do not fit the address space", n)
	}
	p := C.calloc(C.size_t(max1(n)), C.size_t(size))
	if p == nil {
		return nil, argError("AllocHost", ErrOutOfMemory, "calloc of %d elements of %d bytes failed", n, size)
	}
	return &HostMem[T]{p: p, n: n}, nil
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// Len is the number of elements (0 after Free).
func (h *HostMem[T]) Len() int { return h.n }

// Slice is the memory as a Go slice (which points into C memory; it must not
// be used after Free). nil after Free.
func (h *HostMem[T]) Slice() []T {
	if h.p == nil {
		return nil
	}
	return unsafe.Slice((*T)(h.p), h.n)
}

// Span is elements [i, j) of the memory. It panics when the range is outside
// [0, Len()], like slicing.
func (h *HostMem[T]) Span(i, j int) Span[T] {
	if i < 0 || j < i || j > h.n {
		panic(fmt.Sprintf("symm: HostMem.Span(%d, %d) outside [0, %d]", i, j, h.n))
	}
	return Span[T]{p: unsafe.Add(h.p, uintptr(i)*unsafe.Sizeof(*new(T))), n: j - i}
}

// All is the whole memory as a Span.
func (h *HostMem[T]) All() Span[T] { return h.Span(0, h.n) }

// Free releases the memory (a second Free does nothing). Operations that use
// it must have completed (a quiet for NBI forms, stream work for OnStream
// forms).
func (h *HostMem[T]) Free() {
	if h.p != nil {
		C.free(h.p)
	}
	h.p, h.n = nil, 0
}

// Span is a run of elements of T in memory outside the Go heap: part of a
// HostMem, or memory obtained elsewhere (CUDA device memory, page-locked host
// memory) wrapped by ExternalSpan. The calls that keep a local pointer after
// returning take a Span, never a Go slice. The zero Span is empty.
type Span[T Element] struct {
	p unsafe.Pointer
	n int
}

// ExternalSpan describes n elements of T at addr in memory that neither Go nor
// this package manages (a CUDA device pointer, page-locked host memory); the
// caller keeps it valid while symm may use it.
func ExternalSpan[T Element](addr uintptr, n int) Span[T] {
	if n < 0 {
		n = 0
	}
	return Span[T]{p: C.symm_go_addr(C.uintptr_t(addr)), n: n}
}

// Len is the number of elements.
func (s Span[T]) Len() int { return s.n }

// Addr is the address of the first element.
func (s Span[T]) Addr() uintptr { return uintptr(s.p) }

// ptr is the address for C (nil for an empty span).
func (s Span[T]) ptr() unsafe.Pointer {
	if s.n == 0 {
		return nil
	}
	return s.p
}
