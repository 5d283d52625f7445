"""Ranking: the BM25 and vector rankings, their fusion, and the searchers that produce them.

``answer`` (scopes, the SQL searcher, fusion of the two rankings), ``memory_index`` (the
in-memory searcher of a long-lived process), ``ranking`` (ties, fusion weights),
``quantization`` (int8 ranking with exact rescoring), ``user_sql`` (a caller's ranking SQL).
"""
