"""Problem responses: every 429 carries the RateLimit-* headers of the limit it hit."""
from plugin.errors import BackendUnavailable, RateLimited

from api.problems import error_response, rate_limit_headers


def test_rate_limit_headers():
    assert rate_limit_headers(600, 597, 42) == {"RateLimit-Limit": "600", "RateLimit-Remaining": "597",
                                                "RateLimit-Reset": "42"}
    assert rate_limit_headers(3, -2, 5)["RateLimit-Remaining"] == "0"


def test_a_429_carries_retry_after_and_ratelimit_headers():
    resp = error_response(RateLimited("too many", retry_after=7, limit=3))
    assert resp.status_code == 429
    assert {k: resp.headers[k] for k in ("Retry-After", "RateLimit-Limit", "RateLimit-Remaining",
                                         "RateLimit-Reset")} == {
        "Retry-After": "7", "RateLimit-Limit": "3", "RateLimit-Remaining": "0", "RateLimit-Reset": "7"}


def test_other_errors_carry_no_ratelimit_headers():
    resp = error_response(BackendUnavailable("down"))
    assert resp.headers["Retry-After"] == "5" and "RateLimit-Limit" not in resp.headers
