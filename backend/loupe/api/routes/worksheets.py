import json
import time
import uuid

from fastapi import APIRouter, HTTPException, Request, Response

from ...catalog import CatalogError, check_dim, metric
from ...models import WorksheetCreate, WorksheetList, WorksheetPublic, WorksheetUpdate
from ...query import QueryError, parse_statistic
from ..deps import OperatorDep, StoreDep, audit

router = APIRouter(prefix="/worksheets", tags=["worksheets"])


def _check(ws: WorksheetCreate) -> None:
    for i, s in enumerate(ws.statistics):
        try:
            m = metric(s.metric)
            if s.by:
                check_dim(m, s.by)
            parse_statistic(s.metric, s.by, [f"{k}={','.join(v)}" for k, v in s.where.items()])
        except (CatalogError, QueryError) as e:
            raise QueryError(f"statistics[{i}]: {e}") from None


def _public(row: dict) -> WorksheetPublic:
    spec = json.loads(row["spec"])
    return WorksheetPublic(id=row["id"], owner=row["owner"], created=row["created"], updated=row["updated"], **spec)


@router.get("", response_model=WorksheetList, summary="List worksheets")
def list_worksheets(store: StoreDep) -> WorksheetList:
    return WorksheetList(worksheets=[_public(r) for r in store.worksheet_list()])


@router.post("", response_model=WorksheetPublic, status_code=201, summary="Create a worksheet")
def create_worksheet(ws: WorksheetCreate, store: StoreDep, p: OperatorDep, request: Request) -> WorksheetPublic:
    _check(ws)
    now = time.time()
    wid = uuid.uuid4().hex[:12]
    store.worksheet_put(wid, ws.name, p.name, ws.model_dump_json(), now, now)
    audit(request, "worksheet.create", wid, ws.name)
    return _public(store.worksheet_get(wid))


@router.get("/{ws_id}", response_model=WorksheetPublic, responses={404: {"description": "No such worksheet"}})
def get_worksheet(ws_id: str, store: StoreDep) -> WorksheetPublic:
    row = store.worksheet_get(ws_id)
    if not row:
        raise HTTPException(404, f"no worksheet {ws_id!r}")
    return _public(row)


@router.put("/{ws_id}", response_model=WorksheetPublic, responses={404: {"description": "No such worksheet"}})
def update_worksheet(ws_id: str, ws: WorksheetUpdate, store: StoreDep, _: OperatorDep, request: Request
                     ) -> WorksheetPublic:
    row = store.worksheet_get(ws_id)
    if not row:
        raise HTTPException(404, f"no worksheet {ws_id!r}")
    _check(ws)
    store.worksheet_put(ws_id, ws.name, row["owner"], ws.model_dump_json(), row["created"], time.time())
    audit(request, "worksheet.update", ws_id, ws.name)
    return _public(store.worksheet_get(ws_id))


@router.delete("/{ws_id}", status_code=204, responses={404: {"description": "No such worksheet"}})
def delete_worksheet(ws_id: str, store: StoreDep, _: OperatorDep, request: Request) -> Response:
    if not store.worksheet_delete(ws_id):
        raise HTTPException(404, f"no worksheet {ws_id!r}")
    audit(request, "worksheet.delete", ws_id)
    return Response(status_code=204)
