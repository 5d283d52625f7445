"""Token budgets for what an agent reads: a cheap estimate, and cutting text to fit one.

Agents refuse tool output over a limit, and pay for every token below it. The estimate is a
quarter of the UTF-8 bytes: four characters a token for English and code, more per character
for other scripts, whose tokens are shorter, so it errs on the side of fitting. No tokenizer
is loaded: the real one is the client model's.
"""

from __future__ import annotations

BYTES_PER_TOKEN = 4
TRUNCATION_MARKER = " … [truncated]"


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` costs an agent (rounded up)."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return -(-size // BYTES_PER_TOKEN)


def fit(text: str, max_tokens: int) -> str:
    """The longest start of ``text`` within ``max_tokens``, ended at a line break or space
    when one is in its last fifth."""
    if estimate_tokens(text) <= max_tokens:
        return text
    piece = text[: max(0, max_tokens) * BYTES_PER_TOKEN]
    while piece and estimate_tokens(piece) > max_tokens:
        piece = piece[: len(piece) * 9 // 10]
    for boundary in ("\n", " "):
        cut = piece.rfind(boundary)
        if cut >= len(piece) * 4 // 5:
            return piece[:cut]
    return piece
