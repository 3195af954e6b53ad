"""StyleForge on a Ray cluster: `stylize_dataset(ds, style=…, output=…)` maps a pool of actors,
one engine each, over a Ray Dataset of images and writes every output exactly once under the
name the CLI would give it (`pip install "styleforge[ray]"`; docs/ray.md).

    import ray, styleforge.ray
    ds = ray.data.read_binary_files("photos/", include_paths=True)
    for row in styleforge.ray.stylize_dataset(ds, style="candy", output="styled/").iter_rows():
        print(row["source"], row["status"])

The names load on first use, so `import styleforge.ray` works without Ray installed and the
first use says which extra to install. Inside this package `ray` is always Ray itself: every
import here is absolute (`styleforge.ray.…`).
"""
__all__ = ["stylize_dataset", "StylizeActor", "require_ray"]
_HOMES = {"stylize_dataset": "dataset", "require_ray": "dataset", "StylizeActor": "actor"}


def __getattr__(name: str):
    import importlib
    if name in _HOMES:
        if name != "require_ray":
            importlib.import_module("styleforge.ray.dataset").require_ray()
        return getattr(importlib.import_module(f"styleforge.ray.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
