package symm

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// One PE passes a negative index or count to a blocking collective, the
// others good arguments. The binding still enters the collective on the bad
// PE (C gets a value it rejects), so C's verdict reaches the whole team at
// once: the bad PE gets its own ErrOutOfBounds or ErrInvalidArg (naming the
// negative argument), every other PE ErrMismatch naming the bad PE, and none
// waits for a timeout. After each such call a good Reduce must give every PE
// the right sum (the team is still in step).

// badArgPrompt bounds each call; the job's timeout (WithTimeout below) is
// far longer, so a PE left waiting for the bad one fails this bound.
const badArgPrompt = 5 * time.Second

func TestNegativeArgumentOnOnePE(t *testing.T) {
	runOnPEs(t, "TestNegativeArgumentWorker", "negative arguments checked")
}

func TestNegativeArgumentWorker(t *testing.T) {
	worker(t, "TestNegativeArgumentWorker")
	ctx, err := Init(WithTimeout(60 * time.Second))
	must(t, err, "Init under symmrun")
	me, n := ctx.MyPE(), ctx.NPEs()
	if n != nPEs {
		t.Fatalf("%d PEs", n)
	}
	world := ctx.World()
	src, dst := alloc[int64](t, ctx, 4*n), alloc[int64](t, ctx, 4*n)
	sc, rc := alloc[uint64](t, ctx, n), alloc[uint64](t, ctx, 2*n)
	ones := make([]uint64, n)
	for i := range ones {
		ones[i] = 1
	}
	must(t, sc.Put(0, ones, me), "Put send counts")
	rsrc, rdst := alloc[int64](t, ctx, 1), alloc[int64](t, ctx, 1)
	must(t, rsrc.P(0, int64(me+1), me), "P")

	// idx and cnt give the bad PE a negative index or count.
	idx := func(bad bool) int {
		if bad {
			return -1
		}
		return 0
	}
	cnt := func(bad bool, good int) int {
		if bad {
			return -3
		}
		return good
	}
	cases := []struct {
		op   string // the C function
		st   Status // the bad PE's status
		call func(bad bool) error
	}{
		{"symm_broadcast", ErrOutOfBounds, func(b bool) error { return Broadcast(world, dst, idx(b), src, 0, 2, 1) }},
		{"symm_fcollect", ErrOutOfBounds, func(b bool) error { return Fcollect(world, dst, 0, src, idx(b), 1) }},
		{"symm_collect", ErrInvalidArg, func(b bool) error { return Collect(world, dst, 0, src, 0, cnt(b, 1)) }},
		{"symm_alltoall", ErrInvalidArg, func(b bool) error { return Alltoall(world, dst, 0, src, 0, cnt(b, 1)) }},
		{"symm_alltoallv", ErrOutOfBounds, func(b bool) error {
			return Alltoallv(world, dst, 0, n, src, 0, n, sc, idx(b), rc, 0)
		}},
		{"symm_alltoallv", ErrInvalidArg, func(b bool) error {
			return Alltoallv(world, dst, 0, cnt(b, n), src, 0, n, sc, 0, rc, 0)
		}},
		{"symm_reduce", ErrOutOfBounds, func(b bool) error { return Reduce(world, dst, 0, src, idx(b), 2, OpSum) }},
		{"symm_reducescatter", ErrInvalidArg, func(b bool) error {
			return Reducescatter(world, dst, 0, src, 0, cnt(b, 1), OpMax)
		}},
		{"symm_broadcast_on_stream", ErrOutOfBounds, func(b bool) error {
			return BroadcastOnStream(world, dst, 0, src, idx(b), 2, 3, 0)
		}},
		{"symm_fcollect_on_stream", ErrInvalidArg, func(b bool) error {
			return FcollectOnStream(world, dst, 0, src, 0, cnt(b, 1), 0)
		}},
		{"symm_alltoall_on_stream", ErrOutOfBounds, func(b bool) error {
			return AlltoallOnStream(world, dst, idx(b), src, 0, 1, 0)
		}},
		{"symm_alltoallv_on_stream", ErrOutOfBounds, func(b bool) error {
			return AlltoallvOnStream(world, dst, 0, n, src, 0, n, sc, 0, rc, idx(b), 0)
		}},
		{"symm_reduce_on_stream", ErrOutOfBounds, func(b bool) error {
			return ReduceOnStream(world, dst, idx(b), src, 0, 1, OpMin, 0)
		}},
		{"symm_reducescatter_on_stream", ErrInvalidArg, func(b bool) error {
			return ReducescatterOnStream(world, dst, 0, src, 0, cnt(b, 1), OpSum, 0)
		}},
	}
	tri := int64(n * (n + 1) / 2)
	for i, c := range cases {
		bad := (i + 1) % n // every PE is the bad one in turn
		what := fmt.Sprintf("case %d: %s with a negative argument on PE %d", i, c.op, bad)
		t0 := time.Now()
		err := c.call(me == bad)
		if d := time.Since(t0); d > badArgPrompt {
			t.Fatalf("%s: returned after %v (%v), not at once", what, d, err)
		}
		t.Logf("pe %d: %s: %v", me, what, err)
		if me == bad {
			e := isStatus(t, err, c.st, what)
			if e.Op != c.op || !strings.Contains(e.Message, c.op+": ") || !strings.Contains(e.Message, "negative") {
				t.Fatalf("%s: Op %q, message %q", what, e.Op, e.Message)
			}
		} else {
			e := isStatus(t, err, ErrMismatch, what+" (a good PE)")
			if e.Op != c.op || !strings.Contains(e.Message, fmt.Sprintf("team PE %d rejected its arguments", bad)) {
				t.Fatalf("%s (a good PE): Op %q, message %q", what, e.Op, e.Message)
			}
		}
		// The team is still in step: a good collective works on every PE.
		must(t, rdst.P(0, -1, me), "P")
		t0 = time.Now()
		must(t, Reduce(world, rdst, 0, rsrc, 0, 1, OpSum), what+": the Reduce after it")
		if d := time.Since(t0); d > badArgPrompt {
			t.Fatalf("%s: the Reduce after it took %v", what, d)
		}
		if v, err := rdst.G(0, me); err != nil || v != tri {
			t.Fatalf("%s: the Reduce after it gave %d (%v), want %d", what, v, err, tri)
		}
	}

	// Alloc, collective over the context: the bad PE's negative count is its
	// ErrInvalidArg, the others' ErrMismatch names it; then an Alloc works.
	for bad := 0; bad < n; bad++ {
		what := fmt.Sprintf("Alloc with a negative count on PE %d", bad)
		count := 8
		if me == bad {
			count = -2
		}
		t0 := time.Now()
		b, err := Alloc[int32](ctx, count)
		if d := time.Since(t0); d > badArgPrompt {
			t.Fatalf("%s: returned after %v (%v), not at once", what, d, err)
		}
		if b != nil {
			t.Fatalf("%s: got a buffer", what)
		}
		if me == bad {
			e := isStatus(t, err, ErrInvalidArg, what)
			if !strings.Contains(e.Message, "negative count -2") {
				t.Fatalf("%s: message %q", what, e.Message)
			}
		} else {
			e := isStatus(t, err, ErrMismatch, what+" (a good PE)")
			if !strings.Contains(e.Message, fmt.Sprintf("PE %d rejected its arguments", bad)) {
				t.Fatalf("%s (a good PE): message %q", what, e.Message)
			}
		}
		b, err = Alloc[int32](ctx, 8)
		must(t, err, what+": the Alloc after it")
		must(t, b.Free(), what+": Free")
	}

	// Last, an Alltoall and a Broadcast with data, then the releases.
	checkAlltoall(t, world, dst, src, me, n, "Alltoall after the bad calls")
	got := make([]int64, n)
	must(t, Broadcast(world, dst, 0, src, 0, n, n-1), "Broadcast after the bad calls")
	must(t, dst.Get(0, got, me), "Get")
	for j := range got {
		if got[j] != int64(10*(n-1)+j) {
			t.Fatalf("Broadcast after the bad calls: %v", got)
		}
	}
	for _, b := range []interface{ Free() error }{src, dst, sc, rc, rsrc, rdst} {
		must(t, b.Free(), "Free")
	}
	must(t, ctx.Finalize(), "Finalize")
	fmt.Printf("pe %d/%d: negative arguments checked\n", me, n)
}

// The bad PE's error when the call failed for another reason too (here a nil
// team and buffers: C's ErrInvalidHandle): the status is still the negative
// argument's, and C's error is added to the message.
func TestNegativeArgumentAndAnotherFailure(t *testing.T) {
	buildDir(t)
	var b *Buffer[int32]
	e := isStatus(t, Reduce(nil, b, -1, b, 0, 1, OpSum), ErrOutOfBounds, "Reduce on nil with a negative index")
	if !strings.HasPrefix(e.Message, "symm_reduce: index -1 is negative; the call also failed: ") ||
		!strings.Contains(e.Message, ErrInvalidHandle.Name()) {
		t.Fatalf("Reduce on nil with a negative index: message %q", e.Message)
	}
	e = isStatus(t, Alltoallv(nil, b, 0, -2, b, 0, 1, (*Buffer[uint64])(nil), 0, (*Buffer[int64])(nil), 0),
		ErrInvalidArg, "Alltoallv on nil with a negative count")
	if !strings.Contains(e.Message, "negative element count -2") || !strings.Contains(e.Message, ErrInvalidHandle.Name()) {
		t.Fatalf("Alltoallv on nil with a negative count: message %q", e.Message)
	}
	if err := argVerdict(e, nil); err != e {
		t.Fatalf("argVerdict without a C error: %v", err)
	}
}
