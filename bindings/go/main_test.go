package symm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The tests that need a runtime take it from the meson build directory in
// $SYMM_BUILD_DIR (test.sh sets it): runtime/libsymm_runtime.so.1 and
// runtime/symmrun. Tests that run as a PE or as a separate process re-execute
// this test binary with $SYMM_GO_TEST_WORKER naming the worker.

func TestMain(m *testing.M) {
	// This process's runtime: the build's, chosen the way a program would
	// (SetRuntimePath), unless $SYMM_RUNTIME (which wins) is set.
	if d := os.Getenv("SYMM_BUILD_DIR"); d != "" && os.Getenv("SYMM_RUNTIME") == "" {
		if err := SetRuntimePath(filepath.Join(d, "runtime", "libsymm_runtime.so.1")); err != nil {
			fmt.Fprintln(os.Stderr, "SetRuntimePath:", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

func buildDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv("SYMM_BUILD_DIR")
	if d == "" {
		t.Fatal("SYMM_BUILD_DIR is not set: point it at a meson build of symm " +
			"(with runtime/libsymm_runtime.so.1 and runtime/symmrun), or run bindings/go/test.sh BUILD_DIR")
	}
	return d
}

func runtimeLib(t *testing.T) string {
	return filepath.Join(buildDir(t), "runtime", "libsymm_runtime.so.1")
}

// worker marks a test that runs only as a worker process started by another
// test; anywhere else it is skipped (it is part of its driver's test).
func worker(t *testing.T, name string) {
	t.Helper()
	if os.Getenv("SYMM_GO_TEST_WORKER") != name {
		t.Skip("runs as a worker process started by its driver test")
	}
}

// runWorker runs this test binary's test name in a new process: under symmrun
// with n PEs when n > 0, else directly. It returns the combined output.
func runWorker(t *testing.T, name string, n int, env ...string) (string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.run", "^" + name + "$", "-test.v", "-test.count=1"}
	var cmd *exec.Cmd
	if n > 0 {
		symmrun := filepath.Join(buildDir(t), "runtime", "symmrun")
		cmd = exec.Command(symmrun, append([]string{"-n", fmt.Sprint(n), "--timeout", "120", "--", self}, args...)...)
	} else {
		cmd = exec.Command(self, args...)
	}
	cmd.Env = append(os.Environ(), append([]string{"SYMM_GO_TEST_WORKER=" + name}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// isStatus asserts that err is an *Error with status st and a message.
func isStatus(t *testing.T, err error, st Status, what string) *Error {
	t.Helper()
	if !errors.Is(err, st) {
		t.Fatalf("%s: got %v, want %s", what, err, st.Name())
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v is not a *symm.Error", what, err)
	}
	if e.Code() != int32(st) || e.Name() != st.Name() || e.Message == "" {
		t.Fatalf("%s: code %d name %q message %q", what, e.Code(), e.Name(), e.Message)
	}
	if !strings.Contains(e.Error(), st.Name()) || !strings.Contains(e.Error(), e.Message) {
		t.Fatalf("%s: Error() %q lacks the name or message", what, e.Error())
	}
	return e
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
