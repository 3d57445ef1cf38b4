"""Rolling indexes: an alias that writes to a new index each month and drops the old ones after a
retention (the posts index: a newsroom's stream grows without end, its claims keep their counts).

The one place that says which index kinds roll (``ROLLING``), how their indexes are named and
when one rolls over or is deleted. The layout: ``<alias>-v<N>-<000001>`` behind the alias, the
newest marked ``is_write_index``; reads go to the alias (all of them), writes of a new document to
the alias (the newest), a change to a document to the index it was read from
(``Store.mget_across`` names it). An index made before rolling (``<alias>-v1``) is generation 1.

Two ways to run it, one schedule:
- with OpenSearch's Index State Management plugin on the cluster, ``ensure_rolling`` installs the
  policy in ``index_templates/ism/rolling.policy.json`` (rollover at 30 days, delete
  ``retention_days`` after an index stopped taking posts) and ISM does the rest;
- without it (the plugin is not on Maven Central, so nodes from ``scripts/services.sh`` lack it),
  ``roll`` does the same from the workers' schedule (``workers.roller``) or ``factsieve posts
  roll``: rollover once the write index was made in an earlier calendar month (UTC), delete once
  the index that took over from one is older than the retention.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from plugin.index.bodies import load_template, render
from plugin.index.store import Store

#: the plain index kinds (``index_templates/<kind>.index_template.json``) that roll
ROLLING = frozenset({"posts"})
#: ISM's rollover age (ISM has no calendar month; the schedule without it uses one)
ISM_ROLLOVER_AGE = "30d"
ISM_PLUGIN = "opensearch-index-management"
_DAY_MS = 86_400_000


def first_index(alias: str) -> str:
    """The first index of a rolling alias (ISM's rollover needs the ``-<number>`` suffix)."""
    return f"{alias}-v1-000001"


def generation(alias: str, index: str) -> tuple[int, int] | None:
    """``(version, generation)`` of one of the alias's indexes; ``<alias>-v1`` is ``(1, 1)``;
    ``None`` for a name that is not the alias's."""
    m = re.fullmatch(re.escape(alias) + r"-v(\d+)(?:-(\d+))?", index)
    return (int(m.group(1)), int(m.group(2) or 1)) if m else None


def newest(alias: str, indices: Sequence[str]) -> str | None:
    """The newest generation among ``indices`` when all are generations of one version of
    ``alias`` (a rolling alias), else ``None``."""
    gens = {i: generation(alias, i) for i in indices}
    if not gens or None in gens.values() or len({g[0] for g in gens.values() if g}) != 1:
        return None
    return max(gens, key=lambda i: gens[i] or (0, 0))


def next_index(alias: str, write_index: str) -> str:
    """The index a rollover of ``write_index`` creates."""
    gen = generation(alias, write_index)
    if gen is None:
        raise ValueError(f"{write_index!r} is not an index of {alias!r}")
    return f"{alias}-v{gen[0]}-{gen[1] + 1:06d}"


def _month(ms: int) -> tuple[int, int]:
    t = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return t.year, t.month


def rollover_due(write_created_ms: int, now_ms: int) -> bool:
    """The write index was made in an earlier calendar month (UTC) than ``now``."""
    return _month(write_created_ms) < _month(now_ms)


def expired(alias: str, created_ms: Mapping[str, int], write_index: str | None, now_ms: int,
            retention_days: int) -> list[str]:
    """The alias's indexes to delete: every one but the write index whose successor (the index
    that took its writes over) was made more than ``retention_days`` ago, so its newest post is
    older than that. ``retention_days`` 0 keeps everything."""
    if retention_days <= 0:
        return []
    order = sorted((i for i in created_ms if generation(alias, i)), key=lambda i: generation(alias, i) or (0, 0))
    out = []
    for older, successor in zip(order, order[1:]):
        if older != write_index and now_ms - created_ms[successor] > retention_days * _DAY_MS:
            out.append(older)
    return out


def ism_policy(alias: str, retention_days: int) -> dict[str, Any]:
    """The ISM policy body for ``alias`` (pure); retention 0: never deleted."""
    body = render(load_template("ism/rolling.policy"),
                  {"alias": alias, "retention_days": retention_days, "rollover_age": ISM_ROLLOVER_AGE})
    if retention_days <= 0:
        hot = body["policy"]["states"][0]
        hot["transitions"] = []
        body["policy"]["states"] = [hot]
        body["policy"]["description"] = body["policy"]["description"].split(";")[0] + "; never deleted"
    return body


def policy_id(alias: str) -> str:
    return f"factsieve-{alias}-rolling"


def ism_present(store: Store) -> bool:
    return ISM_PLUGIN in store.plugins()


def ensure_rolling(store: Store, alias: str, retention_days: int) -> dict[str, Any]:
    """What ``factsieve init`` does for a rolling alias once its first index exists: mark the
    write index (an alias made before rolling), and with ISM on the cluster hand the schedule to
    it (``install_ism_policy``). Idempotent."""
    write = store.write_index(alias)
    if write is not None:
        _mark_write(store, alias, write)
    if not ism_present(store):
        return {"alias": alias, "ism": False, "write_index": write}
    install_ism_policy(store, alias, retention_days)
    return {"alias": alias, "ism": True, "write_index": write, "policy": policy_id(alias)}


def install_ism_policy(store: Store, alias: str, retention_days: int) -> None:
    """Put the alias's policy (replacing an older one), name the rollover alias in the index
    template (the indexes ISM creates) and on the write index, and attach the policy to the
    indexes that predate it (its ``ism_template`` attaches it to new ones)."""
    pid = policy_id(alias)
    template = store.index_template(f"factsieve-{alias}")
    if template is not None:
        index_settings = template.setdefault("template", {}).setdefault("settings", {}).setdefault("index", {})
        index_settings["plugins.index_state_management.rollover_alias"] = alias
        store.put_index_template(f"factsieve-{alias}", template)
    got = store.request(f"get ISM policy {pid}", "GET", f"/_plugins/_ism/policies/{pid}",
                        params={"ignore": 404})
    params = ({"if_seq_no": got["_seq_no"], "if_primary_term": got["_primary_term"]}
              if got.get("_seq_no") is not None else None)
    store.request(f"put ISM policy {pid}", "PUT", f"/_plugins/_ism/policies/{pid}",
                  ism_policy(alias, retention_days), params=params)
    write = store.write_index(alias)
    if write:
        store.put_index_settings(write, {"plugins.index_state_management.rollover_alias": alias})
    for index in store.alias_indices(alias):
        store.request(f"attach ISM policy to {index}", "POST", f"/_plugins/_ism/add/{index}",
                      {"policy_id": pid})


def roll(store: Store, alias: str, *, now_ms: int, retention_days: int,
         ism: bool | None = None) -> dict[str, Any]:
    """One pass of the schedule (idempotent; safe from several workers at once). With ISM on the
    cluster: nothing (ISM rolls); without it: roll over when due, then delete what expired.
    Returns ``{"alias", "ism", "write_index", "rolled_to", "deleted"}``."""
    out: dict[str, Any] = {"alias": alias, "ism": False, "write_index": None, "rolled_to": None, "deleted": []}
    if ism if ism is not None else ism_present(store):
        out["ism"] = True
        return out
    write = store.write_index(alias)
    if write is None or generation(alias, write) is None:
        return out  # not installed yet, or not FactSieve's layout: nothing to roll
    created = store.created_ms(alias)
    # what expired first: the index this pass rolls away from took posts until now
    for index in expired(alias, created, write, now_ms, retention_days):
        store.delete_index(index)
        out["deleted"].append(index)
    if rollover_due(created[write], now_ms):
        target = next_index(alias, write)
        _mark_write(store, alias, write)
        if store.rollover(alias, target):
            out["rolled_to"] = target
        write = store.write_index(alias) or write
    out["write_index"] = write
    return out


def _mark_write(store: Store, alias: str, index: str) -> None:
    """An alias made before rolling has its one index unmarked; a rollover would then move the
    alias off it (losing its posts from reads), so mark it the write index first."""
    store.update_aliases([{"add": {"index": index, "alias": alias, "is_write_index": True}}])
