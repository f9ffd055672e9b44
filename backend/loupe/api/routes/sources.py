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
    return SourceList(sources=out, families=fams)
