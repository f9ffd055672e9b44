"""Bearer tokens: one per agent (ingest), for scrapers (metrics) and for scripts (api). Admin only."""

from dataclasses import asdict

from fastapi import APIRouter, Request

from ...models import TokenCreate, TokenCreated, TokenList, TokenPublic
from ..deps import AdminDep, LoupeDep, RowId, audit, auth_call
from .users import ERRORS

router = APIRouter(prefix="/tokens", tags=["tokens"])


@router.get("", response_model=TokenList, summary="List tokens, revoked ones included (never their secrets)")
def list_tokens(_: AdminDep, loupe: LoupeDep) -> TokenList:
    return TokenList(tokens=[TokenPublic(**asdict(t)) for t in loupe.auth.tokens()])


@router.post("", response_model=TokenCreated, status_code=201, responses=ERRORS,
             summary="Make a token; its secret is in this response only")
def create_token(body: TokenCreate, p: AdminDep, loupe: LoupeDep, request: Request) -> TokenCreated:
    secret, rec = auth_call(loupe.auth.create_token, body.name, body.scope, role=body.role, by=p.name)
    detail = body.scope + (f" as {body.role}" if body.role else "")
    audit(request, "token.create", f"{rec.id} {rec.name}", detail)
    return TokenCreated(secret=secret, **asdict(rec))


@router.post("/{token_id}/revoke", response_model=TokenPublic, responses=ERRORS,
             summary="Revoke a token: refused from the next request on")
def revoke_token(token_id: RowId, p: AdminDep, loupe: LoupeDep, request: Request) -> TokenPublic:
    rec = auth_call(loupe.auth.revoke_token, token_id, p.name)
    audit(request, "token.revoke", f"{rec.id} {rec.name}", rec.scope)
    return TokenPublic(**asdict(rec))
