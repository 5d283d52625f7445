"""The exact-token tokenizer: no stemming, no stop words, codes kept whole, CJK split."""

from __future__ import annotations

from duckdb_vectors.tokenizer import tokenize


def test_case_folded_words_without_stemming_or_stop_words() -> None:
    assert tokenize("The Databases are RUNNING") == ["the", "databases", "are", "running"]


def test_codes_and_identifiers_stay_whole_and_also_give_their_parts() -> None:
    assert tokenize("S3 E1234 array_cosine_distance") == ["s3", "e1234", "array_cosine_distance"]
    assert tokenize("use v2.0.") == ["use", "v2.0", "v2", "0"]
    assert tokenize("duckdb-vectors") == ["duckdb-vectors", "duckdb", "vectors"]


def test_punctuation_is_not_part_of_a_token() -> None:
    assert tokenize("(hello), world! ...") == ["hello", "world"]


def test_cyrillic_greek_and_accents() -> None:
    assert tokenize("Привет, Мир! Ελληνικά café") == ["привет", "мир", "ελληνικά", "café"]


def test_nfkc_folds_compatibility_forms() -> None:
    assert tokenize("ＤｕｃｋＤＢ ﬁle") == ["duckdb", "file"]


def test_chinese_and_japanese_give_characters_and_bigrams() -> None:
    assert tokenize("数据库") == ["数", "据", "库", "数据", "据库"]
    assert "データ" not in tokenize("データベース")  # only unigrams and bigrams
    assert {"デー", "ータ", "ベー"} <= set(tokenize("データベース"))


def test_cjk_punctuation_is_dropped() -> None:
    assert tokenize("首都。") == ["首", "都", "首都"]


def test_devanagari_combining_marks_stay_in_the_word() -> None:
    assert tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
