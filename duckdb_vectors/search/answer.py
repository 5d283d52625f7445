"""How a search is answered: the two rankings (vector, BM25), their fusion, and scoping.

Both rankings are produced by a *searcher*. ``SqlSearcher`` asks DuckDB directly (nothing to
load: right for a one-shot process); ``memory_index.MemoryIndex`` answers from an in-memory copy
(right for a long-lived one). They return the same rankings, so fusion is shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import duckdb
import numpy as np

from ..bm25 import BM25_B, BM25_K1, bm25_idf_sql, bm25_weight_sql
from ..config import FusionSettings
from ..errors import InvalidRankingSQLError, NotAnIndexError
from ..filters import compile_filter
from ..index import chunk_table, postings, slices
from ..index.db import (
    FILTERED_SCAN_MEMORY_LIMIT,
    SCAN_MEMORY_LIMIT,
    first_line,
    registered,
    scan_buffer_pool,
)
from ..index.languages import Languages
from ..index.terms import ParsedQuery
from ..models import Chunk, SearchResult, SearchResults
from .ranking import FusedRanking, Ranking, fuse
from .user_sql import execute_user_sql, validate_fragment

# SQL rankings read this many rows past the depth, so ties at the cut (ranking.TIE_TOLERANCE)
# are resolved as in memory.
TIE_SLACK = 16

# Which chunks a query's words select: those with any query term (BM25's own rule), or only
# those with every term. When no chunk has them all, a search falls back to "any" and says so.
Match = Literal["any", "all"]
MATCH_MODES: tuple[Match, ...] = ("any", "all")
MATCH_FELL_BACK = "any (no chunk has every term)"


@dataclass(frozen=True)
class Scope:
    """Which chunks may be returned: an S3 Vectors metadata filter and/or a SQL ``where``, and
    (``keys``, set by the search itself, never by a caller's SQL) an allowed set of chunk keys."""

    filter: dict[str, Any] | None = None
    where: str | None = None
    keys: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.where is not None:
            validate_fragment(self.where, "where")
        if self.filter is not None:
            compile_filter(self.filter)  # fail early, with the filter's own message

    @property
    def is_everything(self) -> bool:
        return self.filter is None and self.where is None and self.keys is None

    @property
    def has_user_sql(self) -> bool:
        return self.filter is not None or self.where is not None

    def condition(self, parameter_offset: int = 0) -> tuple[str, list[Any]]:
        """A SQL condition over ``chunks`` columns, placeholders numbered after the offset."""
        clauses, parameters = [], []
        if self.filter is not None:
            sql, parameters = compile_filter(self.filter, parameter_offset=parameter_offset)
            clauses.append(sql)
        if self.where is not None:
            clauses.append(f"({self.where})")
        if self.keys is not None:
            placeholder = parameter_offset + len(parameters) + 1
            clauses.append(f"key IN (SELECT unnest(${placeholder}::BIGINT[]))")
            parameters = [*parameters, self.keys.tolist()]
        return (" AND ".join(clauses) or "true"), parameters


@dataclass(frozen=True)
class Query:
    """What to rank by (a vector, the text's BM25 terms, or both: fused), and how many to
    return.

    ``text`` is the query's text as the store parsed it: BM25 ranks by its terms (in the
    languages of the libraries searched) unless ``lexical`` is False, and ``match="all"`` keeps
    the chunks that hold every word in one of them.
    ``rescore`` is a fragment already checked by ``user_sql.validate_fragment`` (the store
    checks it before it loads a model to embed the query). ``vector_reads_text`` False says the
    model could not read the question (an English model, a question in Cyrillic or Chinese):
    its ranking is noise, which fused would rank below BM25 alone, so BM25 ranks and the vector
    only extends the list.
    """

    vector: np.ndarray | None
    text: ParsedQuery | None
    top_k: int
    scope: Scope
    rescore: str | None = None
    one_per_source: bool = False
    match: Match = "any"
    lexical: bool = True
    vector_reads_text: bool = True

    def __post_init__(self) -> None:
        if self.vector is None and self.lexical_text is None:
            raise ValueError("a query ranks by a vector, by terms, or by both")

    @property
    def lexical_text(self) -> ParsedQuery | None:
        """The text whose terms BM25 ranks by, or None when it does not rank."""
        return self.text if self.lexical else None

    def depth(self, fusion: FusionSettings) -> int:
        """How many candidates each signal ranks: more than ``top_k`` when results are
        fused, rescored or kept one per source, so that a chunk ranked lower by one signal (or
        below other chunks of its document) can still make it."""
        both = self.vector is not None and self.lexical_text is not None
        if both or self.rescore is not None or self.one_per_source:
            return max(fusion.candidates, self.top_k)
        return self.top_k


class Searcher(Protocol):
    def vector_ranking(self, query: np.ndarray, depth: int, scope: Scope) -> Ranking: ...

    def lexical_ranking(self, terms: list[str], depth: int, scope: Scope) -> Ranking: ...

    def languages(self, scope: Scope) -> list[str]:
        """The languages (sorted) of the libraries ``scope`` holds chunks of, whose forms of
        the query's words BM25 looks up (``index.languages``); the index's if it holds none.
        The keys a search narrows it to (``match="all"``) do not count."""
        ...

    def keys_with_every(self, groups: list[list[str]], scope: Scope) -> np.ndarray:
        """The keys (ascending) of the chunks in ``scope`` that contain a term of every one of
        ``groups`` (``ParsedQuery.required``)."""
        ...

    def chunks(self, keys: np.ndarray) -> list[Chunk]: ...

    def documents(self, keys: np.ndarray) -> list[str]:
        """The document of each chunk: its source, else ``#`` and its chunk id."""
        ...


@dataclass
class SqlSearcher:
    """Rankings computed by DuckDB on each query; exact, and nothing is loaded up front.
    ``slice_keys`` are the index's (its manifest's): whether its chunks have libraries, whose
    BM25 statistics are their own; ``index_languages`` the language of each library."""

    connection: duckdb.DuckDBPyConnection
    dimension: int
    slice_keys: Sequence[str]
    index_languages: Languages
    layout: postings.Layout = field(init=False)
    scan_pool_held_small: bool = field(init=False)

    def __post_init__(self) -> None:
        self.layout = postings.Layout.of(self.connection)
        # Vectors that outgrow the scan's buffer pool are read past DuckDB's cache (see
        # ``SCAN_MEMORY_LIMIT``); smaller ones stay cached, as holding the pool small takes
        # three statements a query.
        vector_bytes = chunk_table.count(self.connection) * self.dimension * 4
        self.scan_pool_held_small = vector_bytes > SCAN_MEMORY_LIMIT

    def vector_ranking(self, query: np.ndarray, depth: int, scope: Scope) -> Ranking:
        condition, parameters = scope.condition(parameter_offset=2)
        limit = FILTERED_SCAN_MEMORY_LIMIT if scope.has_user_sql else SCAN_MEMORY_LIMIT
        held = scan_buffer_pool(self.connection, limit)
        # A zero vector (a text with no tokens, for some embedders) has no direction: DuckDB
        # scores it NaN, which sorts first; it scores 0, as in the in-memory index.
        with held if self.scan_pool_held_small else nullcontext():
            rows = self.connection.execute(
                "SELECT key, CASE WHEN isnan(cosine) THEN 0.0 ELSE cosine END AS similarity FROM ("
                " SELECT key,"
                f" array_cosine_similarity(embedding, CAST($1 AS FLOAT[{self.dimension}]))"
                f" AS cosine FROM chunks WHERE {condition})"
                " ORDER BY similarity DESC, key LIMIT $2",
                [np.asarray(query, dtype=np.float32).tolist(), depth + TIE_SLACK, *parameters],
            ).fetchall()
        return _ranking(rows, depth)

    def lexical_ranking(self, terms: list[str], depth: int, scope: Scope) -> Ranking:
        if not terms:
            return Ranking.empty()
        condition, parameters = scope.condition(parameter_offset=4)
        library = slices.library_sql(self.slice_keys)
        rows = self.connection.execute(
            f"""
            WITH libraries AS (SELECT key, {library} AS library, token_count FROM chunks),
            searched AS ({self._libraries_searched(scope, library)}),
            lengths AS (
                SELECT library, avg(token_count) AS average_length
                FROM libraries GROUP BY library),
            collection AS (
                SELECT count(*)::DOUBLE AS documents FROM libraries
                WHERE library IN (SELECT library FROM searched)),
            term_postings AS (
                SELECT p.term_id, p.key, p.tf, l.library
                FROM {self.layout.of_terms("$1::VARCHAR[]")} p JOIN libraries l USING (key)),
            frequencies AS (
                SELECT term_id, count(*)::DOUBLE AS df FROM term_postings
                WHERE library IN (SELECT library FROM searched) GROUP BY term_id),
            scored AS (
                SELECT p.key,
                    sum({bm25_idf_sql("f.df", "s.documents")}
                        * {bm25_weight_sql("p.tf", "c.token_count", "l.average_length", "$2", "$3")}
                    ) AS score
                FROM term_postings p
                JOIN frequencies f USING (term_id)
                JOIN lengths l USING (library)
                JOIN chunks c USING (key)
                CROSS JOIN collection s
                WHERE {condition}
                GROUP BY p.key)
            SELECT key, score FROM scored ORDER BY score DESC, key LIMIT $4
            """,
            [terms, BM25_K1, BM25_B, depth + TIE_SLACK, *parameters],
        ).fetchall()
        return _ranking(rows, depth)

    @staticmethod
    def _libraries_searched(scope: Scope, library: str) -> str:
        """A query of the libraries (column ``library``) ``scope`` holds chunks of, in
        ``lexical_ranking``'s statement: BM25's statistics are theirs. The keys a search
        narrows it to (``match="all"``) do not count; an index of no libraries has one."""
        if library == slices.NO_LIBRARY:
            return f"SELECT {library} AS library"
        if not scope.has_user_sql:
            return "SELECT DISTINCT library FROM libraries"
        condition, _ = replace(scope, keys=None).condition(parameter_offset=4)
        return f"SELECT DISTINCT {library} AS library FROM chunks WHERE {condition}"

    def languages(self, scope: Scope) -> list[str]:
        if not self.index_languages.several:
            return [self.index_languages.default]
        condition, parameters = replace(scope, keys=None).condition()
        library = slices.library_sql(self.slice_keys)
        found = self.connection.execute(
            f"SELECT DISTINCT {library} FROM chunks WHERE {condition}", parameters
        ).fetchall()
        return self.index_languages.of_libraries(name for (name,) in found)

    def keys_with_every(self, groups: list[list[str]], scope: Scope) -> np.ndarray:
        terms = [term for group in groups for term in group]
        numbers = [number for number, group in enumerate(groups) for _ in group]
        condition, parameters = scope.condition(parameter_offset=3)
        found = self.connection.execute(
            f"SELECT p.key FROM {self.layout.of_terms('$1::VARCHAR[]')} p"
            f" JOIN (SELECT t.term_id, w.number FROM {self.layout.terms} t"
            "  JOIN (SELECT unnest($1::VARCHAR[]) AS term, unnest($2::INTEGER[]) AS number) w"
            "  USING (term)) w USING (term_id)"
            f" JOIN chunks c USING (key) WHERE {condition}"
            " GROUP BY p.key HAVING count(DISTINCT w.number) = $3 ORDER BY p.key",
            [terms, numbers, len(groups), *parameters],
        ).fetchnumpy()["key"]
        return np.asarray(found, dtype=np.int64)

    def chunks(self, keys: np.ndarray) -> list[Chunk]:
        return chunk_table.by_keys(self.connection, keys)

    def documents(self, keys: np.ndarray) -> list[str]:
        return chunk_table.documents_of(self.connection, keys)


def answer(
    query: Query,
    searcher: Searcher,
    connection: duckdb.DuckDBPyConnection,
    fusion: FusionSettings,
    index_name: str,
) -> SearchResults:
    """Rank, fuse, rescore and fetch the ``top_k`` chunks (``index_name`` names the file in
    errors)."""
    depth, scope, vector, text = query.depth(fusion), query.scope, query.vector, query.lexical_text
    try:
        words_read = text is not None or (query.text is not None and query.match == "all")
        languages = searcher.languages(scope) if words_read else []
        scope, match = _matching_scope(query, searcher, languages)
        by_vector = None if vector is None else searcher.vector_ranking(vector, depth, scope)
        by_text = None
        if text is not None:
            by_text = searcher.lexical_ranking(text.terms(languages), depth, scope)
    except duckdb.Error as error:
        if not scope.has_user_sql:  # no user SQL involved: the file itself is damaged
            raise NotAnIndexError(f"{index_name} cannot be read: {first_line(error)}") from None
        raise InvalidRankingSQLError(f"where/filter: {first_line(error)}") from None
    if by_vector is not None and by_text is not None and not query.vector_reads_text:
        fused = FusedRanking.text_then_vector(by_text, by_vector)
    elif by_vector is not None and by_text is not None:
        fused = fuse(by_vector, by_text, fusion)
    elif by_vector is not None:
        fused = FusedRanking.from_vector(by_vector)
    else:
        assert by_text is not None  # see Query.__post_init__
        fused = FusedRanking.from_text(by_text)
    if query.rescore is not None:
        fused = rescore(connection, fused, query.rescore)
    if query.one_per_source:
        top, chunks = _best_per_source(fused, searcher, query.top_k)
    else:
        top = fused.head(query.top_k)
        chunks = searcher.chunks(top.keys)
    return SearchResults(_hits(chunks, top), match=match)


def _hits(chunks: list[Chunk], top: FusedRanking) -> list[SearchResult]:
    return [
        SearchResult(
            chunk=chunk, score=score, vector_rank=by_vector or None, text_rank=by_text or None
        )
        for chunk, score, by_vector, by_text in zip(
            chunks,
            top.scores.tolist(),
            top.vector_ranks.tolist(),
            top.text_ranks.tolist(),
            strict=True,
        )
    ]


def _matching_scope(query: Query, searcher: Searcher, languages: list[str]) -> tuple[Scope, str]:
    """The query's scope narrowed to chunks with every word, in one of its forms in
    ``languages`` (``match="all"``), and the match that was applied: "any" when not asked, or,
    when no chunk has them all, the fallback."""
    if query.text is None or query.match != "all":
        return query.scope, "any"
    groups = query.text.required(languages)
    if not groups:  # a query with no token: every chunk has them all
        return query.scope, "all"
    keys = searcher.keys_with_every(groups, query.scope)
    if len(keys) == 0:
        return query.scope, MATCH_FELL_BACK
    return replace(query.scope, keys=keys), "all"


# One hit per page: a page is ranked by its best chunk's score plus PAGE_SUPPORT times the
# scores of its next SUPPORTING_CHUNKS chunks among the candidates, so a page that answers in
# several sections outranks one with a single lucky chunk (the values: docs/relevance.md).
PAGE_SUPPORT = 0.3
SUPPORTING_CHUNKS = 2


def _best_per_source(
    fused: FusedRanking, searcher: Searcher, top_k: int
) -> tuple[FusedRanking, list[Chunk]]:
    """The ``top_k`` best pages (sources; a chunk without one is its own), each as its best
    chunk, scored as the page (see ``PAGE_SUPPORT``)."""
    first: dict[str, int] = {}
    support: dict[str, list[float]] = {}
    for position, document in enumerate(searcher.documents(fused.keys)):
        if document not in first:
            first[document], support[document] = position, []
        elif len(support[document]) < SUPPORTING_CHUNKS:
            support[document].append(max(float(fused.scores[position]), 0.0))
    positions = np.fromiter(first.values(), dtype=np.int64, count=len(first))
    scores = fused.scores[positions] + PAGE_SUPPORT * np.fromiter(
        (sum(extra) for extra in support.values()), dtype=np.float64, count=len(first)
    )
    order = np.argsort(-scores, kind="stable")[:top_k]  # ties: the better best chunk first
    pages = replace(fused.at(positions[order]), scores=scores[order])
    return pages, searcher.chunks(pages.keys)


def rescore(
    connection: duckdb.DuckDBPyConnection, fused: FusedRanking, expression: str
) -> FusedRanking:
    """Re-order the fused candidates by a caller's SQL expression over their columns."""
    candidates = {
        "key": fused.keys,
        "score": fused.scores,
        "vector_rank": np.ma.masked_equal(fused.vector_ranks, 0),
        "text_rank": np.ma.masked_equal(fused.text_ranks, 0),
    }
    with registered(connection, "fused_candidates", candidates):
        result = execute_user_sql(
            connection,
            f"SELECT key, CAST(({expression}) AS DOUBLE) AS score,"
            " coalesce(vector_rank, 0), coalesce(text_rank, 0)"
            " FROM fused_candidates JOIN chunks USING (key)"
            " ORDER BY score DESC NULLS LAST, key",
            [],
        ).fetchnumpy()
    columns = list(result.values())
    return FusedRanking(
        np.asarray(columns[0], dtype=np.int64),
        np.nan_to_num(np.asarray(columns[1], dtype=np.float64), nan=-np.inf),
        np.asarray(columns[2], dtype=np.int64),
        np.asarray(columns[3], dtype=np.int64),
    )


def _ranking(rows: list[tuple[Any, ...]], depth: int) -> Ranking:
    if not rows:
        return Ranking.empty()
    keys, scores = zip(*rows, strict=True)
    return Ranking.ordered(np.asarray(keys, dtype=np.int64), np.asarray(scores), depth)
