"""The audit log: who did what, when (admin only)."""

from typing import Annotated

from fastapi import APIRouter, Query

from ...models import AuditEntry, AuditLog
from ..deps import AdminDep, LoupeDep

router = APIRouter(prefix="/audit", tags=["audit"])


@router.get("", response_model=AuditLog, summary="Audit entries, newest first")
def audit_log(_: AdminDep, loupe: LoupeDep,
              limit: Annotated[int, Query(ge=1, le=1000)] = 200,
              before: Annotated[int | None, Query(ge=1, le=2**62, description="Entries older than this id (paging)")] = None
              ) -> AuditLog:
    return AuditLog(entries=[AuditEntry(**e) for e in loupe.auth.audit_log(limit, before)])
