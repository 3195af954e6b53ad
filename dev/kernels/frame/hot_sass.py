"""Summarise `ncu --page source --csv --print-source sass`: per kernel, the SASS instructions with
the most warp-stall samples and the samples per opcode. Each kernel opens with a "Kernel Name" row and
a header row; columns are found by name, so other ncu versions' extra columns do not matter.
    python3 dev/kernels/frame/hot_sass.py ncu_source.csv
"""
from __future__ import annotations

import collections
import csv
import sys


def number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def sections(rows):
    """(kernel name, header, rows) per kernel: a "Kernel Name" row, then an "Address" header row.
    (ncu lists each kernel twice; the copies are identical.)"""
    title, header, body = "", None, []
    for row in rows:
        if not row:
            continue
        if row[0] == "Kernel Name":
            if header is not None:
                yield title, header, body
            title, header, body = row[1][:160], None, []
        elif row[0] == "Address":
            header = row
        elif header is not None:
            body.append(row)
    if header is not None:
        yield title, header, body


def main(path: str) -> None:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for title, header, body in sections(rows):
        src = header.index("Source")
        samp = header.index("Warp Stall Sampling (All Samples)")
        execd = next((i for i, c in enumerate(header) if c.startswith("Instructions Executed")), None)
        total = sum(number(r[samp]) for r in body if len(r) > samp) or 1.0
        print(f"== {title}\n   {len(body)} SASS lines, {total:.0f} stall samples; columns: {header[samp]}")
        by_op = collections.Counter()
        inst_op = collections.Counter()
        for r in body:
            if len(r) <= samp:
                continue
            op = r[src].split()[0] if r[src].split() else "?"
            if op.startswith("@"):
                op = r[src].split()[1] if len(r[src].split()) > 1 else op
            by_op[op.split(".")[0]] += number(r[samp])
            if execd is not None:
                inst_op[op.split(".")[0]] += number(r[execd])
        print("   samples by opcode:", ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_op.most_common(14)))
        if inst_op:
            n = sum(inst_op.values()) or 1.0
            print("   executed by opcode:", ", ".join(f"{k} {100 * v / n:.1f}%" for k, v in inst_op.most_common(14)))
        for r in sorted(body, key=lambda r: -number(r[samp]) if len(r) > samp else 0)[:30]:
            print(f"   {number(r[samp]):7.0f}  {r[src][:90]}")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
