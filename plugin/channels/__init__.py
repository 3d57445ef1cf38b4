"""Channels: tiplines where the public asks (Telegram, WhatsApp) and FactSieve answers (issue 39).

``answer`` decides, purely, what a tipline replies to a message's match: the fact-checks it is
sure of, or that the desk will look into it; ``tipline.json`` holds the channel's defaults (data).
"""
