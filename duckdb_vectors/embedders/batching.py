"""Length-aware batches for transformers: texts grouped by token length, each batch bounded.

A transformer runs a batch as one tensor padded to its longest text, so its cost is rows x
longest tokens (and its attention memory rows x longest tokens squared). Texts sorted by length
and cut into batches waste almost nothing on padding; the cut also keeps a batch of long texts
small enough for a memory-limited container.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer


def token_lengths(tokenizer: Tokenizer, texts: Sequence[str]) -> np.ndarray:
    """How many tokens the model sees of each text (special tokens included, truncation
    applied): the tokenizer's attention mask, which padding does not count."""
    encodings = tokenizer.encode_batch_fast(list(texts))
    return np.fromiter(
        (encoding.attention_mask.count(1) for encoding in encodings),
        dtype=np.int64,
        count=len(texts),
    )


def length_batches(sorted_lengths: np.ndarray, most_rows: int, most_cells: int) -> list[slice]:
    """Consecutive slices of ``sorted_lengths`` (ascending) with at most ``most_rows`` texts and
    rows x longest² at most ``most_cells``; a single text longer than that is a batch alone."""
    batches: list[slice] = []
    start = 0
    for end, length in enumerate(sorted_lengths.tolist(), start=1):
        rows = end - start
        if rows > 1 and (rows > most_rows or rows * length * length > most_cells):
            batches.append(slice(start, end - 1))
            start = end - 1
    if start < len(sorted_lengths):
        batches.append(slice(start, len(sorted_lengths)))
    return batches
