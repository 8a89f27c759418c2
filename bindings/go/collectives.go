package symm

// #include "symm_go.h"
import "C"

// Collectives over a team. dst and src are buffers of the team's context (the
// same T); ranges are element ranges, bounds-checked. In-place use (the same
// range of one buffer) is allowed for Broadcast, Reduce and, when src is this
// PE's block of dst, Fcollect and Collect; other overlaps are ErrInvalidArg.
// PEs that disagree on n, root or op get ErrMismatch. On return every peer has
// finished reading this PE's src.

type collArgs struct {
	team          C.symm_team
	dst, src      C.symm_buf
	dstIdx, srcIx C.uint64_t
	n             C.uint64_t
}

func collCheck[T Element](op string, t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int) (collArgs, error) {
	if err := checkIndex(op, dstIndex, srcIndex); err != nil {
		return collArgs{}, err
	}
	if err := checkCount(op, n); err != nil {
		return collArgs{}, err
	}
	return collArgs{t.handle(), dst.handle(), src.handle(), C.uint64_t(dstIndex), C.uint64_t(srcIndex),
		C.uint64_t(n)}, nil
}

// collective runs one collective call under the team's lock.
func collective(t *Team, op string, f func() C.symm_status) error {
	mu := t.lock()
	defer mu.Unlock()
	return call(op, f)
}

// Broadcast copies root's src[srcIndex:srcIndex+n] to dst[dstIndex:...] on
// every PE of the team (root in team PE numbers; root's dst is written too).
func Broadcast[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n, root int) error {
	const op = "symm_broadcast"
	a, err := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, op, func() C.symm_status {
		return C.symm_broadcast(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, cpe(root))
	})
}

// Fcollect concatenates every team PE's src range, n elements each, in team
// order into dst[dstIndex:dstIndex+n*NPEs] on every PE.
func Fcollect[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int) error {
	const op = "symm_fcollect"
	a, err := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, op, func() C.symm_status {
		return C.symm_fcollect(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n)
	})
}

// Collect is Fcollect with a per-PE n: the blocks are concatenated in team
// order.
func Collect[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int) error {
	const op = "symm_collect"
	a, err := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, op, func() C.symm_status {
		return C.symm_collect(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n)
	})
}

// Alltoall sends block j (n elements) of this PE's src range to team PE j,
// where it lands in dst block i (i = this PE's team number).
func Alltoall[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int) error {
	const op = "symm_alltoall"
	a, err := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, op, func() C.symm_status {
		return C.symm_alltoall(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n)
	})
}

// Reduce combines every team PE's src range element-wise with op into every
// PE's dst range (in team order, so every PE gets identical results).
func Reduce[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, op ReduceOp) error {
	const name = "symm_reduce"
	a, err := collCheck(name, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, name, func() C.symm_status {
		return C.symm_reduce(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uint32_t(op))
	})
}

// Reducescatter reduces block-wise: src holds NPEs blocks of n elements, and
// team PE i's dst range receives the reduction (op) of every PE's block i.
func Reducescatter[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, op ReduceOp) error {
	const name = "symm_reducescatter"
	a, err := collCheck(name, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, name, func() C.symm_status {
		return C.symm_reducescatter(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uint32_t(op))
	})
}

// BroadcastOnStream enqueues a Broadcast on stream s.
func BroadcastOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n, root int, s Stream) error {
	const op = "symm_broadcast_on_stream"
	a, err := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, op, func() C.symm_status {
		return C.symm_go_broadcast_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, cpe(root), C.uintptr_t(s))
	})
}

// FcollectOnStream enqueues an Fcollect on stream s.
func FcollectOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, s Stream) error {
	const op = "symm_fcollect_on_stream"
	a, err := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, op, func() C.symm_status {
		return C.symm_go_fcollect_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uintptr_t(s))
	})
}

// AlltoallOnStream enqueues an Alltoall on stream s.
func AlltoallOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, s Stream) error {
	const op = "symm_alltoall_on_stream"
	a, err := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, op, func() C.symm_status {
		return C.symm_go_alltoall_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uintptr_t(s))
	})
}

// ReduceOnStream enqueues a Reduce on stream s.
func ReduceOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, op ReduceOp, s Stream) error {
	const name = "symm_reduce_on_stream"
	a, err := collCheck(name, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, name, func() C.symm_status {
		return C.symm_go_reduce_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uint32_t(op), C.uintptr_t(s))
	})
}

// ReducescatterOnStream enqueues a Reducescatter on stream s.
func ReducescatterOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, op ReduceOp, s Stream) error {
	const name = "symm_reducescatter_on_stream"
	a, err := collCheck(name, t, dst, dstIndex, src, srcIndex, n)
	if err != nil {
		return err
	}
	return collective(t, name, func() C.symm_status {
		return C.symm_go_reducescatter_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uint32_t(op), C.uintptr_t(s))
	})
}
