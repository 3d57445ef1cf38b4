"""Every dotted ``plugin.…`` name cited in the shipped data (index templates, pipelines, the
configuration files) names a module or attribute that exists: a moved function leaves no
stale pointer behind in JSON, where no import would catch it."""
import importlib
import re

import pytest

from tests.conftest import ROOT

DOTTED = re.compile(r"\bplugin(?:\.[A-Za-z_]\w*)+")
FILES = sorted([*(ROOT / "index_templates").rglob("*.json"), *(ROOT / "plugin").glob("**/configs/*.json")])


def _references() -> list[tuple[str, str]]:
    """``(file, dotted name)`` for every name in the files' text."""
    return sorted({(str(path.relative_to(ROOT)), ref) for path in FILES
                   for ref in DOTTED.findall(path.read_text(encoding="utf-8"))})


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_data_cites_plugin_names():
    """The walk finds the citations it guards (the fusion pipelines cite their client twins)."""
    refs = {ref for _, ref in _references()}
    assert {"plugin.search.fuse.rrf_fuse", "plugin.search.fuse.minmax_fuse"} <= refs


@pytest.mark.parametrize("where, dotted", _references())
def test_every_dotted_plugin_reference_resolves(where, dotted):
    assert _resolves(dotted), f"{where} cites {dotted}, which is not an importable module or attribute"
