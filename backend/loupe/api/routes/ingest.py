"""POST /api/v1/ingest: frames from agents, as JSON (versions 1 and 2) or Arrow IPC (version 3)."""

import email.message

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from ...frame import IngestRequest, IngestResult
from ...frame_v3 import MEDIA_TYPE as ARROW, FrameError, StreamError, decode
from ...models import ErrorBody
from ...service import Loupe
from ..deps import IngestAuth, LoupeDep


class IngestResponse(IngestResult):
    rejected: list[dict] = []


def _media_type(request: Request) -> str | None:
    value = request.headers.get("content-type")
    if not value:
        return None
    m = email.message.Message()
    m["content-type"] = value
    return m.get_content_type()


def _is_json(media_type: str | None) -> bool:
    return media_type is not None and media_type.startswith("application/") and \
        (media_type == "application/json" or media_type.endswith("+json"))


async def ingest_arrow(loupe: LoupeDep, request: Request) -> IngestResponse:
    """A version-3 body: decoded, validated and stored in one worker thread."""
    body = await request.body()

    def run():
        try:
            req, frames = decode(body)
        except StreamError as e:
            raise HTTPException(400, f"not a readable Arrow IPC body: {e}") from None
        except FrameError as e:
            raise RequestValidationError(e.errors) from None
        return req, loupe.ingest(req.model_copy(update={"frames": frames}), getattr(request.state, "arrived", None),
                                 body)

    req, out = await run_in_threadpool(run)
    return _answer(loupe, req, out)


class IngestRoute(APIRoute):
    """One operation, two bodies: JSON goes through FastAPI's own parsing of IngestRequest (the
    documented schema), an Arrow IPC body to :func:`ingest_arrow`, which reads the bytes itself
    (FastAPI would try them as an IngestRequest); any other media type is 415."""

    def get_route_handler(self):
        as_json = super().get_route_handler()
        # The same dependencies (the ingest token): ingest_arrow has no body parameter to parse.
        as_arrow = APIRoute(self.path, ingest_arrow, dependencies=self.dependencies,
                            response_model=IngestResponse).get_route_handler()

        async def handler(request: Request):
            media_type = _media_type(request)
            fmt = "arrow" if media_type == ARROW else "json" if _is_json(media_type) else None
            if fmt is None:
                return JSONResponse({"detail": f"unsupported media type {media_type or '(none)'}: send "
                                               f"application/json (frame versions 1 and 2) or {ARROW} (version 3)"},
                                    status_code=415)
            request.app.state.loupe.telemetry.count_request(fmt)
            return await (as_arrow if fmt == "arrow" else as_json)(request)

        return handler


router = APIRouter(tags=["ingest"], route_class=IngestRoute)

BODY_DOC = {
    "description": f"Frames as JSON (versions 1 and 2, this schema), or frame version 3 as {ARROW}: one or more "
                   "Arrow IPC streams back to back, each frame a record batch, the frame headers and the request's "
                   "other fields as JSON in the schema metadata (loupe/frame.py describes both).",
    "content": {ARROW: {"schema": {"type": "string", "format": "binary"}}},
}


@router.post("/ingest", response_model=IngestResponse, dependencies=[IngestAuth],
             summary="Frames from an agent (bearer token)", openapi_extra={"requestBody": BODY_DOC},
             responses={400: {"model": ErrorBody,
                              "description": "An Arrow IPC body that is cut short or corrupt; detail says where"},
                        401: {"description": "Missing or invalid token"}, 413: {"description": "Body too large"},
                        415: {"model": ErrorBody, "description": "Neither JSON nor Arrow IPC"},
                        503: {"description": "The store cannot take writes now; detail says why (retry)"},
                        422: {"description": "Malformed frame; detail names the frame and the field"}})
async def ingest(req: IngestRequest, loupe: LoupeDep, request: Request) -> IngestResponse:
    out = await run_in_threadpool(loupe.ingest, req, getattr(request.state, "arrived", None))
    return _answer(loupe, req, out)


def _answer(loupe: Loupe, req: IngestRequest, out) -> IngestResponse:
    return IngestResponse(accepted=out.accepted, duplicates=out.duplicates, rows=out.rows,
                          folded_rows=out.folded_rows, rejected=out.rejected,
                          suspend=loupe.control.suspended(req.agent) if req.agent else None)
