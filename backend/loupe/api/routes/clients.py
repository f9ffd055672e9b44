from typing import Annotated

from fastapi import APIRouter, Query

from ...diagnose import gather, verdict
from ...models import (ClientDiagnosis, DiagnosisDisk, DiagnosisLink, DiagnosisOp, DiagnosisReason,
                       EvidenceStatistic)
from ...query import QueryError, window_for
from ..deps import LoupeDep, StoreDep

router = APIRouter(prefix="/clients", tags=["clients"])


@router.get("/{client}/diagnosis", response_model=ClientDiagnosis,
            summary="Why is this client slow? Its facts over a window, and a verdict with evidence")
def diagnosis(
    client: str, store: StoreDep, loupe: LoupeDep,
    start: Annotated[str, Query(description="'-5m', unix seconds or ISO 8601")] = "-5m",
    end: Annotated[str, Query()] = "-2s",
    host: Annotated[str | None, Query(description="the NFS server's host; all if unset")] = None,
) -> ClientDiagnosis:
    if not client.strip() or len(client) > 255:
        raise QueryError("client: give the client's address")
    whole = window_for(start, end, retain=loupe.retain, points=1, whole=True)
    series = window_for(start, end, retain=loupe.retain, points=min(600, max(1, whole.seconds)))
    f = gather(store, client, whole, series, host)
    kind, reasons = verdict(f)
    return ClientDiagnosis(
        client=client, host=host, start=whole.start, end=whole.end, tier=whole.tier, verdict=kind,
        reasons=[DiagnosisReason(text=r.text, statistic=EvidenceStatistic(metric=r.metric, by=r.by, where=r.where))
                 for r in reasons],
        ops_per_s=f.ops_per_s, bytes_per_s=f.bytes_per_s, inflight=f.inflight, busy_fraction=f.busy_fraction,
        mean_io_bytes=f.mean_io_bytes, retransmits_per_s=f.retransmits_per_s,
        by_op=[DiagnosisOp(**vars(o)) for o in f.by_op], size_mix=[[e, s] for e, s in f.size_mix],
        traffic_share=f.traffic_share, wire_bytes_per_s=f.wire_bytes_per_s,
        disks=[DiagnosisDisk(**vars(d)) for d in f.disks], link=_link(f), names=loupe.names.names([client]))


def _link(f) -> DiagnosisLink | None:
    if f.link is None:
        return None
    L = f.link
    (sd, share), (ud, util) = L.share, L.utilisation
    return DiagnosisLink(host=L.host, interface=L.interface, capacity_bytes_per_s=L.capacity,
                         client_in_bytes_per_s=L.client.get("in", 0.0), client_out_bytes_per_s=L.client.get("out", 0.0),
                         link_in_bytes_per_s=L.total.get("in", 0.0) if L.total else None,
                         link_out_bytes_per_s=L.total.get("out", 0.0) if L.total else None,
                         share=share, share_direction=sd, utilisation=util, utilisation_direction=ud)
