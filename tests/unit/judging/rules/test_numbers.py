import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge_service.judging.rules.numbers import NumbersGrader, extract_figures, match_credit
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


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("EV ~ $1.7 B", [1.7e9]),
        ("EV ~ 1.705 B.", [1.705e9]),
        ("EV ~ 1.705 bn", [1.705e9]),
        ("EV ~ 1.7 Bn", [1.7e9]),
        ("EUR 3,2 Mrd.", [3.2e9]),
        ("3,2 Milliarden", [3.2e9]),
        ("12 k users", [12e3]),
        ("12 K, 10 M; 3 B!", [12e3, 10e6, 3e9]),
        ("1,705 M", [1.705e9]),
        ("4.5 mn", [4.5e6]),
        ("2 Mio.", [2e6]),
        ("1 Million", [1e6]),
        ("€ 12 k", [12e3]),
        ("12\u00a0k", [12e3]),
        ("$5 m", [5e6]),  # after a currency also m, b and T
        ("USD 2 b", [2e9]),
        ("$4 T", [4e12]),
        ("EV ($1.7 B).", [1.7e9]),
        ("ran 400 m in 50 s", [400.0, 50.0]),  # m without a currency: metres
        ("500 b of memory, 40 T magnet", [500.0, 40.0]),
        ("options: A) 20 B) 30 and a) 40 b) 50", [20.0, 30.0, 40.0, 50.0]),  # list letters
        ("(12 k) users", [12.0]),
        ("3 by 4 and 13 by 14", [13.0, 14.0]),
        ("20 T-shirts, 50 M&A deals, 30 B-shares", [20.0, 50.0, 30.0]),
        ("22 M.Sc. students, 12 kg, 15 m/s", [22.0, 12.0, 15.0]),
    ],
)
def test_scale_after_a_space(text: str, values: list[float]) -> None:
    assert [f.value for f in extract_figures(text)] == pytest.approx(values)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        # a plain space joins 3-digit groups before any unit the grader reads, by its usual rules
        ("EV 1 705 bn", [1.705e12]),
        ("EV 1 705 M", [1.705e9]),
        ("EV 1 705 M.", [1.705e9]),
        ("EUR 1 705 Mrd", [1.705e12]),
        ("1 705 k users", [1.705e6]),
        ("1 705 K, 2 500 B!", [1.705e6, 2.5e12]),
        ("1 705 mn and 1 705 Bn.", [1.705e9, 1.705e12]),
        ("1 705 tn or 1 705 trillion", [1.705e15, 1.705e15]),
        ("1 705 million", [1.705e9]),
        ("1 705 Tausend, 1 705 Tsd., 1 705 Bio.", [1.705e6, 1.705e6, 1.705e15]),
        ("1 705 milliards", [1.705e12]),
        ("1 705M", [1.705e9]),
        ("$1 705 m", [1.705e9]),  # m, b and T after a currency
        ("USD 1 705 b", [1.705e12]),
        ("EV ($1 705 B).", [1.705e12]),
        ("1 705 500 bn", [1.7055e15]),
        ("-1 705 M", [-1.705e9]),
        ("1 705\u00a0M", [1.705e9]),
        ("1 705 %, 1 705 percent", [1705.0, 1705.0]),
        ("12 345 bps", [123.45]),
        ("1 705 CHF, 1 705 eur, 1 705 JPY", [1705.0, 1705.0, 1705.0]),
        ("€ 1 705 and CHF 2 500", [1705.0, 2500.0]),  # a currency before also joins
        ("1 705,3", [1705.3]),  # a decimal part
        ("between 2 and 3 000", [2.0, 3000.0]),  # a group led by 0
        ("in 2019 1 705 M units", [2019.0, 1.705e9]),
        ("$5 100 times", [5100.0]),  # the risk taken
        # otherwise each group is a number
        ("3 500 m sprint", [3.0, 500.0]),  # metres: m scales only after a currency
        ("1 705 b and 1 705 T", [1.0, 705.0, 1.0, 705.0]),
        ("1 2 3", [1.0, 2.0, 3.0]),
        ("100 200 300", [100.0, 200.0, 300.0]),
        ("in 2019 1 705 units", [2019.0, 1.0, 705.0]),
        ("page 12 345", [12.0, 345.0]),
        ("2019 705 M", [2019.0, 705e6]),  # a 4-digit number is no lead
        ("1 705 2024 M", [1.0, 705.0, 2.024e9]),  # a group glued to a further digit: no join
        ("A) 1 705 B) 30", [1.0, 705.0, 30.0]),  # list letter
        ("1 705 M&A deals, 1 705 kg, 1 705 millionaires", [1.0, 705.0] * 3),
        # no-break spaces and apostrophes always group
        ("1\u202f705\u202f000\u202f€", [1.705e6]),
        ("1\u00a0705\u00a0000 €", [1.705e6]),
        ("1\u202f705 units", [1705.0]),
        ("1\u202f705,5\u202fMio. €", [1.7055e9]),
        ("1\u2009705", [1705.0]),
        ("CHF 1'705'000 and 1’705.50", [1.705e6, 1705.5]),
        ("1'705 M", [1.705e9]),
    ],
)
def test_space_grouped_thousands(text: str, values: list[float]) -> None:
    figures = extract_figures(text, include_small_integers=True)
    assert [f.value for f in figures] == pytest.approx(values)


_UNITS = [" bn", " mn", " tn", " k", " K", " M", "M", "\u00a0M", " B", " million", " Mio.", " Mrd.", " Tsd."]
_UNITS += [" %", " percent", " bps", " €", " CHF"]
_CURRENCY_UNITS = [" m", " b", " T"]  # scales only after a currency


@settings(max_examples=200, deadline=None)
@given(
    number=st.integers(min_value=1000, max_value=10**12),
    currency_and_unit=st.one_of(
        st.tuples(st.sampled_from(["", "$", "EUR "]), st.sampled_from(_UNITS)),
        st.tuples(st.sampled_from(["$", "EUR "]), st.sampled_from(_CURRENCY_UNITS)),
    ),
)
def test_space_grouping_before_a_unit_reads_like_no_grouping(
    number: int, currency_and_unit: tuple[str, str]
) -> None:
    currency, unit = currency_and_unit
    spaced = f"{number:,}".replace(",", " ")
    grouped = extract_figures(f"EV {currency}{spaced}{unit} in total")
    assert [f.value for f in grouped] == [
        f.value for f in extract_figures(f"EV {currency}{number}{unit} in total")
    ]


@settings(max_examples=100, deadline=None)
@given(
    groups=st.lists(st.integers(min_value=100, max_value=999), min_size=1, max_size=4),
    lead=st.integers(1, 999),
)
def test_space_grouping_without_a_unit_splits(groups: list[int], lead: int) -> None:
    text = " ".join(map(str, [lead, *groups]))
    for suffix in [" in total", " m sprint", " b", " T", " kg"]:
        figures = extract_figures(f"count {text}{suffix}", include_small_integers=True)
        assert [f.value for f in figures] == [lead, *groups]


_NUMBER_TEXTS = st.builds(
    lambda units, places: f"{units / 10**places:,.{places}f}",
    st.integers(min_value=1, max_value=10**7),
    st.integers(min_value=0, max_value=3),
)


@settings(max_examples=100, deadline=None)
@given(number=_NUMBER_TEXTS, letter=st.sampled_from("kKMB"), currency=st.sampled_from(["", "$", "EUR "]))
def test_spaced_scale_letter_reads_like_a_glued_one(number: str, letter: str, currency: str) -> None:
    spaced = extract_figures(f"EV {currency}{number} {letter} in total")
    assert [f.value for f in spaced] == [f.value for f in extract_figures(f"EV {currency}{number}{letter}")]


@settings(max_examples=100, deadline=None)
@given(number=_NUMBER_TEXTS, letter=st.sampled_from("mbT"))
def test_spaced_unit_letter_scales_only_after_a_currency(number: str, letter: str) -> None:
    plain = [f.value for f in extract_figures(f"size {number} in total", include_small_integers=True)]
    with_unit = extract_figures(f"size {number} {letter} in total", include_small_integers=True)
    assert [f.value for f in with_unit] == plain
    assert [f.value for f in extract_figures(f"size ${number} {letter}")] == [
        f.value for f in extract_figures(f"size ${number}{letter}")
    ]


@pytest.mark.parametrize(
    ("answer", "reference", "score"),
    [
        ("WACC is 0.0991", WACC_REFERENCE.split(";")[0], 1.0),  # share in the answer
        ("WACC is 9.91%", "WACC = 0.0991", 1.0),  # share in the reference
        ("WACC is .0991", "WACC 9.91%", 1.0),
        ("WACC ist 0,0991", "WACC 9,91 %", 1.0),
        ("change -0.035", "change -3.5%", 1.0),
        ("spread 0.0025", "spread 25 bps", 1.0),
        ("WACC is 0.0975", "WACC 9.91%", 0.5),
        ("WACC is 0.0991", "WACC 0.0991%", 0.0),  # a share is 100 times its percent
        ("margin 0.005", "margin 0.5%", 1.0),
        ("margin 0.5", "margin 0.5%", 0.0),  # 0.5 is 50%
        ("margin 0.5%", "margin 0.5", 0.0),
        ("margin 50%", "margin 0.5", 1.0),
        ("margin 9.91", "margin 9.91%", 0.0),  # a number of 1 or more is no share
        ("margin 9.91%", "margin 9.91", 0.0),
        ("margin 1.0", "margin 100%", 0.0),
        ("price $0.12", "margin 12%", 0.0),  # currency, scale or exponent: no share
        ("margin 0.12 M", "margin 12%", 0.0),
        ("margin 1.2e-1", "margin 12%", 0.0),
    ],
)
def test_share_matches_percent(answer: str, reference: str, score: float) -> None:
    assert numbers(answer, reference) == score


def test_wacc_example_with_shares_scores_like_percentages() -> None:
    answer = "WACC is about 0.0995, cost of equity 0.103, after-tax cost of debt 0.042, EV roughly 1,700M."
    assert numbers(answer, WACC_REFERENCE) == pytest.approx(0.875)


@settings(max_examples=100, deadline=None)
@given(basis_points=st.integers(min_value=1, max_value=9999))
def test_share_and_percent_match_in_both_directions(basis_points: int) -> None:
    percent, share = f"{basis_points / 100:.2f}%", f"{basis_points / 10000:.4f}"
    assert numbers(f"rate {share}", f"rate {percent}") == 1.0
    assert numbers(f"rate {percent}", f"rate {share}") == 1.0
    # the share's digits with a percent sign are 100 times off
    assert numbers(f"rate {share}", f"rate {share}%") == 0.0


@settings(max_examples=100, deadline=None)
@given(hundredths=st.integers(min_value=100, max_value=10**6))
def test_plain_number_of_one_or_more_never_matches_a_percent(hundredths: int) -> None:
    number = f"{hundredths / 100:.2f}"
    assert numbers(f"rate {number}", f"rate {number}%") == 0.0
    assert numbers(f"rate {number}%", f"rate {number}") == 0.0


def test_percent_only_matches_percent() -> None:
    assert numbers("growth of 12 units", "growth 12%") == 0.0
    assert numbers("growth of 12 percent", "growth 12%") == 1.0


def test_scales_align() -> None:
    for answer in [
        "EV 1.705B",
        "EV $1.705 billion",
        "EV 1705 million",
        "EV 1,705M",
        "EV $1.705 B",
        "EV 1.7 bn",
    ]:
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
