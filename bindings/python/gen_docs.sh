#!/usr/bin/env bash
# Render the Python API reference (pydoc HTML) into docs/python/, with the
# machine's paths removed. Run from anywhere; needs no runtime.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/docs/python"
mkdir -p "$out"
cd "$out"
mods="symm symm._core symm.errors"
[ -f "$here/symm/torch.py" ] && mods="$mods symm.torch"
PYTHONPATH="$here" python3 -m pydoc -w $mods >/dev/null
for f in *.html; do
  sed -i -e "s|$here/||g" -e 's|<a href="file:[^"]*">\([^<]*\)</a>|\1|g' "$f"
done
echo "wrote $(ls "$out"/*.html | wc -l) pages to docs/python/"
