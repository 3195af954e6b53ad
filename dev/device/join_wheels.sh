#!/usr/bin/env bash
# Join wheels carried in parts and install them into a folder for PYTHONPATH. A call's carry is
# 64 MiB with the ~37 MB tree, so a large wheel travels in parts on several calls of one warm
# machine (ignored folders stay): .whl/<x>_a/<wheel>.part-a, .whl/<x>_b/<wheel>.part-b, ...
# A `<wheel>.parts` file beside part a says "COUNT SHA256"; without it a wheel has two parts.
#
#   bash dev/device/join_wheels.sh TARGET [EXTRA_WHEEL...]   e.g. /tmp/site
# Joins every wheel whose parts have all arrived (checked against the SHA-256 when given),
# installs the joined wheels and any EXTRA_WHEELs with --no-deps into TARGET, and unpacks any
# .whl/*.tar.xz (installed trees, pack_wheels.sh xz) there; then:
# export PYTHONPATH=TARGET PATH=TARGET/bin:$PATH.
# Splitting one (20 MB parts): split -b 20000000 -a 1 W /tmp/p. and move /tmp/p.a, /tmp/p.b, ...
# to .whl/<x>_a/W.part-a, .whl/<x>_b/W.part-b, ...; echo "N $(sha256sum W | cut -d' ' -f1)" > .whl/<x>_a/W.parts
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET=${1:?usage: join_wheels.sh TARGET [EXTRA_WHEEL...]}
shift
wheels=("$@")
shopt -s nullglob
letters=(a b c d e f g h)
for first in .whl/*_a/*.part-a; do
  name=$(basename "$first" .part-a)
  stem=$(dirname "$first"); stem=${stem%_a}
  count=2 sum=""
  [ -f "${stem}_a/$name.parts" ] && read -r count sum < "${stem}_a/$name.parts"
  parts=() missing=""
  for letter in "${letters[@]:0:$count}"; do
    part="${stem}_${letter}/$name.part-$letter"
    [ -f "$part" ] && parts+=("$part") || missing="$part"
  done
  if [ -n "$missing" ]; then
    echo "join_wheels: $name waits for its parts ($missing)" >&2
    continue
  fi
  cat "${parts[@]}" > "/tmp/$name"
  if [ -n "$sum" ] && [ "$(sha256sum "/tmp/$name" | cut -d' ' -f1)" != "$sum" ]; then
    echo "join_wheels: $name joined but its SHA-256 differs: not installed" >&2
    continue
  fi
  wheels+=("/tmp/$name")
done
# Installed trees packed by pack_wheels.sh xz: unpacked as they are.
unpacked=0
for tree in .whl/*.tar.xz; do
  mkdir -p "$TARGET" && xz -dc "$tree" | tar -C "$TARGET" -xf - && unpacked=1 && echo "unpacked $tree into $TARGET"
done
if [ ${#wheels[@]} -eq 0 ]; then
  [ "$unpacked" = 1 ] && exit 0
  echo "join_wheels: nothing to install" >&2; exit 1
fi
python -m pip install -q --no-deps --target "$TARGET" "${wheels[@]}"
echo "installed into $TARGET: ${wheels[*]##*/}"
