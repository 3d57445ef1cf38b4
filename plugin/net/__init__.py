"""Outbound HTTP: where a request FactSieve makes may go (``outbound``: address rules, allowed
origins, backends it never posts to) and the one transport that sends it (``transport``).

On the ground floor beside ``settings``: they import only ``plugin.errors``, so the settings can
check the allowed origins at start-up and the webhook store and the image fetcher share one set
of rules."""
