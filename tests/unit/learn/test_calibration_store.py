from plugin.learn.calibrate import fit_tenant
from plugin.learn.calibration_store import new_decisions_body, record_of, tenants_body
from plugin.learn.calibration_synthetic import synthetic_decisions


def test_new_decisions_are_a_tenants_own_after_the_last_fit_by_a_person():
    assert new_decisions_body("a", "2026-01-01T00:00:00+00:00") == {
        "size": 0, "track_total_hits": True,
        "query": {"bool": {"filter": [{"term": {"tenant": "a"}},
                                      {"range": {"at": {"gt": "2026-01-01T00:00:00+00:00"}}}],
                           "must_not": [{"terms": {"origin": ["auto", "tipline"]}}]}}}
    assert new_decisions_body("a", None)["query"]["bool"]["filter"] == [{"term": {"tenant": "a"}}]


def test_tenants_body():
    assert tenants_body(5) == {"size": 0, "aggs": {"tenants": {"terms": {"field": "tenant", "size": 5}}}}


def test_the_stored_record_names_what_it_sits_on():
    rec = record_of(fit_tenant(synthetic_decisions(300)), "a", "2026-02-01T00:00:00+00:00")
    assert rec["calibrator"]["name"] == "factsieve" and len(rec["calibrator"]["sha256"]) == 16
    assert {"params", "tier", "counts", "ece_before", "ece_after", "decisions_until", "fitted_at"} <= set(rec)
