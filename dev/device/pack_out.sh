#!/usr/bin/env bash
# Pack everything under a device call's $OUT into at most 8 returnable files of at most 15 MiB:
# the device returns 8 files of up to 16 MB from $OUT and silently drops the rest (a run's
# weights were lost that way). Run it last in a call: `bash dev/device/pack_out.sh "$OUT"`.
# Here: cat FILES_AT/out.tgz.part-* | tar xz -C somewhere
set -euo pipefail
OUT=${1:?usage: pack_out.sh OUT}
cd "$OUT"
shopt -s nullglob dotglob
items=(*)
[ ${#items[@]} -eq 0 ] && exit 0
tar czf /tmp/pack_out.tgz "${items[@]}"
rm -rf -- "${items[@]}"
split -b 15m -d -a 1 /tmp/pack_out.tgz out.tgz.part-
rm -f /tmp/pack_out.tgz
parts=(out.tgz.part-*)
if [ ${#parts[@]} -gt 8 ]; then
  echo "pack_out: ${#parts[@]} parts of 15 MiB: only 8 come back; keep less under \$OUT" >&2
  exit 1
fi
ls -la
