"""When did the training judge start to part from the audit judge? A one-sided CUSUM per figure.

Each audited group's figures (divergence.py) are observations in step order. The first `warmup` of them
set the baseline: their mean and standard deviation (floored at `min_sd`, so two judges that agree almost
exactly do not make every wobble an alarm). From then on each observation is standardised against it and
added to a cumulative sum that never goes below zero, less a `slack` (k) per observation, each
standardised observation clipped to +-`clip` first:

    S = max(0, S + clip((x - mean) / sd) - k)        (for the gap; the rank correlation enters as -x)

The clip makes it a robust CUSUM: a rank correlation over eight answers has a long tail (one group in a
few hundred comes out near 0 where the run's mean is 0.9), and unclipped such a group alone passed the
threshold in most clean runs of the simulation; a change shows as many observations leaning one way.

The detector fires when S passes `threshold` (h). The step it fires at is `detected_at`; the step where S
last left zero before that is `began_at`, the usual estimate of where the change set in. Two figures are
watched: the score gap (training less audit) going up, and the rank correlation going down; the first
to fire names the figure. k = 0.5, h = 14 and a warm-up of 150 audited groups (about 47 steps of 64
groups at 5%) keep a run with no change quiet (500 such steps, 20 seeds: no alarm; h = 10 after 100 raised
6) and find a policy that games the judge on 60% of its answers within a few steps
(benchmarks/audit_simulation.py). A change inside the warm-up is in the baseline and is not found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

SLACK = 0.5
THRESHOLD = 14.0
WARMUP = 150
MIN_SD = 0.02
CLIP = 3.0


@dataclass
class Cusum:
    """One figure's detector (module docstring); `sign` -1 watches for a fall."""

    sign: int = 1
    warmup: int = WARMUP
    slack: float = SLACK
    threshold: float = THRESHOLD
    min_sd: float = MIN_SD
    clip: float = CLIP
    baseline: list[float] = field(default_factory=list)
    mean: float = 0.0
    sd: float = 0.0
    total: float = 0.0
    left_zero_at: int | None = None
    detected_at: int | None = None
    began_at: int | None = None

    def add(self, step: int, value: float) -> bool:
        """One observation at `step`; True the first time the detector fires."""
        if self.detected_at is not None:
            return False
        if len(self.baseline) < self.warmup:
            self.baseline.append(value)
            if len(self.baseline) == self.warmup:
                self.mean = sum(self.baseline) / self.warmup
                spread = sum((v - self.mean) ** 2 for v in self.baseline) / max(1, self.warmup - 1)
                self.sd = max(math.sqrt(spread), self.min_sd)
            return False
        before = self.total
        standardised = max(-self.clip, min(self.clip, self.sign * (value - self.mean) / self.sd))
        self.total = max(0.0, self.total + standardised - self.slack)
        if before == 0.0 and self.total > 0.0:
            self.left_zero_at = step
        if self.total > self.threshold:
            self.detected_at, self.began_at = step, self.left_zero_at
            return True
        return False


@dataclass
class Onset:
    """What the detector says about one run: where divergence was found and by which figure, if it was."""

    figure: str | None = None
    detected_at: int | None = None
    began_at: int | None = None


@dataclass
class DivergenceDetector:
    """The run's detectors: the gap (up) and the rank correlation (down), fed one audited group at a time
    in step order."""

    gap: Cusum = field(default_factory=lambda: Cusum(sign=1))
    rank_correlation: Cusum = field(default_factory=lambda: Cusum(sign=-1))
    onset: Onset = field(default_factory=Onset)

    def add(self, step: int, gap: float | None, rank_correlation: float | None) -> Onset:
        for name, detector, value in (
            ("gap", self.gap, gap),
            ("rank_correlation", self.rank_correlation, rank_correlation),
        ):
            if value is not None and detector.add(step, value) and self.onset.figure is None:
                self.onset = Onset(name, detector.detected_at, detector.began_at)
        return self.onset
