package symm

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// Four PEs under symmrun on the host backend: TestFourPEs runs this test
// binary's TestPEWorker as a job of 4 (symmrun -n 4); each PE checks every
// result against the value it must have and fails (exit status 1) otherwise,
// which fails the job. The driver also requires every PE's success line.

const nPEs = 4

func TestFourPEs(t *testing.T) {
	runOnPEs(t, "TestPEWorker", "all checks passed")
}

// checkAlltoall puts 10*me+j into block j of src (one element a block),
// runs Alltoall into dst, and checks that block i of dst holds 10*i+me.
func checkAlltoall[T int32 | int64](t *testing.T, world *Team, dst, src *Buffer[T], me, n int, what string) {
	t.Helper()
	blocks := make([]T, n)
	for j := range blocks {
		blocks[j] = T(10*me + j) // block j goes to PE j
	}
	must(t, src.Put(0, blocks, me), what+": Put")
	must(t, Alltoall(world, dst, 0, src, 0, 1), what)
	got := make([]T, n)
	must(t, dst.Get(0, got, me), what+": Get")
	for i := range got {
		if got[i] != T(10*i+me) {
			t.Fatalf("%s: %v", what, got)
		}
	}
}

// runOnPEs runs the test function worker on nPEs PEs under symmrun (host
// backend) and requires every PE's line "pe <me>/<n>: <done>".
func runOnPEs(t *testing.T, worker, done string) {
	t.Helper()
	out, err := runWorker(t, worker, nPEs, "SYMM_RUNTIME="+runtimeLib(t), "SYMM_BACKEND=host")
	if err != nil {
		t.Fatalf("symmrun -n %d failed: %v\n%s", nPEs, err, out)
	}
	for pe := 0; pe < nPEs; pe++ {
		if line := fmt.Sprintf("pe %d/%d: %s", pe, nPEs, done); !strings.Contains(out, line) {
			t.Fatalf("missing %q:\n%s", line, out)
		}
	}
}

func TestPEWorker(t *testing.T) {
	worker(t, "TestPEWorker")
	ctx, err := Init()
	must(t, err, "Init under symmrun")
	me, n := ctx.MyPE(), ctx.NPEs()
	if n != nPEs {
		t.Fatalf("%d PEs", n)
	}
	if info, _ := ctx.Query(); info.Backend != BackendHost {
		t.Fatalf("backend %d", info.Backend)
	}
	right, left := (me+1)%n, (me+n-1)%n
	world := ctx.World()

	// Ring put: three values into the right neighbour's copy.
	ring := alloc[int64](t, ctx, 3)
	mine := []int64{int64(100 * me), int64(100*me + 1), int64(100*me + 2)}
	must(t, ring.Put(0, mine, right), "ring Put")
	must(t, ctx.BarrierAll(), "BarrierAll")
	got := make([]int64, 3)
	must(t, ring.Get(0, got, me), "Get own copy")
	if want := []int64{int64(100 * left), int64(100*left + 1), int64(100*left + 2)}; !equal(got, want) {
		t.Fatalf("ring: got %v, want %v", got, want)
	}
	must(t, ring.Get(0, got, right), "Get from the right")
	if !equal(got, mine) {
		t.Fatalf("right neighbour holds %v, want %v", got, mine)
	}
	isStatus(t, ring.Put(2, mine, right), ErrOutOfBounds, "Put past the end of a peer's copy")

	// Sum reduce (and min on float64) over the world team.
	src := alloc[int64](t, ctx, 2)
	dst := alloc[int64](t, ctx, 2)
	must(t, src.Put(0, []int64{int64(me + 1), int64(10 * (me + 1))}, me), "Put")
	must(t, Reduce(world, dst, 0, src, 0, 2, OpSum), "Reduce sum")
	tri := int64(n * (n + 1) / 2)
	sum := make([]int64, 2)
	must(t, dst.Get(0, sum, me), "Get")
	if sum[0] != tri || sum[1] != 10*tri {
		t.Fatalf("sum reduce %v, want [%d %d]", sum, tri, 10*tri)
	}
	fsrc, fdst := alloc[float64](t, ctx, 1), alloc[float64](t, ctx, 1)
	must(t, fsrc.P(0, -0.5*float64(me), me), "P")
	must(t, Reduce(world, fdst, 0, fsrc, 0, 1, OpMin), "Reduce min")
	if v, _ := fdst.G(0, me); v != -0.5*float64(n-1) {
		t.Fatalf("min reduce %v", v)
	}

	// Put with signal, then wait for the left neighbour's.
	data := alloc[int32](t, ctx, 4)
	sig := alloc[uint64](t, ctx, 1)
	m := int32(me)
	must(t, data.PutSignal(0, []int32{m, 2 * m, 3 * m, -m}, sig, 0, uint64(me+1), SignalSet, right), "PutSignal")
	v, err := sig.SignalWaitUntil(0, CmpEQ, uint64(left+1))
	if err != nil || v != uint64(left+1) {
		t.Fatalf("SignalWaitUntil %d %v", v, err)
	}
	arrived := make([]int32, 4)
	must(t, data.Get(0, arrived, me), "Get")
	l := int32(left)
	if !equal(arrived, []int32{l, 2 * l, 3 * l, -l}) {
		t.Fatalf("data with its signal: %v", arrived)
	}

	// Atomic fetch-add: every PE adds me+1 to PE 0's counter.
	counter := alloc[uint64](t, ctx, 1)
	before, err := counter.AtomicFetchAdd(0, uint64(me+1), 0)
	must(t, err, "AtomicFetchAdd")
	must(t, ctx.BarrierAll(), "BarrierAll")
	if total, err := counter.AtomicFetch(0, 0); err != nil || total != uint64(tri) {
		t.Fatalf("fetch-add total %d %v, want %d", total, err, tri)
	}
	// The fetched values differ: gather them with fcollect.
	fetched, all := alloc[uint64](t, ctx, 1), alloc[uint64](t, ctx, n)
	must(t, fetched.P(0, before, me), "P")
	must(t, Fcollect(world, all, 0, fetched, 0, 1), "Fcollect")
	seen := make([]uint64, n)
	must(t, all.Get(0, seen, me), "Get")
	if seen[me] != before {
		t.Fatalf("fcollect put %d at my index, want %d", seen[me], before)
	}
	sorted := append([]uint64(nil), seen...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i := 1; i < n; i++ {
		if sorted[i] == sorted[i-1] {
			t.Fatalf("two fetch-adds saw the same value: %v", seen)
		}
	}

	// Broadcast from PE 2 and alltoall.
	bsrc, bdst := alloc[int16](t, ctx, 2), alloc[int16](t, ctx, 2)
	must(t, bsrc.Put(0, []int16{int16(me), 7}, me), "Put")
	must(t, Broadcast(world, bdst, 0, bsrc, 0, 2, 2), "Broadcast")
	b2 := make([]int16, 2)
	must(t, bdst.Get(0, b2, me), "Get")
	if !equal(b2, []int16{2, 7}) {
		t.Fatalf("broadcast %v", b2)
	}
	asrc, adst := alloc[int32](t, ctx, n), alloc[int32](t, ctx, n)
	checkAlltoall(t, world, adst, asrc, me, n, "Alltoall")

	// Alltoallv: a dst too small on one PE, then varied counts and the combine.
	checkAlltoallvFault(t, ctx, world, me, n)
	checkAlltoallv(t, ctx, world, me, n)

	// A split team of the even PEs; a reduce over it.
	even, err := world.SplitStrided(0, 2, n/2, nil)
	must(t, err, "SplitStrided")
	if (me%2 == 0) != (even != nil) {
		t.Fatalf("membership of the even team: %v", even != nil)
	}
	if even != nil {
		if even.MyPE() != me/2 || even.TranslatePE(even.MyPE(), world) != me {
			t.Fatal("even team numbering")
		}
		must(t, Reduce(even, dst, 0, src, 0, 1, OpSum), "Reduce over the even team")
		if v, _ := dst.G(0, me); v != 1+3 {
			t.Fatalf("even-team sum %d", v)
		}
		must(t, even.Destroy(), "Destroy")
	}

	// Non-blocking puts from C memory, completed by a barrier.
	nbi := alloc[int32](t, ctx, n)
	hm, err := AllocHost[int32](1)
	must(t, err, "AllocHost")
	hm.Slice()[0] = int32(1000 + me)
	for pe := 0; pe < n; pe++ {
		must(t, nbi.PutNBI(me, hm.All(), pe), "PutNBI")
	}
	must(t, ctx.BarrierAll(), "BarrierAll")
	hm.Free()
	row := make([]int32, n)
	must(t, nbi.Get(0, row, me), "Get")
	for i := range row {
		if row[i] != int32(1000+i) {
			t.Fatalf("PutNBI to every PE: %v", row)
		}
	}
	// Point-to-point wait: the left neighbour sets my flag.
	flag := alloc[int32](t, ctx, 1)
	must(t, flag.P(0, int32(7+me), right), "P")
	must(t, flag.WaitUntil(0, CmpEQ, int32(7+left)), "WaitUntil")

	if rec, err := ctx.AsyncError(false); rec != nil || err != nil {
		t.Fatalf("AsyncError %v %v", rec, err)
	}
	must(t, ring.Free(), "Free")
	must(t, ctx.Finalize(), "Finalize")
	fmt.Printf("pe %d/%d: all checks passed\n", me, n)
}

// a2avCount is the number of elements team PE s sends to team PE r in
// checkAlltoallv: 0 to 5, zero for some pairs (PE 0 sends none to itself).
func a2avCount(s, r int) int {
	if (s+2*r)%5 == 0 {
		return 0
	}
	return (3*s + 5*r + s*r + 1) % 6
}

// checkAlltoallv runs an Alltoallv with the counts of a2avCount (int64 send
// counts, uint64 receive counts, every index nonzero and distinct) and checks
// dst element by element, the receive counts and offsets, and that nothing
// around the ranges changed, against an image computed from a2avCount alone.
// Then the combine (AlltoallvOnStream, the forward receive counts as send
// counts, dst as src) must put every element back where it left.
func checkAlltoallv(t *testing.T, ctx *Context, world *Team, me, n int) {
	const capN, sentinel = 24, int32(-1)
	const srcIndex, dstIndex, sendIndex, recvIndex = 2, 3, 1, 2
	const srcN, dstN = capN - srcIndex, capN - dstIndex - 1 // dst[capN-1] is outside dst's range
	src, dst, back := alloc[int32](t, ctx, capN), alloc[int32](t, ctx, capN), alloc[int32](t, ctx, capN)
	send := alloc[int64](t, ctx, n+2)
	recv := alloc[uint64](t, ctx, 2*n+3)
	recv2 := alloc[int64](t, ctx, 2*n)
	val := func(pe, i int) int32 { return int32(1000*pe + i) } // src[i] of PE pe

	mine := make([]int32, capN)
	for i := range mine {
		mine[i] = val(me, i)
	}
	must(t, src.Put(0, mine, me), "Put src")
	fill := make([]int32, capN)
	for i := range fill {
		fill[i] = sentinel
	}
	must(t, dst.Put(0, fill, me), "Put dst")
	must(t, back.Put(0, fill, me), "Put back")
	sc := make([]int64, n+2) // sendIndex is 1: a sentinel on either side
	sc[0], sc[n+1] = -7, -7
	sent := 0
	for r := 0; r < n; r++ {
		sc[sendIndex+r] = int64(a2avCount(me, r))
		sent += a2avCount(me, r)
	}
	must(t, send.Put(0, sc, me), "Put send counts")
	rcFill := make([]uint64, 2*n+3)
	for i := range rcFill {
		rcFill[i] = 77777
	}
	must(t, recv.Put(0, rcFill, me), "Put recv counts")

	must(t, Alltoallv(world, dst, dstIndex, dstN, src, srcIndex, srcN, send, sendIndex, recv, recvIndex),
		"Alltoallv")

	// The reference: from each s in team order, s's elements for me.
	want := append([]int32(nil), fill...)
	wantRC := append([]uint64(nil), rcFill...)
	at := 0
	for s := 0; s < n; s++ {
		off := 0 // where s packed its elements for me
		for q := 0; q < me; q++ {
			off += a2avCount(s, q)
		}
		c := a2avCount(s, me)
		for k := 0; k < c; k++ {
			want[dstIndex+at+k] = val(s, srcIndex+off+k)
		}
		wantRC[recvIndex+s], wantRC[recvIndex+n+s] = uint64(c), uint64(at)
		at += c
	}
	got := make([]int32, capN)
	must(t, dst.Get(0, got, me), "Get dst")
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("alltoallv dst[%d] = %d, want %d (dst %v, want %v)", i, got[i], want[i], got, want)
		}
	}
	gotRC := make([]uint64, 2*n+3)
	must(t, recv.Get(0, gotRC, me), "Get recv counts")
	if !equal(gotRC, wantRC) {
		t.Fatalf("alltoallv recv counts and offsets %v, want %v", gotRC, wantRC)
	}
	must(t, src.Get(0, got, me), "Get src")
	if !equal(got, mine) {
		t.Fatalf("alltoallv changed src: %v", got)
	}

	// The combine: every element returns to the slot it left from.
	must(t, AlltoallvOnStream(world, back, srcIndex, srcN, dst, dstIndex, dstN, recv, recvIndex, recv2, 0, 0),
		"AlltoallvOnStream (combine)")
	want = append(want[:0], fill...)
	copy(want[srcIndex:srcIndex+sent], mine[srcIndex:srcIndex+sent])
	must(t, back.Get(0, got, me), "Get back")
	if !equal(got, want) {
		t.Fatalf("combine: %v, want %v", got, want)
	}
	gotRC2 := make([]int64, 2*n)
	must(t, recv2.Get(0, gotRC2, me), "Get combine recv counts")
	for r, o := 0, 0; r < n; r++ {
		if gotRC2[r] != int64(a2avCount(me, r)) || gotRC2[n+r] != int64(o) {
			t.Fatalf("combine recv counts %v (entry %d)", gotRC2, r)
		}
		o += a2avCount(me, r)
	}
	for _, b := range []interface{ Free() error }{src, dst, back, send, recv, recv2} {
		must(t, b.Free(), "Free")
	}
}

// checkAlltoallvFault: every PE sends 2 elements to every PE, but the last
// PE's dst has room for 2n-1: it gets ErrOutOfBounds, copies nothing and
// still writes its receive counts; the others succeed with their data. The
// team keeps working (checkAlltoallv runs on it next).
func checkAlltoallvFault(t *testing.T, ctx *Context, world *Team, me, n int) {
	src, dst := alloc[uint16](t, ctx, 2*n), alloc[uint16](t, ctx, 2*n)
	send, recv := alloc[uint64](t, ctx, n), alloc[uint64](t, ctx, 2*n)
	mine, counts := make([]uint16, 2*n), make([]uint64, n)
	for i := range mine {
		mine[i] = uint16(100*me + i)
	}
	for i := range counts {
		counts[i] = 2
	}
	must(t, src.Put(0, mine, me), "Put src")
	must(t, send.Put(0, counts, me), "Put send counts")
	fill := make([]uint16, 2*n)
	for i := range fill {
		fill[i] = 0xffff
	}
	must(t, dst.Put(0, fill, me), "Put dst")
	small := me == n-1
	dstN := 2 * n
	if small {
		dstN--
	}
	err := Alltoallv(world, dst, 0, dstN, src, 0, 2*n, send, 0, recv, 0)
	got := make([]uint16, 2*n)
	must(t, dst.Get(0, got, me), "Get dst")
	if small {
		e := isStatus(t, err, ErrOutOfBounds, "Alltoallv into a dst too small")
		if e.Op != "symm_alltoallv" || !strings.Contains(e.Message, "dst_nelems") {
			t.Fatalf("Alltoallv into a dst too small: Op %q, message %q", e.Op, e.Message)
		}
		if !equal(got, fill) {
			t.Fatalf("the PE without room received %v", got)
		}
	} else {
		must(t, err, "Alltoallv beside a PE without room")
		for s := 0; s < n; s++ {
			if got[2*s] != uint16(100*s+2*me) || got[2*s+1] != uint16(100*s+2*me+1) {
				t.Fatalf("Alltoallv beside a PE without room: dst %v", got)
			}
		}
	}
	rc := make([]uint64, 2*n)
	must(t, recv.Get(0, rc, me), "Get recv counts")
	for s := 0; s < n; s++ {
		if rc[s] != 2 || rc[n+s] != uint64(2*s) {
			t.Fatalf("recv counts after the failed Alltoallv: %v", rc)
		}
	}
	for _, b := range []interface{ Free() error }{src, dst, send, recv} {
		must(t, b.Free(), "Free")
	}
}

// A PE that leaves the job: the PE waiting for it gets ErrPeerFailed (with a
// message), never a hang, and Finalize reports it too.
func TestPeerThatLeavesIsPeerFailed(t *testing.T) {
	out, err := runWorker(t, "TestPeerFailureWorker", 2, "SYMM_RUNTIME="+runtimeLib(t), "SYMM_BACKEND=host")
	if err != nil || !strings.Contains(out, "pe 0: ErrPeerFailed as expected") {
		t.Fatalf("symmrun -n 2: %v\n%s", err, out)
	}
}

func TestPeerFailureWorker(t *testing.T) {
	worker(t, "TestPeerFailureWorker")
	ctx, err := Init(WithTimeout(20 * time.Second))
	must(t, err, "Init under symmrun")
	sig := alloc[uint64](t, ctx, 1)
	must(t, ctx.BarrierAll(), "BarrierAll")
	if ctx.MyPE() == 1 {
		os.Exit(0) // leaves the job: no finalize, no signal
	}
	_, err = sig.SignalWaitUntil(0, CmpEQ, 1)
	e := isStatus(t, err, ErrPeerFailed, "waiting for a PE that left")
	isStatus(t, ctx.Finalize(), ErrPeerFailed, "Finalize after a peer left")
	fmt.Printf("pe 0: ErrPeerFailed as expected (%v)\n", e)
}
