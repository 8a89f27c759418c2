#!/usr/bin/env bash
# The Go binding's suite: bindings/go/test.sh BUILD_DIR
#
# BUILD_DIR is a meson build of symm (runtime/libsymm_runtime.so.1 and
# runtime/symmrun built). Installs Go (Debian's golang-go) when it is missing;
# offline (the module depends on the standard library only, GOPROXY=off).
#   1. gofmt, go vet, go build (C warnings are errors)
#   2. go test (GODEBUG=cgocheck=2): ABI check against abi/symm-abi.json (+ its drift self-test),
#      doc comments, missing runtime, single-PE, 4 PEs under symmrun, peer failure
#   3. API.md is what go doc renders now (gen_api.sh --check)
#   4. examples/ring on 4 PEs under symmrun, and with SYMM_RUNTIME=/nonexistent;
#      the README's example as a separate module (replace directive) on 4 PEs
# Go's cache and build output go to BUILD_DIR/bindings/go. Exit 0 only if all pass.
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR (a meson build directory of symm)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)

if ! command -v go >/dev/null 2>&1 && [ -x /usr/lib/go/bin/go ]; then
  export PATH="/usr/lib/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "go bindings: go is missing: apt-get install golang-go"
    log=$build/bindings/go-apt.log
    mkdir -p "$build/bindings"
    if ! DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq golang-go >"$log" 2>&1; then
      (apt-get -o DPkg::Lock::Timeout=600 update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq golang-go) >>"$log" 2>&1
    fi
    hash -r
  fi
fi
if ! command -v go >/dev/null 2>&1; then
  echo "go bindings: FAILED: the go toolchain is not installed and could not be installed"
  if [ "$(id -u)" != 0 ]; then
    echo "  (not root: cannot apt-get install golang-go; install Go >= 1.19 to run this suite)"
  else
    echo "  (apt-get install golang-go failed: see $build/bindings/go-apt.log)"
  fi
  exit 1
fi
gover=$(go env GOVERSION 2>/dev/null || go version)
case "$gover" in
  go1.1[0-8]|go1.1[0-8].*|go1.[0-9]|go1.[0-9].*)
    echo "go bindings: FAILED: $gover is too old (generics need Go >= 1.19; Debian 12: golang-go)"
    exit 1 ;;
esac
if ! command -v cc >/dev/null 2>&1 && [ -z "${CC:-}" ]; then
  echo "go bindings: FAILED: cgo needs a C compiler (cc) and none is installed"
  exit 1
fi
for f in runtime/libsymm_runtime.so.1 runtime/symmrun; do
  if [ ! -e "$build/$f" ]; then
    echo "go bindings: FAILED: $build/$f is missing (ninja -C $build first)"
    exit 1
  fi
done

out=$build/bindings/go
mkdir -p "$out"
export GOCACHE="$out/cache" GOPATH="$out/gopath" GOTMPDIR="" GOENV=off
export GOPROXY=off GOFLAGS=-mod=mod GO111MODULE=on GOTOOLCHAIN=local CGO_ENABLED=1
export CGO_CFLAGS="-O2 -g -Wall -Wextra -Werror"
export SYMM_BUILD_DIR="$build" SYMM_SOURCE_DIR="$src"
# The tests choose their runtime themselves; an inherited one would win.
unset SYMM_RUNTIME SYMM_RANK SYMM_N_PES SYMM_LAUNCHER SYMM_GO_TEST_WORKER
cd "$here" || exit 1

failed=()
step() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== go: $name"
  if "$@"; then
    echo "--- go: $name: ok ($((SECONDS - t0)) s)"
  else
    echo "--- go: $name: FAILED ($((SECONDS - t0)) s)"
    failed+=("$name")
  fi
}

gofmt_clean() {
  local bad
  bad=$(gofmt -l .)
  [ -z "$bad" ] || { echo "not gofmt-formatted: $bad"; return 1; }
}

go_test() {
  local log=$out/go-test.log
  # cgocheck=2 also checks every store of a Go pointer into C memory.
  GODEBUG=cgocheck=2 go test -count=1 -v ./... >"$log" 2>&1
  local rc=$?
  grep -E '^(--- |ok |FAIL|PASS)' "$log"
  if [ $rc -ne 0 ]; then
    cat "$log"
    return 1
  fi
  # Only the worker tests (run by their drivers as separate processes) skip.
  if grep -E -- '^--- SKIP' "$log" | grep -v -E 'Worker \(' ; then
    echo "a test was skipped (above): it did not run"
    return 1
  fi
}

api_current() {
  case "$gover" in
    go1.19|go1.19.*) ./gen_api.sh --check ;;
    *) echo "API.md is rendered with go1.19; $gover may render it differently: not compared" ;;
  esac
}

ring_4pes() {
  local o
  o=$("$build/runtime/symmrun" -n 4 --timeout 60 -- "$out/ring") || { echo "$o"; return 1; }
  echo "$o"
  [ "$(grep -c 'ring ok, sum 6 (ok)' <<<"$o")" -eq 4 ]
}

ring_missing_runtime() {
  local o
  o=$(SYMM_RUNTIME=/nonexistent/libsymm_runtime.so.1 "$out/ring") || { echo "$o"; return 1; }
  echo "$o"
  grep -q 'SYMM_ERR_LIBRARY_NOT_FOUND' <<<"$o" && grep -q 'single-process sum = 0 (ok)' <<<"$o"
}

# The README's example, as a user's module would use it: a copy of just this
# directory (nothing else of the checkout), named by a replace directive.
readme_example() {
  local dir=$out/readme-example o
  rm -rf "$dir" && mkdir -p "$dir" || return 1
  awk '/^```go$/ {inb=1; buf=""; next} inb && /^```$/ {inb=0; if (buf ~ /package main/) {printf "%s", buf; exit} next} inb {buf = buf $0 "\n"}' \
    README.md >"$dir/main.go"
  grep -q 'package main' "$dir/main.go" || { echo "no example found in README.md"; return 1; }
  mkdir -p "$dir/vendored" && cp -r "$here" "$dir/vendored/symm" || return 1
  ./sync_csrc.sh "$dir/vendored/symm" || return 1
  printf 'module example.com/readme\n\ngo 1.19\n\nrequire symm.dev/symm v0.0.0\n\nreplace symm.dev/symm => ./vendored/symm\n' >"$dir/go.mod"
  (cd "$dir" && go build -o prog .) || return 1
  o=$("$build/runtime/symmrun" -n 4 --timeout 60 -- "$dir/prog") || { echo "$o"; return 1; }
  echo "$o"
  [ "$(grep -c 'sum 6$' <<<"$o")" -eq 4 ]
}

echo "go: $(go version), CC=$(go env CC)"
step "gofmt" gofmt_clean
step "go vet" go vet ./...
step "go build" go build ./...
if [ ${#failed[@]} -eq 0 ]; then
  step "go test" go_test
  step "API.md up to date" api_current
  step "build examples/ring" go build -o "$out/ring" ./examples/ring
  step "example ring on 4 PEs" ring_4pes
  step "example ring without a runtime" ring_missing_runtime
  step "README example (module copied alone) on 4 PEs" readme_example
fi

if [ ${#failed[@]} -ne 0 ]; then
  echo "go bindings: FAILED: ${failed[*]}"
  exit 1
fi
echo "go bindings: all steps passed"
