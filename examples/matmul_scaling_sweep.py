"""The matmul-scaling experiment: for products of growing size, the speedup that intra-op
threads 1..CPUs give, each measured by a sweep (fresh processes, interleaved repeats, steady
state). Prints a Markdown table.

    python examples/matmul_scaling_sweep.py [--sizes 128,512,1000,2000,3000] [--repeat 5]
"""

import argparse
import os
import sys
from pathlib import Path

import tftrace

HERE = Path(__file__).resolve().parent


def sweep(size: int, intra: list[int], repeat: int, out: Path) -> tftrace.SweepResult:
    try:
        return tftrace.sweep(
            HERE / "matmul_scaling.py",
            ["--size", str(size)],
            intra=intra,
            inter=[1],
            repeat=repeat,
            explain=False,
            output=out / f"size{size}",
        )
    except tftrace.TftraceError as e:
        sys.exit(f"sweep of size {size} failed: {e}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="128,512,1000,2000,3000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("-o", "--output", type=Path, default=Path("tftrace-sweeps/matmul-scaling"))
    args = parser.parse_args()
    intra = list(range(1, len(os.sched_getaffinity(0)) + 1))
    print(f"| size | {' | '.join(f'intra {n}' for n in intra)} | verdict |")
    print(f"|---:|{'---:|' * len(intra)}---|")
    for size in map(int, args.sizes.split(",")):
        result = sweep(size, intra, args.repeat, args.output)
        cells = [
            f"{s['median_s'] * 1e3:.3g} ms ({s['speedup']:.2f}x ±{s['spread'] / 2:.0%})"
            for _, s in result.table.iterrows()
        ]
        print(f"| {size} | {' | '.join(cells)} | {short_verdict(result)} |", flush=True)


def short_verdict(result: tftrace.SweepResult) -> str:
    kind = result.verdict.kind
    if kind == "faster":
        return f"use intra {result.recommended.intra}"
    return {"no-difference": "no significant difference"}.get(kind, "too few runs")


if __name__ == "__main__":
    main()
