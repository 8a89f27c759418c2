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
	out, err := runWorker(t, "TestPEWorker", nPEs, "SYMM_RUNTIME="+runtimeLib(t), "SYMM_BACKEND=host")
	if err != nil {
		t.Fatalf("symmrun -n %d failed: %v\n%s", nPEs, err, out)
	}
	for pe := 0; pe < nPEs; pe++ {
		if line := fmt.Sprintf("pe %d/%d: all checks passed", pe, nPEs); !strings.Contains(out, line) {
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
	blocks := make([]int32, n)
	for j := range blocks {
		blocks[j] = int32(10*me + j) // block j goes to PE j
	}
	must(t, asrc.Put(0, blocks, me), "Put")
	must(t, Alltoall(world, adst, 0, asrc, 0, 1), "Alltoall")
	recv := make([]int32, n)
	must(t, adst.Get(0, recv, me), "Get")
	for i := range recv {
		if recv[i] != int32(10*i+me) {
			t.Fatalf("alltoall %v", recv)
		}
	}

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
