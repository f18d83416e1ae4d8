import pytest

from judge_service.graders.numbers import NumbersGrader, extract_figures, match_credit
from judge_service.schemas import RuleOptions

WACC_REFERENCE = "WACC ~ 9.91%; cost of equity 10.34%; after-tax debt 4.15%; EV ~ $1,705M."
OPTIONS = RuleOptions()


def numbers(answer: str, reference: str) -> float | None:
    return NumbersGrader().grade(answer, reference, OPTIONS).score


def test_wacc_example_scores_seven_eighths() -> None:
    answer = "WACC is about 9.95%, cost of equity 10.3%, after-tax cost of debt 4.2%, EV roughly 1,700M."
    grade = NumbersGrader().grade(answer, WACC_REFERENCE, OPTIONS)
    assert grade.score == pytest.approx(0.875)
    assert grade.explanation.startswith("3/4 figures within 1%, 1 within 5%: 9.91%~9.95%")
    assert len(grade.explanation) <= 200


def test_wrong_figures_score_zero() -> None:
    assert numbers("WACC is 1.33%", WACC_REFERENCE) == 0.0


def test_reference_without_figures_does_not_apply() -> None:
    grade = NumbersGrader().grade("It costs 5%.", "Open the report and click Share.", OPTIONS)
    assert grade.score is None
    assert grade.explanation == "reference has no figures; numbers grader does not apply"


def test_list_numbering_and_small_counts_are_not_figures() -> None:
    reference = "1. Open the report\n2) Click Share\n(3) Pick the 2 clients"
    assert NumbersGrader().grade("anything", reference, OPTIONS).score is None


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("EV ~ 1,705M", [1.705e9]),
        ("EV ~ 1.705B", [1.705e9]),
        ("EV ~ $1.705 billion", [1.705e9]),
        ("EV ~ 1705 million", [1.705e9]),
        ("EV ~ US$ 1,705 mn", [1.705e9]),
        ("Umsatz 1.705,3 Mio. €", [1.7053e9]),
        ("Umsatz 1 705,3 EUR", [1705.3]),
        ("Preis 1\u202f705,3", [1705.3]),
        ("price 1'705.3 and 1’000’000", [1705.3, 1e6]),
        ("growth 12%", [12.0]),
        ("growth 12 %", [12.0]),
        ("change -3.5%", [-3.5]),
        ("change −2.5 percent", [-2.5]),
        ("ratio 0.5", [0.5]),
        ("ratio .5", [0.5]),
        ("about 1e6 rows", [1e6]),
        ("rund 2,5 Mio. Nutzer", [2.5e6]),
        ("3 Mrd. Euro", [3e9]),
        ("€1.2bn deal", [1.2e9]),
        ("5k users, 3 Bio. Schulden", [5e3, 3e12]),
        ("2 trillion and 4T", [2e12, 4e12]),
        ("1.000.000 and 1,000,000", [1e6, 1e6]),
        ("15 000 people", [15000.0]),
        ("100 200 300", [100.0, 200.0, 300.0]),
        ("spread 25 bps", [0.25]),
        ("in 2024 revenue rose", [2024.0]),
        ("3 steps with 12 checks", [12.0]),
        ("1. Revenue 45\n2) Costs 30", [45.0, 30.0]),
        ("see (1) and [2]; 17", [17.0]),
        ("on 2024-03-15, 15.03.2024 or 3/15/24 at 10:30", []),
        ("Q3 GPT-4 COVID-19 3D 1st 5kg v1.2.3", []),
        ("a 100 m sprint", [100.0]),
    ],
)
def test_figure_formats(text: str, values: list[float]) -> None:
    assert [f.value for f in extract_figures(text)] == pytest.approx(values)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Revenue was 1,705 last year", 1705.0),  # English: comma + 3 digits groups thousands
        ("Revenue was 1.705 last year", 1.705),  # English: dot is decimal
        ("Umsatz 1,705 bei 2,5 Prozent", 1.705),  # the text's decimal comma decides
        ("Umsatz 1.705 bei 2,5 Prozent", 1705.0),
        ("Umsatz 1.705 Mio.", 1.705e9),  # German scale word: '.' groups thousands
        ("price 1,5 today", 1.5),  # comma + not 3 digits: decimal comma
        ("price 0,705 today", 0.705),  # leading zero: decimal
    ],
)
def test_ambiguous_separators_follow_the_text_style(text: str, value: float) -> None:
    assert extract_figures(text)[0].value == pytest.approx(value)


def test_percent_only_matches_percent() -> None:
    assert numbers("growth of 12 units", "growth 12%") == 0.0
    assert numbers("growth of 12 percent", "growth 12%") == 1.0


def test_scales_align() -> None:
    for answer in ["EV 1.705B", "EV $1.705 billion", "EV 1705 million", "EV 1,705M"]:
        assert numbers(answer, "EV ~ $1,705M.") == 1.0


def test_years_need_an_exact_match() -> None:
    assert numbers("founded in 2024", "founded in 2023") == 0.0
    assert numbers("founded in 2023", "founded in 2023") == 1.0


def test_small_answer_integer_matches_reference_decimal() -> None:
    assert numbers("the ratio is 3", "the ratio is 3.0") == 1.0


def test_answer_without_figures() -> None:
    grade = NumbersGrader().grade("no numbers here", "costs 12.5%", OPTIONS)
    assert grade.score == 0.0
    assert "missing" in grade.explanation


@pytest.mark.parametrize(
    ("error", "credit"), [(0.0, 1.0), (0.01, 1.0), (0.0101, 0.5), (0.05, 0.5), (0.0501, 0.0)]
)
def test_credit_bounds_are_inclusive(error: float, credit: float) -> None:
    assert match_credit(error) == credit


def test_explanation_stays_short() -> None:
    reference = " ".join(f"{i}.5%" for i in range(10, 60))
    grade = NumbersGrader().grade(reference, reference, OPTIONS)
    assert grade.score == 1.0
    assert len(grade.explanation) <= 200
