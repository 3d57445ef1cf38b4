import json

import pytest

from plugin.errors import BadInput
from plugin.review.rules import Rules, TenantRules, load_rules


def test_without_a_file_every_matched_post_is_queued():
    rules = load_rules(None).for_tenant("anyone")
    assert rules == TenantRules()
    assert rules.queues("en", 0.01, True) and rules.queues(None, None, False)
    assert not rules.auto_confirm


def test_a_tenant_overrides_the_default_field_by_field(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"default": {"without_candidates": False},
                                "tenants": {"wire": {"langs": ["EN", "es"], "min_confidence": 0.2},
                                            "archive": {"queue": False}}}))
    rules = load_rules(str(path))
    wire = rules.for_tenant("wire")
    assert wire.langs == ("en", "es") and not wire.without_candidates  # inherited from default
    assert wire.queues("en", 0.5, True)
    assert not wire.queues("fr", 0.9, True)
    assert not wire.queues("en", 0.1, True) and not wire.queues("en", None, True)
    assert not wire.queues("en", None, False)
    assert not rules.for_tenant("archive").queues("en", 0.99, True)
    assert rules.for_tenant("other") == TenantRules(without_candidates=False)


@pytest.mark.parametrize("data, named", [
    ([], "must be an object"),
    ({"tenant": {}}, "unknown key 'tenant'"),
    ({"default": {"queue": "yes"}}, "default.queue"),
    ({"tenants": {"t": {"langs": "en"}}}, "tenants.t.langs"),
    ({"tenants": {"t": {"min_confidence": 2}}}, "tenants.t.min_confidence"),
    ({"tenants": {"t": {"auto_confirm": 1}}}, "tenants.t.auto_confirm"),
    ({"tenants": {"t": {"colour": "red"}}}, "tenants.t.colour: unknown rule"),
    ({"tenants": []}, "tenants: must be an object"),
])
def test_a_bad_rule_is_named(data, named):
    with pytest.raises(BadInput, match=named.replace("(", r"\(")):
        Rules.from_mapping(data)


def test_an_unreadable_or_broken_file_is_named(tmp_path):
    with pytest.raises(BadInput, match="cannot read it"):
        load_rules(str(tmp_path / "missing.json"))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(BadInput, match="broken.json: not JSON"):
        load_rules(str(broken))
