"""Write ``plugin/search/stopwords.json``: the stop words of the language analyzers the fact-check
fields use (``index_templates/component/factsieve-factcheck-fields.json``), read from the Lucene
jar OpenSearch ships (Lucene's defaults for those analyzers; Apache-2.0, the Snowball lists BSD).

    .venv/bin/python scripts/make_stopwords.py [path/to/lucene-analysis-common-*.jar]

Default jar: the one under ``.cache/opensearch`` that ``scripts/services.sh`` installed. English
is Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` (a constant in the code, not a file).
Polish has no list here: its analyzer is ours (``fs_pl_stop`` in the component template), and
``plugin.search.stopwords`` reads it from there.
"""
from __future__ import annotations

import glob
import json
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "plugin" / "search" / "stopwords.json"
#: analyzer language → the resource its Lucene analyzer loads by default, and the file's format
FILES = {
    "es": ("org/apache/lucene/analysis/snowball/spanish_stop.txt", "snowball"),
    "fr": ("org/apache/lucene/analysis/snowball/french_stop.txt", "snowball"),
    "de": ("org/apache/lucene/analysis/snowball/german_stop.txt", "snowball"),
    "pt": ("org/apache/lucene/analysis/snowball/portuguese_stop.txt", "snowball"),
    "ar": ("org/apache/lucene/analysis/ar/stopwords.txt", "lines"),
    "tr": ("org/apache/lucene/analysis/tr/stopwords.txt", "lines"),
    "th": ("org/apache/lucene/analysis/th/stopwords.txt", "lines"),
    "ms": ("org/apache/lucene/analysis/id/stopwords.txt", "lines"),  # fs_ms is the indonesian analyzer
    "ko": ("org/apache/lucene/analysis/cjk/stopwords.txt", "lines"),  # fs_ko is the cjk analyzer
    "hi": ("org/apache/lucene/analysis/hi/stopwords.txt", "lines"),
}
ENGLISH = ("a an and are as at be but by for if in into is it no not of on or such that the their "
           "then there these they this to was will with").split()


def parse(text: str, fmt: str) -> list[str]:
    words = []
    for line in text.splitlines():
        if fmt == "snowball":
            words += line.split("|", 1)[0].split()
        elif line.strip() and not line.lstrip().startswith("#"):
            words.append(line.strip())
    return sorted(set(w.lower() for w in words))


def main() -> None:
    jar = sys.argv[1] if len(sys.argv) > 1 else next(iter(sorted(glob.glob(
        str(ROOT / ".cache/opensearch/opensearch-*/lib/lucene-analysis-common-*.jar")))), None)
    if jar is None:
        sys.exit("no lucene-analysis-common jar: run `make up` first or pass its path")
    out = {"source": f"Lucene {Path(jar).stem.rsplit('-', 1)[-1]} analyzer defaults ({Path(jar).name})",
           "en": ENGLISH}
    with zipfile.ZipFile(jar) as z:
        for lang, (name, fmt) in FILES.items():
            out[lang] = parse(z.read(name).decode("utf-8"), fmt)
    OUT.write_text(json.dumps(out, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({', '.join(f'{k} {len(v)}' for k, v in out.items() if k != 'source')})")


if __name__ == "__main__":
    main()
