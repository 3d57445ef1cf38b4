from plugin.learn.memory_store import post_doc_id, post_record


def test_a_post_has_one_document_per_tenant():
    assert post_doc_id("t1", "p") == post_doc_id("t1", "p")
    assert post_doc_id("t1", "p") != post_doc_id("t2", "p")
    assert post_doc_id("t1", "p").startswith("ps_") and len(post_doc_id("t1", "p")) == 35


def test_post_record():
    post = {"id": "p1", "text": "RT @a: 5G spreads covid", "date": "2020-05-01", "url": "https://x"}
    assert post_record("t", post, "en", [1, 0.5], "2024-01-01T00:00:00.000+00:00") == {
        "tenant": "t", "post_id": "p1", "text": "RT @a: 5G spreads covid", "lang": "en",
        "date": "2020-05-01", "created_at": "2024-01-01T00:00:00.000+00:00", "embedding": [1.0, 0.5]}
    assert post_record("t", {"id": "p", "text": "x", "date": ""}, None, [0], "now")["date"] is None
