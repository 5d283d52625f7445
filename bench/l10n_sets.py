"""Retrieval sets in Korean and Khmer, made from translations that Debian ships.

The evaluation data in ../shared has no Korean, Thai, Lao, Khmer or Burmese, so these two
sets are built from real translated text (BEIR layout, one relevant document per query):

- ``ko-debian-descriptions``: the Korean package descriptions of the Debian Description
  Translation Project (``Translation-ko``, fetched by ``apt-get update``). Query: a package's
  short description ("고대 전쟁 실시간 전략 게임"); relevant document: its long description.
  Queries whose short or long description is shared by another package are left out.
- ``km-libreoffice-help``: the Khmer LibreOffice help (``libreoffice-help-km``). Query: a
  page's title; document: the page without its title heading, navigation and footer. Only
  pages mostly in Khmer give a query; every page is a document.
- ``th-gettext-phrases`` and ``my-gettext-phrases``: the Thai and Burmese message catalogs of
  the packages installed here (``/usr/share/locale/<language>/LC_MESSAGES/*.mo``: apt, dpkg,
  GTK, GLib...). Documents: the translations of the longer messages (6+ English words). Query:
  the translation of a short message (1-3 English words, say "Remove package"); relevant: the
  documents whose English original contains that phrase (1 to 10 of them). Translators do not
  always reuse their wording, so not every judged document holds the query's words; that noise
  is the same for every tokenizer compared.

Zero-width spaces (word hints some Khmer and Burmese translators insert; most text in these
scripts has none) are removed from every set.

    python bench/l10n_sets.py /tmp/l10n-sets    # needs apt-get (root) and the package mirror

Used by ``bench/tokenizer_scripts.py``.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import html
import json
import re
import subprocess
import tempfile
from collections import Counter
from gettext import GNUTranslations
from pathlib import Path

HANGUL = re.compile(r"[\uac00-\ud7a3]")
KHMER = re.compile(r"[\u1780-\u17ff]")
Corpus = dict[str, str]
Queries = dict[str, tuple[str, list[str]]]  # query id: (text, relevant document ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the sets into")
    out = parser.parse_args().out
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        write(out / "ko-debian-descriptions", *korean_descriptions(fetch_translation(work, "ko")))
        write(
            out / "km-libreoffice-help", *khmer_help(extract_package(work, "libreoffice-help-km"))
        )
    for language in ("th", "my"):
        write(out / f"{language}-gettext-phrases", *gettext_phrases(language))


def fetch_translation(work: Path, language: str) -> str:
    """The DDTP ``Translation-<language>`` file, fetched into a private apt lists folder."""
    lists = work / "lists"
    (lists / "partial").mkdir(parents=True)
    options = ["-o", f"Dir::State::Lists={lists}", "-o", f"Acquire::Languages={language}"]
    subprocess.run(["apt-get", "update", "-qq", *options], check=True)
    (found,) = lists.glob(f"*main_i18n_Translation-{language}*")
    unpack = {".lz4": ["lz4", "-dc"], ".xz": ["xz", "-dc"], ".gz": ["gzip", "-dc"]}
    command = unpack.get(found.suffix, ["cat"])
    return subprocess.run([*command, str(found)], check=True, capture_output=True).stdout.decode()


def extract_package(work: Path, package: str) -> Path:
    subprocess.run(["apt-get", "download", "-qq", package], check=True, cwd=work)
    (deb,) = work.glob(f"{package}_*.deb")
    root = work / package
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


def korean_descriptions(translation: str) -> tuple[Corpus, Queries]:
    entries = []
    for block in translation.split("\n\n"):
        package = re.search(r"^Package: (.+)$", block, re.M)
        description = re.search(r"^Description-ko: (.*)\n((?: .*\n?)*)", block, re.M)
        if package and description:
            lines = [line[1:] for line in description.group(2).splitlines()]
            long = "\n".join("" if line == "." else line for line in lines).strip()
            entries.append((package.group(1), description.group(1).strip(), long))
    shorts = Counter(short for _, short, _ in entries)
    longs = Counter(long for _, _, long in entries)
    corpus: Corpus = {}
    queries: Queries = {}
    seen: set[str] = set()
    for package, short, long in entries:
        if not long or long in seen:
            continue  # a text shared by several packages is one document
        seen.add(long)
        corpus[package] = long
        if shorts[short] == 1 and longs[long] == 1 and len(HANGUL.findall(short)) >= 2:
            queries[f"q-{package}"] = (short, [package])
    return corpus, queries


def khmer_help(root: Path) -> tuple[Corpus, Queries]:
    pages = {}
    folder = root / "usr/share/libreoffice/help/km"
    for path in glob.glob(f"{folder}/text/**/*.html", recursive=True):
        raw = Path(path).read_text(encoding="utf-8")
        title = re.search(r"<title>(.*?)</title>", raw, re.S)
        if title:
            pages[str(Path(path).relative_to(folder))] = (
                _plain(title.group(1)).strip(),
                _help_body(raw),
            )
    titles = Counter(title for title, _ in pages.values())
    corpus = {page: body for page, (_, body) in pages.items() if body}
    queries = {
        f"q-{page}": (title, [page])
        for page, (title, body) in pages.items()
        if body
        and titles[title] == 1
        and len(KHMER.findall(title)) >= 4
        and len(KHMER.findall(body)) > 0.3 * len(body)
    }
    return corpus, queries


def gettext_phrases(language: str) -> tuple[Corpus, Queries]:
    translations: dict[str, str] = {}
    for path in sorted(glob.glob(f"/usr/share/locale/{language}/LC_MESSAGES/*.mo")):
        with open(path, "rb") as handle:
            catalog = GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        for english, translated in catalog.items():
            usable = isinstance(english, str) and english and isinstance(translated, str)
            if usable and translated.strip() and translated != english:
                translations.setdefault(english, translated.replace("\u200b", ""))
    words = {english: re.findall(r"[a-z]+", english.lower()) for english in translations}
    documents = {english: f" {' '.join(w)} " for english, w in words.items() if len(w) >= 6}
    ids = {english: f"m{number}" for number, english in enumerate(documents)}
    corpus = {ids[english]: translations[english] for english in documents}
    queries: Queries = {}
    for english, phrase in words.items():
        if not 1 <= len(phrase) <= 3 or len(phrase[0]) < 3 or re.search(r"[%\\_]", english):
            continue
        found = f" {' '.join(phrase)} "
        relevant = [ids[d] for d, text in documents.items() if found in text and d != english]
        if 1 <= len(relevant) <= 10:
            queries[f"q{len(queries)}"] = (translations[english], relevant)
    return corpus, queries


def _help_body(raw: str) -> str:
    body = re.sub(r"<script.*?</script>|<head.*?</head>", " ", raw, flags=re.S)
    body = re.sub(r"<h1.*?</h1>", " ", body, count=1, flags=re.S)
    body = _plain(body).split("Help content debug info")[0]
    body = re.sub(r"LibreOffice [\d.]+ Help\s+Module\s+Contents\s+Index\s+\S*", " ", body)
    return re.sub(r"\s*\n\s*", "\n", re.sub(r"[ \t]+", " ", body)).strip()


def _plain(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", markup)).replace("\u200b", "")


def write(folder: Path, corpus: Corpus, queries: Queries) -> None:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "corpus.jsonl.gz", "wt", encoding="utf-8") as handle:
        for doc_id, text in corpus.items():
            record = {"_id": doc_id, "title": "", "text": text}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for query_id, (text, _) in queries.items():
            handle.write(json.dumps({"_id": query_id, "text": text}, ensure_ascii=False) + "\n")
    with (folder / "qrels" / "test.tsv").open("w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        handle.writelines(
            f"{query_id}\t{doc}\t1\n" for query_id, (_, docs) in queries.items() for doc in docs
        )
    print(f"{folder.name}: {len(corpus)} documents, {len(queries)} queries")


if __name__ == "__main__":
    main()
