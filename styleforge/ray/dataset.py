"""`stylize_dataset(ds, style=…, output=…)`: a Ray Dataset of images → a Dataset of results, the
work mapped over a pool of `StylizeActor`s (one engine each, loaded once) with Ray Data's
`map_batches(…, compute=ActorPoolStrategy(size=n), num_gpus=1 | num_cpus=c, batch_size=k)`.

The input rows name images by `path` (local paths, URLs, or paths in `filesystem`), may carry
their `bytes`, and may carry a planned `target`; outputs are written inside the workers, exactly
once, under their deterministic names (`ray.actor`). Ray's own writers (`write_images`, …) are
not used: they name files by a random write id, so a re-run would write every image again under
new names. The result is lazy, like every Dataset: iterate it, `materialize()` it or
`take_all()` to run the job; each result row says what happened to one input.
Not here: the engine (`engine`), the CLI's planning and report (`ray.command`).
"""
from __future__ import annotations

import os
from typing import Any

from styleforge.engine.options import StylizeOptions

CPU_ACTOR_THREADS = 1       # a CPU actor's torch threads (and its num_cpus) unless told


def require_ray():
    """The `ray` module, or an ImportError that says which extra to install."""
    try:
        import ray
        import ray.data  # noqa: F401  (ray without the [data] extra lacks pyarrow)
    except ImportError as exc:
        raise ImportError('running on Ray needs Ray Data, which is not installed: '
                          'pip install "styleforge[ray]"') from exc
    return ray


def _pool_shape(options: StylizeOptions, actors: int | None, num_gpus: float | None,
                num_cpus: float | None) -> tuple[int, float, float]:
    """(actors, num_gpus, num_cpus) per actor: one GPU each where the cluster has GPUs (and the
    options allow CUDA), else CPU actors of `CPU_ACTOR_THREADS` cores, one per free core pair."""
    import ray
    resources = ray.cluster_resources() if ray.is_initialized() else {}
    gpus = int(resources.get("GPU", 0))
    if num_gpus is None:
        num_gpus = 1 if gpus and options.device != "cpu" else 0
    if num_cpus is None:
        num_cpus = 1 if num_gpus else CPU_ACTOR_THREADS
    if actors is None:
        if num_gpus:
            actors = max(1, int(gpus / num_gpus))
        else:     # leave cores for Ray Data's read tasks and the decode/encode threads
            actors = max(1, int(resources.get("CPU", 1) // (2 * num_cpus)))
    if actors < 1:
        raise ValueError(f"actors must be ≥ 1, got {actors}")
    return actors, num_gpus, num_cpus


def stylize_dataset(ds, style: Any = None, *, output: str | os.PathLike | None = None,
                    options: StylizeOptions | None = None, actors: int | None = None,
                    batch_size: int | None = None, num_gpus: float | None = None,
                    num_cpus: float | None = None, filesystem: Any = None,
                    output_filesystem: Any = None, root: str | None = None, keep_names: bool = False,
                    workers: int = 2, map_batches_args: dict | None = None, **option_fields: Any):
    """Stylize every image the Dataset `ds` names; returns the lazy Dataset of results.

    - `ds`: rows with `path` (str) and optionally `bytes` and `target` — e.g.
      `ray.data.read_binary_files(folder, include_paths=True)` or `ray.data.from_items(
      [{"path": p} for p in paths])`.
    - `style` / `options` / `**option_fields`: as `styleforge.stylize` (a built-in name, a
      checkpoint path every worker can read, `strength=0.7`, …). Its label names the outputs.
    - `output`: the output folder (local path or URL) for rows without a `target`; `photo.jpg`
      becomes `photo_<label>.jpg` there (`keep_names=True`: `photo.jpg`); with `root`, the path
      below `root` is kept, sub-folders and all.
    - `filesystem` / `output_filesystem`: a `pyarrow.fs.FileSystem` or fsspec filesystem the
      input paths / the output folder live in (default: local, or what a URL names).
    - `actors` (pool size), `batch_size` (rows per actor call, default `options.batch_size` or
      4), `num_gpus` / `num_cpus` per actor: default one GPU per actor and one actor per GPU on
      a cluster with GPUs, else 1-core CPU actors. `workers`: decode and encode threads in
      each actor. `map_batches_args`: more `map_batches` arguments, e.g. `{"memory": 4e9}` or
      `{"max_restarts": 0}` (no actor restarts: a dead actor fails the job).

    Result rows: source, output, status ("written", "skipped": the output existed and was
    kept, "failed"), error, width, height, seconds. An existing output is never replaced unless
    `overwrite=True`, so running the same call again after a crash writes only what is missing.
    """
    from styleforge.api import make_options
    require_ray()
    from ray.data import ActorPoolStrategy

    from styleforge.ray.actor import StylizeActor
    opts = make_options(style, options, **option_fields)
    actors, num_gpus, num_cpus = _pool_shape(opts, actors, num_gpus, num_cpus)
    if output is not None:
        output = os.fspath(output)
        if output_filesystem is None and "://" not in output:
            output = os.path.abspath(output)     # the workers' working folder is not the driver's
    constructor = dict(options=opts, output=output,
                       filesystem=filesystem, output_filesystem=output_filesystem, root=root,
                       keep_names=keep_names, workers=workers,
                       threads=None if num_gpus else max(1, int(num_cpus)))
    return ds.map_batches(StylizeActor, compute=ActorPoolStrategy(size=actors),
                          batch_size=batch_size or max(opts.batch_size, 4), batch_format="numpy",
                          num_gpus=num_gpus, num_cpus=num_cpus, fn_constructor_kwargs=constructor,
                          **(map_batches_args or {}))
