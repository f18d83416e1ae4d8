"""A real Hugging Face fast tokenizer over a given vocabulary of words, for the adapter checks that run in
the trainers' own environments (no model download there). Imports only tokenizers and transformers, which
every trainer environment has; no pytest."""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

# A plain chat template: "role content <eos>" per message, then "assistant " when a reply is to follow.
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} <eos> {% endfor %}"
    "{% if add_generation_prompt %}assistant {% endif %}"
)


def word_tokenizer(texts: Iterable[str], *, chat_template: str | None = None) -> PreTrainedTokenizerFast:
    """One token per whitespace-separated word of `texts` (ids 3.. in first-seen order), <pad> 0, <eos> 1,
    <unk> 2 for any other word."""
    words = dict.fromkeys(w for text in texts for w in text.split())
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"
    )
    if chat_template is not None:
        fast.chat_template = chat_template
    return fast
