"""`StylizeActor`: the callable class Ray Data runs in each actor of the pool — one engine per
actor, loaded once, over batches of rows naming images (and maybe holding their bytes).

A batch is a dict of numpy columns (`batch_format="numpy"`): `path` (a local path, a URL, or a
path inside the run's source filesystem), optionally `bytes` (the file's content, as
`ray.data.read_binary_files(..., include_paths=True)` gives it; then `path` only names the file)
and optionally `target` (an output path planned by the driver, as the CLI does). A row without a
`target` is named here, from its path and the run's label, by the same rule as every other path
(`ray.naming`, over `jobs.naming`). Each batch streams through the library's pipeline (`media.pipeline`:
decode and encode threads around this actor's `EngineStage`), decoded and encoded with Pillow
exactly as `media.images` does, so the bytes equal a `styleforge stylize --codec pillow` run.
Outputs are written here, inside the worker, exactly once under their final names
(`files.write_once`); an output that exists is skipped, so a batch retried after its actor died
redoes only what is missing. One bad row fails alone; the batch comes back as one result row
per input row: source, output, status (written / skipped / failed), error, width, height, seconds.
Not here: building the dataset and the pool (`ray.dataset`), the CLI (`ray.command`).
"""
from __future__ import annotations

import dataclasses
import io

import numpy as np
from PIL import Image

from styleforge.engine.options import StylizeOptions
from styleforge.io.image import OutputExists, encode_into, format_for, load_image
from styleforge.media.engine_stage import EngineStage, host_pixels
from styleforge.media.pipeline import Item, stream
from styleforge.ray.files import Location, write_once
from styleforge.ray.naming import target_name

WRITTEN, SKIPPED, FAILED = "written", "skipped", "failed"
RESULT_COLUMNS = ("source", "output", "status", "error", "width", "height", "seconds")


@dataclasses.dataclass
class _Task:
    source: Location
    data: bytes | None
    target: Location | None
    name_error: str | None = None

    def __str__(self) -> str:        # the pipeline's error lines name the input
        return str(self.source)


class StylizeActor:
    """Ray Data calls `StylizeActor(**fn_constructor_kwargs)` once per actor, then the instance
    on each batch. `threads`: torch's intra-op threads on a CPU actor (its `num_cpus`)."""

    def __init__(self, options: StylizeOptions, output: str | None = None, *,
                 filesystem=None, output_filesystem=None, root: str | None = None,
                 keep_names: bool = False, workers: int = 2, threads: int | None = None):
        import torch

        from styleforge.api import get_stylizer
        from styleforge.jobs import output_label
        if threads:
            torch.set_num_threads(threads)
        self.options = options
        self.stylizer = get_stylizer(options)
        self.engine = EngineStage(self.stylizer)
        self.label = output_label(options)
        self.filesystem = filesystem
        self.output = Location.of(output, output_filesystem) if output is not None else None
        self.output_filesystem = output_filesystem
        self.root = root
        self.keep_names = keep_names
        self.workers = workers

    def _task(self, path: str, data, target) -> _Task:
        source = Location.of(path, self.filesystem)
        if target is not None:
            return _Task(source, data, Location.of(target, self.output_filesystem))
        if self.output is None:
            return _Task(source, data, None, f"{path}: no output folder and no target column")
        try:
            return _Task(source, data, self.output.join(target_name(path, self.label, self.root, self.keep_names)))
        except ValueError as exc:      # a path outside `root`: this row fails, not the batch
            return _Task(source, data, None, str(exc))

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        paths = [str(p) for p in batch["path"]]
        datas = batch.get("bytes", [None] * len(paths))
        targets = batch.get("target", [None] * len(paths))
        tasks = [self._task(p, d if d is None else bytes(d), t) for p, d, t in zip(paths, datas, targets)]
        items = stream(tasks, self._guarded(self._decode), self.engine, self._guarded(self._encode),
                       decode_workers=self.workers, encode_workers=self.workers,
                       depth=max(2, self.options.batch_size), max_batch=self.options.batch_size)
        rows = [self._result(item) for item in items]
        return {name: np.array([row[i] for row in rows]) for i, name in enumerate(RESULT_COLUMNS)}

    @staticmethod
    def _guarded(stage):
        def run(item: Item) -> None:
            try:
                stage(item)
            except OutputExists as exc:      # kept: the error only routes the item past the engine
                item.meta, item.out, item.pixels, item.error = SKIPPED, None, None, str(exc)
        return run

    def _decode(self, item: Item) -> None:
        task: _Task = item.task
        if task.name_error:
            raise ValueError(task.name_error)
        if not self.options.overwrite and task.target.exists():
            raise OutputExists(f"{task.target}: exists (kept; --overwrite to replace it)")
        data = task.data if task.data is not None or task.source.local else task.source.read_bytes()
        check = getattr(self.stylizer, "check_size", None)   # the memory budget refuses from the header
        loaded = load_image(task.source.path, self.options.max_pixels, self.options.max_side, check=check,
                            data=data, warn_frames=False).resized(self.options.max_side)
        pixels = np.asarray(loaded.rgb)
        item.meta = dataclasses.replace(loaded, rgb=None)   # the array is the image now
        item.pixels = self.engine.stage(pixels)

    def _encode(self, item: Item) -> None:
        task: _Task = item.task
        loaded = item.meta
        image = loaded.merged(Image.fromarray(np.ascontiguousarray(host_pixels(item.out))))
        buffer = io.BytesIO()
        encode_into(buffer, image, format_for(task.target.path), self.options.quality, self.options.chroma,
                    loaded.icc_profile)
        item.out = None
        write_once(task.target, buffer.getvalue(), replace=self.options.overwrite)

    @staticmethod
    def _result(item: Item) -> tuple:
        task: _Task = item.task
        output = str(task.target) if task.target is not None else ""
        height, width = (item.shape or (0, 0))[:2]
        if item.meta == SKIPPED:
            return str(task.source), output, SKIPPED, item.error, 0, 0, item.seconds
        if item.error is not None:
            return str(task.source), output, FAILED, item.error, width, height, item.seconds
        return str(task.source), output, WRITTEN, "", width, height, item.seconds
