"""parse_int: the one rule for integers a user typed (query parameters, CLI values)."""
from __future__ import annotations

import pytest

from plugin.errors import BadInput
from plugin.params import parse_int


@pytest.mark.parametrize(("raw", "expected"), [
    ("1", 1), ("500", 500), ("050", 50), ("-3", -3), ("0", 0),
])
def test_integers_in_range(raw, expected):
    assert parse_int("limit", raw, lo=-5, hi=500) == expected


@pytest.mark.parametrize("raw", [
    "²",  # isdigit() is true, int() raises: the 500 this fixes
    "①", "١٢", "１２",  # int() takes Arabic-Indic and full-width digits; a URL does not mean them
    "", "-", " 7", "7 ", "+7", "7_0", "1e3", "7.0", "0x10", "--1",
    "501", "-6", "9" * 19, "9" * 5000,  # out of range; too long for int() to be asked
])
def test_anything_else_is_bad_input_naming_the_parameter(raw):
    with pytest.raises(BadInput) as err:
        parse_int("limit", raw, lo=-5, hi=500)
    assert err.value.status == 400 and err.value.exit_code == 2
    assert err.value.detail.startswith("limit must be an integer from -5 to 500, got ")
    assert err.value.errors[0]["field"] == "limit"
    assert len(err.value.detail) < 120  # a 5,000-character value is not echoed whole


def test_fold_and_docs_flags(monkeypatch):
    from cli.train import _fold

    assert _fold("0/3") == (0, 3) and _fold(None) is None
    for bad in ("0/²", "²/3", "0-3", "a/b", "0/3/1"):
        with pytest.raises(BadInput):
            _fold(bad)


@pytest.mark.parametrize("docs", ["²", "100,x", "0", "100,,²"])
def test_bench_docs_is_exit_2_before_anything_loads(capsys, docs):
    from cli.main import main

    assert main(["bench", "--docs", docs, "--dataset", "/nonexistent"]) == 2
    assert "--docs must be an integer" in capsys.readouterr().err
