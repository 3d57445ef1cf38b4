"""The index templates are data: check what they render to, without a server."""
import pytest

from plugin.errors import BadInput
from plugin.index.bodies import ANALYZED_LANGS
from plugin.index.templates import IndexSpec, check_alias_name, load_template, render, template_bodies

SPEC = IndexSpec(alias="factchecks", model="intfloat/multilingual-e5-base", dimension=768, replicas=1)


def test_render_keeps_types_and_fills_strings():
    obj = {"d": "{{dimension}}", "p": ["{{alias}}-v*"], "n": {"x": 1}}
    assert render(obj, {"dimension": 384, "alias": "fc"}) == {"d": 384, "p": ["fc-v*"], "n": {"x": 1}}


def test_render_unknown_placeholder_is_an_error():
    with pytest.raises(KeyError):
        render("{{nope}}", {})


def test_bodies_are_fully_rendered():
    bodies = template_bodies(SPEC)
    assert set(bodies) == {
        "_component_template/factsieve-factchecks-factcheck-fields",
        "_component_template/factsieve-factchecks-knn-768",
        "_index_template/factsieve-factchecks",
    }
    assert "{{" not in repr(bodies)


def test_knn_field_is_lucene_hnsw_cosine_with_model_dimension():
    knn = template_bodies(SPEC)["_component_template/factsieve-factchecks-knn-768"]
    field = knn["template"]["mappings"]["properties"]["embedding"]
    assert field["type"] == "knn_vector"
    assert field["dimension"] == 768
    assert field["method"]["engine"] == "lucene"
    assert field["method"]["name"] == "hnsw"
    assert field["method"]["space_type"] == "cosinesimil"
    assert knn["template"]["settings"]["index"]["knn"] is True


def test_index_template_composes_components_for_versioned_indexes():
    tpl = template_bodies(SPEC)["_index_template/factsieve-factchecks"]
    assert tpl["index_patterns"] == ["factchecks-v*"]
    assert tpl["composed_of"] == ["factsieve-factchecks-factcheck-fields", "factsieve-factchecks-knn-768"]
    assert tpl["template"]["settings"]["index"]["number_of_replicas"] == 1


def test_every_analysed_language_has_an_analyzer_and_field():
    fields = load_template("component/factsieve-factcheck-fields")["template"]
    analyzers = fields["settings"]["analysis"]["analyzer"]
    props = fields["mappings"]["properties"]
    assert "fs_neutral" in analyzers
    for lang in ANALYZED_LANGS:
        assert f"fs_{lang}" in analyzers
        assert props["claim_i18n"]["properties"][lang]["analyzer"] == f"fs_{lang}"
        assert props["title_i18n"]["properties"][lang]["analyzer"] == f"fs_{lang}"
    assert props["claim"]["analyzer"] == "fs_neutral"


def test_meta_records_model_and_dimension():
    assert SPEC.meta() == {"factsieve": {"schema_version": 1,
                                         "embedding_model": "intfloat/multilingual-e5-base",
                                         "embedding_dim": 768}}


@pytest.mark.parametrize("name", ["factchecks", "fc-test_1", "a.b"])
def test_alias_names_ok(name):
    assert check_alias_name(name) == name


@pytest.mark.parametrize("name", ["", "Upper", "-x", "a b", "a/b", "a*"])
def test_alias_names_rejected(name):
    with pytest.raises(BadInput):
        check_alias_name(name)


def test_factcheck_and_evidence_indexes_map_the_owner():
    """Issue 21: the owner is a keyword of both kinds of index; ``install_index`` adds what
    ``template_properties`` lists to an index made before it."""
    from plugin.index.templates import template_properties

    for template in ("factchecks", "evidence"):
        fields = template_properties(IndexSpec(alias="x", model="m", dimension=8, template=template))
        assert fields["owner"] == {"type": "keyword"}
        assert fields["embedding"]["type"] == "knn_vector"


def test_every_object_init_writes_carries_the_deployments_alias():
    """Issue 35, item 10: shared component names let one deployment rewrite another's."""
    for template in ("factchecks", "evidence", "review", "decisions", "jobs", "posts"):
        try:
            bodies = template_bodies(IndexSpec(alias="fs-a-x", model="m", dimension=8, template=template))
        except Exception:  # plain indexes have no composed_of (plain_index_bodies)
            continue
        assert all(path.split("/", 1)[1].startswith("factsieve-fs-a-x") for path in bodies), bodies.keys()
        composed = next(b for p, b in bodies.items() if p.startswith("_index_template/"))["composed_of"]
        assert all(c.startswith("factsieve-fs-a-x-") for c in composed)
