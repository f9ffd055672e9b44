"""A disposable NFS lab on this machine: a bridge, network namespaces as clients,
an nfs-ganesha server and libnfs clients. Used by tests and the ``loupe lab``
command; everything it creates is named with a per-run suffix and removed on
teardown, and leftovers of killed runs are removed by :func:`cleanup_stale`.

    with Lab(clients=3) as lab, Ganesha(lab.server_ip, exports=["/export"]) as g:
        lab.clients[0].run("nfs-cp", "/etc/hosts", g.url("/export/hosts", version=3))
"""

from .ganesha import Ganesha, GaneshaError
from .netns import Client, Lab, LabError, cleanup_stale, missing_tools

__all__ = ["Lab", "Client", "LabError", "Ganesha", "GaneshaError", "cleanup_stale", "missing_tools"]
