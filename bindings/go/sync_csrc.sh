#!/usr/bin/env bash
# Copies the C sources the Go package compiles in (the loader, its dispatch
# header and the public header) from the symm checkout into csrc/, so the
# module also builds where only bindings/go was copied or fetched.
#   bindings/go/sync_csrc.sh          refresh csrc/ (commit the result)
#   bindings/go/sync_csrc.sh --check  exit 1 when csrc/ differs from the checkout
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
pairs=(
  "loader/symm_loader.c:csrc/symm_loader.c"
  "loader/symm_dispatch.h:csrc/symm_dispatch.h"
  "include/symm/symm.h:csrc/symm/symm.h"
)
rc=0
for p in "${pairs[@]}"; do
  from=$src/${p%%:*}
  to=$here/${p#*:}
  if [ "${1:-}" = "--check" ]; then
    if ! cmp -s "$from" "$to"; then
      echo "go bindings: $to differs from $from (run bindings/go/sync_csrc.sh and commit)"
      rc=1
    fi
  else
    cp "$from" "$to" || rc=1
  fi
done
exit $rc
