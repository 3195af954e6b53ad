"""The job plan: input arguments + output + options → one `Job(source, target)` per image.

Where outputs go (no `-o`): a file `photo.jpg` → `photo_<label>.jpg` beside it; a folder
`trip/` → a sibling folder `trip_<label>/` with the same file names, so a second run never picks
up the first run's outputs. `-o x.jpg` (a name with an image suffix) is a file and needs exactly
one input; `-o out` (no suffix, a trailing `/`, or an existing folder) is a folder, created if
needed, where `photo.jpg` becomes `photo_<label>.jpg`, so a second style into the same folder
does not collide with the first (`keep_names` keeps the input names). Any other `-o out.xyz`
is refused rather than made into a folder. `<label>` and the name rules are `jobs.naming`.

Inputs are files, folders (their images; `recursive` descends) and glob patterns the shell left
alone. Hidden files and folders are not inputs, nor are files inside the output folder or files
that are outputs of this same plan, so `dir -r -o dir/styled` run twice does not stylize its
own outputs; every output folder a run creates gets an OUTPUT_MARK file (`prepare`; a folder
that existed is left alone), and a scan skips marked sub-folders, so a later `dir -r` (another
style, no -o) does not stylize `dir/styled` either. `-` is stdin as the input / stdout as the
output (one image). Outputs that would collide, replace an input or cannot be written (a folder
that is a file, no permission) are errors found here, before any work.

The plan lists every job, done or not; `Plan.pending(overwrite)` is what is left to do. That a
job is done is judged again when it is written (`jobs.write`), as another run may finish it
meanwhile. Not here: running the jobs (`jobs.run`), writing (`jobs.write`).
"""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..engine.options import StylizeOptions
from .naming import output_kind, output_label, styled_name, writable_name
from .write import is_done

OUTPUT_MARK = ".styleforge-output"    # in each output folder; scans skip folders holding one
STDIO = "-"                           # the input from stdin / the output to stdout
_GLOB_MAGIC = re.compile(r"[*?[]")


@dataclass(frozen=True)
class Job:
    source: Path                      # an image file, or Path("-") for stdin
    target: Path                      # the output file, or Path("-") for stdout
    out_root: Path | None = None      # the output folder this plan makes (gets OUTPUT_MARK)

    @property
    def done(self) -> bool:
        """The target exists (whole: outputs appear by rename). Stdout is never done."""
        return str(self.target) != STDIO and is_done(self.target)


@dataclass
class Plan:
    jobs: list[Job] = field(default_factory=list)     # every planned output, done or not
    errors: list[str] = field(default_factory=list)   # "<input>: <why>", one per refused input
    label: str = ""                                   # the `_<label>` of this plan's names

    def pending(self, overwrite: bool = False) -> list[Job]:
        """The jobs to run: all with `overwrite`, else those whose target does not exist yet."""
        return list(self.jobs) if overwrite else [job for job in self.jobs if not job.done]


def plan_jobs(inputs: Iterable[str | os.PathLike], output: str | os.PathLike | None = None,
              options: StylizeOptions | None = None, *, recursive: bool = False,
              keep_names: bool = False) -> Plan:
    """The plan for `styleforge stylize INPUTS [-o OUTPUT]` with these options.

    Raises ValueError for a plan that cannot be made at all (a bad -o, several inputs into one
    file name, stdin/stdout with more than one image); per-input problems go to `Plan.errors`.
    """
    from ..io.suffixes import SCAN_SUFFIXES
    options = options or StylizeOptions()
    label = output_label(options)
    raw = [os.fspath(i) for i in inputs]
    output = os.fspath(output) if output is not None else None
    named = [i for i in raw if i != STDIO]
    reads_stdin = len(named) != len(raw)
    files, input_errors = expand_inputs(named, recursive) if named else ([], [])
    to_stdout = output == STDIO or (reads_stdin and output is None)
    if to_stdout or reads_stdin:
        count = len(files) + reads_stdin
        if count != 1:
            raise ValueError(f"stdin/stdout ('-') takes exactly one image, but there are {count} inputs")
        source = Path(STDIO) if reads_stdin else files[0][0]
        if not to_stdout and Path(output).suffix.lower() not in SCAN_SUFFIXES:
            raise ValueError(f"-o {output}: an image read from stdin needs an output file name "
                             "with an image suffix, or -o - for stdout")
        return Plan([Job(source, Path(STDIO if to_stdout else output))], input_errors, label)
    jobs, plan_errors = plan_outputs(files, output, label, keep_names)
    return Plan(jobs, input_errors + plan_errors, label)


def expand_inputs(inputs: list[str], recursive: bool) -> tuple[list[tuple[Path, Path | None]], list[str]]:
    """INPUT args → ([(file, the folder it was found in or None)], [error lines])."""
    from ..io.suffixes import SCAN_SUFFIXES

    def scan(folder: Path) -> list[Path]:
        found: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(folder):
            # Hidden folders and earlier runs' output folders are not inputs.
            dirnames[:] = [d for d in dirnames if recursive and not d.startswith(".")
                           and not os.path.exists(os.path.join(dirpath, d, OUTPUT_MARK))]
            found += [Path(dirpath, name) for name in filenames if not name.startswith(".")
                      and Path(name).suffix.lower() in SCAN_SUFFIXES and os.path.isfile(os.path.join(dirpath, name))]
        return sorted(found)

    files: list[tuple[Path, Path | None]] = []
    errors: list[str] = []
    for raw in inputs:
        path = Path(raw).expanduser()
        if path.is_dir():
            found = scan(path)
            if not found:
                errors.append(_empty_folder_message(path, recursive))
            files += [(f, path) for f in found]
        elif path.exists():
            files.append((path, None))
        elif _GLOB_MAGIC.search(raw):  # the shell left the pattern alone (quoted, or Windows)
            matches = [Path(m) for m in sorted(glob.glob(os.path.expanduser(raw), recursive=recursive))]
            if not matches:
                errors.append(f"{raw}: no files match this pattern")
            for match in matches:
                files += [(f, match) for f in scan(match)] if match.is_dir() else [(match, None)]
        else:
            errors.append(f"{raw}: no such file or folder")
    seen: set[Path] = set()
    unique = []
    for source, root in files:
        if source.resolve() not in seen:
            seen.add(source.resolve())
            unique.append((source, root))
    return unique, errors


def _empty_folder_message(folder: Path, recursive: bool) -> str:
    from ..io.suffixes import SCAN_SUFFIXES
    has_folders = any(p.is_dir() and not p.name.startswith(".") for p in folder.iterdir())
    hint = "; add -r to look in its sub-folders" if has_folders and not recursive else ""
    kinds = ", ".join(sorted(SCAN_SUFFIXES)[:6])
    return f"{folder}: no images in this folder (looked for {kinds}, …){hint}"


def plan_outputs(files: list[tuple[Path, Path | None]], output: str | None,
                 label: str, keep_names: bool = False) -> tuple[list[Job], list[str]]:
    """Each input's output path; collisions, outputs that would replace an input and unwritable
    outputs are errors. Files found by scanning that are this plan's own outputs (inside the
    output folder, or the styled name of another input) are dropped, not stylized again."""
    from ..io.atomic import unwritable_reason
    kind = output_kind(output)
    if kind == "file" and len(files) != 1:
        raise ValueError(f"-o {output} is a file name but there are {len(files)} inputs; "
                         "give a folder for several inputs")
    out_dir = Path(output).resolve() if kind == "folder" else None

    def target_of(source: Path, root: Path | None) -> tuple[Path, Path | None]:
        """(output path, the output folder this plan owns, if any)."""
        relative = source.relative_to(root) if root is not None else Path(source.name)
        if kind == "file":
            return Path(output), None
        if kind == "folder":
            name = writable_name(str(relative)) if keep_names else styled_name(relative, label)
            return Path(output) / name, Path(output)
        if root is not None:
            base = root.resolve()
            folder = base.parent / f"{base.name}_{label}"
            return folder / writable_name(str(relative)), folder
        return source.parent / styled_name(source.name, label), None

    planned = [(source, root, *target_of(source, root)) for source, root in files]
    own_outputs = {target.resolve() for _, _, target, _ in planned}
    jobs, errors, owner = [], [], {}
    sources = set()
    for source, root, target, _ in planned:
        resolved = source.resolve()
        if root is not None:   # found by scanning, not named by the user
            inside_output = (out_dir is not None and out_dir != root.resolve()
                             and out_dir in resolved.parents)
            if inside_output or resolved in own_outputs:
                continue
        sources.add(resolved)
    for source, root, target, out_root in planned:
        if source.resolve() not in sources:
            continue
        key = target.resolve()
        why = unwritable_reason(target)
        if key in sources:
            errors.append(f"{source}: output {target} would replace an input; choose another -o")
        elif key in owner:
            errors.append(f"{source}: output {target} is also the output of {owner[key]}")
        elif why:
            errors.append(f"{source}: cannot write {target}: {why}; choose another -o")
        else:
            owner[key] = source
            jobs.append(Job(source, target, out_root))
    return jobs, errors


def prepare(jobs: Iterable[Job]) -> None:
    """Create each output folder the plan makes, with OUTPUT_MARK in it, so later scans skip it.
    A folder that exists already is the user's (it may hold the inputs) and is not marked."""
    for folder in {job.out_root for job in jobs if job.out_root is not None}:
        if folder.exists():
            continue
        try:
            folder.mkdir(parents=True)
            (folder / OUTPUT_MARK).touch()
        except OSError:
            pass   # the write itself will say what is wrong with the folder
