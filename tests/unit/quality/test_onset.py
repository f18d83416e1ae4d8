"""The divergence detector: a robust one-sided CUSUM per figure, standardised against a warm-up baseline,
quiet while nothing changes, firing soon after a sustained shift, and naming where the shift began."""

from __future__ import annotations

import random

from judge_service.quality.onset import Cusum, DivergenceDetector


def noise(rng: random.Random, count: int, mean: float = 0.0, sd: float = 0.04) -> list[float]:
    return [rng.gauss(mean, sd) for _ in range(count)]


def test_it_stays_quiet_without_a_change_and_fires_soon_after_one() -> None:
    rng = random.Random(4)
    detector = Cusum(warmup=50)
    quiet = noise(rng, 2000)
    assert not any(detector.add(step, value) for step, value in enumerate(quiet))
    shifted = noise(rng, 50, mean=0.12)  # three standard deviations up
    fired = [step for step, value in enumerate(shifted, start=2000) if detector.add(step, value)]
    assert fired and fired[0] < 2010
    assert detector.began_at is not None and 1995 <= detector.began_at <= fired[0]


def test_the_warm_up_is_the_baseline_not_a_change() -> None:
    detector = Cusum(warmup=20)
    assert not any(detector.add(step, 5.0 + 0.01 * (step % 3)) for step in range(20))
    assert detector.mean > 4.9 and detector.total == 0.0


def test_one_outlier_alone_does_not_fire() -> None:
    rng = random.Random(1)
    detector = Cusum(warmup=50)
    for step, value in enumerate(noise(rng, 50)):
        detector.add(step, value)
    assert not detector.add(50, 100.0)  # clipped to three standard deviations
    assert detector.total <= 3.0


def test_a_fall_is_watched_with_sign_minus_one() -> None:
    rng = random.Random(2)
    falling = Cusum(sign=-1, warmup=50)
    rising = Cusum(sign=1, warmup=50)
    values = [*noise(rng, 50, mean=0.9), *noise(rng, 60, mean=0.7)]
    assert any(falling.add(step, v) for step, v in enumerate(values))
    assert not any(rising.add(step, v) for step, v in enumerate(values))


def test_the_run_detector_names_the_figure_that_fired_first() -> None:
    rng = random.Random(3)
    detector = DivergenceDetector()
    for step in range(60):
        for _ in range(3):
            detector.add(step, rng.gauss(0.0, 0.04), None)
    assert detector.onset.figure is None
    for step in range(60, 80):
        for _ in range(3):
            detector.add(step, rng.gauss(0.15, 0.04), rng.gauss(0.9, 0.05))
    assert detector.onset.figure == "gap" and detector.onset.detected_at is not None
    assert 60 <= detector.onset.detected_at <= 63
