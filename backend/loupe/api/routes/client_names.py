"""Client names: the admin's mapping table (viewers read it, admins replace it) and the policy in force."""

import time

from fastapi import APIRouter, Request

from ...models import (ClientNameEntry, ClientNamesPolicy, ClientNamesTable, ClientNamesUpdate, DnsCachePublic,
                       NameSourcePublic)
from ...names import SOURCES, NameResolver
from ..deps import AdminDep, LoupeDep, ViewerDep, audit

router = APIRouter(prefix="/client-names", tags=["client names"])


def _count(n: int) -> str:
    return f"{n} name" if n == 1 else f"{n} names"


def _table(names: NameResolver) -> ClientNamesTable:
    t = names.table
    return ClientNamesTable(entries=[ClientNameEntry(address=a, name=n) for a, n in t.names.items()],
                            set_by=t.set_by, set_at=t.set_at)


@router.get("", response_model=ClientNamesTable, summary="The client name mapping table")
def get_table(_: ViewerDep, loupe: LoupeDep) -> ClientNamesTable:
    return _table(loupe.names)


@router.put("", response_model=ClientNamesTable,
            summary="Replace the client name mapping table (admin); names show from the next request")
def put_table(body: ClientNamesUpdate, p: AdminDep, loupe: LoupeDep, request: Request) -> ClientNamesTable:
    before = loupe.names.table.names
    after = {e.address: e.name for e in body.entries}
    added = len(after.keys() - before.keys())
    removed = len(before.keys() - after.keys())
    renamed = sum(1 for a in after.keys() & before.keys() if after[a] != before[a])
    loupe.names.set_table(after, p.name, time.time())
    audit(request, "client_names.set", "client names",
          f"{len(after)} entries: {added} added, {removed} removed, {renamed} renamed")
    return _table(loupe.names)


@router.get("/policy", response_model=ClientNamesPolicy, summary="Where client names come from, in order")
def get_policy(_: ViewerDep, loupe: LoupeDep) -> ClientNamesPolicy:
    names, s = loupe.names, loupe.settings
    hosts = names.hosts.names() if "hosts" in names.order else None
    dns = names.dns
    details = {
        "table": (f"{_count(len(names.table.names))} (Admin → Client names)", None),
        "hosts": (f"{s.hosts_file}: {_count(len(hosts))}" if hosts is not None else str(s.hosts_file),
                  names.hosts.problem if hosts is not None else None),
        "dns": (f"reverse lookups through {dns.describe()}, {s.dns_timeout:g} s timeout" if dns else "reverse lookups",
                dns.problem if dns else None),
    }
    sources = [NameSourcePublic(source=src, position=names.order.index(src) + 1 if src in names.order else None,
                                detail=details[src][0], problem=details[src][1]) for src in SOURCES]
    cache = None
    if dns:
        named, unnamed, pending = dns.cache_counts()
        st = dns.stats
        cache = DnsCachePublic(names=named, unnamed=unnamed, pending=pending, lookups=st.lookups, found=st.found,
                               not_found=st.not_found, timeouts=st.timeouts, failures=st.failures, dropped=st.dropped)
    return ClientNamesPolicy(order=list(names.order), sources=sources, hosts_file=str(s.hosts_file),
                             dns_server=dns.describe() if dns else None, dns_timeout_s=s.dns_timeout,
                             dns_ttl_s=s.dns_ttl, dns_negative_ttl_s=s.dns_negative_ttl, dns_workers=s.dns_workers,
                             dns_cache=cache)
