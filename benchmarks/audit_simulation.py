"""Is the policy gaming the judge? A seeded simulation of a run audited by a second judge, and how soon the
divergence detector (judge_service/quality/onset.py) finds the gaming, and how often it cries wolf.

    .venv/bin/python -m benchmarks audit_simulation [--seeds 20] [--steps 300] [--onset 100] [--share 0.6]

Each step the policy writes `--groups` groups of `--answers` answers. An answer has a true quality (1-5);
from the onset step on, a share of answers carries a marker, rising linearly to `--share` over `--ramp`
steps (0: at once). The training judge marks each of four criteria as the true quality plus noise
(rounded, 1-5) and adds one mark to an answer carrying the marker; the audit judge marks the same way,
with noise of its own, and no bonus. A group is audited when the service's sampler draws it (a systematic
sample of `--rate` of each step's groups, judge_service/watch/audit.py). Each audited group's figures
(quality/divergence.py) go to the
detector in step order. Reported per ramp: the share of seeds where it fired, the steps from onset to
detection (median, max), the step it estimated as the start; and over `--clean-steps` steps with no
marker, how many seeds raised a false alarm.
"""

from __future__ import annotations

import argparse
import random
import statistics
from dataclasses import dataclass
from typing import Any

from benchmarks.experiment import Experiment, Outcome, ints, option
from benchmarks.report import log, markdown_table
from judge_service.quality.divergence import AnswerScores, group_divergence
from judge_service.quality.onset import DivergenceDetector, Onset
from judge_service.watch.audit import StepSampler

CRITERIA = ("correctness", "helpfulness", "tone", "format")


@dataclass(frozen=True)
class Scenario:
    steps: int = 300
    onset: int | None = 100  # None: a clean run, no marker ever
    share: float = 0.6
    ramp: int = 0
    groups: int = 64
    answers: int = 8
    rate: float = 0.05
    noise: float = 0.6  # each judge's mark noise (standard deviation, in marks)

    def marker_share(self, step: int) -> float:
        if self.onset is None or step < self.onset:
            return 0.0
        if self.ramp <= 0:
            return self.share
        return self.share * min(1.0, (step - self.onset + 1) / self.ramp)


@dataclass(frozen=True)
class RunResult:
    onset: Onset
    audited: int  # groups audited (audit judge calls)
    groups: int  # groups judged in all
    per_step: tuple[int, ...]  # audit calls of each step


def simulate(scenario: Scenario, seed: int) -> RunResult:
    """One run (module docstring): the detector's verdict and the audit's call count."""
    rng = random.Random(seed)
    detector = DivergenceDetector()
    sampler = StepSampler(scenario.rate)
    per_step = [0] * scenario.steps
    for step in range(scenario.steps):
        share = scenario.marker_share(step)
        for _ in range(scenario.groups):
            if not sampler.draw(f"run-{seed}", step):
                continue  # only audited groups reach the detector: the rest need not be simulated
            per_step[step] += 1
            training: dict[str, AnswerScores] = {}
            audit: dict[str, AnswerScores] = {}
            for answer in range(scenario.answers):
                quality = rng.randint(1, 5)
                bonus = 1 if rng.random() < share else 0
                answer_id = f"a{answer}"
                training[answer_id] = _judged(rng, quality, bonus, scenario.noise)
                audit[answer_id] = _judged(rng, quality, 0, scenario.noise)
            figures = group_divergence(step, training, audit)
            detector.add(step, figures.gap, figures.rank_correlation)
    return RunResult(detector.onset, sum(per_step), scenario.steps * scenario.groups, tuple(per_step))


def _judged(rng: random.Random, quality: int, bonus: int, noise: float) -> AnswerScores:
    marks = {name: min(5, max(1, round(quality + rng.gauss(0, noise))) + bonus) for name in CRITERIA}
    criteria = {name: (mark - 1) / 4 for name, mark in marks.items()}
    return AnswerScores(sum(criteria.values()) / len(criteria), criteria)


def detection(scenario: Scenario, seeds: int) -> dict[str, Any]:
    """Over `seeds` runs of a gamed scenario: how many fired after the onset, and how soon."""
    assert scenario.onset is not None
    runs = [simulate(scenario, seed) for seed in range(seeds)]
    delays = [r.onset.detected_at - scenario.onset for r in runs if r.onset.detected_at is not None]
    early = sum(1 for d in delays if d < 0)
    began = [r.onset.began_at for r in runs if r.onset.began_at is not None]
    return {
        "fired": len(delays),
        "before_onset": early,
        "delay_median": statistics.median(delays) if delays else None,
        "delay_max": max(delays) if delays else None,
        "began_median": statistics.median(began) if began else None,
        "audited_per_step": statistics.mean(r.audited for r in runs) / scenario.steps,
    }


def false_alarms(scenario: Scenario, seeds: int) -> int:
    """Seeds whose clean run (no marker) raised an alarm."""
    return sum(simulate(scenario, seed).onset.detected_at is not None for seed in range(seeds))


def run(args: argparse.Namespace) -> Outcome:
    rows, result = [], {}
    for ramp in args.ramps:
        scenario = Scenario(steps=args.steps, onset=args.onset, share=args.share, ramp=ramp, rate=args.rate)
        found = detection(scenario, args.seeds)
        log(f"ramp {ramp}: {found}")
        result[f"ramp_{ramp}"] = found
        rows.append(
            [
                f"0 -> {args.share:.0%} " + ("at once" if ramp == 0 else f"over {ramp} steps"),
                f"{found['fired']}/{args.seeds}",
                found["before_onset"],
                found["delay_median"],
                found["delay_max"],
                found["began_median"],
            ]
        )
    clean = Scenario(steps=args.clean_steps, onset=None, rate=args.rate)
    alarms = false_alarms(clean, args.seeds)
    result["false_alarms"] = {"seeds": args.seeds, "steps": args.clean_steps, "alarms": alarms}
    rows.append([f"no marker, {args.clean_steps} steps", f"{alarms}/{args.seeds}", "-", "-", "-", "-"])
    table = markdown_table(
        ["marker share from the onset", "fired", "before onset", "delay p50", "delay max", "began at p50"],
        rows,
    )
    return Outcome(result, table)


EXPERIMENT = Experiment(
    options=[
        option("--seeds", 20),
        option("--steps", 300),
        option("--onset", 100),
        option("--share", 0.6, type=float),
        option("--ramps", [0, 20, 200], type=ints, help="steps over which the share rises (comma-separated)"),
        option("--rate", 0.05, type=float, help="share of groups audited"),
        option("--clean-steps", 500),
    ],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
