"""A path dimension over a range, folded into a bounded directory tree (the hierarchy view).

The store sums each element over the range and cuts paths at the depth asked for; this
module builds the tree from those sums and bounds what is sent: the top children of each
directory plus one (other) node, and no more than `max_nodes` nodes in all (directories
beyond that are sent with their value but without their children).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .catalog import FILE_OTHER
from .models import HierarchyNode
from .store.base import PathSum

SELF = "(this directory)"
OTHER = "(other)"
NONE = "(none)"
MAX_NODES = 5000


@dataclass
class _Node:
    path: str
    value: float = 0.0
    elements: int = 0
    own: float = 0.0  # the path's own value: a file's, or a directory's own operations
    own_elements: int = 0
    cut: bool = False  # paths below the depth read were summed into it
    children: dict[str, _Node] = field(default_factory=dict)

    @property
    def is_dir(self) -> bool:
        return self.cut or bool(self.children)

    def add(self, value: float, elements: int) -> None:
        self.value += value
        self.elements += elements


def directory(root: str) -> str:
    """A root path as the directory prefix its children start with: '/export/home' -> '/export/home/'."""
    return root if root.endswith("/") else root + "/"


def fold(sums: list[PathSum], root: str) -> tuple[_Node, list[PathSum]]:
    """The tree of the sums below `root`, and the sums that are not paths below it (kept apart)."""
    base = directory(root)
    top = _Node(root)
    loose: list[PathSum] = []
    for s in sorted(sums, key=lambda s: (s.path, s.cut)):  # one order: the same sums give the same floats
        top.add(s.value, s.elements)
        if s.path == root:
            top.own += s.value
            top.own_elements += s.elements
            continue
        if not s.path.startswith(base):
            loose.append(s)
            continue
        parts = s.path[len(base):].split("/")
        node = top
        for i, name in enumerate(parts):
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = _Node(base + "/".join(parts[: i + 1]))
            child.add(s.value, s.elements)
            node = child
        if s.cut:
            node.cut = True
        else:
            node.own += s.value
            node.own_elements += s.elements
    return top, loose


def _entries(node: _Node, loose: list[PathSum]) -> list[tuple[HierarchyNode, _Node | None]]:
    """A directory's children as API nodes, each with the tree node to expand (directories)."""
    out: list[tuple[HierarchyNode, _Node | None]] = []
    for name, child in node.children.items():
        if child.is_dir:
            out.append((HierarchyNode(name=name, path=child.path, kind="dir", value=child.value,
                                      elements=child.elements, truncated=True), child))
        else:
            out.append((HierarchyNode(name=name, path=child.path, kind="file", value=child.value,
                                      elements=child.elements), None))
    if node.own and node.is_dir:
        out.append((HierarchyNode(name=SELF, path=node.path, kind="self", value=node.own,
                                  elements=node.own_elements), None))
    for s in loose:
        folded = s.path == FILE_OTHER
        out.append((HierarchyNode(name=s.path or NONE, path=None if folded else s.path,
                                  kind="folded" if folded else "element", value=s.value, elements=s.elements), None))
    out.sort(key=lambda e: (-e[0].value, e[0].name))
    return out


def build_tree(sums: list[PathSum], root: str, *, top: int, max_nodes: int = MAX_NODES) -> tuple[HierarchyNode, int]:
    """The tree rooted at `root` and its node count: breadth first, each directory's `top`
    largest children plus (other) (and FILE_OTHER, always), until `max_nodes` would be passed."""
    tree, loose = fold(sums, root)
    name = root.rstrip("/").rsplit("/", 1)[-1] or "/"
    out = HierarchyNode(name=name, path=root, kind="dir", value=tree.value, elements=tree.elements)
    count = 1
    queue: deque[tuple[_Node, HierarchyNode, list[PathSum]]] = deque([(tree, out, loose)])
    while queue:
        node, api, extra = queue.popleft()
        entries = _entries(node, extra)
        # the folded files stay a node of their own, however small: they are not a directory's
        shown = entries[:top] + [e for e in entries[top:] if e[0].kind == "folded"]
        rest = [e for e in entries[top:] if e[0].kind != "folded"]
        if rest:
            shown.append((HierarchyNode(name=OTHER, path=None, kind="other", value=sum(e.value for e, _ in rest),
                                        elements=sum(e.elements for e, _ in rest), merged=len(rest)), None))
        if count + len(shown) > max_nodes:
            api.truncated = True
            continue
        api.truncated = False
        count += len(shown)
        for child_api, child in shown:
            api.children.append(child_api)
            if child is not None and child.children:
                queue.append((child, child_api, []))
    return out, count
