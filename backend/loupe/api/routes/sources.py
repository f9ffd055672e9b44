import time

from fastapi import APIRouter

from ...catalog import FAMILIES
from ...models import SourceList, SourcePublic
from ..deps import StoreDep

router = APIRouter(tags=["sources"])
STALE_AFTER = 15.0


@router.get("/sources", response_model=SourceList, summary="Sources reported by agents, with state and reason")
def sources(store: StoreDep) -> SourceList:
    now = time.time()
    out = []
    for s in store.sources():
        state, reason = s["state"], s["reason"]
        if now - s["last_seen"] > STALE_AFTER:
            ago = int(now - s["last_seen"])
            state, reason = "off", f"agent {s['agent']} not reporting for {ago} s" + (f" (was: {reason})" if reason else "")
        out.append(SourcePublic(agent=s["agent"], name=s["name"], host=s["host"], families=s["families"],
                                state=state, reason=reason, demo=s["demo"], last_seen=s["last_seen"]))
    fams = {f: any(f in s.families and s.state == "active" for s in out) for f in FAMILIES}
    missing = {}
    for f, ok in fams.items():
        if not ok:
            off = [f"{s.name}: {s.reason}" for s in out if f in s.families and s.reason]
            missing[f] = "; ".join(off) or NO_SOURCE.get(f, "no agent reports it")
    return SourceList(sources=out, families=fams, missing=missing)


# Why a family can be empty on a host with only the procfs agent (this release has no BPF probes).
NO_SOURCE = {
    "nfs": "needs the BPF agent (not in this release); 'loupe serve --demo' adds a synthetic NAS",
    "cpu": "no agent reports it: is 'loupe agent' or the local agent running?",
    "disk": "no agent reports it: is 'loupe agent' or the local agent running?",
    "net": "no agent reports it: is 'loupe agent' or the local agent running?",
}
