package symm

// #include "symm_go.h"
import "C"

import "unsafe"

// Stream-ordered forms of the Buffer operations. On the CUDA backend they are
// enqueued on the stream and return at once (failures while the stream runs
// are recorded: Context.AsyncError); local memory is read or written when the
// stream reaches the operation, so it is a Span (device memory, or host memory
// page-locked by your CUDA binding), never a Go slice. On the host backend
// they complete before returning and the stream is ignored.

// PutOnStream enqueues a put of src into [index, index+src.Len()) of pe's copy.
func (b *Buffer[T]) PutOnStream(index int, src Span[T], pe int, s Stream) error {
	if err := checkIndex("symm_put_on_stream", index); err != nil {
		return err
	}
	return call("symm_put_on_stream", func() C.symm_status {
		return C.symm_go_put_on_stream(b.handle(), C.uint64_t(index), src.ptr(), C.uint64_t(src.n), cpe(pe), C.uintptr_t(s))
	})
}

// GetOnStream enqueues a get of [index, index+dst.Len()) of pe's copy into dst.
func (b *Buffer[T]) GetOnStream(index int, dst Span[T], pe int, s Stream) error {
	if err := checkIndex("symm_get_on_stream", index); err != nil {
		return err
	}
	return call("symm_get_on_stream", func() C.symm_status {
		return C.symm_go_get_on_stream(dst.ptr(), b.handle(), C.uint64_t(index), C.uint64_t(dst.n), cpe(pe), C.uintptr_t(s))
	})
}

// PutNBIOnStream is the non-blocking PutOnStream (complete at a later quiet or
// barrier on the stream).
func (b *Buffer[T]) PutNBIOnStream(index int, src Span[T], pe int, s Stream) error {
	if err := checkIndex("symm_put_nbi_on_stream", index); err != nil {
		return err
	}
	return call("symm_put_nbi_on_stream", func() C.symm_status {
		return C.symm_go_put_nbi_on_stream(b.handle(), C.uint64_t(index), src.ptr(), C.uint64_t(src.n), cpe(pe), C.uintptr_t(s))
	})
}

// GetNBIOnStream is the non-blocking GetOnStream.
func (b *Buffer[T]) GetNBIOnStream(index int, dst Span[T], pe int, s Stream) error {
	if err := checkIndex("symm_get_nbi_on_stream", index); err != nil {
		return err
	}
	return call("symm_get_nbi_on_stream", func() C.symm_status {
		return C.symm_go_get_nbi_on_stream(dst.ptr(), b.handle(), C.uint64_t(index), C.uint64_t(dst.n), cpe(pe), C.uintptr_t(s))
	})
}

// POnStream enqueues a write of one element of pe's copy; value is read at
// call time.
func (b *Buffer[T]) POnStream(index int, value T, pe int, s Stream) error {
	if err := checkIndex("symm_p_on_stream", index); err != nil {
		return err
	}
	return call("symm_p_on_stream", func() C.symm_status {
		return C.symm_go_p_on_stream(b.handle(), C.uint64_t(index), unsafe.Pointer(&value), cpe(pe), C.uintptr_t(s))
	})
}

// PutSignalOnStream enqueues a PutSignal.
func (b *Buffer[T]) PutSignalOnStream(index int, src Span[T], sig *Buffer[uint64], sigIndex int,
	signal uint64, op SignalOp, pe int, s Stream) error {
	if err := checkIndex("symm_put_signal_on_stream", index, sigIndex); err != nil {
		return err
	}
	return call("symm_put_signal_on_stream", func() C.symm_status {
		return C.symm_go_put_signal_on_stream(b.handle(), C.uint64_t(index), src.ptr(), C.uint64_t(src.n),
			sig.handle(), C.uint64_t(sigIndex), C.uint64_t(signal), C.uint32_t(op), cpe(pe), C.uintptr_t(s))
	})
}

// SignalOpOnStream enqueues a SignalOp (Buffer[uint64] only).
func (b *Buffer[T]) SignalOpOnStream(index int, signal uint64, op SignalOp, pe int, s Stream) error {
	if err := checkIndex("symm_signal_op_on_stream", index); err != nil {
		return err
	}
	return call("symm_signal_op_on_stream", func() C.symm_status {
		return C.symm_go_signal_op_on_stream(b.handle(), C.uint64_t(index), C.uint64_t(signal), C.uint32_t(op),
			cpe(pe), C.uintptr_t(s))
	})
}

// SignalWaitUntilOnStream makes the stream wait (on the GPU) until this PE's
// signal b[index] compares true against value (Buffer[uint64] only).
func (b *Buffer[T]) SignalWaitUntilOnStream(index int, cmp Cmp, value uint64, s Stream) error {
	if err := checkIndex("symm_signal_wait_until_on_stream", index); err != nil {
		return err
	}
	return call("symm_signal_wait_until_on_stream", func() C.symm_status {
		return C.symm_go_signal_wait_until_on_stream(b.handle(), C.uint64_t(index), C.uint32_t(cmp),
			C.uint64_t(value), C.uintptr_t(s))
	})
}
