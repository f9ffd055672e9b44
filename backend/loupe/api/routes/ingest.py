from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from ...frame import IngestRequest, IngestResult
from ..deps import IngestAuth, LoupeDep

router = APIRouter(tags=["ingest"])


class IngestResponse(IngestResult):
    rejected: list[dict] = []


@router.post("/ingest", response_model=IngestResponse, dependencies=[IngestAuth],
             summary="Frames from an agent (bearer token)",
             responses={401: {"description": "Missing or invalid token"}, 413: {"description": "Body too large"},
                        503: {"description": "The store cannot take writes now; detail says why (retry)"},
                        422: {"description": "Malformed frame; detail names the field"}})
async def ingest(req: IngestRequest, loupe: LoupeDep, request: Request) -> IngestResponse:
    out = await run_in_threadpool(loupe.ingest, req, getattr(request.state, "arrived", None))
    return IngestResponse(accepted=out.accepted, duplicates=out.duplicates, rows=out.rows,
                          folded_rows=out.folded_rows, rejected=out.rejected,
                          suspend=loupe.control.suspended(req.agent) if req.agent else None)
