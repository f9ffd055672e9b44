"""Sign in and out, who am I, own password, and the demo's one-click link."""

import hmac

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from ...auth import AuthError, Principal, RateLimited
from ...models import LinkLoginRequest, LoginRequest, Me, PasswordChange
from ..deps import SESSION_COOKIE, LoupeDep, ViewerDep, client_address

router = APIRouter(prefix="/auth", tags=["auth"])

LOGIN_ERRORS = {401: {"description": "Wrong user name or password"},
                429: {"description": "Too many attempts from this address or for this user; see Retry-After"}}


def _me(loupe, p: Principal) -> Me:
    expires = loupe.auth.session_expires(p) if p.via == "session" else None
    return Me(user=p.name, role=p.role, via=p.via, csrf_token=p.csrf, expires_at=expires)


def _signed_in(request: Request, loupe, secret: str, p: Principal) -> JSONResponse:
    resp = JSONResponse(_me(loupe, p).model_dump())
    resp.set_cookie(SESSION_COOKIE, secret, max_age=loupe.settings.session_max_hours * 3600, path="/",
                    httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return resp


@router.post("/login", response_model=Me, responses=LOGIN_ERRORS, summary="Sign in; sets the session cookie")
async def login(body: LoginRequest, request: Request, loupe: LoupeDep) -> JSONResponse:
    try:
        # argon2 takes tens of milliseconds of CPU by design: off the event loop.
        secret, p = await run_in_threadpool(loupe.auth.login, body.user, body.password, client_address(request))
    except RateLimited as e:
        raise HTTPException(429, str(e), headers={"Retry-After": str(int(e.retry_after) + 1)}) from None
    except AuthError as e:
        raise HTTPException(401, str(e)) from None
    return _signed_in(request, loupe, secret, p)


@router.post("/link", response_model=Me, responses={401: {"description": "Not the demo's link"}},
             summary="Sign in as admin with the link `loupe serve --demo` printed (demo only)")
async def link_login(body: LinkLoginRequest, request: Request, loupe: LoupeDep) -> JSONResponse:
    if not loupe.demo_link or not hmac.compare_digest(body.token.encode(), loupe.demo_link.encode()):
        raise HTTPException(401, "this sign-in link is not valid here (links work only on the demo)")
    try:
        secret, p = await run_in_threadpool(loupe.auth.start_session, "admin", client_address(request))
    except AuthError:  # NotFound: an admin deleted the user 'admin'
        raise HTTPException(401, "the demo link signs in as 'admin', and there is no such user now") from None
    return _signed_in(request, loupe, secret, p)


@router.post("/logout", status_code=204, summary="Sign out: ends this session")
def logout(p: ViewerDep, loupe: LoupeDep, request: Request) -> Response:
    loupe.auth.logout(p)
    loupe.auth.audit(p.name, "logout", p.name, "", client_address(request))
    resp = Response(status_code=204)
    resp.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict",
                       secure=request.url.scheme == "https")
    return resp


@router.get("/me", response_model=Me, summary="Who is signed in, and the CSRF token for this session")
def me(p: ViewerDep, loupe: LoupeDep) -> Me:
    return _me(loupe, p)


@router.post("/password", status_code=204, responses={400: {"description": "Current password wrong or new too short"}},
             summary="Change your own password (ends your other sessions)")
def change_password(body: PasswordChange, p: ViewerDep, loupe: LoupeDep, request: Request) -> Response:
    if p.via != "session":
        raise HTTPException(403, "sign in with a password to change it (tokens cannot)")
    try:
        loupe.auth.change_password(p.name, body.current, body.new, keep_session=p.session)
    except AuthError as e:
        raise HTTPException(400, str(e)) from None
    loupe.auth.audit(p.name, "user.password", p.name, "own password", client_address(request))
    return Response(status_code=204)
