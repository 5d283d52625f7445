"""Where a query's terms are in the in-memory index's postings, found by their digests.

A dict from the terms' strings was the obvious table, and it is what a million-term index paid
for at load: a Python string and a dict entry per term, 0.56 s to read and build and about 125
MB. The ``terms`` table holds each term's MD5 (``postings.term_digests``), so the load reads two
integer columns and sorts one, and a query hashes its few terms and looks them up by binary
search: 24 bytes a term.
"""

from __future__ import annotations

import numpy as np

from ..index import postings


class TermSlots:
    """Each term's slot (its row in the ``Vocabulary``, in term id order), found by its MD5.

    The digests are held sorted by their high half; terms whose high halves are equal (one pair
    in ten million at a million terms) sit side by side and are told apart by the low half. Two
    different terms with both halves equal are taken to be one, as content hashes are.
    """

    def __init__(self, digest_high: np.ndarray, digest_low: np.ndarray) -> None:
        order = np.argsort(digest_high, kind="stable")
        self._high = digest_high[order]
        self._low = digest_low[order]
        self._slots = order

    def __len__(self) -> int:
        return len(self._slots)

    def slots(self, terms: list[str]) -> list[int | None]:
        """Each of ``terms``' slot, or None for a term the index does not have."""
        high, low = postings.term_digests(terms)
        places = np.searchsorted(self._high, high).tolist()
        return [
            self._slot(*found) for found in zip(places, high.tolist(), low.tolist(), strict=True)
        ]

    def _slot(self, place: int, high: int, low: int) -> int | None:
        """The slot of the term with these digests, looked for from ``place`` on, through the
        run of terms whose high halves are ``high`` (a run of one but for the rare pair)."""
        while place < len(self._slots) and self._high[place] == high:
            if self._low[place] == low:
                return int(self._slots[place])
            place += 1
        return None
