import json
import time
import uuid
from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, Response

from ...models import (
    ClientResultModel, RunCreate, RunList, RunPublic, RunReport, RunResultsImport, RunStop,
)
from ...query import QueryError
from ...runs import ClientResult, ResultsError, build_report, observe, parse_csv, parse_fio, parse_simple, report_csv
from ..deps import AdminAuth, LoupeDep, OperatorAuth, StoreDep, audit

router = APIRouter(prefix="/runs", tags=["runs"])
NOT_FOUND = {404: {"description": "No such run"}}


def _public(row: dict) -> RunPublic:
    spec = json.loads(row["spec"])
    return RunPublic(id=row["id"], name=row["name"], host=spec.get("host"), start=row["start"], end=row["end"],
                     running=row["end"] is None, created=row["created"], command=spec.get("command"),
                     exit_code=spec.get("exit_code"),
                     results=[ClientResultModel(**r) for r in spec.get("results", [])])


def _get(store, run_id: str) -> dict:
    row = store.run_get(run_id)
    if not row:
        raise HTTPException(404, f"no run {run_id!r}")
    return row


def _save(store, row: dict, spec: dict) -> RunPublic:
    store.run_put(row["id"], row["name"], row["start"], row["end"], row["created"], json.dumps(spec))
    return _public(store.run_get(row["id"]))


@router.get("", response_model=RunList, summary="List benchmark runs, newest first")
def list_runs(store: StoreDep) -> RunList:
    return RunList(runs=[_public(r) for r in store.run_list()])


@router.post("", response_model=RunPublic, status_code=201, summary="Start a run (mark its beginning)",
             dependencies=[OperatorAuth])
def start_run(body: RunCreate, store: StoreDep, request: Request) -> RunPublic:
    now = time.time()
    start = now if body.start is None else body.start
    if start > now + 60:
        raise QueryError(f"start {start:.0f} is in the future (server time {now:.0f})")
    rid = uuid.uuid4().hex[:12]
    row = dict(id=rid, name=body.name, start=start, end=None, created=now)
    audit(request, "run.start", rid, body.name)
    return _save(store, row, dict(host=body.host, command=body.command, results=[]))


@router.get("/{run_id}", response_model=RunPublic, responses=NOT_FOUND)
def get_run(run_id: str, store: StoreDep) -> RunPublic:
    return _public(_get(store, run_id))


@router.post("/{run_id}/stop", response_model=RunPublic, responses=NOT_FOUND, summary="End a run",
             dependencies=[OperatorAuth])
def stop_run(run_id: str, body: RunStop, store: StoreDep, request: Request) -> RunPublic:
    row = _get(store, run_id)
    if row["end"] is not None:
        raise HTTPException(409, f"run {run_id!r} already ended at {row['end']:.0f}")
    end = time.time() if body.end is None else body.end
    if end <= row["start"]:
        raise QueryError(f"end {end:.0f} is not after the run's start {row['start']:.0f}")
    spec = json.loads(row["spec"])
    spec["exit_code"] = body.exit_code
    audit(request, "run.stop", run_id, row["name"])
    return _save(store, dict(row, end=end), spec)


def _merge(store, row: dict, results: list[ClientResult]) -> RunPublic:
    spec = json.loads(row["spec"])
    have = {r["client"]: r for r in spec.get("results", [])}
    for r in results:  # a client's newer import replaces its older one
        have[r.client] = ClientResultModel(**asdict(r)).model_dump()
    spec["results"] = sorted(have.values(), key=lambda r: r["client"])
    return _save(store, row, spec)


@router.post("/{run_id}/results", response_model=RunPublic, responses=NOT_FOUND,
             summary="Import the clients' own results (fio JSON, or per-client numbers)", dependencies=[OperatorAuth])
def import_results(run_id: str, body: RunResultsImport, store: StoreDep, request: Request) -> RunPublic:
    row = _get(store, run_id)
    try:
        if body.format == "fio":
            if body.report is None:
                raise ResultsError("format fio needs 'report': the output of fio --output-format=json")
            results = parse_fio(body.report, body.client)
        else:
            if body.clients is None:
                raise ResultsError("format simple needs 'clients': a list of per-client results")
            results = parse_simple(body.clients)
    except ResultsError as e:
        raise QueryError(str(e)) from None
    audit(request, "run.results", run_id, f"{len(results)} clients ({body.format})")
    return _merge(store, row, results)


@router.post("/{run_id}/results.csv", response_model=RunPublic, responses=NOT_FOUND,
             summary="Import the clients' own results as CSV: "
                     "client,read_bytes,write_bytes,read_ops,write_ops[,create_ops,runtime]",
             openapi_extra={"requestBody": {"required": True, "content": {"text/csv": {"schema": {"type": "string"}}}}},
             dependencies=[OperatorAuth])
async def import_results_csv(run_id: str, request: Request, store: StoreDep) -> RunPublic:
    row = _get(store, run_id)
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError:
        raise QueryError("CSV: the body is not UTF-8") from None
    try:
        results = parse_csv(text)
    except ResultsError as e:
        raise QueryError(str(e)) from None
    audit(request, "run.results", run_id, f"{len(results)} clients (csv)")
    return _merge(store, row, results)


@router.get("/{run_id}/report", response_model=RunReport, responses=NOT_FOUND,
            summary="Client-reported vs wire-observed, per client and in total")
def run_report(
    run_id: str, store: StoreDep, loupe: LoupeDep,
    tolerance: Annotated[float, Query(gt=0, le=100, description="Allowed difference, in %")] = 2.0,
    check_ops: Annotated[bool, Query(description="Also require ops to agree (NFS splits I/Os beyond rsize/wsize)")] = False,
    format: Annotated[str, Query(pattern=r"^(json|csv)$")] = "json",
):
    row = _get(store, run_id)
    if row["end"] is None:
        raise HTTPException(409, f"run {run_id!r} is still in progress: stop it first")
    spec = json.loads(row["spec"])
    results = [ClientResult(**r) for r in spec.get("results", [])]
    start, end = int(row["start"]), int(-(-row["end"] // 1))  # whole seconds covering the run
    wire, notes = observe(store, start, end, retain=loupe.retain, host=spec.get("host"))
    rep = build_report(start, end, results, wire, tolerance_pct=tolerance, check_ops=check_ops)
    if format == "csv":
        return Response(report_csv(rep), media_type="text/csv",
                        headers={"Content-Disposition": f'attachment; filename="run-{run_id}.csv"'})
    shown = [c.client for c in results] + [o["client"] for o in rep["observed"]]
    return RunReport(run=_public(row), notes=notes, names=loupe.names.names(shown), **rep)


@router.delete("/{run_id}", status_code=204, responses=NOT_FOUND, summary="Delete a run and its results (admin)",
               dependencies=[AdminAuth])
def delete_run(run_id: str, store: StoreDep, request: Request) -> Response:
    if not store.run_delete(run_id):
        raise HTTPException(404, f"no run {run_id!r}")
    audit(request, "run.delete", run_id)
    return Response(status_code=204)
