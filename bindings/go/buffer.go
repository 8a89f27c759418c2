package symm

// #include "symm_go.h"
import "C"

import (
	"unsafe"
)

// Buffer is a symmetric array of Len() elements of T: allocated at the same
// symmetric offset on every PE of its context, so an index names the same
// element on each of them. Indices and counts are element numbers; the
// runtime bounds-checks every range (ErrOutOfBounds), and a PE outside the
// context gives ErrInvalidArg.
//
// Free is collective and explicit: a Buffer that is never freed stays
// allocated until its context is finalized (nothing is released behind your
// back). Free must not run concurrently with other calls on the buffer.
//
// Methods that not every element type supports return the runtime's error:
// waits and tests need an integer type, signal methods a Buffer[uint64],
// arithmetic and bitwise atomics a 32- or 64-bit integer type (Fetch, Set,
// Swap and CompareSwap also take float32 and float64).
type Buffer[T Element] struct {
	h   C.symm_buf
	ctx *Context
	n   int
}

// Alloc allocates count zeroed elements of T on every PE of the context.
// Collective: every PE must call it with the same T and count (otherwise all
// get ErrMismatch and nothing is allocated).
func Alloc[T Element](ctx *Context, count int) (*Buffer[T], error) {
	// A negative count still makes the (collective) C call, as a count past
	// any heap cap, so that the other PEs get C's verdict (ErrMismatch naming
	// this PE) instead of waiting for it; this PE gets ErrInvalidArg.
	var bad error
	if count < 0 {
		bad = argError("symm_buf_alloc", ErrInvalidArg, "negative count %d", count)
	}
	var h C.symm_buf
	mu := ctx.collLock()
	defer mu.Unlock()
	err := call("symm_buf_alloc", func() C.symm_status {
		return C.symm_buf_alloc(ctx.handle(), C.uint32_t(DTypeOf[T]()), cU64(count), &h)
	})
	if bad != nil {
		if e, ok := err.(*Error); ok && e.Status == ErrOutOfMemory {
			return nil, bad // C refused the huge count, as expected
		}
		return nil, argVerdict(bad, err)
	}
	if err != nil {
		return nil, err
	}
	return &Buffer[T]{h: h, ctx: ctx, n: count}, nil
}

// Register makes existing memory symmetric: every PE passes its own mem
// (CUDA backend: memory from cuMemCreate with POSIX fd handles, mapped with
// cuMemMap, wrapped by ExternalSpan; the host backend gives ErrNotSupported).
// The memory stays the caller's and must stay valid until Free, which
// unregisters it without freeing it. Collective.
func Register[T Element](ctx *Context, mem Span[T]) (*Buffer[T], error) {
	var h C.symm_buf
	mu := ctx.collLock()
	defer mu.Unlock()
	err := call("symm_buf_register", func() C.symm_status {
		return C.symm_buf_register(ctx.handle(), mem.ptr(), C.uint32_t(DTypeOf[T]()),
			C.uint64_t(mem.n), &h)
	})
	if err != nil {
		return nil, err
	}
	return &Buffer[T]{h: h, ctx: ctx, n: mem.n}, nil
}

func (b *Buffer[T]) handle() C.symm_buf {
	if b == nil {
		return nil
	}
	return b.h
}

// Len is the number of elements.
func (b *Buffer[T]) Len() int { return b.n }

// DType is the element type.
func (b *Buffer[T]) DType() DType { return DTypeOf[T]() }

// Context is the buffer's context.
func (b *Buffer[T]) Context() *Context { return b.ctx }

// Free frees the buffer on every PE (collective over its context; completes
// outstanding operations first). The Buffer is unusable afterwards (its
// calls return ErrInvalidHandle); a second Free does nothing.
func (b *Buffer[T]) Free() error {
	if b == nil || b.h == nil {
		return nil
	}
	mu := b.ctx.collLock()
	defer mu.Unlock()
	err := call("symm_buf_free", func() C.symm_status { return C.symm_buf_free(b.h) })
	if err == nil {
		b.h = nil
	}
	return err
}

// Offset is the buffer's symmetric byte offset in the heap (symm_buf_query,
// which also confirms dtype and count).
func (b *Buffer[T]) Offset() (uint64, error) {
	var off C.uint64_t
	err := call("symm_buf_query", func() C.symm_status { return C.symm_buf_query(b.handle(), nil, nil, &off) })
	return uint64(off), err
}

// Ptr is the local address of element 0: host memory on the host backend,
// device memory on the CUDA backend. It is also the symmetric address of the
// buffer for the Context's byte-level calls (PutMem, GetMem, Ptr).
func (b *Buffer[T]) Ptr() (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := call("symm_buf_ptr", func() C.symm_status { return C.symm_buf_ptr(b.handle(), &p) })
	return p, err
}

// PeerPtr is the address at which this process can load and store pe's copy
// of element 0, or nil when pe is not load/store reachable.
func (b *Buffer[T]) PeerPtr(pe int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := call("symm_buf_peer_ptr", func() C.symm_status { return C.symm_buf_peer_ptr(b.handle(), cpe(pe), &p) })
	return p, err
}

// LocalSlice is this PE's copy as a Go slice over the symmetric heap (host
// backend only: on the CUDA backend the memory is on the GPU). Loads and
// stores through it race with remote puts unless ordered by symm
// synchronisation. It must not be used after Free or Finalize.
func (b *Buffer[T]) LocalSlice() ([]T, error) {
	if b == nil {
		return nil, argError("LocalSlice", ErrInvalidHandle, "nil Buffer")
	}
	info, err := b.ctx.Query()
	if err != nil {
		return nil, err
	}
	if info.Backend != BackendHost {
		return nil, argError("LocalSlice", ErrNotSupported, "the buffer is not in host memory")
	}
	p, err := b.Ptr()
	if err != nil || b.n == 0 {
		return nil, err
	}
	return unsafe.Slice((*T)(p), b.n), nil
}

// ---------------------------------------------------------------- RMA ----

// Put copies src into elements [index, index+len(src)) of pe's copy and
// returns when src may be reused and the data is visible at pe.
func (b *Buffer[T]) Put(index int, src []T, pe int) error {
	if err := checkIndex("symm_put", index); err != nil {
		return err
	}
	return call("symm_put", func() C.symm_status {
		return C.symm_put(b.handle(), C.uint64_t(index), sptr(src), C.uint64_t(len(src)), cpe(pe))
	})
}

// Get copies elements [index, index+len(dst)) of pe's copy into dst.
func (b *Buffer[T]) Get(index int, dst []T, pe int) error {
	if err := checkIndex("symm_get", index); err != nil {
		return err
	}
	return call("symm_get", func() C.symm_status {
		return C.symm_get(sptr(dst), b.handle(), C.uint64_t(index), C.uint64_t(len(dst)), cpe(pe))
	})
}

// PutNBI starts a put of src into [index, index+src.Len()) of pe's copy. It
// may return before the data left: src is read until the next Quiet (or
// barrier) on the context, and the data is visible at pe after it.
func (b *Buffer[T]) PutNBI(index int, src Span[T], pe int) error {
	if err := checkIndex("symm_put_nbi", index); err != nil {
		return err
	}
	return call("symm_put_nbi", func() C.symm_status {
		return C.symm_put_nbi(b.handle(), C.uint64_t(index), src.ptr(), C.uint64_t(src.n), cpe(pe))
	})
}

// GetNBI starts a get of [index, index+dst.Len()) of pe's copy into dst; dst
// holds the data after the next Quiet (or barrier) on the context and is
// written until then.
func (b *Buffer[T]) GetNBI(index int, dst Span[T], pe int) error {
	if err := checkIndex("symm_get_nbi", index); err != nil {
		return err
	}
	return call("symm_get_nbi", func() C.symm_status {
		return C.symm_get_nbi(dst.ptr(), b.handle(), C.uint64_t(index), C.uint64_t(dst.n), cpe(pe))
	})
}

// P writes one element of pe's copy.
func (b *Buffer[T]) P(index int, value T, pe int) error {
	if err := checkIndex("symm_p", index); err != nil {
		return err
	}
	return call("symm_p", func() C.symm_status {
		return C.symm_p(b.handle(), C.uint64_t(index), unsafe.Pointer(&value), cpe(pe))
	})
}

// G reads one element of pe's copy.
func (b *Buffer[T]) G(index int, pe int) (T, error) {
	var v T
	if err := checkIndex("symm_g", index); err != nil {
		return v, err
	}
	err := call("symm_g", func() C.symm_status {
		return C.symm_g(b.handle(), C.uint64_t(index), cpe(pe), unsafe.Pointer(&v))
	})
	return v, err
}

// ------------------------------------------------------------ signals ----

// PutSignal puts src into [index, ...) of pe's copy, then updates pe's signal
// sig[sigIndex] (op with signal) once the data is visible there.
func (b *Buffer[T]) PutSignal(index int, src []T, sig *Buffer[uint64], sigIndex int, signal uint64,
	op SignalOp, pe int) error {
	if err := checkIndex("symm_put_signal", index, sigIndex); err != nil {
		return err
	}
	return call("symm_put_signal", func() C.symm_status {
		return C.symm_put_signal(b.handle(), C.uint64_t(index), sptr(src), C.uint64_t(len(src)),
			sig.handle(), C.uint64_t(sigIndex), C.uint64_t(signal), C.uint32_t(op), cpe(pe))
	})
}

// PutSignalNBI is PutSignal that may return early: src is read until the next
// Quiet on the context, which completes the put and the signal.
func (b *Buffer[T]) PutSignalNBI(index int, src Span[T], sig *Buffer[uint64], sigIndex int,
	signal uint64, op SignalOp, pe int) error {
	if err := checkIndex("symm_put_signal_nbi", index, sigIndex); err != nil {
		return err
	}
	return call("symm_put_signal_nbi", func() C.symm_status {
		return C.symm_put_signal_nbi(b.handle(), C.uint64_t(index), src.ptr(), C.uint64_t(src.n),
			sig.handle(), C.uint64_t(sigIndex), C.uint64_t(signal), C.uint32_t(op), cpe(pe))
	})
}

// SignalOp updates pe's signal b[index] without data (Buffer[uint64] only).
func (b *Buffer[T]) SignalOp(index int, signal uint64, op SignalOp, pe int) error {
	if err := checkIndex("symm_signal_op", index); err != nil {
		return err
	}
	return call("symm_signal_op", func() C.symm_status {
		return C.symm_signal_op(b.handle(), C.uint64_t(index), C.uint64_t(signal), C.uint32_t(op), cpe(pe))
	})
}

// SignalFetch reads this PE's signal b[index] atomically (Buffer[uint64] only).
func (b *Buffer[T]) SignalFetch(index int) (uint64, error) {
	if err := checkIndex("symm_signal_fetch", index); err != nil {
		return 0, err
	}
	var v C.uint64_t
	err := call("symm_signal_fetch", func() C.symm_status {
		return C.symm_signal_fetch(b.handle(), C.uint64_t(index), &v)
	})
	return uint64(v), err
}

// SignalWaitUntil waits until this PE's signal b[index] compares true against
// value and returns the value that satisfied it (Buffer[uint64] only).
// ErrPeerFailed when a peer dies meanwhile.
func (b *Buffer[T]) SignalWaitUntil(index int, cmp Cmp, value uint64) (uint64, error) {
	if err := checkIndex("symm_signal_wait_until", index); err != nil {
		return 0, err
	}
	var v C.uint64_t
	err := call("symm_signal_wait_until", func() C.symm_status {
		return C.symm_signal_wait_until(b.handle(), C.uint64_t(index), C.uint32_t(cmp), C.uint64_t(value), &v)
	})
	return uint64(v), err
}

// -------------------------------------------------------------- atomics ----

// Atomic performs op on element index of pe's copy and returns the prior value
// for the fetching ops (AmoFetch*, AmoSwap, AmoCompareSwap; the zero value
// otherwise). compare is used by AmoCompareSwap only, value by all but
// AmoFetch, AmoInc and AmoFetchInc.
func (b *Buffer[T]) Atomic(index int, op AmoOp, value, compare T, pe int) (T, error) {
	var fetched T
	if err := checkIndex("symm_atomic", index); err != nil {
		return fetched, err
	}
	var fp unsafe.Pointer
	if op.fetches() {
		fp = unsafe.Pointer(&fetched)
	}
	err := call("symm_atomic", func() C.symm_status {
		return C.symm_atomic(b.handle(), C.uint64_t(index), C.uint32_t(op), unsafe.Pointer(&value),
			unsafe.Pointer(&compare), cpe(pe), fp)
	})
	return fetched, err
}

// AtomicNBI starts op on element index of pe's copy; for the fetching ops the
// prior value is written to fetched's first element by the next Quiet on the
// context (fetched may be empty for the other ops). value and compare are read
// at call time.
func (b *Buffer[T]) AtomicNBI(index int, op AmoOp, value, compare T, pe int, fetched Span[T]) error {
	if err := checkIndex("symm_atomic_nbi", index); err != nil {
		return err
	}
	return call("symm_atomic_nbi", func() C.symm_status {
		return C.symm_atomic_nbi(b.handle(), C.uint64_t(index), C.uint32_t(op), unsafe.Pointer(&value),
			unsafe.Pointer(&compare), cpe(pe), fetched.ptr())
	})
}

// AtomicFetch reads element index of pe's copy atomically.
func (b *Buffer[T]) AtomicFetch(index int, pe int) (T, error) {
	var z T
	return b.Atomic(index, AmoFetch, z, z, pe)
}

// AtomicSet writes element index of pe's copy atomically.
func (b *Buffer[T]) AtomicSet(index int, value T, pe int) error {
	_, err := b.Atomic(index, AmoSet, value, value, pe)
	return err
}

// AtomicCompareSwap writes value when the element equals compare; it returns
// the prior value (equal to compare when the swap happened).
func (b *Buffer[T]) AtomicCompareSwap(index int, compare, value T, pe int) (T, error) {
	return b.Atomic(index, AmoCompareSwap, value, compare, pe)
}

// AtomicSwap writes value and returns the prior value.
func (b *Buffer[T]) AtomicSwap(index int, value T, pe int) (T, error) {
	return b.Atomic(index, AmoSwap, value, value, pe)
}

// AtomicFetchInc adds 1 and returns the prior value.
func (b *Buffer[T]) AtomicFetchInc(index int, pe int) (T, error) {
	var z T
	return b.Atomic(index, AmoFetchInc, z, z, pe)
}

// AtomicInc adds 1.
func (b *Buffer[T]) AtomicInc(index int, pe int) error {
	var z T
	_, err := b.Atomic(index, AmoInc, z, z, pe)
	return err
}

// AtomicFetchAdd adds value and returns the prior value.
func (b *Buffer[T]) AtomicFetchAdd(index int, value T, pe int) (T, error) {
	return b.Atomic(index, AmoFetchAdd, value, value, pe)
}

// AtomicAdd adds value.
func (b *Buffer[T]) AtomicAdd(index int, value T, pe int) error {
	_, err := b.Atomic(index, AmoAdd, value, value, pe)
	return err
}

// AtomicFetchAnd ands value in and returns the prior value.
func (b *Buffer[T]) AtomicFetchAnd(index int, value T, pe int) (T, error) {
	return b.Atomic(index, AmoFetchAnd, value, value, pe)
}

// AtomicAnd ands value in.
func (b *Buffer[T]) AtomicAnd(index int, value T, pe int) error {
	_, err := b.Atomic(index, AmoAnd, value, value, pe)
	return err
}

// AtomicFetchOr ors value in and returns the prior value.
func (b *Buffer[T]) AtomicFetchOr(index int, value T, pe int) (T, error) {
	return b.Atomic(index, AmoFetchOr, value, value, pe)
}

// AtomicOr ors value in.
func (b *Buffer[T]) AtomicOr(index int, value T, pe int) error {
	_, err := b.Atomic(index, AmoOr, value, value, pe)
	return err
}

// AtomicFetchXor xors value in and returns the prior value.
func (b *Buffer[T]) AtomicFetchXor(index int, value T, pe int) (T, error) {
	return b.Atomic(index, AmoFetchXor, value, value, pe)
}

// AtomicXor xors value in.
func (b *Buffer[T]) AtomicXor(index int, value T, pe int) error {
	_, err := b.Atomic(index, AmoXor, value, value, pe)
	return err
}

// ------------------------------------------------------------- helpers ----

// sptr is the address of a Go slice's first element for a blocking call (which
// keeps no pointer), nil for an empty slice.
func sptr[T Element](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// cpe converts a PE number; one outside int32 becomes -1, which the runtime
// rejects with ErrInvalidArg and its message.
func cpe(pe int) C.int32_t {
	if pe != int(int32(pe)) {
		return -1
	}
	return C.int32_t(pe)
}

// checkIndex rejects a negative index (an element number) with ErrOutOfBounds.
func checkIndex(op string, idx ...int) error {
	for _, i := range idx {
		if i < 0 {
			return argError(op, ErrOutOfBounds, "index %d is negative", i)
		}
	}
	return nil
}

// checkCount rejects a negative element count with ErrInvalidArg.
func checkCount(op string, n int) error {
	if n < 0 {
		return argError(op, ErrInvalidArg, "negative element count %d", n)
	}
	return nil
}
