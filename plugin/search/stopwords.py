"""Which words of a post are stop words, for the BM25 query (``queries.bm25_clauses``).

The language-neutral fields (``claim``, ``title``: ``fs_neutral``) keep every word, stop words
included, so that a post worded like the fact-check gains from the small words it shares with
it. But a stop word's postings cover nearly the whole corpus: searching them is most of what a
BM25 query costs at a million fact-checks, for a small share of any score. So the query selects
its candidates without the neutral fields' stop words and adds their part back, exactly, to the
candidates it keeps (a rescore): see ``queries.bm25_clauses``.

The lists are the defaults of the Lucene analyzers the analysed fields use (``stopwords.json``,
written by ``scripts/make_stopwords.py`` from the Lucene jar OpenSearch ships); Polish uses our
own analyzer, whose list is the component template's ``fs_pl_stop`` filter and is read from
there. A language without a list has no stop words here: its query is not split.
"""
from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

from plugin.index.bodies import load_template

_KANA_HAN = "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: A word as the split sees it: a run of letters and digits (apostrophes inside kept, as the
#: standard tokenizer keeps "don't"); Han and kana never count as stop words.
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_CJK = re.compile(f"[{_KANA_HAN}]")


@cache
def stopwords(lang: str | None) -> frozenset[str]:
    """The stop words of ``lang``'s analyser (lower case; empty for a language without one)."""
    if not lang:
        return frozenset()
    if lang == "pl":
        analysis = load_template("component/factsieve-factcheck-fields")["template"]["settings"]["analysis"]
        return frozenset(w.lower() for w in analysis["filter"]["fs_pl_stop"]["stopwords"])
    data = json.loads(resources.files("plugin.search").joinpath("stopwords.json").read_text(encoding="utf-8"))
    return frozenset(data.get(lang, ()))


def split_stopwords(text: str, lang: str | None) -> tuple[str, str]:
    """``(content, stop)``: ``text`` with ``lang``'s stop words blanked out (everything else
    exactly as written), and those stop words joined by spaces (pure)."""
    stop = stopwords(lang)
    if not stop:
        return text, ""
    found: list[str] = []

    def blank(m: re.Match[str]) -> str:
        word = m.group(0)
        if word.lower() in stop and not _CJK.search(word):
            found.append(word)
            return " "
        return word

    content = _WORD.sub(blank, text)
    return content, " ".join(found)
