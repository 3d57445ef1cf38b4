"""The hosted embedding model's pure parts and its lifecycle against a recorded fake of the ML
Commons REST calls (the real cluster is exercised by tests/integration/test_template_contract.py)."""
import json
import zipfile

import pytest

from plugin.errors import BackendError, BackendUnavailable, BadInput
from plugin.index.hosted import (CHUNK_BYTES, HostedModels, build_bundle, bundle_name, chunk_count,
                                 embed_pipeline_body, register_body)


def test_bundle_names_are_what_ml_commons_deploys():
    assert bundle_name("factsieve/multilingual-e5-small-rebuilt", "model_int8.onnx") == \
        "factsieve-multilingual-e5-small-rebuilt-model-int8"
    assert bundle_name("/models/My.Model", "model.onnx") == "factsieve-my-model-model"


def test_bundle_holds_the_graph_and_a_truncating_tokenizer(tmp_path):
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "model.onnx").write_bytes(b"graph")
    (tmp_path / "tokenizer.json").write_text(json.dumps({"truncation": None, "model": {}}))
    bundle = build_bundle(tmp_path, tmp_path / "onnx" / "model.onnx", name="factsieve-x",
                          max_seq_length=256, out_dir=tmp_path / "out")
    with zipfile.ZipFile(bundle.path) as zf:
        assert sorted(zf.namelist()) == ["model.onnx", "tokenizer.json"]
        assert json.loads(zf.read("tokenizer.json"))["truncation"]["max_length"] == 256
    again = build_bundle(tmp_path, tmp_path / "onnx" / "model.onnx", name="factsieve-x",
                         max_seq_length=256, out_dir=tmp_path / "out")
    assert again == bundle  # written once, same hash
    other = build_bundle(tmp_path, tmp_path / "onnx" / "model.onnx", name="factsieve-x",
                         max_seq_length=128, out_dir=tmp_path / "out")
    assert other.sha256 != bundle.sha256


def test_register_body_and_chunks():
    assert chunk_count(1) == 1 and chunk_count(CHUNK_BYTES) == 1 and chunk_count(CHUNK_BYTES + 1) == 2
    from plugin.index.hosted import Bundle
    body = register_body(Bundle(path=None, sha256="abc", size=CHUNK_BYTES * 2 + 5, name="n"),
                         dimension=384, description="d")
    assert body["total_chunks"] == 3 and body["model_content_hash_value"] == "abc"
    assert body["model_config"]["pooling_mode"] == "cls" and body["model_config"]["embedding_dimension"] == 384


def test_embed_pipeline_mirrors_factsieve_ingest():
    body = embed_pipeline_body("M1", passage_prefix="passage: ", description="d")
    tags = [next(iter(p.values()))["tag"] for p in body["processors"]]
    assert tags == ["factsieve-passages", "factsieve-embed", "factsieve-mean", "factsieve-cleanup",
                    "factsieve-ingested-at"]
    passages, embed = body["processors"][0]["script"], body["processors"][1]["text_embedding"]
    assert passages["params"]["prefix"] == "passage: " and "en" in passages["params"]["langs"]
    assert passages["if"] == "ctx.embedding == null && ctx.claim != null"  # a given vector is kept
    assert embed["model_id"] == "M1"
    assert body["processors"][4]["set"]["value"] == "{{{_ingest.timestamp}}}"  # not ours to fill


class FakeML:
    """Answers the ML Commons calls ``HostedModels`` makes, from a script of states."""

    def __init__(self, *, found=None, states=("REGISTERED",), task_states=("RUNNING", "COMPLETED"),
                 not_ready=0, register_error=None):
        self.calls, self.found, self.states = [], found, list(states)
        self.task_states, self.not_ready, self.register_error = list(task_states), not_ready, register_error

    def plugins(self):
        return {"opensearch-ml"}

    def request(self, what, method, path, body=None, params=None):
        self.calls.append((method, path))
        if path.endswith("/_search"):
            hits = [{"_id": self.found, "_source": {}}] if self.found else []
            return {"hits": {"hits": hits}}
        if path.endswith("/_register_meta"):
            if self.register_error:
                raise self.register_error
            return {"model_id": "new"}
        if "/upload_chunk/" in path:
            return {"status": "Uploaded"}
        if path.endswith("/_deploy"):
            return {"task_id": "t1"}
        if "/tasks/" in path:
            return {"state": self.task_states.pop(0), "error": "boom"}
        if "/_predict/" in path:
            if self.not_ready:
                self.not_ready -= 1
                raise BadInput("Model not ready yet. Please deploy the model first.")
            return {"inference_results": [{"output": [{"data": [0.1]}]}]}
        if method == "GET":
            return {"model_state": self.states.pop(0) if len(self.states) > 1 else self.states[0]}
        raise AssertionError(path)


def models(fake):
    clock = iter(range(10_000))
    return HostedModels(fake, sleep=lambda s: None, clock=lambda: next(clock))


@pytest.fixture
def bundle(tmp_path):
    from plugin.index.hosted import Bundle
    path = tmp_path / "b.zip"
    path.write_bytes(b"x" * (CHUNK_BYTES + 10))
    return Bundle(path=path, sha256="h", size=CHUNK_BYTES + 10, name="factsieve-x")


def test_a_new_model_is_uploaded_in_chunks_deployed_and_awaited(bundle):
    fake = FakeML(not_ready=3)
    got = models(fake).ensure(bundle, dimension=384, onnx_file="model.onnx", description="d")
    assert got.model_id == "new"
    uploads = [p for _, p in fake.calls if "upload_chunk" in p]
    assert uploads == ["/_plugins/_ml/models/new/upload_chunk/0", "/_plugins/_ml/models/new/upload_chunk/1"]
    assert sum("/_predict/" in p for _, p in fake.calls) == 4  # three "not ready", then an answer


def test_a_deployed_model_is_reused_without_upload(bundle):
    fake = FakeML(found="old", states=("DEPLOYED",))
    assert models(fake).ensure(bundle, dimension=384, onnx_file="m", description="d").model_id == "old"
    assert not any("upload_chunk" in p or "_deploy" in p for _, p in fake.calls)


def test_an_upload_cut_off_is_registered_anew(bundle):
    fake = FakeML(found="half", states=("REGISTERING", "REGISTERED"))
    assert models(fake).ensure(bundle, dimension=384, onnx_file="m", description="d").model_id == "new"


def test_a_failed_deployment_says_so(bundle):
    fake = FakeML(task_states=("FAILED",))
    with pytest.raises(BackendError, match="failed"):
        models(fake).ensure(bundle, dimension=384, onnx_file="m", description="d")


def test_a_model_that_never_answers_times_out(bundle):
    fake = FakeML(not_ready=10_000)
    with pytest.raises(BackendUnavailable, match="does not answer"):
        models(fake).ensure(bundle, dimension=384, onnx_file="m", description="d", timeout_s=5)


def test_a_cluster_refusing_uploads_names_the_setting(bundle):
    fake = FakeML(register_error=BadInput("... enable allow_registering_model_via_local_file settings"))
    with pytest.raises(BackendError, match="allow_registering_model_via_local_file=true"):
        models(fake).ensure(bundle, dimension=384, onnx_file="m", description="d")
