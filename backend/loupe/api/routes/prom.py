from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..deps import LoupeDep, MetricsAuth

router = APIRouter(tags=["health"])


@router.get("/metrics", summary="Prometheus metrics: headline series and Loupe's own health",
            response_class=Response, responses={200: {"content": {"text/plain": {}}}}, dependencies=[MetricsAuth])
def prometheus(loupe: LoupeDep) -> Response:
    return Response(generate_latest(loupe.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/healthz", summary="Liveness: the store answers")
def healthz(loupe: LoupeDep) -> dict:
    loupe.store.ping()
    return {"ok": True}
