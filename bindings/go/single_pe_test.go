package symm

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// One PE on the host backend, in this process (runtime from $SYMM_BUILD_DIR):
// every call family with its data checked, and the mapping of the runtime's
// errors (status, name, message) for bad input.

func single(t *testing.T, opts ...Option) *Context {
	t.Helper()
	buildDir(t)
	ctx, err := Init(append([]Option{WithBackend(BackendHost), WithBootstrap(BootstrapSingle)}, opts...)...)
	must(t, err, "Init (single PE, host backend)")
	t.Cleanup(func() {
		if err := ctx.Finalize(); err != nil {
			t.Errorf("Finalize: %v", err)
		}
	})
	return ctx
}

func alloc[T Element](t *testing.T, ctx *Context, n int) *Buffer[T] {
	t.Helper()
	b, err := Alloc[T](ctx, n)
	must(t, err, "Alloc")
	return b
}

func TestLoaderAndVersions(t *testing.T) {
	buildDir(t)
	must(t, Probe(), "Probe")
	v, err := RuntimeVersion()
	must(t, err, "RuntimeVersion")
	if v.Major != VersionMajor || LoaderVersion().Encoded() != VersionEncoded {
		t.Fatalf("runtime %v loader %v", v, LoaderVersion())
	}
	if !strings.HasSuffix(RuntimePath(), "libsymm_runtime.so.1") {
		t.Fatalf("RuntimePath %q", RuntimePath())
	}
	isStatus(t, SetRuntimePath(""), ErrInvalidState, "SetRuntimePath after the load")
}

func TestContextBasics(t *testing.T) {
	ctx := single(t)
	if ctx.MyPE() != 0 || ctx.NPEs() != 1 {
		t.Fatalf("pe %d of %d", ctx.MyPE(), ctx.NPEs())
	}
	info, err := ctx.Query()
	must(t, err, "Query")
	if info.Backend != BackendHost || info.ThreadLevel != ThreadMultiple || info.NPEs != 1 || info.Device != -1 ||
		info.HeapCap == 0 {
		t.Fatalf("info %+v", info)
	}
	must(t, ctx.Quiet(), "Quiet")
	must(t, ctx.Fence(), "Fence")
	must(t, ctx.BarrierAll(), "BarrierAll")
	must(t, ctx.SyncAll(), "SyncAll")
	rec, err := ctx.AsyncError(true)
	if rec != nil || err != nil {
		t.Fatalf("AsyncError %v %v", rec, err)
	}
	_, err = ctx.DeviceContext()
	isStatus(t, err, ErrNotSupported, "DeviceContext on the host backend")
	_, err = ctx.World().DeviceTeam()
	isStatus(t, err, ErrNotSupported, "DeviceTeam on the host backend")
	_, err = Register[int32](ctx, ExternalSpan[int32](1<<40, 4))
	if err == nil {
		t.Fatal("Register on the host backend succeeded")
	}
	_, err = ctx.Team(PredefinedTeam(9))
	isStatus(t, err, ErrInvalidArg, "Team(9)")
}

func TestRMAAndErrorMapping(t *testing.T) {
	ctx := single(t)
	b := alloc[int64](t, ctx, 8)
	if b.Len() != 8 || b.DType() != DTypeInt64 || b.Context() != ctx {
		t.Fatal("buffer accessors")
	}
	must(t, b.Put(2, []int64{7, 8, 9}, 0), "Put")
	got := make([]int64, 8)
	must(t, b.Get(0, got, 0), "Get")
	if want := []int64{0, 0, 7, 8, 9, 0, 0, 0}; !equal(got, want) {
		t.Fatalf("after Put: %v", got)
	}
	must(t, b.P(7, -5, 0), "P")
	if v, err := b.G(7, 0); err != nil || v != -5 {
		t.Fatalf("G: %d %v", v, err)
	}
	// Out of bounds: an error with the runtime's message, and nothing written.
	e := isStatus(t, b.Put(6, []int64{1, 2, 3}, 0), ErrOutOfBounds, "Put past the end")
	if e.Op != "symm_put" || !strings.Contains(e.Message, "symm_put") {
		t.Fatalf("error %#v", e)
	}
	must(t, b.Get(0, got, 0), "Get")
	if got[6] != 0 || got[7] != -5 {
		t.Fatalf("a failed put changed the buffer: %v", got)
	}
	isStatus(t, b.Get(9, got[:1], 0), ErrOutOfBounds, "Get past the end")
	isStatus(t, b.Put(-1, got[:1], 0), ErrOutOfBounds, "negative index")
	_, err := b.G(8, 0)
	isStatus(t, err, ErrOutOfBounds, "G past the end")
	isStatus(t, b.Put(0, got[:1], 1), ErrInvalidArg, "PE 1 of 1")
	isStatus(t, b.P(0, 1, -1), ErrInvalidArg, "PE -1")
	isStatus(t, b.P(0, 1, math.MaxInt32+1), ErrInvalidArg, "PE outside int32")
	must(t, b.Put(3, nil, 0), "empty Put")

	// Symmetric addresses and local views.
	p, err := b.Ptr()
	must(t, err, "Ptr")
	pp, err := b.PeerPtr(0)
	must(t, err, "PeerPtr")
	q, err := ctx.Ptr(p, 0)
	must(t, err, "Context.Ptr")
	if p == nil || pp != p || q != p {
		t.Fatalf("addresses %p %p %p", p, pp, q)
	}
	local, err := b.LocalSlice()
	must(t, err, "LocalSlice")
	if local[2] != 7 || local[7] != -5 {
		t.Fatalf("LocalSlice %v", local)
	}
	if off, err := b.Offset(); err != nil || off == math.MaxUint64 {
		t.Fatalf("Offset %d %v", off, err)
	}
	// Byte RMA at symmetric addresses: bytes 8..15 are element 1.
	var one [8]byte
	*(*int64)(unsafe.Pointer(&one[0])) = 42
	must(t, ctx.PutMem(unsafe.Add(p, 8), one[:], 0), "PutMem")
	if v, _ := b.G(1, 0); v != 42 {
		t.Fatalf("PutMem wrote %d", v)
	}
	var back [16]byte
	must(t, ctx.GetMem(back[:], p, 0), "GetMem")
	if *(*int64)(unsafe.Pointer(&back[8])) != 42 {
		t.Fatal("GetMem")
	}
	isStatus(t, ctx.GetMem(back[:], unsafe.Pointer(&one[0]), 0), ErrOutOfBounds, "GetMem from outside the heap")

	// After Free the buffer's calls fail cleanly.
	must(t, b.Free(), "Free")
	must(t, b.Free(), "second Free")
	isStatus(t, b.Put(0, got[:1], 0), ErrInvalidHandle, "Put after Free")
	var nilBuf *Buffer[int64]
	isStatus(t, nilBuf.Put(0, got[:1], 0), ErrInvalidHandle, "Put on a nil Buffer")
	_, err = Alloc[int8](ctx, -1)
	isStatus(t, err, ErrInvalidArg, "negative count")
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNBIWithHostMem(t *testing.T) {
	ctx := single(t)
	b := alloc[int32](t, ctx, 6)
	src, err := AllocHost[int32](4)
	must(t, err, "AllocHost")
	defer src.Free()
	copy(src.Slice(), []int32{1, 2, 3, 4})
	must(t, b.PutNBI(1, src.Span(1, 4), 0), "PutNBI")
	must(t, ctx.Quiet(), "Quiet")
	got := make([]int32, 6)
	must(t, b.Get(0, got, 0), "Get")
	if !equal(got, []int32{0, 2, 3, 4, 0, 0}) {
		t.Fatalf("after PutNBI: %v", got)
	}
	dst, err := AllocHost[int32](6)
	must(t, err, "AllocHost")
	defer dst.Free()
	must(t, b.GetNBI(0, dst.All(), 0), "GetNBI")
	must(t, ctx.Quiet(), "Quiet")
	if !equal(dst.Slice(), got) {
		t.Fatalf("GetNBI %v", dst.Slice())
	}
	isStatus(t, b.PutNBI(4, src.All(), 0), ErrOutOfBounds, "PutNBI past the end")
	// Fetching atomic, non-blocking: the prior value lands in C memory.
	must(t, b.AtomicNBI(1, AmoFetchAdd, 10, 0, 0, dst.Span(5, 6)), "AtomicNBI")
	must(t, ctx.Quiet(), "Quiet")
	if dst.Slice()[5] != 2 {
		t.Fatalf("AtomicNBI fetched %d", dst.Slice()[5])
	}
	if v, _ := b.G(1, 0); v != 12 {
		t.Fatalf("after AtomicNBI %d", v)
	}
	// Byte forms.
	raw, err := AllocHost[byte](4)
	must(t, err, "AllocHost")
	defer raw.Free()
	copy(raw.Slice(), []byte{0xff, 0, 0, 0})
	p, _ := b.Ptr()
	must(t, ctx.PutMemNBI(p, raw.All(), 0), "PutMemNBI")
	must(t, ctx.Quiet(), "Quiet")
	if v, _ := b.G(0, 0); v != 255 {
		t.Fatalf("PutMemNBI: %d", v)
	}
	must(t, ctx.GetMemNBI(raw.Span(0, 4), unsafe.Add(p, 4), 0), "GetMemNBI")
	must(t, ctx.Quiet(), "Quiet")
	if raw.Slice()[0] != 12 {
		t.Fatalf("GetMemNBI %v", raw.Slice())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Span outside the HostMem did not panic")
			}
		}()
		src.Span(2, 5)
	}()
	_, err = AllocHost[int8](-1)
	isStatus(t, err, ErrInvalidArg, "AllocHost(-1)")
}

func TestSignals(t *testing.T) {
	ctx := single(t)
	data := alloc[float64](t, ctx, 4)
	sig := alloc[uint64](t, ctx, 2)
	must(t, data.PutSignal(0, []float64{1.5, 2.5}, sig, 1, 7, SignalSet, 0), "PutSignal")
	v, err := sig.SignalWaitUntil(1, CmpEQ, 7)
	if err != nil || v != 7 {
		t.Fatalf("SignalWaitUntil %d %v", v, err)
	}
	if x, _ := data.G(1, 0); x != 2.5 {
		t.Fatalf("data %v", x)
	}
	must(t, sig.SignalOp(1, 5, SignalAdd, 0), "SignalOp add")
	if v, err := sig.SignalFetch(1); err != nil || v != 12 {
		t.Fatalf("SignalFetch %d %v", v, err)
	}
	src, _ := AllocHost[float64](2)
	defer src.Free()
	copy(src.Slice(), []float64{-1, -2})
	must(t, data.PutSignalNBI(2, src.All(), sig, 0, 1, SignalAdd, 0), "PutSignalNBI")
	must(t, ctx.Quiet(), "Quiet")
	if v, _ := sig.SignalFetch(0); v != 1 {
		t.Fatalf("signal after PutSignalNBI %d", v)
	}
	if x, _ := data.G(3, 0); x != -2 {
		t.Fatalf("data after PutSignalNBI %v", x)
	}
	isStatus(t, data.PutSignal(0, []float64{1}, sig, 2, 1, SignalSet, 0), ErrOutOfBounds, "signal index past the end")
	isStatus(t, data.SignalOp(0, 1, SignalSet, 0), ErrInvalidArg, "signal op on a float64 buffer")
	_, err = sig.SignalWaitUntil(0, Cmp(42), 1)
	isStatus(t, err, ErrInvalidArg, "unknown comparison")
}

func TestWaitsAndTests(t *testing.T) {
	ctx := single(t)
	b := alloc[int32](t, ctx, 5)
	must(t, b.Put(0, []int32{3, -1, 3, 0, 3}, 0), "Put")
	must(t, b.WaitUntil(0, CmpEQ, 3), "WaitUntil")
	must(t, b.WaitUntilAll(0, 5, CmpGE, -1, nil), "WaitUntilAll")
	if i, err := b.WaitUntilAny(0, 5, CmpLT, 0, nil); err != nil || i != 1 {
		t.Fatalf("WaitUntilAny %d %v", i, err)
	}
	if s, err := b.WaitUntilSome(0, 5, CmpEQ, 3, []int32{0, 0, 1, 0, 0}); err != nil || !equal(s, []int{0, 4}) {
		t.Fatalf("WaitUntilSome %v %v", s, err)
	}
	vals := []int32{3, -1, 3, 0, 3}
	must(t, b.WaitUntilAllVector(0, CmpEQ, vals, nil), "WaitUntilAllVector")
	if i, err := b.WaitUntilAnyVector(1, CmpEQ, vals[1:], []int32{1, 0, 0, 0}); err != nil || i != 1 {
		t.Fatalf("WaitUntilAnyVector %d %v", i, err)
	}
	if s, err := b.WaitUntilSomeVector(0, CmpNE, []int32{3, 0, 3, 0, 0}, nil); err != nil || !equal(s, []int{1, 4}) {
		t.Fatalf("WaitUntilSomeVector %v %v", s, err)
	}
	if ok, err := b.Test(1, CmpLT, 0); err != nil || !ok {
		t.Fatalf("Test %v %v", ok, err)
	}
	if ok, err := b.TestAll(0, 5, CmpEQ, 3, nil); err != nil || ok {
		t.Fatalf("TestAll %v %v", ok, err)
	}
	if ok, err := b.TestAll(0, 5, CmpEQ, 3, []int32{0, 1, 0, 1, 0}); err != nil || !ok {
		t.Fatalf("TestAll with status %v %v", ok, err)
	}
	if i, ok, err := b.TestAny(0, 5, CmpGT, 5, nil); err != nil || ok || i != -1 {
		t.Fatalf("TestAny unsatisfied %d %v %v", i, ok, err)
	}
	if i, ok, err := b.TestAny(2, 3, CmpEQ, 0, nil); err != nil || !ok || i != 1 {
		t.Fatalf("TestAny %d %v %v", i, ok, err)
	}
	if s, err := b.TestSome(0, 5, CmpGT, 100, nil); err != nil || len(s) != 0 {
		t.Fatalf("TestSome none %v %v", s, err)
	}
	if s, err := b.TestSome(0, 5, CmpLE, 0, nil); err != nil || !equal(s, []int{1, 3}) {
		t.Fatalf("TestSome %v %v", s, err)
	}
	if ok, err := b.TestAllVector(0, CmpEQ, vals, nil); err != nil || !ok {
		t.Fatalf("TestAllVector %v %v", ok, err)
	}
	if i, ok, err := b.TestAnyVector(0, CmpGT, []int32{3, 3, 3, 3, 2}, nil); err != nil || !ok || i != 4 {
		t.Fatalf("TestAnyVector %d %v %v", i, ok, err)
	}
	if s, err := b.TestSomeVector(0, CmpEQ, vals, nil); err != nil || len(s) != 5 {
		t.Fatalf("TestSomeVector %v %v", s, err)
	}
	if i, err := b.WaitUntilAny(0, 0, CmpEQ, 0, nil); err != nil || i != -1 {
		t.Fatalf("empty WaitUntilAny %d %v", i, err)
	}
	// Errors: a status slice of the wrong length, a range past the end, a
	// float buffer.
	isStatus(t, b.WaitUntilAll(0, 5, CmpEQ, 3, []int32{0}), ErrInvalidArg, "short status")
	isStatus(t, b.WaitUntilAll(3, 5, CmpEQ, 3, nil), ErrOutOfBounds, "range past the end")
	_, err := b.Test(5, CmpEQ, 0)
	isStatus(t, err, ErrOutOfBounds, "Test past the end")
	f := alloc[float32](t, ctx, 1)
	isStatus(t, f.WaitUntil(0, CmpEQ, 0), ErrInvalidArg, "wait on a float32 buffer")
}

func TestAtomics(t *testing.T) {
	ctx := single(t)
	b := alloc[int64](t, ctx, 2)
	check := func(what string, got, want int64, err error) {
		t.Helper()
		if err != nil || got != want {
			t.Fatalf("%s: %d (%v), want %d", what, got, err, want)
		}
	}
	must(t, b.AtomicSet(0, 10, 0), "AtomicSet")
	v, err := b.AtomicFetch(0, 0)
	check("AtomicFetch", v, 10, err)
	v, err = b.AtomicFetchAdd(0, 5, 0)
	check("AtomicFetchAdd", v, 10, err)
	must(t, b.AtomicAdd(0, 5, 0), "AtomicAdd")
	v, err = b.AtomicFetchInc(0, 0)
	check("AtomicFetchInc", v, 20, err)
	must(t, b.AtomicInc(0, 0), "AtomicInc")
	v, err = b.AtomicSwap(0, 0b1100, 0)
	check("AtomicSwap", v, 22, err)
	v, err = b.AtomicFetchAnd(0, 0b1010, 0)
	check("AtomicFetchAnd", v, 0b1100, err)
	must(t, b.AtomicOr(0, 0b0001, 0), "AtomicOr")
	v, err = b.AtomicFetchOr(0, 0b0100, 0)
	check("AtomicFetchOr", v, 0b1001, err)
	v, err = b.AtomicFetchXor(0, 0b1111, 0)
	check("AtomicFetchXor", v, 0b1101, err)
	must(t, b.AtomicXor(0, 0b0011, 0), "AtomicXor")
	must(t, b.AtomicAnd(0, 0b0111, 0), "AtomicAnd")
	v, err = b.AtomicCompareSwap(0, 99, 1, 0)
	check("AtomicCompareSwap (no swap)", v, 0b0001, err)
	v, err = b.AtomicCompareSwap(0, 1, 77, 0)
	check("AtomicCompareSwap", v, 1, err)
	v, err = b.Atomic(0, AmoFetch, 0, 0, 0)
	check("Atomic(AmoFetch)", v, 77, err)
	f := alloc[float64](t, ctx, 1)
	if old, err := f.AtomicSwap(0, 2.5, 0); err != nil || old != 0 {
		t.Fatalf("float64 AtomicSwap %v %v", old, err)
	}
	if _, err := f.AtomicFetchAdd(0, 1, 0); err == nil {
		t.Fatal("AtomicFetchAdd on float64 succeeded")
	}
	_, err = b.AtomicFetch(2, 0)
	isStatus(t, err, ErrOutOfBounds, "atomic past the end")
	_, err = b.Atomic(0, AmoOp(99), 1, 1, 0)
	isStatus(t, err, ErrInvalidArg, "unknown atomic op")
}

func TestCollectivesAndTeams(t *testing.T) {
	ctx := single(t)
	w := ctx.World()
	if w.MyPE() != 0 || w.NPEs() != 1 || w.Context() != ctx {
		t.Fatal("world team")
	}
	for _, which := range []PredefinedTeam{TeamWorld, TeamShared, TeamNode, TeamSameLocalPE} {
		tm, err := ctx.Team(which)
		must(t, err, "Team")
		if tm.NPEs() != 1 || w.TranslatePE(0, tm) != 0 {
			t.Fatalf("team %d", which)
		}
	}
	must(t, w.Barrier(), "Barrier")
	must(t, w.Sync(), "Sync")
	src := alloc[int32](t, ctx, 4)
	dst := alloc[int32](t, ctx, 4)
	must(t, src.Put(0, []int32{4, 3, 2, 1}, 0), "Put")
	must(t, Broadcast(w, dst, 0, src, 1, 2, 0), "Broadcast")
	got := make([]int32, 4)
	must(t, dst.Get(0, got, 0), "Get")
	if !equal(got, []int32{3, 2, 0, 0}) {
		t.Fatalf("Broadcast %v", got)
	}
	must(t, Fcollect(w, dst, 2, src, 0, 2), "Fcollect")
	must(t, Collect(w, dst, 0, src, 3, 1), "Collect")
	must(t, Alltoall(w, dst, 1, src, 2, 1), "Alltoall")
	must(t, dst.Get(0, got, 0), "Get")
	if !equal(got, []int32{1, 2, 4, 3}) {
		t.Fatalf("Fcollect/Collect/Alltoall %v", got)
	}
	must(t, Reduce(w, dst, 0, src, 0, 4, OpMax), "Reduce")
	must(t, Reducescatter(w, dst, 0, src, 0, 1, OpSum), "Reducescatter")
	must(t, dst.Get(0, got, 0), "Get")
	if !equal(got, []int32{4, 3, 2, 1}) {
		t.Fatalf("Reduce %v", got)
	}
	// Alltoallv on one PE: its own 2 elements, from src[2:4] to dst[0:2].
	sc, rc := alloc[int64](t, ctx, 1), alloc[uint64](t, ctx, 2)
	must(t, sc.P(0, 2, 0), "P")
	must(t, rc.Put(0, []uint64{9, 9}, 0), "Put")
	must(t, Alltoallv(w, dst, 0, 3, src, 2, 2, sc, 0, rc, 0), "Alltoallv")
	must(t, dst.Get(0, got, 0), "Get")
	rcv := make([]uint64, 2)
	must(t, rc.Get(0, rcv, 0), "Get")
	if !equal(got, []int32{2, 1, 2, 1}) || !equal(rcv, []uint64{2, 0}) {
		t.Fatalf("Alltoallv dst %v, recv counts %v", got, rcv)
	}
	isStatus(t, Alltoallv(w, src, 0, 4, src, 0, 4, sc, 0, rc, 0), ErrInvalidArg, "Alltoallv with dst = src")
	isStatus(t, Alltoallv(w, dst, 0, 4, src, 0, 1, sc, 0, rc, 0), ErrOutOfBounds, "Alltoallv: counts beyond src")
	isStatus(t, AlltoallvOnStream(w, dst, 0, 4, src, 0, 4, sc, 0, rc, 1, 0), ErrOutOfBounds,
		"AlltoallvOnStream: recv counts past the end")
	isStatus(t, Alltoallv(w, dst, 0, 4, src, -1, 4, sc, 0, rc, 0), ErrOutOfBounds, "Alltoallv: negative index")
	isStatus(t, Alltoallv(w, dst, 0, -4, src, 0, 4, sc, 0, rc, 0), ErrInvalidArg, "Alltoallv: negative dst count")
	isStatus(t, Reduce(w, dst, 2, src, 0, 4, OpSum), ErrOutOfBounds, "Reduce past the end")
	isStatus(t, Reduce(w, dst, 0, src, 0, -1, OpSum), ErrInvalidArg, "negative count")
	f := alloc[float32](t, ctx, 1)
	isStatus(t, Reduce(w, f, 0, f, 0, 1, OpXor), ErrNotSupported, "xor on float32")
	isStatus(t, Broadcast(w, dst, 0, src, 0, 1, 3), ErrInvalidArg, "root outside the team")

	cfg, err := w.Config()
	must(t, err, "Config")
	if cfg.NumContexts != 0 {
		t.Fatalf("world config %+v", cfg)
	}
	sub, err := w.SplitStrided(0, 1, 1, &TeamConfig{NumContexts: 2})
	must(t, err, "SplitStrided")
	if sub == nil || sub.NPEs() != 1 || sub.TranslatePE(0, w) != 0 {
		t.Fatal("split team")
	}
	if c, err := sub.Config(); err != nil || c.NumContexts != 2 {
		t.Fatalf("split config %+v %v", c, err)
	}
	must(t, sub.Barrier(), "split Barrier")
	must(t, sub.Destroy(), "Destroy")
	must(t, sub.Destroy(), "second Destroy")
	if sub.NPEs() != -1 {
		t.Fatal("a destroyed team answers")
	}
	isStatus(t, sub.Barrier(), ErrInvalidHandle, "Barrier on a destroyed team")
	x, y, err := w.Split2D(1, nil, nil)
	must(t, err, "Split2D")
	if x.NPEs() != 1 || y.NPEs() != 1 {
		t.Fatal("2d teams")
	}
	must(t, x.Destroy(), "Destroy x")
	must(t, y.Destroy(), "Destroy y")
	_, err = w.SplitStrided(0, 0, 1, nil)
	isStatus(t, err, ErrInvalidArg, "stride 0")
	isStatus(t, w.Destroy(), ErrInvalidArg, "destroying the world team")
}

func TestStreamFormsOnHost(t *testing.T) {
	ctx := single(t)
	w := ctx.World()
	b := alloc[uint32](t, ctx, 4)
	sig := alloc[uint64](t, ctx, 1)
	src, _ := AllocHost[uint32](4)
	defer src.Free()
	copy(src.Slice(), []uint32{9, 8, 7, 6})
	const s = Stream(0) // ignored on the host backend
	must(t, b.PutOnStream(0, src.Span(0, 2), 0, s), "PutOnStream")
	must(t, b.PutNBIOnStream(2, src.Span(2, 4), 0, s), "PutNBIOnStream")
	must(t, b.POnStream(3, 5, 0, s), "POnStream")
	must(t, ctx.QuietOnStream(s), "QuietOnStream")
	dst, _ := AllocHost[uint32](4)
	defer dst.Free()
	must(t, b.GetOnStream(0, dst.Span(0, 2), 0, s), "GetOnStream")
	must(t, b.GetNBIOnStream(2, dst.Span(2, 4), 0, s), "GetNBIOnStream")
	must(t, ctx.QuietOnStream(s), "QuietOnStream")
	if !equal(dst.Slice(), []uint32{9, 8, 7, 5}) {
		t.Fatalf("stream RMA %v", dst.Slice())
	}
	must(t, b.PutSignalOnStream(0, src.Span(3, 4), sig, 0, 2, SignalSet, 0, s), "PutSignalOnStream")
	must(t, sig.SignalOpOnStream(0, 3, SignalAdd, 0, s), "SignalOpOnStream")
	must(t, sig.SignalWaitUntilOnStream(0, CmpEQ, 5, s), "SignalWaitUntilOnStream")
	if v, _ := sig.SignalFetch(0); v != 5 {
		t.Fatalf("signal %d", v)
	}
	p, _ := b.Ptr()
	raw, _ := AllocHost[byte](4)
	defer raw.Free()
	must(t, ctx.GetMemOnStream(raw.All(), p, 0, s), "GetMemOnStream")
	if raw.Slice()[0] != 6 {
		t.Fatalf("GetMemOnStream %v", raw.Slice())
	}
	must(t, ctx.PutMemOnStream(unsafe.Add(p, 4), raw.All(), 0, s), "PutMemOnStream")
	must(t, ctx.BarrierAllOnStream(s), "BarrierAllOnStream")
	must(t, w.BarrierOnStream(s), "BarrierOnStream")
	must(t, w.SyncOnStream(s), "SyncOnStream")
	d2 := alloc[uint32](t, ctx, 4)
	must(t, BroadcastOnStream(w, d2, 0, b, 0, 4, 0, s), "BroadcastOnStream")
	must(t, FcollectOnStream(w, d2, 0, b, 0, 4, s), "FcollectOnStream")
	must(t, AlltoallOnStream(w, d2, 0, b, 0, 4, s), "AlltoallOnStream")
	must(t, ReduceOnStream(w, d2, 0, b, 0, 4, OpSum, s), "ReduceOnStream")
	must(t, ReducescatterOnStream(w, d2, 0, b, 0, 4, OpProd, s), "ReducescatterOnStream")
	got := make([]uint32, 4)
	must(t, d2.Get(0, got, 0), "Get")
	if !equal(got, []uint32{6, 6, 7, 5}) {
		t.Fatalf("stream collectives %v", got)
	}
	// CUDA's special handles (CU_STREAM_LEGACY 1, CU_STREAM_PER_THREAD 2) are
	// not pointers; they reach C as integers.
	must(t, ctx.QuietOnStream(Stream(1)), "QuietOnStream(CU_STREAM_LEGACY)")
	must(t, b.POnStream(0, 9, 0, Stream(2)), "POnStream(CU_STREAM_PER_THREAD)")
	if v, _ := b.G(0, 0); v != 9 {
		t.Fatalf("POnStream on stream 2: %d", v)
	}
	isStatus(t, b.PutOnStream(3, src.All(), 0, s), ErrOutOfBounds, "PutOnStream past the end")
}

// Nil handles are errors, not panics.
func TestNilHandles(t *testing.T) {
	buildDir(t)
	var c *Context
	_, err := Alloc[int32](c, 1)
	isStatus(t, err, ErrInvalidHandle, "Alloc on a nil Context")
	isStatus(t, c.Quiet(), ErrInvalidHandle, "Quiet on a nil Context")
	isStatus(t, c.World().Barrier(), ErrInvalidHandle, "Barrier on a nil Team")
	_, err = c.World().SplitStrided(0, 1, 1, nil)
	isStatus(t, err, ErrInvalidHandle, "SplitStrided on a nil Team")
	var b *Buffer[int32]
	_, err = b.LocalSlice()
	isStatus(t, err, ErrInvalidHandle, "LocalSlice on a nil Buffer")
	isStatus(t, Reduce(nil, b, 0, b, 0, 1, OpSum), ErrInvalidHandle, "Reduce on nil")
	if c.MyPE() != -1 || c.World().NPEs() != -1 || c.Finalize() != nil || b.Free() != nil {
		t.Fatal("nil accessors")
	}
}

func TestFinalizeAndStaleHandles(t *testing.T) {
	buildDir(t)
	ctx, err := Init(WithBackend(BackendHost), WithBootstrap(BootstrapSingle), WithHeapCap(1<<20),
		WithTimeout(5e9))
	must(t, err, "Init")
	info, _ := ctx.Query()
	if info.HeapCap < 1<<20 || info.HeapCap > 1<<30 { // rounded up to the heap's chunk
		t.Fatalf("heap cap %d", info.HeapCap)
	}
	_, err = Alloc[byte](ctx, int(info.HeapCap)+1)
	isStatus(t, err, ErrOutOfMemory, "Alloc over the cap")
	b := alloc[int16](t, ctx, 2)
	must(t, ctx.Finalize(), "Finalize")
	must(t, ctx.Finalize(), "second Finalize")
	if ctx.MyPE() != -1 || ctx.NPEs() != -1 {
		t.Fatal("a finalized context answers")
	}
	isStatus(t, ctx.Quiet(), ErrInvalidHandle, "Quiet after Finalize")
	isStatus(t, b.P(0, 1, 0), ErrInvalidHandle, "P after Finalize")
	isStatus(t, ctx.World().Barrier(), ErrInvalidHandle, "Barrier after Finalize")
	_, err = Init(WithBackend(BackendHost), WithTimeout(-1))
	isStatus(t, err, ErrInvalidArg, "negative timeout")
	_, err = Init(WithBackend(Backend(7)), WithBootstrap(BootstrapSingle))
	isStatus(t, err, ErrInvalidArg, "unknown backend")
}

func TestUniqueIDBootstrap(t *testing.T) {
	buildDir(t)
	id, err := GetUniqueID()
	must(t, err, "GetUniqueID")
	if id == (UniqueID{}) {
		t.Fatal("an all-zero id")
	}
	ctx, err := Init(WithBackend(BackendHost), WithUniqueID(id, 0, 1))
	must(t, err, "Init with a unique id")
	if ctx.NPEs() != 1 {
		t.Fatalf("%d PEs", ctx.NPEs())
	}
	must(t, ctx.Finalize(), "Finalize")
}

// ThreadFunneled is enforced per OS thread: a goroutine locked to the thread
// that called Init may call, one on another thread gets ErrThreadLevel.
func TestThreadLevelFunneled(t *testing.T) {
	buildDir(t)
	type result struct {
		ctx *Context
		err error
	}
	ready, done := make(chan result), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ctx, err := Init(WithBackend(BackendHost), WithBootstrap(BootstrapSingle), WithThreadLevel(ThreadFunneled))
		ready <- result{ctx, err}
		<-done
		if err == nil {
			if err := ctx.Quiet(); err != nil {
				t.Errorf("Quiet on the main thread: %v", err)
			}
			if err := ctx.Finalize(); err != nil {
				t.Errorf("Finalize: %v", err)
			}
		}
		close(ready)
	}()
	r := <-ready
	must(t, r.err, "Init(ThreadFunneled)")
	info, _ := r.ctx.Query() // any thread
	if info.ThreadLevel != ThreadFunneled {
		t.Fatalf("provided %d", info.ThreadLevel)
	}
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // a fresh goroutine locked: never the Init thread
		defer runtime.UnlockOSThread()
		errc <- r.ctx.Quiet()
	}()
	err := <-errc
	close(done)
	<-ready
	if !errors.Is(err, ErrThreadLevel) {
		t.Fatalf("Quiet from another thread: %v", err)
	}
}

func TestFloat16Conversions(t *testing.T) {
	for _, c := range []struct {
		f    float32
		bits uint16
	}{{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {1e6, 0x7c00}, {5.960464477539063e-08, 0x0001},
		{0.333251953125, 0x3555}, {0, 0}, {float32(math.Inf(-1)), 0xfc00}, {2049, 0x6800}, {2051, 0x6802}} {
		if h := Float16FromFloat32(c.f); uint16(h) != c.bits {
			t.Errorf("Float16FromFloat32(%v) = %#04x, want %#04x", c.f, uint16(h), c.bits)
		}
		if c.f < 1e6 && c.f != 2049 && c.f != 2051 && Float16(c.bits).Float32() != c.f {
			t.Errorf("Float16(%#04x).Float32() = %v, want %v", c.bits, Float16(c.bits).Float32(), c.f)
		}
	}
	if h := Float16FromFloat32(float32(math.NaN())); !math.IsNaN(float64(h.Float32())) {
		t.Error("NaN")
	}
	if b := BFloat16FromFloat32(1.5); uint16(b) != 0x3fc0 || b.Float32() != 1.5 {
		t.Errorf("BFloat16 1.5: %#04x", uint16(b))
	}
	if b := BFloat16FromFloat32(1.00390625); b.Float32() != 1 { // a tie rounds to even
		t.Errorf("BFloat16 tie: %v", b.Float32())
	}
	if DTypeOf[Float16]() != DTypeFloat16 || DTypeOf[BFloat16]() != DTypeBFloat16 || DTypeOf[uint16]() != DTypeUint16 ||
		DTypeOf[byte]() != DTypeUint8 || DTypeOf[float64]() != DTypeFloat64 {
		t.Error("DTypeOf")
	}
	if DTypeBFloat16.String() != "bfloat16" || DType(0).String() != "DType(0)" {
		t.Error("DType.String")
	}
	if ErrTimeout.Error() != "SYMM_ERR_TIMEOUT: a bounded wait expired" || Status(99).Name() != "SYMM_ERR_UNKNOWN" {
		t.Errorf("Status.Error %q %q", ErrTimeout.Error(), Status(99).Error())
	}
}

// Per-call cost of the binding (cgo call, thread lock, status check) on one
// PE of the host backend: go test -run - -bench . (SYMM_BUILD_DIR set).
func BenchmarkCalls(b *testing.B) {
	buildDir(b)
	ctx, err := Init(WithBackend(BackendHost), WithBootstrap(BootstrapSingle))
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Finalize()
	buf, err := Alloc[int64](ctx, 1024)
	if err != nil {
		b.Fatal(err)
	}
	src := make([]int64, 1024)
	b.Run("P", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := buf.P(0, int64(i), 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("G", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := buf.G(0, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Put8KiB", func(b *testing.B) {
		b.SetBytes(8 * 1024)
		for i := 0; i < b.N; i++ {
			if err := buf.Put(0, src, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AtomicFetchAdd", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := buf.AtomicFetchAdd(1, 1, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ErrorPath", func(b *testing.B) { // an out-of-bounds P: status + message
		for i := 0; i < b.N; i++ {
			if err := buf.P(1024, 0, 0); err == nil {
				b.Fatal("no error")
			}
		}
	})
}
