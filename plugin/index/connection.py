"""The OpenSearch client's connection options from the settings (pure): whom to trust and who
we are over TLS. ``plugin.index.store`` builds its one client with them."""
from __future__ import annotations

import logging
from typing import Any

from plugin.settings import Settings

log = logging.getLogger("plugin.index.store")


def tls_options(settings: Settings, hosts: list[str]) -> dict[str, Any]:
    """opensearch-py's TLS arguments from the settings (pure). An https host turns TLS on by
    itself; these say whom to trust and who we are."""
    opts: dict[str, Any] = {}
    if settings.opensearch_ca_certs:
        opts["ca_certs"] = str(settings.opensearch_ca_certs)
    if settings.opensearch_client_cert:
        opts["client_cert"] = str(settings.opensearch_client_cert)
    if settings.opensearch_client_key:
        opts["client_key"] = str(settings.opensearch_client_key)
    if not settings.opensearch_verify_certs:
        if any(u.startswith("https://") for u in hosts):
            log.warning("FACTSIEVE_OPENSEARCH_VERIFY_CERTS=false: OpenSearch's certificate is not "
                        "checked, so the connection is encrypted but anyone may be at the other end")
        opts.update(verify_certs=False, ssl_assert_hostname=False, ssl_show_warn=False)
    return opts
