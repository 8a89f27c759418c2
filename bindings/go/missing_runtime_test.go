package symm

import (
	"errors"
	"strings"
	"testing"
)

// Without a runtime: the program starts, the pure-data entries answered by the
// compiled-in loader work, and every call that needs the runtime returns
// ErrLibraryNotFound with a message naming what was tried.
func TestMissingRuntime(t *testing.T) {
	out, err := runWorker(t, "TestMissingRuntimeWorker", 0, "SYMM_RUNTIME=/nonexistent/libsymm_runtime.so.1")
	if err != nil || !strings.Contains(out, "--- PASS: TestMissingRuntimeWorker") ||
		!strings.Contains(out, "missing runtime: all checks passed") {
		t.Fatalf("worker failed (%v):\n%s", err, out)
	}
}

func TestMissingRuntimeWorker(t *testing.T) {
	worker(t, "TestMissingRuntimeWorker")
	if p := RuntimePath(); p != "" {
		t.Fatalf("RuntimePath %q before any load", p)
	}
	if v := LoaderVersion(); v != (Version{VersionMajor, VersionMinor, VersionPatch}) {
		t.Fatalf("LoaderVersion %v", v)
	}
	attr, err := DefaultInitAttr()
	must(t, err, "DefaultInitAttr without a runtime")
	if attr.ThreadLevel != ThreadMultiple || attr.Device != -1 || attr.Backend != BackendAuto ||
		attr.Bootstrap != BootstrapAuto {
		t.Fatalf("defaults %+v", attr)
	}
	tc, err := DefaultTeamConfig()
	must(t, err, "DefaultTeamConfig")
	if tc.NumContexts != 0 {
		t.Fatalf("default team config %+v", tc)
	}
	if DTypeFloat16.Size() != 2 || DTypeFloat64.Size() != 8 || DType(99).Size() != 0 {
		t.Fatal("dtype sizes")
	}
	if ErrPeerFailed.Name() != "SYMM_ERR_PEER_FAILED" {
		t.Fatal(ErrPeerFailed.Name())
	}
	h, err := AllocHost[float32](4)
	must(t, err, "AllocHost")
	h.Slice()[3] = 1.5
	if h.Slice()[3] != 1.5 {
		t.Fatal("HostMem")
	}
	h.Free()

	e := isStatus(t, Probe(), ErrLibraryNotFound, "Probe")
	if !strings.Contains(e.Message, "/nonexistent/libsymm_runtime.so.1") {
		t.Fatalf("the message does not say what was tried: %q", e.Message)
	}
	ctx, err := Init()
	if ctx != nil {
		t.Fatal("Init returned a context")
	}
	e = isStatus(t, err, ErrLibraryNotFound, "Init")
	if e.Op != "symm_init" || e.Code() != 5 || e.Name() != "SYMM_ERR_LIBRARY_NOT_FOUND" {
		t.Fatalf("Init error %#v", e)
	}
	if errors.Is(err, ErrPeerFailed) {
		t.Fatal("errors.Is matches another status")
	}
	_, err = GetUniqueID()
	isStatus(t, err, ErrLibraryNotFound, "GetUniqueID")
	_, err = RuntimeVersion()
	isStatus(t, err, ErrLibraryNotFound, "RuntimeVersion")
	// The load was attempted: the runtime path is frozen.
	isStatus(t, SetRuntimePath("/elsewhere/libsymm_runtime.so.1"), ErrInvalidState, "SetRuntimePath after a load")
	t.Log("missing runtime: all checks passed")
	println("missing runtime: all checks passed")
}
