package symm

// #include "symm_go.h"
import "C"

// Collectives over a team. dst and src are buffers of the team's context (the
// same T); ranges are element ranges, bounds-checked. In-place use (the same
// range of one buffer) is allowed for Broadcast, Reduce and, when src is this
// PE's block of dst, Fcollect and Collect; other overlaps are ErrInvalidArg.
// PEs that disagree on n, root or op, or name different dst or src ranges
// (every PE must pass the same buffers and indices), get ErrMismatch. On return
// every peer has finished reading this PE's src.
//
// A negative index or count is not refused here before the call, as it is
// for the point-to-point calls: a PE that returned early would leave its
// peers waiting in the collective (until the timeout, or until its next
// collective pairs with theirs). The call is made on every PE, the negative
// value passed as its two's complement uint64 (huge, outside any buffer), so
// C rejects it on this PE. Where C exchanges the PEs' verdicts (every
// blocking form on every backend, the OnStream forms on the host backend) the
// other PEs get ErrMismatch ("team PE i rejected its arguments") at once;
// elsewhere (the OnStream forms on the CUDA backend) C returns this PE's error
// without an exchange, as for any bad argument. Either way every PE makes the same C
// calls, so the team stays in step. This PE gets the binding's own error for
// the argument (ErrOutOfBounds for an index, ErrInvalidArg for a count,
// naming the negative value as written), not C's message about the huge
// number; see argVerdict.

type collArgs struct {
	team          C.symm_team
	dst, src      C.symm_buf
	dstIdx, srcIx C.uint64_t
	n             C.uint64_t
	bad           error // a negative index or count: this PE's error, after the call
}

// cU64 is an index or count for C; a negative one becomes a huge uint64 (two's
// complement) that C's bounds checks reject.
func cU64(v int) C.uint64_t { return C.uint64_t(uint64(int64(v))) }

// negArgs is the binding's error for the first negative index (ErrOutOfBounds)
// or count (ErrInvalidArg) of a collective, or nil.
func negArgs(op string, idx []int, counts ...int) error {
	if err := checkIndex(op, idx...); err != nil {
		return err
	}
	for _, n := range counts {
		if err := checkCount(op, n); err != nil {
			return err
		}
	}
	return nil
}

func collCheck[T Element](op string, t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int) collArgs {
	return collArgs{t.handle(), dst.handle(), src.handle(), cU64(dstIndex), cU64(srcIndex), cU64(n),
		negArgs(op, []int{dstIndex, srcIndex}, n)}
}

// collective runs one collective call under the team's lock. bad is this PE's
// error for a negative index or count (nil if none): the call is still made,
// so the team hears of it (see argVerdict).
func collective(t *Team, op string, bad error, f func() C.symm_status) error {
	mu := t.lock()
	defer mu.Unlock()
	err := call(op, f)
	if bad == nil {
		return err
	}
	return argVerdict(bad, err)
}

// argVerdict is the error of a collective that this PE entered with a negative
// index or count (bad, the binding's error for it) and that returned err. C
// rejected the huge value it got (ErrOutOfBounds) or another argument of this
// PE (ErrInvalidArg ...): bad says what was wrong as the caller wrote it. A
// failure of another kind (a peer that failed, a timeout, a peer in another
// collective) is added to bad's message, so it is not lost; bad's status
// stays.
func argVerdict(bad, err error) error {
	e, ok := err.(*Error)
	if !ok || e.Status == ErrOutOfBounds || e.Status == ErrInvalidArg {
		return bad
	}
	b := *bad.(*Error)
	b.Message += "; the call also failed: " + e.Error()
	return &b
}

// Broadcast copies root's src[srcIndex:srcIndex+n] to dst[dstIndex:...] on
// every PE of the team (root in team PE numbers; root's dst is written too).
func Broadcast[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n, root int) error {
	const op = "symm_broadcast"
	a := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, op, a.bad, func() C.symm_status {
		return C.symm_broadcast(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, cpe(root))
	})
}

// Fcollect concatenates every team PE's src range, n elements each, in team
// order into dst[dstIndex:dstIndex+n*NPEs] on every PE.
func Fcollect[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int) error {
	const op = "symm_fcollect"
	a := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, op, a.bad, func() C.symm_status {
		return C.symm_fcollect(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n)
	})
}

// Collect is Fcollect with a per-PE n: the blocks are concatenated in team
// order.
func Collect[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int) error {
	const op = "symm_collect"
	a := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, op, a.bad, func() C.symm_status {
		return C.symm_collect(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n)
	})
}

// Alltoall sends block j (n elements) of this PE's src range to team PE j,
// where it lands in dst block i (i = this PE's team number).
func Alltoall[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int) error {
	const op = "symm_alltoall"
	a := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, op, a.bad, func() C.symm_status {
		return C.symm_alltoall(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n)
	})
}

// a2avArgs are the C arguments of Alltoallv and AlltoallvOnStream.
type a2avArgs struct {
	team                       C.symm_team
	dst, src, send, recv       C.symm_buf
	dstIdx, dstN, srcIdx, srcN C.uint64_t
	sendIdx, recvIdx           C.uint64_t
	bad                        error // as in collArgs
}

func a2avCheck[T Element, S, R Count](op string, t *Team, dst *Buffer[T], dstIndex, dstN int, src *Buffer[T],
	srcIndex, srcN int, sendCounts *Buffer[S], sendIndex int, recvCounts *Buffer[R], recvIndex int) a2avArgs {
	return a2avArgs{t.handle(), dst.handle(), src.handle(), sendCounts.handle(), recvCounts.handle(),
		cU64(dstIndex), cU64(dstN), cU64(srcIndex), cU64(srcN), cU64(sendIndex), cU64(recvIndex),
		negArgs(op, []int{dstIndex, srcIndex, sendIndex, recvIndex}, dstN, srcN)}
}

// Alltoallv is the variable-size all-to-all with its counts in symmetric
// memory (since ABI 1.2; MoE dispatch and combine, like PyTorch's
// all_to_all_vdev): this PE sends sendCounts[sendIndex+j] elements to team
// PE j. The counts are read from symmetric memory when the call gets there
// (on a stream: when the stream does), so counts that a kernel just computed
// need no copy to the host. With n = t.NPEs():
//
//   - src[srcIndex:srcIndex+srcN] holds the elements for team PE 0, then
//     those for PE 1, ... (packed).
//   - sendCounts[sendIndex:sendIndex+n]: entry j is the number of elements
//     for team PE j. Peers read it.
//   - dst[dstIndex:dstIndex+dstN] is the room to receive: PE 0's elements
//     for this PE, then PE 1's, ... (packed).
//   - recvCounts[recvIndex:recvIndex+2*n] is written: entry j is the number
//     of elements that came from team PE j, entry n+j where they start in
//     dst (relative to dstIndex).
//
// dst and src are buffers of the team's context; the four ranges must not
// overlap, except src with sendCounts (both are only read): ErrInvalidArg.
// srcIndex, srcN and sendIndex must be the same on every PE (a GPU reads a
// peer at this PE's offsets): PEs that disagree get ErrMismatch. A count is
// read as a uint64 (a negative int64 count is a huge one).
//
// Bad counts fail one PE and let the others finish: when this PE's send
// counts add up to more than srcN, when what it would receive exceeds dstN,
// or when some peer's elements for it lie beyond that peer's srcN, this PE
// gets ErrOutOfBounds; in the last two cases it copies nothing into dst but
// still writes recvCounts (what would have come). The other PEs succeed, and
// the team stays usable.
//
// Combine (the reverse exchange) is the same call with the forward call's
// recvCounts (its first n entries, at recvIndex) as sendCounts and its dst as
// src: every element returns to the slot of src it left from.
//
// On return every peer has finished reading this PE's src and sendCounts.
func Alltoallv[T Element, S, R Count](t *Team, dst *Buffer[T], dstIndex, dstN int, src *Buffer[T], srcIndex, srcN int,
	sendCounts *Buffer[S], sendIndex int, recvCounts *Buffer[R], recvIndex int) error {
	const op = "symm_alltoallv"
	a := a2avCheck(op, t, dst, dstIndex, dstN, src, srcIndex, srcN, sendCounts, sendIndex, recvCounts, recvIndex)
	return collective(t, op, a.bad, func() C.symm_status {
		return C.symm_alltoallv(a.team, a.dst, a.dstIdx, a.dstN, a.src, a.srcIdx, a.srcN,
			a.send, a.sendIdx, a.recv, a.recvIdx)
	})
}

// Reduce combines every team PE's src range element-wise with op into every
// PE's dst range (in team order, so every PE gets identical results).
func Reduce[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, op ReduceOp) error {
	const name = "symm_reduce"
	a := collCheck(name, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, name, a.bad, func() C.symm_status {
		return C.symm_reduce(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uint32_t(op))
	})
}

// Reducescatter reduces block-wise: src holds NPEs blocks of n elements, and
// team PE i's dst range receives the reduction (op) of every PE's block i.
func Reducescatter[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, op ReduceOp) error {
	const name = "symm_reducescatter"
	a := collCheck(name, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, name, a.bad, func() C.symm_status {
		return C.symm_reducescatter(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uint32_t(op))
	})
}

// BroadcastOnStream enqueues a Broadcast on stream s.
func BroadcastOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n, root int, s Stream) error {
	const op = "symm_broadcast_on_stream"
	a := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, op, a.bad, func() C.symm_status {
		return C.symm_go_broadcast_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, cpe(root), C.uintptr_t(s))
	})
}

// FcollectOnStream enqueues an Fcollect on stream s.
func FcollectOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, s Stream) error {
	const op = "symm_fcollect_on_stream"
	a := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, op, a.bad, func() C.symm_status {
		return C.symm_go_fcollect_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uintptr_t(s))
	})
}

// AlltoallOnStream enqueues an Alltoall on stream s.
func AlltoallOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, s Stream) error {
	const op = "symm_alltoall_on_stream"
	a := collCheck(op, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, op, a.bad, func() C.symm_status {
		return C.symm_go_alltoall_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uintptr_t(s))
	})
}

// AlltoallvOnStream enqueues an Alltoallv on stream s (graph-capturable; on
// the CUDA backend one kernel that reads the counts on the GPU when the
// stream gets there). On the CUDA backend the returned error is
// about this PE's arguments only: the PEs' srcIndex, srcN and sendIndex are
// not compared (they must still agree), and an ErrOutOfBounds found on the
// GPU (the bad counts of Alltoallv) is recorded on the context
// (Context.AsyncError) while recvCounts says what would have come. On the
// host backend it runs to completion before returning and returns the
// status itself, as Alltoallv does.
func AlltoallvOnStream[T Element, S, R Count](t *Team, dst *Buffer[T], dstIndex, dstN int, src *Buffer[T],
	srcIndex, srcN int, sendCounts *Buffer[S], sendIndex int, recvCounts *Buffer[R], recvIndex int, s Stream) error {
	const op = "symm_alltoallv_on_stream"
	a := a2avCheck(op, t, dst, dstIndex, dstN, src, srcIndex, srcN, sendCounts, sendIndex, recvCounts, recvIndex)
	return collective(t, op, a.bad, func() C.symm_status {
		return C.symm_go_alltoallv_on_stream(a.team, a.dst, a.dstIdx, a.dstN, a.src, a.srcIdx, a.srcN,
			a.send, a.sendIdx, a.recv, a.recvIdx, C.uintptr_t(s))
	})
}

// ReduceOnStream enqueues a Reduce on stream s.
func ReduceOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, op ReduceOp, s Stream) error {
	const name = "symm_reduce_on_stream"
	a := collCheck(name, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, name, a.bad, func() C.symm_status {
		return C.symm_go_reduce_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uint32_t(op), C.uintptr_t(s))
	})
}

// ReducescatterOnStream enqueues a Reducescatter on stream s.
func ReducescatterOnStream[T Element](t *Team, dst *Buffer[T], dstIndex int, src *Buffer[T], srcIndex, n int, op ReduceOp, s Stream) error {
	const name = "symm_reducescatter_on_stream"
	a := collCheck(name, t, dst, dstIndex, src, srcIndex, n)
	return collective(t, name, a.bad, func() C.symm_status {
		return C.symm_go_reducescatter_on_stream(a.team, a.dst, a.dstIdx, a.src, a.srcIx, a.n, C.uint32_t(op), C.uintptr_t(s))
	})
}
