"""`python -m benchmarks NAME [options]` runs one benchmark (`NAME --help`: what it measures, its options);
`python -m benchmarks --list` names every benchmark with a line on what it answers, and with
`--write-readme` also writes that table into benchmarks/README.md."""

from __future__ import annotations

import re
import sys

from benchmarks import BENCH_DIR
from benchmarks.experiment import Experiment, experiments, find

README = BENCH_DIR / "README.md"
TABLE = re.compile(r"(<!-- benchmarks: .*? -->\n).*?(<!-- end of the benchmarks -->)", re.S)


def readme_table(found: dict[str, Experiment]) -> str:
    rows = ["| benchmark | what it answers | results |", "|---|---|---|"]
    for name, experiment in sorted(found.items()):
        results = BENCH_DIR / "results" / f"{name}.md"
        link = f"[results/{name}.md](results/{name}.md)" if results.exists() else "-"
        rows.append(f"| `{name}` | {experiment.summary()} | {link} |")
    return "\n".join(rows) + "\n"


def listing(write_readme: bool) -> int:
    found = experiments()
    width = max(len(name) for name in found)
    for name, experiment in sorted(found.items()):
        sys.stdout.write(f"{name:<{width}}  {experiment.summary()}\n")
    if write_readme:
        text = README.read_text()
        if not TABLE.search(text):
            sys.stderr.write(f"{README} has no table markers\n")
            return 1
        README.write_text(TABLE.sub(lambda m: m.group(1) + readme_table(found) + m.group(2), text))
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(f"{__doc__}\n")
        return 0 if argv else 2
    if argv[0] == "--list":
        return listing(write_readme="--write-readme" in argv[1:])
    experiment = find(argv[0])
    if experiment is None:
        sys.stderr.write(f"no benchmark {argv[0]!r}; `python -m benchmarks --list` names them\n")
        return 2
    return experiment.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
