"""The pure parts of ``factsieve learn reranker``'s training step."""
from __future__ import annotations

from plugin.learn.reranker_data import DecisionGroup
from plugin.learn.reranker_train import as_training, padded


def test_padded_cuts_or_repeats_in_order() -> None:
    assert padded(("a", "b"), 5) == ("a", "b", "a", "b", "a")
    assert padded(("a", "b", "c"), 2) == ("a", "b")
    assert padded((), 3) == ()


def test_flipped_labels_swap_the_positive_with_the_first_negative() -> None:
    g = DecisionGroup("p", "en", "RT @x: A claim https://t.co/x", "pos", ("n1", "n2"))
    texts = {"pos": "P", "n1": "N1", "n2": "N2"}
    plain, flipped = as_training(g, texts), as_training(g, texts, flip=True)
    assert (plain.positive, plain.negatives) == ("P", ("N1", "N2"))
    assert (flipped.positive, flipped.negatives) == ("N1", ("P", "N2"))
    assert "https" not in plain.query  # the post as the matcher hands it to a reranker


def test_serving_code_never_imports_the_trainer_the_lab_or_the_builder() -> None:
    """The training step is a production step: only the CLI (and scripts, tests) import it."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    banned = ("plugin.lab", "plugin.build", "plugin.learn.reranker_train", "plugin.learn.train")
    trainer = root / "plugin" / "learn" / "train"
    serving = [p for d in ("plugin/learn", "plugin/search", "plugin/service", "plugin/review", "api", "workers")
               for p in (root / d).rglob("*.py") if p.name != "reranker_train.py" and trainer not in p.parents]
    offending = []
    for path in serving:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offending += [f"{path.relative_to(root)}: {n}" for n in names if n.startswith(banned)]
    assert offending == []


def test_the_device_is_cpu_or_the_accelerator_jax_finds() -> None:
    import pytest

    from plugin.errors import BadInput
    from plugin.learn.reranker_train import LearnOptions

    assert LearnOptions(device="auto").validated().device == "auto"
    with pytest.raises(BadInput, match="--device must be cpu or auto"):
        LearnOptions(device="gpu").validated()
