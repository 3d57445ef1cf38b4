"""WordNet 3.0 for METEOR's synonym stage, from a folder that ``scripts/wordnet.sh`` fills.

nltk's downloader cannot reach its host here, so WordNet comes from Debian's packages instead
(same WordNet 3.0 database). nltk only reads corpora from folders on ``nltk.data.path``, so the
folder is appended there. Without WordNet, METEOR would silently lose its synonym matches and
every AVeriTeC number would drift, so a missing corpus is an error, never a fallback.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from plugin.errors import FactSieveError

SETUP_HINT = ("get it with `make wordnet` (it runs `scripts/wordnet.sh`: WordNet 3.0 from Debian's "
              "wordnet-base into <cache>/nltk_data/corpora/wordnet; `make demo` and `make test` do it "
              "too), or point FACTSIEVE_NLTK_DATA_DIR at a folder holding corpora/wordnet")


class WordNetMissing(FactSieveError):
    """WordNet is not where nltk is told to look; METEOR cannot be computed faithfully."""

    #: exit 2 like any setup the command is missing (the message says how to get it)
    status, exit_code, title = 503, 2, "WordNet unavailable"


def ensure_wordnet(nltk_data: str | Path) -> Any:
    """Point nltk at ``nltk_data`` (the folder holding ``corpora/wordnet``) and load WordNet.

    Returns nltk's WordNet reader (version 3.0), loaded now rather than lazily in the middle of
    scoring. Safe to call more than once. Raises :class:`WordNetMissing` naming the setup script.
    """
    import nltk

    folder = Path(nltk_data).expanduser().resolve()
    if not (folder / "corpora" / "wordnet" / "lexnames").is_file():
        raise WordNetMissing(f"WordNet not found under {folder / 'corpora' / 'wordnet'}: {SETUP_HINT}")
    if str(folder) not in nltk.data.path:
        nltk.data.path.append(str(folder))
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
    except LookupError as err:
        raise WordNetMissing(f"nltk cannot load WordNet from {folder}: {SETUP_HINT}") from err
    return wordnet
