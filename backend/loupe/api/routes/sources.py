import time

from fastapi import APIRouter, HTTPException, Request

from ...alerts import AGENT_STALE
from ...catalog import FAMILIES
from ...models import AgentPublic, SourceControlRequest, SourceList, SourcePublic
from ..deps import LoupeDep, OperatorDep, StoreDep, audit

router = APIRouter(tags=["sources"])
STALE_AFTER = AGENT_STALE  # one notion of an agent gone, here and in the event log


def _public(loupe, s: dict, now: float) -> SourcePublic:
    state, reason = s["state"], s["reason"]
    if now - s["last_seen"] > STALE_AFTER:
        ago = int(now - s["last_seen"])
        state, reason = "off", f"agent {s['agent']} not reporting for {ago} s" + (f" (was: {reason})" if reason else "")
    c = loupe.control
    return SourcePublic(agent=s["agent"], name=s["name"], host=s["host"], families=s["families"],
                        state=state, reason=reason, demo=s["demo"], last_seen=s["last_seen"],
                        suspendable=c.suspendable(s["agent"], s["name"]),
                        suspend_requested=c.requested(s["agent"], s["name"]),
                        cost=c.cost(s["agent"], s["name"]) if state == "active" else None)


@router.get("/sources", response_model=SourceList,
            summary="Agents and their sources, with state, reason and their own cost")
def sources(store: StoreDep, loupe: LoupeDep) -> SourceList:
    now = time.time()
    out = [_public(loupe, s, now) for s in store.sources()]
    fams = {f: any(f in s.families and s.state == "active" for s in out) for f in FAMILIES}
    missing = {}
    for f, ok in fams.items():
        if not ok:
            off = [f"{s.name}: {s.reason}" for s in out if f in s.families and s.reason]
            missing[f] = "; ".join(off) or NO_SOURCE.get(f, "no agent reports it")
    agents = [AgentPublic(agent=a, last_seen=v["seen"], **(v["stats"] or {}), **v.get("clock", {}))
              for a, v in sorted(loupe.control.agents().items())]
    return SourceList(agents=agents, sources=out, families=fams, missing=missing)


def _control(req: SourceControlRequest, store, loupe, suspend: bool) -> SourcePublic:
    match = [s for s in store.sources() if s["agent"] == req.agent and s["name"] == req.name]
    if not match:
        known = ", ".join(f"{s['agent']}:{s['name']}" for s in store.sources()) or "none"
        raise HTTPException(404, f"no source {req.name!r} reported by agent {req.agent!r}; known: {known}")
    if not loupe.control.suspendable(req.agent, req.name):
        raise HTTPException(409, f"{req.name} cannot be suspended (only probes with a run-time cost can)")
    loupe.control.set(req.agent, req.name, suspend)
    return _public(loupe, match[0], time.time())


@router.post("/sources/suspend", response_model=SourcePublic,
             summary="Suspend a probe: its agent detaches it within a second or two",
             responses={404: {"description": "No such agent/source"}, 409: {"description": "Not suspendable"}})
def suspend(req: SourceControlRequest, store: StoreDep, loupe: LoupeDep, _: OperatorDep, request: Request
            ) -> SourcePublic:
    out = _control(req, store, loupe, True)
    audit(request, "source.suspend", f"{req.agent}:{req.name}")
    return out


@router.post("/sources/resume", response_model=SourcePublic, summary="Resume a suspended probe",
             responses={404: {"description": "No such agent/source"}, 409: {"description": "Not suspendable"}})
def resume(req: SourceControlRequest, store: StoreDep, loupe: LoupeDep, _: OperatorDep, request: Request
           ) -> SourcePublic:
    out = _control(req, store, loupe, False)
    audit(request, "source.resume", f"{req.agent}:{req.name}")
    return out


# Why a family can be empty: what would feed it.
NO_SOURCE = {
    "nfs": "needs the BPF agent's NFS probe (bpf.nfswire or bpf.nfsd, as root); 'loupe serve --demo' adds a synthetic NAS",
    "cpu": "no agent reports it: is 'loupe agent' or the local agent running?",
    "disk": "no agent reports it: is 'loupe agent' or the local agent running?",
    "net": "no agent reports it: is 'loupe agent' or the local agent running?",
    "net_link": "no agent reports link speeds: the agent's procfs.net reads /sys/class/net/<if>/speed; "
                "virtual links without a speed have none",
    "tcp": "needs the BPF agent's socket probe (bpf.net, as root)",
    "zfs_arc": "no ZFS source: the agent's zfs source reads /proc/spl/kstat/zfs where ZFS is loaded",
    "zfs_txg": "no ZFS source: the agent's zfs source reads /proc/spl/kstat/zfs where ZFS is loaded",
}
