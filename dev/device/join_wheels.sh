#!/usr/bin/env bash
# Join wheels carried in halves and install them into a folder for PYTHONPATH. A call's carry is
# 64 MiB with the ~34 MB tree, so a large wheel travels as two halves on two calls of one warm
# machine (ignored folders stay): .whl/<x>_a/<wheel>.part-a, then .whl/<x>_b/<wheel>.part-b.
#
#   bash dev/device/join_wheels.sh TARGET [EXTRA_WHEEL...]   e.g. /tmp/site
# Joins every .whl/*_a/*.part-a whose .part-b has arrived, installs the joined wheels and any
# EXTRA_WHEELs with --no-deps into TARGET; then: export PYTHONPATH=TARGET PATH=TARGET/bin:$PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET=${1:?usage: join_wheels.sh TARGET [EXTRA_WHEEL...]}
shift
wheels=("$@")
shopt -s nullglob
for a in .whl/*_a/*.part-a; do
  name=$(basename "$a" .part-a)
  b=$(dirname "$a"); b=${b%_a}_b/$name.part-b
  if [ -f "$b" ]; then
    cat "$a" "$b" > "/tmp/$name"
    wheels+=("/tmp/$name")
  else
    echo "join_wheels: $name waits for its second half ($b)" >&2
  fi
done
[ ${#wheels[@]} -eq 0 ] && { echo "join_wheels: nothing to install" >&2; exit 1; }
python -m pip install -q --no-deps --target "$TARGET" "${wheels[@]}"
echo "installed into $TARGET: ${wheels[*]##*/}"
