"""The production torch path for real: sentence-transformers' ``SentenceTransformer`` (through
``load_embedder``) on the packaged multilingual-e5-small folder, and its ``CrossEncoder`` (through
the reranker module) on a tiny random ``BertForSequenceClassification`` folder.

Both run only where torch and sentence-transformers are installed (``pip install
'factsieve[torch]'``, what ``make test-torch`` does and runs them with); marked ``torch``, they are
left out of ``make test``, and skipped wherever the extra is missing. An installed but broken torch is not skipped: it fails. Tests that need the built e5 folder
are marked ``model``. The tiny cross-encoder is random: its scores mean nothing; the tests check
that the torch path computes what the ONNX path and a numpy forward pass compute, in input
order, whatever the batching, with the same truncation.
"""
from __future__ import annotations

import copy
import importlib
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from plugin.settings import TEST_MODEL, Settings
from tests.tiny_cross_encoder import (TINY_CE, numpy_logit, random_cross_encoder, word_tokenizer,
                                      write_tiny_cross_encoder)

# Found, not imported: collecting this module stays cheap (importing sentence_transformers takes
# ~12 s on 2 cores), and a torch that is installed but cannot load fails the tests, not skips them.
_MISSING = [name for name in ("torch", "sentence_transformers")
            if importlib.util.find_spec(name) is None]

pytestmark = [pytest.mark.torch, pytest.mark.skipif(
    bool(_MISSING),
    reason=f"{' and '.join(_MISSING)} not installed: pip install 'factsieve[torch]'")]

QUERY = "w1 w2 w3"
PASSAGES = ["w4 w5", "w6", "w7 w8 w9 w10 w11 w12", "w13 w14 w15", "w1 w2", "w16 w17 w18 w19",
            "w20", "w21 w22 w23 w24 w25 w26 w27 w28"]
#: 60 words: with ``QUERY`` far past TINY_CE's 24 positions, so it must be truncated
LONG_PASSAGE = " ".join(f"w{i}" for i in range(30, 90))

# The same claims in several scripts (index i is the same claim in every language).
CLAIMS = {
    "en": ["The COVID-19 vaccine changes your DNA.",
           "Drinking hot water with lemon cures cancer.",
           "5G towers spread the coronavirus.",
           "The 1969 moon landing was filmed in a studio."],
    "es": ["La vacuna contra el COVID-19 modifica tu ADN.",
           "Beber agua caliente con limón cura el cáncer.",
           "Las antenas 5G propagan el coronavirus.",
           "El alunizaje de 1969 se grabó en un estudio."],
    "hi": ["कोविड-19 का टीका आपके डीएनए को बदल देता है।",
           "नींबू के साथ गर्म पानी पीने से कैंसर ठीक हो जाता है।",
           "5जी टावर कोरोना वायरस फैलाते हैं।",
           "1969 में चांद पर उतरने की घटना एक स्टूडियो में फिल्माई गई थी।"],
    "ar": ["لقاح كوفيد-19 يغير الحمض النووي الخاص بك.",
           "شرب الماء الساخن مع الليمون يعالج السرطان.",
           "أبراج الجيل الخامس تنشر فيروس كورونا.",
           "تم تصوير الهبوط على القمر عام 1969 في استوديو."],
    "ko": ["코로나19 백신은 당신의 DNA를 바꾼다.",
           "레몬을 넣은 뜨거운 물을 마시면 암이 치료된다.",
           "5G 기지국이 코로나바이러스를 퍼뜨린다.",
           "1969년 달 착륙은 스튜디오에서 촬영되었다."],
}
TEXTS = [t for texts in CLAIMS.values() for t in texts]
#: mixed scripts, far longer than ``max_seq_length`` tokens: both backends must cut it the same way
LONG_TEXT = " ".join(TEXTS * 12)

# Measured (sentence-transformers 6.2, transformers 5.23, torch 2.13 on CPU, onnxruntime 1.32) on
# the texts above: torch vs ONNX fp32 cosine >= 0.9999999 (the same weights, the same tokens),
# vs ONNX int8 >= 0.9939 (passages) / 0.9951 (queries).
FP32_COSINE = 0.9999
INT8_COSINE = 0.985


def rerank_module() -> ModuleType:
    """The reranker module, where it lives now (``plugin.search.rerank``) or used to live."""
    try:
        return importlib.import_module("plugin.search.rerank")
    except ModuleNotFoundError as exc:
        if exc.name not in ("plugin.search", "plugin.search.rerank"):
            raise
        return importlib.import_module("plugin.rerank")


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# -- the embedder on the packaged e5 folder -----------------------------------------------------
@pytest.fixture(scope="module")
def e5_settings() -> Settings:
    return Settings(embedding_model=TEST_MODEL, embedding_backend="sentence-transformers",
                    query_prefix="query: ", passage_prefix="passage: ", max_seq_length=256,
                    embedding_batch_size=8)


@pytest.fixture(scope="module")
def e5_dir(e5_settings: Settings) -> Path:
    from plugin.embedding import rebuilt_model_dir
    from plugin.errors import ModelUnavailable
    from plugin.build import build_test_model

    try:  # at once when `factsieve model build` already wrote it
        return build_test_model(rebuilt_model_dir(e5_settings))
    except ModelUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def st_loaded(e5_dir: Path, e5_settings: Settings):
    """The embedder ``load_embedder`` builds, and every warning building it raised."""
    import warnings

    from plugin.embedding import SentenceTransformerEmbedder, load_embedder

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emb = load_embedder(e5_settings)
    assert isinstance(emb, SentenceTransformerEmbedder)
    return emb, caught


@pytest.fixture(scope="module")
def st(st_loaded):
    return st_loaded[0]


@pytest.fixture(scope="module")
def onnx_fp32(e5_dir: Path, e5_settings: Settings):
    from plugin.embedding import OnnxEmbedder

    return OnnxEmbedder(e5_dir, TEST_MODEL, query_prefix=e5_settings.query_prefix,
                        passage_prefix=e5_settings.passage_prefix,
                        max_seq_length=e5_settings.max_seq_length,
                        model_file=e5_dir / "onnx" / "model.onnx")


@pytest.fixture(scope="module")
def onnx_int8(e5_dir: Path, e5_settings: Settings):
    from plugin.embedding import OnnxEmbedder, load_embedder

    emb = load_embedder(e5_settings.model_copy(update={"embedding_backend": "onnx"}))
    assert isinstance(emb, OnnxEmbedder) and emb.model_path.name == "model_int8.onnx"
    return emb


@pytest.mark.model
def test_loading_the_embedder_warns_nothing(st_loaded) -> None:
    """The ``st`` fixture records (rather than raises) what loading warned, so one deprecated
    call fails this test alone instead of every test that needs the embedder."""
    messages = [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
                for w in st_loaded[1]]
    assert not messages, messages


@pytest.mark.model
def test_loads_the_packaged_folder(st, e5_settings: Settings) -> None:
    assert st.name == TEST_MODEL and st.dim == 384
    assert st.batch_size == e5_settings.embedding_batch_size
    assert st.query_prefix == "query: " and st.passage_prefix == "passage: "


@pytest.mark.model
def test_embeddings_are_normalised_float32(st) -> None:
    for out in (st.encode_queries(TEXTS), st.encode_passages(TEXTS)):
        assert out.shape == (len(TEXTS), 384) and out.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert st.encode_queries([]).shape == (0, 384)
    with pytest.raises(TypeError):
        st.encode_passages("a single str")


@pytest.mark.model
@pytest.mark.parametrize("side", ["queries", "passages"])
def test_agrees_with_the_onnx_backends(st, onnx_fp32, onnx_int8, side: str) -> None:
    torch_out = getattr(st, f"encode_{side}")(TEXTS)
    fp32 = _cos(torch_out, getattr(onnx_fp32, f"encode_{side}")(TEXTS))
    int8 = _cos(torch_out, getattr(onnx_int8, f"encode_{side}")(TEXTS))
    assert fp32.min() > FP32_COSINE, fp32.min()
    assert int8.min() > INT8_COSINE, int8.min()


@pytest.mark.model
def test_prefixes_are_applied(st, onnx_fp32) -> None:
    bare = copy.copy(onnx_fp32)  # the same session, no prefixes of its own
    bare.query_prefix = bare.passage_prefix = ""
    texts = TEXTS[::2]  # every language
    q, p = st.encode_queries(texts), st.encode_passages(texts)
    assert _cos(q, bare.encode_passages(["query: " + t for t in texts])).min() > FP32_COSINE
    assert _cos(p, bare.encode_passages(["passage: " + t for t in texts])).min() > FP32_COSINE
    # without its prefix a text lands elsewhere (measured: cosine at most 0.9954 to the
    # unprefixed vector, 0.979 between query and passage): far below the fp32 agreement
    assert _cos(q, bare.encode_passages(texts)).max() < 0.999
    assert _cos(q, p).max() < 0.999


@pytest.mark.model
def test_truncates_like_the_onnx_backend(st, onnx_fp32) -> None:
    a, b = st.encode_queries([LONG_TEXT]), onnx_fp32.encode_queries([LONG_TEXT])
    assert _cos(a, b)[0] > FP32_COSINE
    longer = st.encode_queries([LONG_TEXT + " and then something else entirely"])
    assert _cos(a, longer)[0] > 0.99999  # the tail past max_seq_length is cut off


@pytest.mark.model
def test_rows_follow_input_order_whatever_the_batch(st) -> None:
    texts = TEXTS[::-1]  # lengths vary: sentence-transformers sorts them internally
    together = st.encode_passages(texts)  # batches of 8 (e5_settings)
    alone = np.vstack([st.encode_passages([t]) for t in texts[1::6]])
    np.testing.assert_allclose(together[1::6], alone, atol=2e-5)


@pytest.mark.model
def test_cross_lingual_partner_ranks_first(st) -> None:
    queries = {lang: st.encode_queries(texts) for lang, texts in CLAIMS.items()}
    passages = {lang: st.encode_passages(texts) for lang, texts in CLAIMS.items()}
    misses = [(ql, pl, i, int(best))
              for ql, q in queries.items() for pl, p in passages.items() if ql != pl
              for i, best in enumerate((q @ p.T).argmax(axis=1)) if best != i]
    assert not misses, misses


# -- the cross-encoder on a tiny random folder --------------------------------------------------
def write_hf_cross_encoder(folder: Path, seed: int = 0) -> Path:
    """``random_cross_encoder``'s weights as a Hugging Face BertForSequenceClassification folder
    (safetensors, config, the word-level tokenizer) that ``CrossEncoder`` loads offline."""
    from safetensors.numpy import save_file

    shape = TINY_CE
    folder.mkdir(parents=True, exist_ok=True)
    weights = random_cross_encoder(shape, seed)
    save_file({k: np.ascontiguousarray(v) for k, v in weights.items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["BertForSequenceClassification"], "model_type": "bert",
        "hidden_size": shape.hidden, "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads, "intermediate_size": shape.intermediate,
        "hidden_act": "gelu", "vocab_size": shape.vocab,
        "max_position_embeddings": shape.max_positions, "type_vocab_size": shape.type_vocab,
        "layer_norm_eps": shape.eps, "pad_token_id": shape.pad_id, "num_labels": 1,
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}))
    word_tokenizer().save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": shape.max_positions,
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
        "pad_token": "<pad>", "cls_token": "<s>"}))
    return folder


@pytest.fixture(scope="module")
def ce_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache dir whose ``models/rerankers/tiny-st`` is the torch folder (no ONNX file)."""
    root = tmp_path_factory.mktemp("ce-cache")
    write_hf_cross_encoder(root / "models" / "rerankers" / "tiny-st")
    return root


@pytest.fixture(scope="module")
def ce_settings(ce_cache: Path) -> Settings:
    return Settings(cache_dir=ce_cache)


@pytest.fixture(scope="module")
def st_ce(ce_settings: Settings):
    rerank = rerank_module()
    ce = rerank.load_reranker("tiny-st", ce_settings, batch_size=3)
    assert isinstance(ce, rerank.SentenceTransformersCrossEncoder)
    return ce


@pytest.fixture(scope="module")
def onnx_ce(tmp_path_factory: pytest.TempPathFactory):
    folder = write_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce-onnx"))  # same weights
    return rerank_module().OnnxCrossEncoder(folder, max_seq_length=TINY_CE.max_positions, threads=1)


def _reference(query: str, passages: list[str]) -> np.ndarray:
    tok = word_tokenizer()
    tok.enable_truncation(max_length=TINY_CE.max_positions, strategy="longest_first")
    weights = random_cross_encoder(TINY_CE, 0)
    logits = [numpy_logit(weights, TINY_CE, tok.encode(query, p).ids) for p in passages]
    return 1.0 / (1.0 + np.exp(-np.asarray(logits)))


def test_cross_encoder_folder_loads_by_name(st_ce, ce_cache: Path) -> None:
    assert st_ce.name == str(ce_cache / "models" / "rerankers" / "tiny-st")
    assert st_ce.batch_size == 3
    assert isinstance(st_ce, rerank_module().CrossEncoder)


def test_cross_encoder_scores_match_numpy_and_onnx(st_ce, onnx_ce) -> None:
    passages = PASSAGES + [LONG_PASSAGE]
    got = np.asarray(st_ce.score(QUERY, passages))
    assert got.shape == (len(passages),) and ((got > 0) & (got < 1)).all()  # sigmoid applied
    np.testing.assert_allclose(got, _reference(QUERY, passages), atol=1e-5)
    np.testing.assert_allclose(got, onnx_ce.score(QUERY, passages), atol=1e-5)
    assert len(set(np.round(got, 4))) == len(passages)  # the passages mattered


def test_cross_encoder_keeps_input_order(st_ce) -> None:
    forward = st_ce.score(QUERY, PASSAGES)
    backward = st_ce.score(QUERY, PASSAGES[::-1])
    one_by_one = [st_ce.score(QUERY, [p])[0] for p in PASSAGES]
    np.testing.assert_allclose(backward[::-1], forward, atol=1e-6)
    np.testing.assert_allclose(one_by_one, forward, atol=1e-6)


@pytest.mark.parametrize("batch_size", [1, 2, 64])
def test_cross_encoder_batching_does_not_change_scores(st_ce, ce_settings: Settings,
                                                       batch_size: int) -> None:
    other = rerank_module().load_reranker("tiny-st", ce_settings, batch_size=batch_size)
    passages = PASSAGES + [LONG_PASSAGE]
    np.testing.assert_allclose(other.score(QUERY, passages), st_ce.score(QUERY, passages),
                               atol=1e-6)


def test_cross_encoder_truncates_longest_first(st_ce, ce_settings: Settings) -> None:
    # <s> q </s></s> p </s>: 4 special tokens + 3 query words leave 17 of the 24 positions
    cut = " ".join(LONG_PASSAGE.split()[:TINY_CE.max_positions - 7])
    long_score, cut_score = st_ce.score(QUERY, [LONG_PASSAGE, cut])
    assert long_score == pytest.approx(cut_score, abs=1e-6)
    # a shorter max_seq_length (given to the loader) cuts further
    short = rerank_module().load_reranker("tiny-st", ce_settings, max_seq_length=12)
    cut12 = " ".join(LONG_PASSAGE.split()[:12 - 7])
    assert short.score(QUERY, [LONG_PASSAGE])[0] == pytest.approx(st_ce.score(QUERY, [cut12])[0],
                                                                  abs=1e-6)


def test_cross_encoder_edge_inputs(st_ce) -> None:
    assert st_ce.score(QUERY, []) == []
    with pytest.raises(TypeError):
        st_ce.score(QUERY, "a single str")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        st_ce.score(None, PASSAGES)  # type: ignore[arg-type]
