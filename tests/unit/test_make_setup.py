"""What `make` sets up for verification, read from the Makefile and the scripts it runs: WordNet
where the settings look for it, and the local LLM named as its blend weight is recorded."""
import json
import re

from plugin.settings import Settings

from tests.conftest import ROOT

MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def prerequisites(target: str) -> list[str]:
    found = re.search(rf"^{re.escape(target)}:([^\n=]*)$", MAKEFILE, re.M)
    assert found, f"the Makefile has a {target} target"
    return found.group(1).split()


def test_up_demo_and_test_provide_wordnet_before_anyone_scores():
    """`evaluate-verification` needs WordNet (METEOR): `make up`, and so `make demo` and `make
    test`, fetch it; nobody runs scripts/wordnet.sh by hand."""
    assert "wordnet" in prerequisites("up")
    for target in ("demo", "test"):
        assert "up" in prerequisites(target) or "wordnet" in prerequisites(target)
    assert re.search(r"^wordnet:\n\tscripts/wordnet\.sh$", MAKEFILE, re.M)


def test_wordnet_lands_where_the_settings_look_for_it(monkeypatch):
    """scripts/wordnet.sh writes ${FACTSIEVE_CACHE:-<repo>/.cache}/nltk_data; make exports the same
    folder, and a `factsieve` command run in the repo root without it finds it by default."""
    script = (ROOT / "scripts" / "wordnet.sh").read_text(encoding="utf-8")
    assert 'CACHE="${FACTSIEVE_CACHE:-$ROOT/.cache}"' in script
    assert 'DEST="$CACHE/nltk_data/corpora/wordnet"' in script
    assert "export FACTSIEVE_NLTK_DATA_DIR ?= $(or $(FACTSIEVE_CACHE),$(CURDIR)/.cache)/nltk_data" in MAKEFILE
    monkeypatch.delenv("FACTSIEVE_NLTK_DATA_DIR", raising=False)
    monkeypatch.chdir(ROOT)
    default = Settings(_env_file=None).nltk_data_dir
    assert (ROOT / default).resolve() == (ROOT / ".cache" / "nltk_data").resolve()


def test_make_names_the_local_llm_as_its_server_reports_it_and_its_blend_weight_is_recorded():
    from plugin.verify.blend import load_table

    server = (ROOT / "scripts" / "llm_server.py").read_text(encoding="utf-8")
    alias = re.search(r'^ALIAS = "([^"]+)"', server, re.M).group(1)
    # only where make also points FACTSIEVE_LLM_URL at the local server
    assert re.search(rf"^ifndef FACTSIEVE_LLM_URL\nexport FACTSIEVE_LLM_MODEL \?= {re.escape(alias)}\nendif$",
                     MAKEFILE, re.M)
    assert alias in load_table()["models"], "run `factsieve blend-weight choose --write FILE` for the local LLM and commit FILE over the packaged table"
    assert json.loads(json.dumps(load_table()))  # weights only, plain JSON
