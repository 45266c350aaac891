"""Grammar-constrained sampling the way llama.cpp's own common sampler does it: the grammar only when it must.

llama-cpp-python puts the grammar into its sampler chain ahead of top-k, so every token is sampled only after the
grammar has judged the whole vocabulary (49k entries for the bundled model): most of the time of a constrained
token. llama.cpp's ``common_sampler_sample`` samples from the unconstrained logits first, asks the grammar about that
one token, and only when the grammar rejects it samples again with the grammar applied to every candidate. Every
token it returns is one the grammar accepts, and in a grammar-shaped reply (JSON) most tokens pass at once.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from typing import Any, Final

import numpy as np

GRAMMAR_ROOT: Final = b"root"


class GrammarLastSampler:
    """A sampler with llama-cpp-python's ``LlamaSampler.sample(ctx, idx)`` shape that applies the grammar last.

    Args:
        low: llama-cpp-python's low-level module (``llama_cpp.llama_cpp``).
        chain: The sampler chain without the grammar (a ``LlamaSampler`` without custom samplers); this object samples
            with its own copy.
        grammar: A grammar sampler (``llama_sampler_init_grammar``); this object frees it.
        n_vocab: The model's vocabulary size.
        on_resample: Called each time the grammar rejected the first choice (statistics).
    """

    def __init__(
        self,
        low: Any,
        chain: Any,
        grammar: Any,
        n_vocab: int,
        *,
        on_resample: Callable[[], None] | None = None,
    ) -> None:
        self._low = low
        # An own copy of the chain, whose random state can be rolled back: see ``sample``.
        self._chain = low.llama_sampler_clone(chain.sampler)
        self._grammar = grammar
        self._n_vocab = n_vocab
        self._on_resample = on_resample
        self._data = (low.llama_token_data * n_vocab)()
        view = np.ctypeslib.as_array(self._data)
        self._ids, self._logits, self._probabilities = view["id"], view["logit"], view["p"]
        self._all_ids = np.arange(n_vocab, dtype=self._ids.dtype)
        self._candidates = low.llama_token_data_array()
        self._one = low.llama_token_data()
        self._single = low.llama_token_data_array()
        self._base = ctypes.cast(self._data, low.llama_token_data_p)
        self._one_pointer = ctypes.pointer(self._one)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        """Sample the next token from the logits of output ``idx`` of ``ctx`` (a ``LlamaContext``) and accept it."""
        low, context = self._low, ctx.ctx
        # The chain as it was before this draw: a rejected first choice then costs no random number, so a seeded
        # reply draws the same numbers as with the grammar applied first and differs only where the grammar
        # narrowed the candidates the chain kept.
        before = low.llama_sampler_clone(self._chain)
        candidates = self._fill(context, idx)
        low.llama_sampler_apply(self._chain, ctypes.byref(candidates))
        token = self._selected(candidates)
        if self.accepts(token):
            low.llama_sampler_free(before)
        else:
            if self._on_resample is not None:
                self._on_resample()
            low.llama_sampler_free(self._chain)
            self._chain = before
            candidates = self._fill(context, idx)
            low.llama_sampler_apply(self._grammar, ctypes.byref(candidates))
            low.llama_sampler_apply(self._chain, ctypes.byref(candidates))
            token = self._selected(candidates)
        low.llama_sampler_accept(self._grammar, token)
        low.llama_sampler_accept(self._chain, token)
        return token

    def accepts(self, token: int) -> bool:
        """Whether the grammar, in its current state, allows ``token`` next."""
        one, single = self._one, self._single
        one.id, one.logit, one.p = token, 1.0, 0.0
        single.data, single.size, single.selected, single.sorted = self._one_pointer, 1, -1, False
        self._low.llama_sampler_apply(self._grammar, ctypes.byref(single))
        return math.isfinite(one.logit)

    def close(self) -> None:
        """Free the grammar sampler and the chain."""
        grammar, self._grammar = self._grammar, None
        chain, self._chain = self._chain, None
        for sampler in (grammar, chain):
            if sampler is not None:
                self._low.llama_sampler_free(sampler)

    def __del__(self) -> None:
        self.close()

    def _fill(self, context: Any, idx: int) -> Any:
        """The candidates array refilled with every token and its logit (samplers sort and shrink it in place)."""
        logits = self._low.llama_get_logits_ith(context, idx)
        self._ids[:] = self._all_ids
        self._logits[:] = np.ctypeslib.as_array(logits, shape=(self._n_vocab,))
        self._probabilities[:] = 0.0
        candidates = self._candidates
        candidates.data, candidates.size, candidates.selected, candidates.sorted = self._base, self._n_vocab, -1, False
        return candidates

    @staticmethod
    def _selected(candidates: Any) -> int:
        if not 0 <= candidates.selected < candidates.size:
            raise RuntimeError("the sampler chain selected no token")
        return int(candidates.data[candidates.selected].id)


def grammar_last_init_sampler(
    llama: Any, low: Any, stock: Callable[..., Any], *, on_resample: Callable[[], None] | None = None
) -> Callable[..., Any]:
    """A replacement for ``Llama._init_sampler`` that builds a :class:`GrammarLastSampler` when a grammar is given.

    Without a grammar, or with a logits processor or mirostat (whose chains the grammar-last order does not fit),
    ``stock`` (llama-cpp-python's own ``_init_sampler``, bound to ``llama``) builds the sampler as before.

    Args:
        llama: The ``Llama`` whose sampler is built.
        low: llama-cpp-python's low-level module.
        stock: The original ``_init_sampler`` of ``llama``.
        on_resample: Passed to each :class:`GrammarLastSampler`.
    """

    def init_sampler(**kwargs: Any) -> Any:
        grammar = kwargs.pop("grammar", None)
        if grammar is None or kwargs.get("logits_processor") is not None or kwargs.get("mirostat_mode", 0):
            return stock(grammar=grammar, **kwargs)
        gbnf = str(grammar._grammar).encode("utf-8")
        root = str(getattr(grammar, "_root", "root")).encode("utf-8") or GRAMMAR_ROOT
        pointer = low.llama_sampler_init_grammar(llama._model.vocab, gbnf, root)
        if not pointer:  # not parseable: let the stock path fail the way it does
            return stock(grammar=grammar, **kwargs)
        chain = stock(grammar=None, **kwargs)
        return GrammarLastSampler(low, chain, pointer, int(llama.n_vocab()), on_resample=on_resample)

    return init_sampler
