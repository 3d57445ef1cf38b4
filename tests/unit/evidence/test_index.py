"""The evidence index template is data: what it renders to, without a server."""
from plugin.evidence.index import evidence_spec
from plugin.index.bodies import ANALYZED_LANGS, load_template
from plugin.index.templates import IndexSpec, template_bodies
from plugin.settings import Settings
from tests.stub_embedder import StubEmbedder


SPEC = evidence_spec(Settings(evidence_index="evidence", index_replicas=1),
                     StubEmbedder(name="some/model", dim=384))


def test_spec_names_the_evidence_template():
    assert SPEC == IndexSpec(alias="evidence", model="some/model", dimension=384, replicas=1,
                             template="evidence")


def test_bodies_are_fully_rendered_components_first():
    bodies = template_bodies(SPEC)
    assert list(bodies) == ["_component_template/factsieve-evidence-evidence-fields",
                            "_component_template/factsieve-evidence-knn-384",
                            "_index_template/factsieve-evidence"]
    assert "{{" not in repr(bodies)
    tpl = bodies["_index_template/factsieve-evidence"]
    assert tpl["index_patterns"] == ["evidence-v*"]
    assert tpl["composed_of"] == ["factsieve-evidence-evidence-fields", "factsieve-evidence-knn-384"]
    assert tpl["template"]["settings"]["index"]["number_of_replicas"] == 1


def test_analyzers_are_the_factcheck_ones():
    fields = template_bodies(SPEC)["_component_template/factsieve-evidence-evidence-fields"]["template"]
    factcheck = load_template("component/factsieve-factcheck-fields")["template"]["settings"]["analysis"]
    assert fields["settings"]["analysis"] == factcheck


def test_passage_fields():
    props = template_bodies(SPEC)["_component_template/factsieve-evidence-evidence-fields"]["template"]["mappings"]["properties"]
    assert {"id", "doc_id", "url", "url_key", "title", "text", "position", "published_at", "domain",
            "domains", "lang", "source", "claim_id"} <= set(props)
    assert props["text"]["analyzer"] == props["title"]["analyzer"] == "fs_neutral"
    for lang in ANALYZED_LANGS:
        assert props["text_i18n"]["properties"][lang]["analyzer"] == f"fs_{lang}"
        assert props["title_i18n"]["properties"][lang]["analyzer"] == f"fs_{lang}"
    assert props["published_at"]["type"] == "date" and props["position"]["type"] == "integer"
    assert "embedding" not in props  # it comes from the shared knn component


def test_embedding_is_the_shared_knn_component_excluded_from_source():
    knn = template_bodies(SPEC)["_component_template/factsieve-evidence-knn-384"]["template"]
    assert knn["mappings"]["_source"] == {"excludes": ["embedding"]}
    assert knn["mappings"]["properties"]["embedding"]["method"]["engine"] == "lucene"
    assert knn["mappings"]["properties"]["embedding"]["method"]["space_type"] == "cosinesimil"


def test_factcheck_bodies_are_unchanged_by_the_generalisation():
    bodies = template_bodies(IndexSpec(alias="factchecks", model="m", dimension=8))
    assert bodies["_component_template/factsieve-factchecks-factcheck-fields"] == load_template(
        "component/factsieve-factcheck-fields")
    assert bodies["_index_template/factsieve-factchecks"]["composed_of"] == [
        "factsieve-factchecks-factcheck-fields", "factsieve-factchecks-knn-8"]
