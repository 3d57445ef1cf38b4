"""TLS options and the identities (pure: no server)."""
import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from plugin.index.connection import tls_options
from plugin.index.translate import _denied
from plugin.settings import Settings


def test_tls_options_table():
    base = Settings(opensearch_url="https://os:9200")
    assert tls_options(base, ["https://os:9200"]) == {}  # https and the system's trust store
    full = base.model_copy(update={"opensearch_ca_certs": Path("/ca.pem"),
                                   "opensearch_client_cert": Path("/c.pem"),
                                   "opensearch_client_key": Path("/k.pem")})
    assert tls_options(full, ["https://os:9200"]) == {
        "ca_certs": "/ca.pem", "client_cert": "/c.pem", "client_key": "/k.pem"}


def test_unverified_tls_is_allowed_but_said(caplog):
    s = Settings(opensearch_url="https://os:9200", opensearch_verify_certs=False)
    with caplog.at_level(logging.WARNING):
        opts = tls_options(s, ["https://os:9200"])
    assert opts == {"verify_certs": False, "ssl_assert_hostname": False, "ssl_show_warn": False}
    assert "not checked" in caplog.text


def test_the_admin_identity_replaces_the_runtime_one_only_when_set():
    runtime = Settings(opensearch_user="rt", opensearch_password=SecretStr("p1"))
    assert runtime.as_opensearch_admin() is runtime
    both = runtime.model_copy(update={"opensearch_admin_user": "adm",
                                      "opensearch_admin_password": SecretStr("p2")})
    admin = both.as_opensearch_admin()
    assert admin.opensearch_user == "adm" and admin.opensearch_password.get_secret_value() == "p2"
    assert both.opensearch_user == "rt"  # a copy: the runtime settings are unchanged


@pytest.mark.parametrize("reason, shown", [
    ("security_exception: no permissions for [indices:admin/delete] and User [name=rt, backend_roles=[]]",
     "security_exception: no permissions for [indices:admin/delete]"),
    ("AuthorizationException(403, '')", "AuthorizationException(403, '')"),
])
def test_a_refusal_drops_the_user_name(reason, shown):
    assert _denied(reason) == shown
