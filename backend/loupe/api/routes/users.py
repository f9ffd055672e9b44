"""Local users and their roles (admin only)."""

from fastapi import APIRouter, Request, Response

from ...models import UserCreate, UserList, UserPublic, UserUpdate
from ..deps import AdminDep, LoupeDep, audit, auth_call

router = APIRouter(prefix="/users", tags=["users"])
ERRORS = {400: {"description": "Bad name, password or role change; detail says which"},
          404: {"description": "No such user"}}


@router.get("", response_model=UserList, summary="List users")
def list_users(_: AdminDep, loupe: LoupeDep) -> UserList:
    return UserList(users=[UserPublic(**u) for u in loupe.auth.users()])


@router.post("", response_model=UserPublic, status_code=201, responses=ERRORS, summary="Add a user")
def add_user(body: UserCreate, _: AdminDep, loupe: LoupeDep, request: Request) -> UserPublic:
    u = auth_call(loupe.auth.add_user, body.name, body.role, body.password)
    audit(request, "user.create", u["name"], f"role {u['role']}")
    return UserPublic(**u)


@router.patch("/{name}", response_model=UserPublic, responses=ERRORS,
              summary="Change a user's role, password or disabled flag (ends their sessions)")
def update_user(name: str, body: UserUpdate, _: AdminDep, loupe: LoupeDep, request: Request) -> UserPublic:
    u = auth_call(loupe.auth.update_user, name, role=body.role, password=body.password, disabled=body.disabled)
    what = [f"role {body.role}"] if body.role else []
    what += ["password reset"] if body.password is not None else []
    what += [("disabled" if body.disabled else "enabled")] if body.disabled is not None else []
    audit(request, "user.update", name, ", ".join(what) or "no change")
    return UserPublic(**u)


@router.delete("/{name}", status_code=204, responses=ERRORS, summary="Delete a user")
def delete_user(name: str, _: AdminDep, loupe: LoupeDep, request: Request) -> Response:
    auth_call(loupe.auth.delete_user, name)
    audit(request, "user.delete", name, "")
    return Response(status_code=204)
