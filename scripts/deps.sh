#!/usr/bin/env bash
# Make sure the build and test tools are present; install what is missing
# (apt-get as root, pip for meson). Sourced by demo.sh and test.sh.
# Prints plainly what it could not install and returns non-zero then.
set -u

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
  python3 -m pip install -q --disable-pip-version-check 'meson>=1.1' 2>&1 | grep -v "Running pip as the 'root'" || true
  hash -r
  command -v meson >/dev/null 2>&1
}

symm_deps() {
  local want_pkgs=() missing=()
  command -v cc >/dev/null 2>&1 || want_pkgs+=(build-essential)
  command -v ninja >/dev/null 2>&1 || want_pkgs+=(ninja-build)
  command -v python3 >/dev/null 2>&1 || want_pkgs+=(python3 python3-pip)
  python3 -m pip --version >/dev/null 2>&1 || want_pkgs+=(python3-pip)
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
  if [ ${#want_pkgs[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "deps: apt-get install ${want_pkgs[*]}"
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${want_pkgs[@]}") \
        >/tmp/symm-apt.log 2>&1 || echo "deps: apt-get failed (log: /tmp/symm-apt.log)"
    else
      echo "deps: not root (or no apt-get): cannot install ${want_pkgs[*]}"
    fi
  fi
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
    python3 -m pip install -q --disable-pip-version-check numpy 2>&1 | grep -v "Running pip as the 'root'" || true
    python3 -c 'import numpy' >/dev/null 2>&1 || missing+=("numpy (python3 -m pip install numpy)")
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
