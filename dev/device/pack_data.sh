#!/usr/bin/env bash
# Copy what dev/device/train_styles.sh needs from the shared data into .data/ (git-ignored), the
# folder the lead carries to the GPU machine (run(carry=[".data"])). Run from anywhere, on the CPU
# machine, before the first training call:
#
#   bash dev/device/pack_data.sh [SHARED_DATA (default /work/shared/data)]
#
# .data/vgg16_relu4_3.fp16.pth   the loss network (15 MB)
# .data/styles/                  the nine shared paintings in the catalogue + the five v2 ones
#                                (dev/prepare_new_styles.py: apt-get download stellarium-data)
# .data/content/                 every STRIDE-th training photo (default 2: 725 of 1450), re-encoded
#                                JPEG q65, so the whole folder stays within ~25 MB
# .data/amber.jpg                a held-out photo (pytorch/examples' demo photo, 1080², 0.1 MB; not in
#                                content/): the fourth of issue 44's yardstick photos, --metrics --photo
# Nothing here is committed: the photos and paintings are training data only.
set -euo pipefail
SRC=${1:-/work/shared/data}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=$ROOT/.data
STRIDE=${STRIDE:-2}
QUALITY=${QUALITY:-65}
LIMIT_MB=${LIMIT_MB:-30}

mkdir -p "$DEST/content" "$DEST/styles"
cp "$SRC/vgg16_relu4_3.fp16.pth" "$SRC/amber.jpg" "$DEST/"
cd "$ROOT"
python - "$SRC" "$DEST" "$STRIDE" "$QUALITY" <<'PY'
import sys
from pathlib import Path
from PIL import Image
from styleforge.training.catalogue import BUILTIN_STYLES
src, dest, stride, quality = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for style in BUILTIN_STYLES:   # training sees at most 512 px of a painting
    if not style.source:
        with Image.open(src / "styles" / style.painting_file) as im:
            im = im.convert("RGB")
            im.thumbnail((768, 768), Image.LANCZOS)
            im.save(dest / "styles" / style.painting_file, quality=90, subsampling=0)
photos = sorted((src / "content").glob("*.jpg"))[::stride]
for old in (dest / "content").glob("*.jpg"):
    old.unlink()
for path in photos:
    with Image.open(path) as im:
        im.convert("RGB").save(dest / "content" / path.name, quality=quality)
print(f"{len(photos)} photos, {len(BUILTIN_STYLES)} paintings")
PY
python dev/prepare_new_styles.py --out "$DEST/styles" ${DEB:+--deb "$DEB"}
SIZE=$(du -sm "$DEST" | cut -f1)
echo "$DEST: ${SIZE} MB"
if [ "$SIZE" -gt "$LIMIT_MB" ]; then
  echo "error: $DEST is ${SIZE} MB, over ${LIMIT_MB} MB; raise STRIDE or lower QUALITY" >&2
  exit 1
fi
