"""How many merged style tokens the OpenVINO CPU path can keep: quality and attention time per count.

The OpenVINO path merges a painting's keys per head (`models/arbitrary/merge.py`) to
`arbitrary_openvino.STYLE_TOKENS`. Here each setting (`relu3_1:N,relu4_1:M`; `model` = the
model's own tokens, no merging) runs the engine's own call (`ArbitraryStylizer.stylize`, its
defaults: two passes, the first smaller, palette, degrid) on every photo × painting pair, scored
by the bench's scorer (`bench.cpu_arbitrary.score`, the shared style_metrics; medians), and
times the attention blocks (`transfer_one`) inside the first photo's call in CPU ms (process
time, all threads), with the load average, since this host may be shared. Settings alternate
rep by rep, so a change of load falls on all. A dev experiment, not a bench row:

    python dev/diag/cpu_style_tokens.py --photos P... --paintings Q... --settings model relu3_1:256,relu4_1:256
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from styleforge.bench.cpu import load_metrics
from styleforge.bench.cpu_arbitrary import load_photo, score
from styleforge.engine.arbitrary import ArbitraryStylizer
from styleforge.engine.options import StylizeOptions


def parse(setting: str) -> dict[str, int]:
    if setting == "model":
        return {}
    return {level: int(n) for level, n in (part.split(":") for part in setting.split(","))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--photos", nargs="+", type=Path, required=True)
    parser.add_argument("--paintings", nargs="+", type=Path, required=True)
    parser.add_argument("--settings", nargs="+", default=["model", "relu3_1:256,relu4_1:256"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--style-metrics", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    metrics = load_metrics(args.style_metrics)
    engines = {}
    for setting in args.settings:
        engine = ArbitraryStylizer(StylizeOptions(device="cpu", backend="openvino", precision="int8"))
        engine.openvino.style_tokens = parse(setting)
        engines[setting] = engine
    print(f"{engines[args.settings[0]].describe()}; load {os.getloadavg()[0]:.2f}")
    photos = [load_photo(p) for p in args.photos]
    for setting, engine in engines.items():
        pairs = []
        with tempfile.TemporaryDirectory() as tmp:
            for photo in photos:
                for painting in args.paintings:
                    pairs.append(score(metrics, photo, engine.stylize(photo, [(str(painting), 1.0)]),
                                       painting, Path(tmp)))
        quality = {k: round(statistics.median(p[k] for p in pairs), 4) for k in pairs[0]}
        print(f"{setting:26} " + "  ".join(f"{k} {v}" for k, v in quality.items()), flush=True)
    spent = {s: [] for s in engines}
    for setting, engine in engines.items():     # the painting's code cached, the shapes compiled
        engine.stylize(photos[0], [(str(args.paintings[0]), 1.0)])
        net = engine.openvino
        inner = net.transfer_one

        def timed(*a, _inner=inner, _s=setting, **k):
            c0 = time.process_time()
            try:
                return _inner(*a, **k)
            finally:
                spent[_s][-1] += (time.process_time() - c0) * 1e3
        net.transfer_one = timed
    for _ in range(args.reps):
        for setting, engine in engines.items():
            spent[setting].append(0.0)
            engine.stylize(photos[0], [(str(args.paintings[0]), 1.0)])
    for setting in engines:
        print(f"{setting:26} attention blocks CPU ms per call: median {statistics.median(spent[setting]):.0f} "
              f"({', '.join(f'{v:.0f}' for v in spent[setting])})  load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
