"""The experiment harness: a benchmark is declared once, as an `Experiment` record, and run from here.

An experiment names its arms (the things compared side by side), its levels (groups in flight, stores,
...) and its rounds; its module gives the measurement, `measure(run, arm, level) -> entry`, and, where
needed, `setup(run)` (what every measurement shares: an engine, a server) and `report(run)` (figures over
the whole run). The harness owns the rest:
- the command line: `python -m benchmarks NAME [options]`, the options declared as a list of `option(...)`;
- the order of the arms in each round: rotated per level, alternating (A B, B A, ...), a palindrome
  (A B B A) or fixed. The machines are shared and noisy, so only ratios measured side by side mean
  anything, and drift must fall on every arm alike;
- the table: one row per arm and level (its rounds combined), from declared columns, with ratios to a
  base arm at the same level;
- the result file benchmarks/out/<name>.json: the options, the machine facts, every entry, the ratios.

Parts that run after the main sweep in the same set-up (a second table) are `Sweep`s in `parts`. A
benchmark that does not fit arms x levels (a profile, a soak, a shell script) declares
`run(args) -> Outcome` instead and still gets its command line, machine facts and result file here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import inspect
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from benchmarks import BENCH_DIR, OUT_DIR
from benchmarks.report import latency_summary, log, markdown_table, ratio, write_result

Entry = dict[str, Any]
Order = (
    Literal["rotate", "alternate", "palindrome", "fixed"] | Callable[[list[str], Any, int, int], list[str]]
)


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class Option:
    """One command-line option: argparse's add_argument(*flags, **settings)."""

    flags: tuple[str, ...]
    settings: dict[str, Any]


def option(flag: str, default: Any = None, help: str | None = None, **settings: Any) -> Option:
    """An option with its default and help; a number's type is its default's."""
    if isinstance(default, int | float) and not isinstance(default, bool):
        settings.setdefault("type", type(default))
    if default is not None:
        settings["default"] = default
    return Option((flag,), settings | ({"help": help} if help else {}))


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def words(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


SHARED_OPTIONS = {
    "levels": "groups in flight, comma-separated",
    "answers": "N, answers per group",
    "criteria": "first n default criteria (4 = all)",
    "reason_chars": "reason_max_chars",
    "seed": "seed of the groups",
    "groups": "groups per round",
    "min_groups": "groups per level at least (p99 needs some)",
    "rounds": "rounds, each measuring every arm",
    "pairs": "pairs of rounds, the order alternating",
    "seconds": "measured seconds per phase",
    "concurrency": "requests in flight",
    "connections": "keep-alive connections of the load",
    "workers": "code grader workers (JUDGE_CODE_WORKERS)",
}


def shared(**defaults: Any) -> list[Option]:
    """Options many benchmarks have, each with its default here (`answers=8`) and its help from
    SHARED_OPTIONS, or its own (`groups=(8, "groups per round, all at once")`); --levels is a list."""
    found = []
    for name, value in defaults.items():
        default, help = value if isinstance(value, tuple) else (value, SHARED_OPTIONS[name])
        extra = {"type": ints} if name == "levels" else {}
        found.append(option("--" + name.replace("_", "-"), default, help, **extra))
    return found


# --------------------------------------------------------------------------- columns and cells


def lookup(entry: Entry, key: str) -> Any:
    """entry["a"]["b"] for key "a.b"; None where a part is missing."""
    value: Any = entry
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


@dataclass
class Cell:
    """One arm at one level: its entries (one per measurement) and the entry they combine into."""

    arm: str
    level: Any
    entries: list[Entry]
    entry: Entry
    table: dict[tuple[str, Any], Cell]

    def __getitem__(self, key: str) -> Any:
        return lookup(self.entry, key)

    def at(self, arm: str, level: Any = ...) -> Cell:
        """Another arm's cell at this level (or at `level`)."""
        return self.table[(arm, self.level if level is ... else level)]


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[Cell], Any]


def col(header: str, key: str, scale: float = 1.0, digits: int | None = None) -> Column:
    """A column of one value of the combined entry (dotted key), scaled and rounded if asked."""

    def value(cell: Cell) -> Any:
        found = cell[key]
        if found is None or (scale == 1.0 and digits is None):
            return found
        return round(found * scale, digits) if digits is not None else found * scale

    return Column(header, value)


@dataclass(frozen=True)
class Ratio(Column):
    """A column that divides a value by the same value of a base arm at the same level; also written to
    the result file's `ratios`."""

    key: str = ""
    over: str | Callable[[str], str] = ""

    def base(self, arm: str) -> str:
        return self.over(arm) if callable(self.over) else self.over


def ratio_col(header: str, key: str, over: str | Callable[[str], str]) -> Ratio:
    def value(cell: Cell) -> Any:
        base = cell.table.get((column.base(cell.arm), cell.level))
        return None if base is None else ratio(cell[key], base[key])

    column = Ratio(header, value, key=key, over=over)
    return column


def arm_col(header: str) -> Column:
    return Column(header, lambda cell: cell.arm)


def level_col(header: str) -> Column:
    return Column(header, lambda cell: cell.level)


def seconds_col(header: str, key: str) -> Column:
    """Milliseconds shown as seconds, two decimals."""
    return col(header, key, scale=0.001, digits=2)


# --------------------------------------------------------------------------- sweeps and experiments


def arm_order(arms: list[str], order: Order, level: Any, level_index: int, round_index: int) -> list[str]:
    """The arms in the order one round measures them at one level: rotated by one more place at each
    level and round, alternating (reversed at every other level and round), a palindrome (every arm
    twice: A B B A), fixed, or as a callable (arms, level, level index, round index) orders them."""
    if callable(order):
        return list(order(arms, level, level_index, round_index))
    turn = level_index + round_index
    if order == "rotate":
        shift = turn % len(arms) if arms else 0
        return arms[shift:] + arms[:shift]
    if order == "alternate":
        return list(arms) if turn % 2 == 0 else arms[::-1]
    if order == "palindrome":
        return [*arms, *reversed(arms)]
    return list(arms)


Measure = Callable[["Run", str, Any], "Awaitable[Entry | None] | Entry | None"]


@dataclass(frozen=True, kw_only=True)
class Sweep:
    """Arms x levels x rounds of one measurement, and the table of its cells.

    `arms`, `levels` and `rounds` may be callables of the run (read after the set-up: a benchmark may
    compare only what the service offers), or name the option that gives them ("levels"). `measure`
    may return None where an arm has nothing to measure at a level. `combine` turns a cell's entries
    (its rounds) into one; the default keeps a single entry as it is and pools several (`pool`, which
    entries holding raw latencies want either way). `level_setup(run, level)` is an async context
    manager around one level's measurements (a server per store); what it yields is `run.level_state`.
    The table has a row per cell, or only the cells of `row_arms` (their columns reaching the other arms
    through `cell.at`)."""

    measure: Measure | None = None
    arms: Sequence[str] | str | Callable[[Run], Sequence[str]] = ()
    levels: Sequence[Any] | str | Callable[[Run], Sequence[Any]] = (None,)
    rounds: int | str | Callable[[Run], int] = 1
    order: Order = "rotate"
    combine: Callable[[list[Entry]], Entry] | None = None
    columns: Sequence[Column] | Callable[[Run], Sequence[Column]] = ()
    level_label: str = "c"
    key: str = "entries"
    title: str | Callable[[Run], str] = ""
    row_arms: Sequence[str] | None = None
    level_setup: Callable[[Run, Any], AbstractAsyncContextManager[Any]] | None = None
    progress: Callable[[Entry], str] | None = None


@dataclass(frozen=True)
class Outcome:
    """What a benchmark hands the harness to write: the result file's keys and the table."""

    result: dict[str, Any]
    table: str
    exit_code: int = 0
    name: str | None = None  # the result file's name where it is not the benchmark's


Setup = Callable[["Run"], AbstractAsyncContextManager[Any]]


@dataclass(frozen=True, kw_only=True)
class Experiment(Sweep):
    """A benchmark: its options, and either the main sweep (the fields of `Sweep`) with optional `parts`,
    or `run`. Its name is `name`, by default that of the module declaring it (benchmarks/NAME.py); its
    --help is `doc`, by default that module's docstring; its line in --list is `description`, by default
    the docstring's first paragraph.

    `setup(run)` is an async context manager around every sweep (an engine, a server); what it yields is
    `run.state`. `report(run)` runs after the sweeps: it may add notes under the tables and keys to the
    result file. `setup`, `measure` and `report` not given are the declaring module's functions of those
    names, where it has them."""

    name: str = ""
    description: str = ""
    doc: str = ""
    options: Sequence[Option] = ()
    parts: Sequence[Sweep] = ()
    setup: Setup | None = None
    report: Callable[[Run], None] | None = None
    run: Callable[[argparse.Namespace], Outcome | int | Awaitable[Outcome | int]] | None = None
    uvloop: bool = False

    def module(self) -> ModuleType | None:
        """The module that declares the experiment."""
        # Only the benchmark modules: some installed packages answer every attribute (lazy namespaces),
        # so asking all of sys.modules for EXPERIMENTS finds objects that are not experiments at all.
        for name, module in list(sys.modules.items()):
            if name != "__main__" and name.split(".", 1)[0] != __name__.split(".", 1)[0]:
                continue
            many = getattr(module, "EXPERIMENTS", ())
            found = [getattr(module, "EXPERIMENT", None), *(many if isinstance(many, list | tuple) else ())]
            if any(e is self for e in found):
                return module
        return None

    def called(self) -> str:
        """`name`, or the name of the module that declares the experiment."""
        module = self.module()
        spec = getattr(module, "__spec__", None)
        return self.name or (spec.name if spec else "").rsplit(".", 1)[-1]

    def help_text(self) -> str:
        """`doc`, or the docstring of the module that declares the experiment."""
        module = self.module()
        return self.doc or (module.__doc__ if module is not None else None) or ""

    def summary(self) -> str:
        """The one-line description: `description`, or the first paragraph of the help text."""
        return self.description or " ".join(self.help_text().strip().split("\n\n")[0].split())

    def hook(self, name: str) -> Any:
        """setup, measure or report: as declared, or the declaring module's function of that name."""
        return getattr(self, name) or getattr(self.module(), name, None)

    def sweeps(self) -> list[Sweep]:
        return ([self] if self.hook("measure") is not None else []) + list(self.parts)

    def parser(self) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(
            prog=f"python -m benchmarks {self.called()}",
            description=self.help_text(),
            formatter_class=_HelpFormatter,
        )
        for declared in self.options:
            parser.add_argument(*declared.flags, **declared.settings)
        parser.add_argument(
            "--out-dir",
            type=Path,
            default=OUT_DIR,
            help="where the result file goes",
        )
        return parser

    def run_if_main(self, module_name: str) -> None:
        """`python -m benchmarks.NAME`: where the declaring module runs as __main__, run the benchmark and
        exit with its code (a module imported, or re-imported by a spawned process, runs nothing)."""
        if module_name == "__main__":
            sys.exit(self.main())

    def main(self, argv: list[str] | None = None) -> int:
        args = self.parser().parse_args(argv)
        if self.uvloop:
            with contextlib.suppress(ImportError):
                import uvloop

                asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        if self.run is not None:
            outcome = self.run(args)
            if inspect.isawaitable(outcome):
                outcome = asyncio.run(_awaited(outcome))
        else:
            outcome = asyncio.run(Run(self, args).measure_all())
        if isinstance(outcome, int):
            return outcome
        write_result(
            outcome.name or self.called(),
            {"config": _config(args), **outcome.result},
            outcome.table,
            args.out_dir,
        )
        return outcome.exit_code


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module docstring as written, and every option's default."""


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _config(args: argparse.Namespace) -> dict[str, Any]:
    return {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}


@dataclass
class Run:
    """One run of an experiment: its options, what its set-up yielded, and what was measured."""

    experiment: Experiment
    args: argparse.Namespace
    state: Any = None
    level_state: Any = None
    entries: dict[str, list[Entry]] = field(default_factory=dict)
    cells: dict[str, dict[tuple[str, Any], Cell]] = field(default_factory=dict)
    levels: dict[str, list[Any]] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def resolve(self, value: Any) -> Any:
        return value(self) if callable(value) else value

    def dimension(self, value: Any) -> Any:
        """Arms, levels or rounds: as declared, read from the run (a callable), or the value of the option
        a string names ("levels": --levels)."""
        return getattr(self.args, value) if isinstance(value, str) else self.resolve(value)

    async def measure_all(self) -> Outcome:
        finished = False
        try:
            async with self._setup() as state:
                self.state = state
                for sweep in self.experiment.sweeps():
                    await self.sweep(sweep)
                finished = True
        except Exception as exc:
            if not finished:
                raise
            log(f"teardown failed after the measurement (results kept): {type(exc).__name__}: {exc}")
        if (report := self.experiment.hook("report")) is not None:
            report(self)
        return self.outcome()

    def _setup(self) -> AbstractAsyncContextManager[Any]:
        setup = self.experiment.hook("setup")
        return setup(self) if setup is not None else _nothing()

    async def sweep(self, sweep: Sweep) -> None:
        measure = sweep.measure or self.experiment.hook("measure")
        arms = list(self.dimension(sweep.arms))
        levels = list(self.dimension(sweep.levels))
        rounds = int(self.dimension(sweep.rounds))
        entries = self.entries.setdefault(sweep.key, [])
        self.levels[sweep.key] = levels
        for level_index, level in enumerate(levels):
            around = sweep.level_setup(self, level) if sweep.level_setup else _nothing()
            async with around as self.level_state:
                for round_index in range(rounds):
                    for arm in arm_order(arms, sweep.order, level, level_index, round_index):
                        measured = measure(self, arm, level)
                        if inspect.isawaitable(measured):
                            measured = await measured
                        if measured is None:
                            continue
                        entry = {"arm": arm, "level": level, "round": round_index, **measured}
                        entries.append(entry)
                        where = "" if level is None else f"{_level_name(sweep, level)} "
                        line = sweep.progress(entry) if sweep.progress else _progress(entry)
                        log(f"{where}{arm}: {line}")
        table: dict[tuple[str, Any], Cell] = {}
        for level in levels:
            for arm in arms:
                mine = [e for e in entries if e["arm"] == arm and e["level"] == level]
                if mine:
                    combined = (
                        sweep.combine(mine) if sweep.combine else mine[-1] if len(mine) == 1 else pool(mine)
                    )
                    table[(arm, level)] = Cell(
                        arm, level, mine, {"arm": arm, "level": level, **combined}, table
                    )
        self.cells[sweep.key] = table

    def cell(self, arm: str, level: Any = None, key: str = "entries") -> Cell:
        return self.cells[key][(arm, level)]

    def round_ratios(self, arm: str, over: str, key: str = "groups_per_s", level: Any = None) -> list[float]:
        """`key` of `arm` over that of `over` in each round, at one level."""
        by = {(e["arm"], e["round"]): e for e in self.entries["entries"] if e["level"] == level}
        rounds = sorted({r for _, r in by})
        return [ratio(lookup(by[(arm, r)], key), lookup(by[(over, r)], key)) for r in rounds]

    def ratios(self, sweep: Sweep) -> dict[str, dict[str, Any]]:
        """Every ratio column's value per level: {"c8": {"groups_per_s_none_over_inline": 1.4}}."""
        out: dict[str, dict[str, Any]] = {}
        for cell in self.cells.get(sweep.key, {}).values():
            for column in self.resolve(sweep.columns):
                if isinstance(column, Ratio) and column.base(cell.arm) != cell.arm:
                    name = f"{column.key.replace('.', '_')}_{cell.arm}_over_{column.base(cell.arm)}"
                    where = "all" if cell.level is None else _level_name(sweep, cell.level, "")
                    out.setdefault(where, {})[name] = column.value(cell)
        return out

    def table(self, sweep: Sweep) -> str:
        cells = self.cells.get(sweep.key, {})
        columns = self.resolve(sweep.columns)
        shown = [c for c in cells.values() if sweep.row_arms is None or c.arm in sweep.row_arms]
        rows = [[column.value(cell) for column in columns] for cell in shown]
        title = self.resolve(sweep.title)
        return (f"{title}\n\n" if title else "") + markdown_table([c.header for c in columns], rows)

    def outcome(self) -> Outcome:
        sweeps = self.experiment.sweeps()
        tables = [self.table(s) for s in sweeps if s.columns and self.cells.get(s.key)]
        result: dict[str, Any] = {}
        for sweep in sweeps:
            result[sweep.key] = self.entries.get(sweep.key, [])
            if ratios := self.ratios(sweep):
                result["ratios" if sweep is self.experiment else f"{sweep.key}_ratios"] = ratios
        result |= self.result
        failed = any(e.get("errors") for entries in self.entries.values() for e in entries)
        return Outcome(result, "\n\n".join(tables + self.notes), exit_code=int(failed))


def _level_name(sweep: Sweep, level: Any, equals: str = "=") -> str:
    """ "c=8" in progress lines, "c8" as a key of the ratios; a level's own str() without a label."""
    return f"{sweep.level_label}{equals}{level}" if sweep.level_label else str(level)


@contextlib.asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield None


def _progress(entry: Entry) -> str:
    """A progress line: groups, groups/s, errors and p50 where the entry has them, else its first numbers."""
    shown: dict[str, Any] = {k: entry[k] for k in ("groups", "groups_per_s", "errors") if k in entry}
    if not shown:
        numbers = [(k, v) for k, v in entry.items() if isinstance(v, int | float) and k != "round"]
        shown = dict(numbers[:3])
    p50 = lookup(entry, "latency.p50_ms")
    return ", ".join(f"{k} {v}" for k, v in shown.items()) + (f", p50 {p50} ms" if p50 is not None else "")


def pool(entries: list[Entry]) -> Entry:
    """Combine rounds by pooling them: numbers summed, errors and latencies (`latencies_s`) pooled, groups/s
    over the summed wall time and the latency summary over every latency; the rest as the first round has
    it."""
    pooled: Entry = {k: v for k, v in entries[0].items() if not _number(v)} | {
        "errors": [],
        "latencies_s": [],
    }
    for entry in entries:
        for key, value in entry.items():
            if _number(value) and key not in ("round", "level"):
                pooled[key] = pooled.get(key, 0) + value
            elif key in ("errors", "latencies_s"):
                pooled[key] += value
    if pooled.get("wall_s"):
        pooled["groups_per_s"] = round(pooled.get("groups", 0) / pooled["wall_s"], 4)
    if latencies := pooled.pop("latencies_s"):
        pooled["latency"] = latency_summary(latencies)
    return pooled


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def best_of(key: str) -> Callable[[list[Entry]], Entry]:
    """Combine rounds by keeping the round with the highest `key` (the cost of the work, not of a noisy
    neighbour)."""
    return lambda entries: max(entries, key=lambda e: e[key])


def mean_of(entries: list[Entry]) -> Entry:
    """Combine rounds by the mean of every number."""
    keys = [k for k, v in entries[0].items() if isinstance(v, int | float) and not isinstance(v, bool)]
    return {k: sum(e[k] for e in entries) / len(entries) for k in keys if k not in ("round", "level")}


# --------------------------------------------------------------------------- the registry


HELPERS = {"__init__", "__main__", "experiment", "report", "load", "servers", "engine", "groups", "rawhttp",
           "trees", "code_grader_functions"}  # fmt: skip


def modules() -> list[str]:
    """The modules of benchmarks/ that may declare experiments."""
    return sorted(p.stem for p in BENCH_DIR.glob("*.py") if p.stem not in HELPERS)


def declared(module: str) -> list[Experiment]:
    """The experiments a module declares: EXPERIMENT, or EXPERIMENTS for several."""
    imported = importlib.import_module(f"benchmarks.{module}")
    one = getattr(imported, "EXPERIMENT", None)
    return [one] if one is not None else list(getattr(imported, "EXPERIMENTS", ()))


def experiments() -> dict[str, Experiment]:
    return {e.called(): e for module in modules() for e in declared(module)}


def find(name: str) -> Experiment | None:
    """The experiment NAME: from the module of that name when there is one (importing only it), else
    from every module."""
    if name in modules():
        for experiment in declared(name):
            if experiment.called() == name:
                return experiment
    return experiments().get(name)
