"""Where a query's terms are in the in-memory index's postings, found by their digests.

A dict from the terms' strings was the obvious table, and it is what a million-term index paid
for at load: a Python string and a dict entry per term, read and built in 0.56 s, and 113 MiB.
The ``terms`` table holds each term's MD5 (``postings.term_digest``), so the load reads two
integer columns and sorts one (24 bytes a term), and a query hashes its terms and finds them by
binary search, holding what it found for the next queries.
"""

from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache, partial

import numpy as np

from ..index import postings

# Terms whose slots a snapshot holds once looked up (about 3 MB at most): a query's words
# recur, and a lookup costs a few microseconds where a held one costs a tenth of one. A
# question set of 1,109 SciFact claims has 3,033 distinct terms.
HELD_LOOKUPS = 16_384


class TermSlots:
    """Each term's slot (its row in the ``Vocabulary``, in term id order), found by its MD5.

    The digests are held sorted by their high half; terms whose high halves are equal (odds of
    1 in 37 million that a million terms have such a pair) sit side by side and are told apart
    by the low half. Two different terms with both halves equal are taken to be one, as content
    hashes are.
    """

    def __init__(self, digest_high: np.ndarray, digest_low: np.ndarray) -> None:
        # Not a stable sort: a run of equal high halves is searched whole, in any order, and
        # numpy's default sort of 64-bit integers is 3x faster (0.057 s against 0.17 at 1M).
        order = np.argsort(digest_high)
        # Read through memoryviews, whose items are Python ints and which ``bisect`` searches in
        # C: a term not held costs 2 µs, against 4.5 through numpy's searchsorted and scalars.
        high, low = memoryview(digest_high[order]), memoryview(digest_low[order])
        sorted_by_digest = partial(_slot_of, high, low, memoryview(order))
        self._slot_of = lru_cache(maxsize=HELD_LOOKUPS)(sorted_by_digest)

    def slots(self, terms: list[str]) -> list[int | None]:
        """Each of ``terms``' slot, or None for a term the index does not have."""
        return list(map(self._slot_of, terms))


def _slot_of(high: memoryview, low: memoryview, slots: memoryview, term: str) -> int | None:
    """``term``'s slot, looked for where its high half sorts, through the run of terms with that
    high half (a run of one but for the rare pair)."""
    wanted_high, wanted_low = postings.term_digest(term)
    place = bisect_left(high, wanted_high)
    while place < len(slots) and high[place] == wanted_high:
        if low[place] == wanted_low:
            return slots[place]
        place += 1
    return None
