#!/usr/bin/env bash
# Make sure the build and test tools are present; install what is missing
# (apt-get as root, pip for meson). Prints plainly what it could not install
# and returns non-zero then.
#   bash scripts/deps.sh         # what a build needs: C compiler, ninja, python3, meson >= 1.1
#   bash scripts/deps.sh --all   # everything the test suite needs too (NumPy, pytest and
#                                # matplotlib from PyPI among them)
# Sourced by demo.sh (symm_deps_build: the build tools only) and test.sh
# (symm_deps: all).
set -u

# pip install into this python3, also where the distribution marks its Python
# as externally managed (PEP 668, Debian 12): then into ~/.local, which is put
# on PATH for this shell.
symm_pip_install() {
  local out
  out=$(python3 -m pip install -q --disable-pip-version-check "$@" 2>&1) && return 0
  if printf '%s' "$out" | grep -q externally-managed-environment; then
    python3 -m pip install -q --disable-pip-version-check --user --break-system-packages "$@" \
      2>&1 | grep -v "Running pip as the 'root'"
    case ":$PATH:" in *":$HOME/.local/bin:"*) ;; *) export PATH="$HOME/.local/bin:$PATH" ;; esac
    hash -r
    return 0
  fi
  printf '%s\n' "$out" | grep -v "Running pip as the 'root'"
  return 1
}

# apt-get install as root; otherwise say what is missing. --min: without
# the packages' recommendations (the demo's compiler: minutes less on a fresh
# machine).
symm_apt_install() {
  local rec=()
  [ "${1:-}" = --min ] && { rec=(--no-install-recommends); shift; }
  [ $# -gt 0 ] || return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: apt-get install $*"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${rec[@]}" "$@") \
      >/tmp/symm-apt.log 2>&1 || echo "deps: apt-get failed (log: /tmp/symm-apt.log)"
    hash -r
  else
    echo "deps: not root (or no apt-get): cannot install $*"
  fi
}

symm_need_meson() {
  if command -v meson >/dev/null 2>&1; then
    local v; v=$(meson --version 2>/dev/null)
    if python3 - "$v" <<'PY'
import sys
v = tuple(int(x) for x in sys.argv[1].split('.')[:2])
sys.exit(0 if v >= (1, 1) else 1)
PY
    then return 0; fi
  fi
  echo "deps: installing meson (>= 1.1) with pip"
  symm_pip_install 'meson>=1.1' || true
  hash -r
  command -v meson >/dev/null 2>&1
}

# What building the libraries, symmrun and the examples needs, nothing more
# (the demo): a C compiler, ninja, python3 with pip, meson >= 1.1. A fresh
# Debian gets gcc and libc6-dev rather than build-essential (no g++, make).
symm_deps_build() {
  local want_pkgs=() missing=()
  command -v cc >/dev/null 2>&1 || want_pkgs+=(gcc libc6-dev)
  command -v ninja >/dev/null 2>&1 || want_pkgs+=(ninja-build)
  command -v python3 >/dev/null 2>&1 || want_pkgs+=(python3)
  python3 -m pip --version >/dev/null 2>&1 || want_pkgs+=(python3-pip)
  symm_apt_install --min "${want_pkgs[@]}"
  if ! command -v ninja >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then
    echo "deps: installing ninja with pip"; symm_pip_install ninja || true
  fi
  command -v cc >/dev/null 2>&1 || missing+=("a C compiler (apt-get install gcc libc6-dev)")
  command -v ninja >/dev/null 2>&1 || missing+=("ninja (ninja-build)")
  command -v python3 >/dev/null 2>&1 || missing+=("python3")
  symm_need_meson || missing+=("meson >= 1.1 (python3 -m pip install meson)")
  if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: MISSING, cannot build: ${missing[*]}"
    return 1
  fi
  return 0
}

symm_deps() {
  local want_pkgs=() missing=()
  command -v cc >/dev/null 2>&1 || want_pkgs+=(build-essential)
  command -v ninja >/dev/null 2>&1 || want_pkgs+=(ninja-build)
  command -v python3 >/dev/null 2>&1 || want_pkgs+=(python3 python3-pip)
  python3 -m pip --version >/dev/null 2>&1 || want_pkgs+=(python3-pip)
  # a fresh venv (scripts/newcomer.sh) needs ensurepip, which Debian ships apart
  python3 -c 'import ensurepip' >/dev/null 2>&1 || want_pkgs+=(python3-venv)
  command -v abidiff >/dev/null 2>&1 || want_pkgs+=(abigail-tools)
  command -v nm >/dev/null 2>&1 || want_pkgs+=(binutils)
  command -v g++ >/dev/null 2>&1 || want_pkgs+=(g++)
  # verbs.h builds the ibverbs transport plugin (libibverbs itself is opened
  # at run time); its tests run in the Soft-RoCE guest and against a fake.
  [ -f /usr/include/infiniband/verbs.h ] || want_pkgs+=(libibverbs-dev)
  # rdma/fabric.h builds the ofi transport plugin (libfabric1, which the
  # headers' package pulls in, is opened at run time); its tests run over the
  # tcp;ofi_rxm and shm providers. fi_info (libfabric-bin) lists providers.
  [ -f /usr/include/rdma/fabric.h ] || want_pkgs+=(libfabric-dev)
  command -v fi_info >/dev/null 2>&1 || want_pkgs+=(libfabric-bin)
  [ ${#want_pkgs[@]} -eq 0 ] || symm_apt_install "${want_pkgs[@]}"
  command -v cc >/dev/null 2>&1 || missing+=("a C compiler (build-essential)")
  command -v ninja >/dev/null 2>&1 || missing+=("ninja (ninja-build)")
  command -v python3 >/dev/null 2>&1 || missing+=("python3")
  symm_need_meson || missing+=("meson >= 1.1 (python3 -m pip install meson)")
  [ -f /usr/include/infiniband/verbs.h ] ||
    missing+=("infiniband/verbs.h (apt-get install libibverbs-dev): without it the ibverbs transport and its tests are not built")
  [ -f /usr/include/rdma/fabric.h ] ||
    missing+=("rdma/fabric.h (apt-get install libfabric-dev): without it the ofi transport and its tests are not built")
  # NumPy for the Python package's host tests (PyPI).
  if ! python3 -c 'import numpy' >/dev/null 2>&1; then
    echo "deps: installing numpy with pip (Python binding tests)"
    symm_pip_install numpy || true
    python3 -c 'import numpy' >/dev/null 2>&1 || missing+=("numpy (python3 -m pip install numpy)")
  fi
  # pytest runs the Python package's tests (bindings/python/tests/harness.py).
  if ! python3 -c 'import pytest' >/dev/null 2>&1; then
    echo "deps: installing pytest with pip (Python binding tests)"
    symm_pip_install pytest || true
    python3 -c 'import pytest' >/dev/null 2>&1 || missing+=("pytest (python3 -m pip install pytest)")
  fi
  # meson-python builds the Python package's sdist and wheel (test
  # python_pip_install, bindings/python/test_install.sh) without build isolation.
  if ! python3 -c 'import mesonpy' >/dev/null 2>&1; then
    echo "deps: installing meson-python with pip (Python package build test)"
    symm_pip_install meson-python || true
    python3 -c 'import mesonpy' >/dev/null 2>&1 ||
      echo "deps: meson-python not installed (python3 -m pip install meson-python):" \
           "test python_pip_install will fail"
  fi
  # matplotlib draws the benchmark figures (scripts/plot-bench.py; tools suite's plots test).
  if ! python3 -c 'import matplotlib' >/dev/null 2>&1; then
    echo "deps: installing matplotlib with pip (benchmark figures)"
    symm_pip_install matplotlib || true
    python3 -c 'import matplotlib' >/dev/null 2>&1 ||
      echo "deps: matplotlib not installed (python3 -m pip install matplotlib):" \
           "the plots test will report a skip"
  fi
  if ! command -v abidiff >/dev/null 2>&1; then
    echo "deps: abidiff not available: the ABI baseline test will report a skip"
  fi
  if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "deps: nvcc not found: building without the CUDA backend (host backend only)"
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: MISSING, cannot build: ${missing[*]}"
    return 1
  fi
  return 0
}

# Run (not sourced): install.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case "${1:-}" in
    --all) symm_deps ;;
    "") symm_deps_build ;;
    *) echo "usage: bash scripts/deps.sh [--all]" >&2; exit 2 ;;
  esac
fi
