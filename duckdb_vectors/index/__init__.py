"""The index file: one module owns each table and holds every statement on it.

``db`` (connections, transactions), ``schema`` (the versioned migrations), ``chunk_table``
(chunks), ``vector_codes`` (int8 codes), ``postings`` (terms, postings, word forms),
``documents``, ``slices``, ``manifest`` (index metadata), ``terms`` (the BM25 terms of a chunk
and of a query), ``languages`` (the language each library's words are read in), ``plain_sql``
(the read-only view and SQL search macros), ``retokenize`` (rewriting postings when the
tokenizer or a language changes).
"""
