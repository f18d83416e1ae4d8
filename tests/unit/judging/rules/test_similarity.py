import pytest
from hypothesis import given
from hypothesis import strategies as st

from judge_service.judging.rules.similarity import SimilarityGrader, lcs_length
from judge_service.judging.rules.text import word_tokens
from judge_service.schemas import RuleOptions

REFERENCE = "Open the report, click Share and pick the client."
OPTIONS = RuleOptions()


def similarity(answer: str, reference: str = REFERENCE) -> float | None:
    return SimilarityGrader().grade(answer, reference, OPTIONS).score


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Click Share on the report and pick the client.", 0.67),
        ("Use the Share button in your report to send it to them.", 0.19),
        ("Open the report, click Share and pick the admin.", 0.89),
        (REFERENCE, 1.0),
        ("OPEN the report click share AND pick the client", 1.0),
        ("Nothing alike here.", 0.0),
    ],
)
def test_reference_examples(answer: str, expected: float) -> None:
    assert similarity(answer) == pytest.approx(expected, abs=0.01)


def test_empty_texts() -> None:
    assert similarity("", "") == 1.0
    assert similarity("...", " ") == 1.0  # no tokens on either side
    assert similarity("", "text") == 0.0
    assert similarity("text", "") == 0.0


def test_explanation_counts_words() -> None:
    grade = SimilarityGrader().grade("Click Share on the report and pick the client.", REFERENCE, OPTIONS)
    assert grade.explanation == "ROUGE-L F1 0.67: 6 words in common order (answer 9, reference 9 words)"


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Die Größe der Straße", ["die", "grösse", "der", "strasse"]),
        ("STRASSE", ["strasse"]),
        ("EV ~ $1,705.3M; WACC 9.91%", ["ev", "1,705.3m", "wacc", "9.91"]),
        ("1.705,3 and 1'000'000", ["1.705,3", "and", "1'000'000"]),
        ("report,click. end.", ["report", "click", "end"]),
        ("snake_case x-ray", ["snake", "case", "x", "ray"]),
        ("ﬁne ＡＢＣ １２", ["fine", "abc", "12"]),
        ("naïve café", ["naïve", "café"]),
        ("日本語 テキスト", ["日", "本", "語", "テ", "キ", "ス", "ト"]),  # a character each, as ROUGE does
        ("iPhone价格是999元", ["iphone", "价", "格", "是", "999", "元"]),
        ("ｶﾀｶﾅ", ["カ", "タ", "カ", "ナ"]),  # half-width katakana, NFKC-widened
        ("한국어 문장입니다", ["한국어", "문장입니다"]),  # Korean separates words with spaces
    ],
)
def test_tokenization(text: str, tokens: list[str]) -> None:
    assert word_tokens(text) == tokens


def test_chinese_text_is_compared_character_by_character() -> None:
    """Without spaces a Chinese sentence would be one token, and any difference would score 0."""
    assert SimilarityGrader().grade("我喜欢狗", "我喜欢猫", OPTIONS).score == 0.75
    # 8 characters in common order, answer 9, reference 13: F1 = 2 * 8 / (9 + 13)
    score = SimilarityGrader().grade("请打开报告，点击分享", "打开报告，点击分享并选择客户", OPTIONS).score
    assert score == pytest.approx(16 / 22)


def _lcs_table(first: list[str], second: list[str]) -> int:
    previous = [0] * (len(second) + 1)
    for token in first:
        current = [0]
        for j, other in enumerate(second):
            current.append(previous[j] + 1 if token == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


tokens = st.lists(st.sampled_from("abcdefg"), max_size=40)


@given(tokens, tokens)
def test_bit_parallel_lcs_equals_table_dp(first: list[str], second: list[str]) -> None:
    assert lcs_length(first, second) == _lcs_table(first, second)


def test_long_answers_take_the_bit_parallel_path_with_the_same_result() -> None:
    """Past the sizes hypothesis draws: 600 words each. How fast it is, is measured by
    benchmarks/rule_graders.py, not asserted here (timings in tests fail on busy machines)."""
    words = [f"w{i % 97}" for i in range(600)]
    assert lcs_length(words, list(reversed(words))) == _lcs_table(words, list(reversed(words)))
