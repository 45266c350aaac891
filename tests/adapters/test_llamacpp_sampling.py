"""Grammar-last sampling: every token is one the grammar allows, and it draws what grammar-first sampling draws.

llama.cpp's low-level sampler API is replaced by a stand-in over the same ctypes structures: a chain (top-k, then a
seeded draw) and a character-level grammar over a tiny vocabulary, so hypothesis can try many logit sequences fast.
"""

from __future__ import annotations

import ctypes
import math
import random
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.llamacpp.sampling import GrammarLastSampler

VOCAB = ('{"', "{", '"', "a", "b", "ab", " ", '"}', "}", "x", "\n", "ba", "<eos>")
EOS = len(VOCAB) - 1
PREFIX = '{"'
SUFFIX = '"}'
BODY = frozenset("ab ")


def valid_prefix(text: str) -> bool:
    """Whether ``text`` can still grow into ``{"<a, b or spaces>"}``."""
    if len(text) <= len(PREFIX):
        return PREFIX.startswith(text)
    if not text.startswith(PREFIX):
        return False
    body = text[len(PREFIX) :]
    end = body.find('"')
    if end < 0:
        return set(body) <= BODY
    return set(body[:end]) <= BODY and SUFFIX.startswith(body[end:])


def complete(text: str) -> bool:
    return valid_prefix(text) and len(text) >= len(PREFIX) + len(SUFFIX) and text.endswith(SUFFIX)


class TokenData(ctypes.Structure):
    _fields_ = (("id", ctypes.c_int32), ("logit", ctypes.c_float), ("p", ctypes.c_float))


class TokenDataArray(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.POINTER(TokenData)),
        ("size", ctypes.c_size_t),
        ("selected", ctypes.c_int64),
        ("sorted", ctypes.c_bool),
    )


def entries(array: TokenDataArray) -> list[tuple[int, float]]:
    return [(array.data[i].id, array.data[i].logit) for i in range(array.size)]


class Chain:
    """Top-k, then a seeded draw in proportion to exp(logit) (llama.cpp's chain, in miniature)."""

    def __init__(self, seed: int, top_k: int = 4) -> None:
        self.random = random.Random(seed)
        self.top_k = top_k
        self.accepted: list[int] = []

    def clone(self) -> Chain:
        copy = Chain(0, self.top_k)
        copy.random.setstate(self.random.getstate())
        copy.accepted = list(self.accepted)
        return copy

    def apply(self, array: TokenDataArray) -> None:
        kept = sorted((e for e in entries(array) if math.isfinite(e[1])), key=lambda e: -e[1])[: self.top_k]
        weights = [math.exp(logit - kept[0][1]) for _, logit in kept]
        draw = self.random.random() * sum(weights)
        chosen = len(kept) - 1
        for index, weight in enumerate(weights):
            draw -= weight
            if draw < 0:
                chosen = index
                break
        for index, (token, logit) in enumerate(kept):
            array.data[index].id, array.data[index].logit = token, logit
        array.size, array.selected, array.sorted = len(kept), chosen, True

    def accept(self, token: int) -> None:
        self.accepted.append(token)


class Grammar:
    """The language ``{"[ab ]*"}`` over ``VOCAB``, judged character by character; end allowed once complete."""

    def __init__(self) -> None:
        self.text = ""
        self.checked_tokens = 0

    def allows(self, token: int) -> bool:
        if token == EOS:
            return complete(self.text)
        return valid_prefix(self.text + VOCAB[token])

    def apply(self, array: TokenDataArray) -> None:
        self.checked_tokens += array.size
        for index in range(array.size):
            if not self.allows(array.data[index].id):
                array.data[index].logit = -math.inf

    def accept(self, token: int) -> None:
        assert self.allows(token), f"accepted {VOCAB[token]!r} after {self.text!r}"  # llama.cpp would abort here
        if token != EOS:
            self.text += VOCAB[token]


class Low:
    """The part of ``llama_cpp.llama_cpp`` the sampler uses."""

    llama_token_data = TokenData
    llama_token_data_array = TokenDataArray
    llama_token_data_p = ctypes.POINTER(TokenData)

    def __init__(self) -> None:
        self.logits = (ctypes.c_float * len(VOCAB))()
        self.freed: list[object] = []

    def llama_get_logits_ith(self, context: object, idx: int) -> Any:
        return ctypes.cast(self.logits, ctypes.POINTER(ctypes.c_float))

    def llama_sampler_apply(self, sampler: Chain | Grammar, array: Any) -> None:
        sampler.apply(array._obj)

    def llama_sampler_accept(self, sampler: Chain | Grammar, token: int) -> None:
        sampler.accept(token)

    def llama_sampler_clone(self, sampler: Chain) -> Chain:
        return sampler.clone()

    def llama_sampler_free(self, sampler: object) -> None:
        self.freed.append(sampler)


class Context:
    ctx = object()


class StockChain:
    """llama-cpp-python's ``LlamaSampler``: the chain is its ``sampler`` attribute."""

    def __init__(self, chain: Chain) -> None:
        self.sampler = chain


def grammar_first(chain: Chain, grammar: Grammar, logits: Sequence[float]) -> int:
    """The token llama-cpp-python's chain (grammar ahead of top-k) would draw, on copies of both samplers' state."""
    data = (TokenData * len(VOCAB))(*((token, logit, 0.0) for token, logit in enumerate(logits)))
    array = TokenDataArray(ctypes.cast(data, ctypes.POINTER(TokenData)), len(VOCAB), -1, False)
    copy = Grammar()
    copy.text = grammar.text
    copy.apply(array)
    chain.clone().apply(array)
    return int(array.data[array.selected].id)


logit_rows = st.lists(
    st.lists(st.floats(min_value=-8.0, max_value=8.0, allow_nan=False), min_size=len(VOCAB), max_size=len(VOCAB)),
    min_size=1,
    max_size=24,
)


@settings(max_examples=300, deadline=None)
@given(rows=logit_rows, seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_every_token_is_one_the_grammar_allows_and_matches_grammar_first_draws(
    rows: list[list[float]], seed: int
) -> None:
    low = Low()
    grammar = Grammar()
    resamples: list[None] = []
    sampler = GrammarLastSampler(
        low, StockChain(Chain(seed)), grammar, len(VOCAB), on_resample=lambda: resamples.append(None)
    )
    tokens: list[int] = []
    for row in rows:
        chain = sampler._chain
        top = sorted(range(len(VOCAB)), key=lambda token: -row[token])[: chain.top_k]
        expected = grammar_first(chain, grammar, row)
        first_choice_allowed_everywhere = all(grammar.allows(token) for token in top)
        low.logits[:] = row
        before, text_before = len(resamples), grammar.text

        token = sampler.sample(Context(), -1)

        assert complete(text_before) if token == EOS else valid_prefix(text_before + VOCAB[token])
        if first_choice_allowed_everywhere or len(resamples) > before:
            # Same candidates, same random state: the same token as with the grammar applied first.
            assert token == expected
        tokens.append(token)
        if token == EOS:
            break
    text = "".join(VOCAB[token] for token in tokens if token != EOS)
    assert valid_prefix(text)
    assert grammar.text == text
    assert len(resamples) <= len(tokens)


def test_the_grammar_judges_the_whole_vocabulary_only_when_the_first_choice_is_rejected() -> None:
    low = Low()
    grammar = Grammar()
    resamples: list[None] = []
    sampler = GrammarLastSampler(
        low, StockChain(Chain(7, top_k=1)), grammar, len(VOCAB), on_resample=lambda: resamples.append(None)
    )
    # The unconstrained favourite is "x" first (never allowed: the resample with the grammar takes '{"', the first of
    # the equally likely tokens it allows), then "a", "b" and "a" (allowed).
    plan = [VOCAB.index("x"), VOCAB.index("a"), VOCAB.index("b"), VOCAB.index("a")]
    for favourite in plan:
        low.logits[:] = [8.0 if token == favourite else 0.0 for token in range(len(VOCAB))]
        sampler.sample(Context(), -1)

    assert grammar.text == '{"aba'
    assert len(resamples) == 1  # only "x" was rejected
    # One whole-vocabulary pass (the resample) plus one single-token check per token.
    assert grammar.checked_tokens == len(VOCAB) + len(plan)


def test_closing_frees_the_grammar_and_the_chain_once() -> None:
    low = Low()
    grammar = Grammar()
    sampler = GrammarLastSampler(low, StockChain(Chain(1)), grammar, len(VOCAB))
    chain = sampler._chain

    sampler.close()
    sampler.close()

    assert low.freed == [grammar, chain]
