"""text_similarity metrics: rouge_l through the service's own ROUGE-L (rules/similarity.py), the others
from the libraries that define them: rouge_1 ... rouge_5 from Google's rouge-score, bleu and gleu from
NLTK (sentence level; BLEU smoothed, so a short text without 4-gram overlaps is not simply 0),
fuzzy_match from RapidFuzz (normalized Indel similarity). `cosine` needs an embedding model and `meteor`
WordNet data, neither of which this service has: they are refused by name (UnsupportedMetric).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from judge_service.judging.rules.similarity import SimilarityGrader
from judge_service.schemas import RuleOptions

UNSUPPORTED = {
    "cosine": "cosine needs an embedding model, which this service does not host; use rouge_l, bleu or "
    "fuzzy_match, or a score_model grader",
    "meteor": "meteor needs the WordNet data, which this service does not download; use rouge_l or bleu",
}
_DEFAULT_OPTIONS = RuleOptions()
_WORDS = re.compile(r"\w+", re.UNICODE)


class UnsupportedMetric(ValueError):
    pass


def check_metric(metric: str) -> None:
    if metric in UNSUPPORTED:
        raise UnsupportedMetric(f"evaluation_metric {metric!r} is not supported: {UNSUPPORTED[metric]}")


def similarity(metric: str, text: str, reference: str) -> float:
    check_metric(metric)
    if metric == "rouge_l":
        score = SimilarityGrader().grade(text, reference, _DEFAULT_OPTIONS).score
        return 0.0 if score is None else score
    if metric.startswith("rouge_"):
        rouge_type = "rouge" + metric.removeprefix("rouge_")
        return float(_rouge(rouge_type).score(reference, text)[rouge_type].fmeasure)
    if metric == "fuzzy_match":
        from rapidfuzz import fuzz

        return float(fuzz.ratio(text, reference)) / 100.0
    hypothesis, references = _words(text), [_words(reference)]
    if not hypothesis or not references[0]:
        return 1.0 if hypothesis == references[0] else 0.0
    if metric == "bleu":
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        return float(sentence_bleu(references, hypothesis, smoothing_function=SmoothingFunction().method1))
    if metric == "gleu":
        from nltk.translate.gleu_score import sentence_gleu

        return float(sentence_gleu(references, hypothesis))
    raise UnsupportedMetric(f"unknown evaluation_metric {metric!r}")


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


@lru_cache(maxsize=8)
def _rouge(rouge_type: str) -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer([rouge_type])
