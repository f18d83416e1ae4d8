"""The language a text is written in, told by its common short words: enough for the number format of a
group (rules/number_format.py) and the language the judge writes its reasons in (llm/judge.py), with no
model and no dictionary. Seven languages; a text with too few of their words has none."""

from __future__ import annotations

import re

LANGUAGE_CHARS = 2000  # the language is read from a text's opening: enough words, bounded work
_WORD = re.compile(r"[^\W\d_]+")


def _common(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Short words frequent in each language and rare in the others (closed word classes: articles, pronouns,
# auxiliaries, prepositions), enough to tell the language of a sentence or two.
_LANGUAGE_WORDS: dict[str, frozenset[str]] = {
    "en": _common(
        "the and is are was were of to in it that this for with on at by from which you your it's "
        "be been has have had not but or what how about costs cost price"
    ),
    "de": _common(
        "der die das und ist sind nicht mit von den dem des ein eine einer eines zu auf für sich im "
        "wir ihr sie er es bei liegt beträgt kostet oder auch wie als noch nach über wird werden "
        "unser unsere rund etwa circa"
    ),
    "fr": _common(
        "le la les et est sont des du un une pour dans que qui sur avec pas au aux ce cette nous vous "
        "il elle coûte environ"
    ),
    "es": _common("el los las y es son del que en un una por con para se su al como está cuesta"),
    "it": _common("il lo gli è di che un una per con non sono del della delle nel alla costa"),
    "nl": _common("het een en is van dat niet met voor zijn op ook naar wordt kost ongeveer"),
    "pt": _common("os as é do da que um uma para com não são dos das custa cerca"),
}
LANGUAGE_NAMES = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "nl": "Dutch",
    "pt": "Portuguese",
}


def language_of(text: str) -> str | None:
    """The language whose common short words the text's opening uses most (two at least), else None."""
    words = [w.casefold() for w in _WORD.findall(text[:LANGUAGE_CHARS])]
    best, best_hits = None, 1
    for language, common in _LANGUAGE_WORDS.items():
        hits = sum(1 for w in words if w in common)
        if hits > best_hits:
            best, best_hits = language, hits
    return best


def reason_language_name(option: str | None, conversation_text: str) -> str | None:
    """The English name of the language a judge's reasons are asked in: the option's (a code), or for
    "auto" the conversation's (None when it cannot be told: the prompt then asks for none)."""
    if option == "auto":
        option = language_of(conversation_text)
    return LANGUAGE_NAMES[option] if option is not None else None
