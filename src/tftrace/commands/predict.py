"""``tftrace predict RUN``: each thread setting's step time (a server's requests/s and latency),
predicted from one recorded run (its steps, or a server's requests, replayed on a model of
both pools and the cores), without running it."""

from __future__ import annotations

import argparse
import json

from tftrace.commands import add_analysis_arguments, analysis_options, load_run, path_kind

NAME = "predict"
HELP = (
    "predict each thread setting's step time (a server's requests/s and latency) from one "
    "recorded run, without running it"
)


def configure(parser: argparse.ArgumentParser) -> None:
    add_analysis_arguments(parser, "whose steps (or requests) are replayed")
    for what, pool in (("intra", "intra-op (Eigen)"), ("inter", "inter-op")):
        parser.add_argument(
            f"--{what}",
            metavar="N,N,...",
            help=f"{pool} pool sizes to predict, e.g. 1,2,4 (default: those a sweep tries: "
            "1, 2, 4, ... up to the CPUs and one beyond)",
        )
    parser.add_argument("--json", action="store_true", help="print the prediction as JSON")


def sizes(text: str | None, flag: str) -> tuple[int, ...] | None:
    """``"1,2,4"`` -> (1, 2, 4); None when not given; a bad value is one line."""
    from tftrace.errors import CliError

    if text is None:
        return None
    values = []
    for part in text.split(","):
        try:
            values.append(int(part))
        except ValueError:
            raise CliError(
                f"--{flag}: {part.strip()!r} is not a whole number (e.g. 1,2,4)"
            ) from None
    return tuple(values)


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.predict import predict

    path_kind(NAME, ns.run)  # one run: a sweep or a directory of hosts is refused in one line
    options = analysis_options(ns)
    intra, inter = sizes(ns.intra, "intra"), sizes(ns.inter, "inter")
    result = predict(load_run(ns), intra=intra, inter=inter, **options)
    if ns.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result, end="")  # its text ends its last line
    return 0
