"""A thin ctypes binding over Debian's libbpf.so.1: open, load, attach, drain.

Loupe ships CO-RE objects built with clang; libbpf relocates them against the
running kernel's BTF at load time, so the server needs neither kernel headers nor
LLVM, only ``libbpf1`` (about 350 KB). Only what the probes use is bound.

Errors raise :class:`BpfError` whose message says what to do about them, e.g.
"needs root (CAP_BPF and CAP_PERFMON)" or the verifier's last lines.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import mmap
import os
import threading
from collections import deque
from pathlib import Path

log = logging.getLogger("loupe.bpf")

BTF_VMLINUX = Path("/sys/kernel/btf/vmlinux")
TRACEFS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))

# enum bpf_map_type values used here (uapi/linux/bpf.h)
_PERCPU_TYPES = {5, 6, 10}  # PERCPU_HASH, PERCPU_ARRAY, LRU_PERCPU_HASH
_ARRAY_TYPES = {2, 6}  # ARRAY, PERCPU_ARRAY
BPF_STATS_RUN_TIME = 0
BPF_TC_INGRESS, BPF_TC_EGRESS = 1, 2
BPF_TCX_INGRESS, BPF_TCX_EGRESS = 46, 47  # enum bpf_attach_type, Linux 6.6+


class BpfError(RuntimeError):
    """Loading or attaching failed; the message names the cause and the remedy."""


class _TcHook(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("ifindex", ctypes.c_int), ("attach_point", ctypes.c_int),
                ("parent", ctypes.c_uint32)]


class _TcOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("prog_fd", ctypes.c_int), ("flags", ctypes.c_uint32),
                ("prog_id", ctypes.c_uint32), ("handle", ctypes.c_uint32), ("priority", ctypes.c_uint32)]


class _TestRunOpts(ctypes.Structure):
    """struct bpf_test_run_opts (libbpf 0.7+)."""

    _fields_ = [("sz", ctypes.c_size_t), ("data_in", ctypes.c_void_p), ("data_out", ctypes.c_void_p),
                ("data_size_in", ctypes.c_uint32), ("data_size_out", ctypes.c_uint32),
                ("ctx_in", ctypes.c_void_p), ("ctx_out", ctypes.c_void_p), ("ctx_size_in", ctypes.c_uint32),
                ("ctx_size_out", ctypes.c_uint32), ("retval", ctypes.c_uint32), ("repeat", ctypes.c_int),
                ("duration", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("cpu", ctypes.c_uint32),
                ("batch_size", ctypes.c_uint32)]


class _ProgInfo(ctypes.Structure):
    """struct bpf_prog_info up to recursion_misses (uapi/linux/bpf.h; run_time_ns/run_cnt since 5.1)."""

    _fields_ = [
        ("type", ctypes.c_uint32), ("id", ctypes.c_uint32), ("tag", ctypes.c_uint8 * 8),
        ("jited_prog_len", ctypes.c_uint32), ("xlated_prog_len", ctypes.c_uint32),
        ("jited_prog_insns", ctypes.c_uint64), ("xlated_prog_insns", ctypes.c_uint64),
        ("load_time", ctypes.c_uint64), ("created_by_uid", ctypes.c_uint32), ("nr_map_ids", ctypes.c_uint32),
        ("map_ids", ctypes.c_uint64), ("name", ctypes.c_char * 16), ("ifindex", ctypes.c_uint32),
        ("gpl_compatible", ctypes.c_uint32), ("netns_dev", ctypes.c_uint64), ("netns_ino", ctypes.c_uint64),
        ("nr_jited_ksyms", ctypes.c_uint32), ("nr_jited_func_lens", ctypes.c_uint32),
        ("jited_ksyms", ctypes.c_uint64), ("jited_func_lens", ctypes.c_uint64),
        ("btf_id", ctypes.c_uint32), ("func_info_rec_size", ctypes.c_uint32), ("func_info", ctypes.c_uint64),
        ("nr_func_info", ctypes.c_uint32), ("nr_line_info", ctypes.c_uint32), ("line_info", ctypes.c_uint64),
        ("jited_line_info", ctypes.c_uint64), ("nr_jited_line_info", ctypes.c_uint32),
        ("line_info_rec_size", ctypes.c_uint32), ("jited_line_info_rec_size", ctypes.c_uint32),
        ("nr_prog_tags", ctypes.c_uint32), ("prog_tags", ctypes.c_uint64),
        ("run_time_ns", ctypes.c_uint64), ("run_cnt", ctypes.c_uint64),
        ("recursion_misses", ctypes.c_uint64),  # 5.12+: runs skipped because the program was already running on the CPU
    ]


_lib: ctypes.CDLL | None = None
_lib_error: str | None = None
_lock = threading.Lock()
_messages: deque[str] = deque(maxlen=200)  # libbpf's recent log lines, for error messages
_PRINT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_libc = ctypes.CDLL(None, use_errno=True)


@_PRINT_FN
def _print(level: int, fmt: bytes, args: int) -> int:
    # va_list is passed by pointer on x86-64 and arm64, so vsnprintf can take it as is.
    buf = ctypes.create_string_buffer(4096)
    _libc.vsnprintf(buf, ctypes.c_size_t(len(buf)), fmt, ctypes.c_void_p(args))
    for line in buf.value.decode(errors="replace").splitlines():
        if line.strip():
            _messages.append(line)
            log.debug("libbpf: %s", line)
    return 0


def lib() -> ctypes.CDLL:
    """libbpf.so.1, bound once; raises BpfError when it is not installed."""
    global _lib, _lib_error
    with _lock:
        if _lib is None and _lib_error is None:
            try:
                _lib = _bind(ctypes.CDLL(ctypes.util.find_library("bpf") or "libbpf.so.1", use_errno=True))
            except OSError as e:
                _lib_error = f"libbpf is not installed (Debian package libbpf1): {e}"
        if _lib is None:
            raise BpfError(_lib_error)
        return _lib


def _bind(L: ctypes.CDLL) -> ctypes.CDLL:
    vp, cp, i, u32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32
    sigs = {
        "bpf_object__open_file": (vp, [cp, vp]),
        "bpf_object__load": (i, [vp]),
        "bpf_object__close": (None, [vp]),
        "bpf_object__find_program_by_name": (vp, [vp, cp]),
        "bpf_object__find_map_by_name": (vp, [vp, cp]),
        "bpf_object__next_program": (vp, [vp, vp]),
        "bpf_program__name": (cp, [vp]),
        "bpf_program__section_name": (cp, [vp]),
        "bpf_program__set_autoload": (i, [vp, ctypes.c_bool]),
        "bpf_program__fd": (i, [vp]),
        "bpf_program__attach": (vp, [vp]),
        "bpf_link__destroy": (i, [vp]),
        "bpf_map__fd": (i, [vp]),
        "bpf_map__key_size": (u32, [vp]),
        "bpf_map__value_size": (u32, [vp]),
        "bpf_map__max_entries": (u32, [vp]),
        "bpf_map__set_max_entries": (i, [vp, u32]),
        "bpf_map__type": (i, [vp]),
        "bpf_map_lookup_elem": (i, [i, vp, vp]),
        "bpf_map_update_elem": (i, [i, vp, vp, ctypes.c_uint64]),
        "bpf_map_delete_elem": (i, [i, vp]),
        "bpf_map_get_next_key": (i, [i, vp, vp]),
        "bpf_map_lookup_batch": (i, [i, vp, vp, vp, vp, ctypes.POINTER(u32), vp]),
        "bpf_map_lookup_and_delete_batch": (i, [i, vp, vp, vp, vp, ctypes.POINTER(u32), vp]),
        "bpf_obj_get_info_by_fd": (i, [i, vp, ctypes.POINTER(u32)]),
        "bpf_prog_test_run_opts": (i, [i, ctypes.POINTER(_TestRunOpts)]),
        "bpf_enable_stats": (i, [i]),
        "bpf_tc_hook_create": (i, [vp]),
        "bpf_tc_hook_destroy": (i, [vp]),
        "bpf_tc_attach": (i, [vp, vp]),
        "bpf_tc_detach": (i, [vp, vp]),
        "bpf_link_create": (i, [i, i, i, vp]),
        "libbpf_num_possible_cpus": (i, []),
        "libbpf_set_print": (vp, [_PRINT_FN]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(L, name)
        fn.restype, fn.argtypes = res, args
    L.libbpf_set_print(_print)
    return L


def _why(err: int, what: str) -> str:
    """A readable cause for a libbpf/kernel errno, with the remedy where there is one."""
    err = abs(err)
    tail = [m for m in list(_messages)[-12:] if m]
    detail = ("; libbpf: " + " | ".join(tail[-4:])) if tail else ""
    if err in (errno.EPERM, errno.EACCES):
        if not has_bpf_caps():
            return f"{what}: permission denied: needs root (CAP_BPF and CAP_PERFMON)"
        # with the capabilities, EACCES is the verifier refusing a program: its log says why
        return f"{what}: refused ({os.strerror(err)}; the verifier's reason, or lockdown/sysctl){detail}"
    if err == errno.ENOENT:
        return f"{what}: not found in this kernel ({os.strerror(err)})"
    if err in (errno.EOPNOTSUPP, 524):  # 524 = ENOTSUPP, the kernel-internal one
        return f"{what}: not supported by this kernel"
    return f"{what}: {os.strerror(err)} (errno {err}){detail}"


def _errno(rc: int | None = None) -> int:
    return abs(rc) if rc else (ctypes.get_errno() or errno.EINVAL)


class BpfMap:
    def __init__(self, obj: "BpfObject", name: str, ptr: int) -> None:
        L = lib()
        self.name = name
        self.fd = L.bpf_map__fd(ptr)
        self.key_size = L.bpf_map__key_size(ptr)
        self.value_size = L.bpf_map__value_size(ptr)
        self.max_entries = L.bpf_map__max_entries(ptr)
        self.type = L.bpf_map__type(ptr)
        self.percpu = self.type in _PERCPU_TYPES
        self.is_array = self.type in _ARRAY_TYPES
        self.ncpus = L.libbpf_num_possible_cpus() if self.percpu else 1
        # per-CPU values are laid out at 8-byte strides (kernel: round_up(value_size, 8))
        self.stride = ((self.value_size + 7) // 8) * 8 if self.percpu else self.value_size
        self._obj = obj  # keep the object (and its fds) alive as long as the map is used

    @property
    def value_bytes(self) -> int:
        return self.stride * self.ncpus

    def _batch(self, delete: bool) -> list[tuple[bytes, bytes]]:
        L = lib()
        fn = L.bpf_map_lookup_and_delete_batch if delete else L.bpf_map_lookup_batch
        chunk = max(1, min(self.max_entries, 4096))
        keys = ctypes.create_string_buffer(chunk * self.key_size)
        vals = ctypes.create_string_buffer(chunk * self.value_bytes)
        token_in = ctypes.create_string_buffer(max(self.key_size, 8))
        token_out = ctypes.create_string_buffer(max(self.key_size, 8))
        out: list[tuple[bytes, bytes]] = []
        first = True
        while True:
            count = ctypes.c_uint32(chunk)
            rc = fn(self.fd, None if first else token_in, token_out, keys, vals, ctypes.byref(count), None)
            err = _errno(rc) if rc else 0
            n = count.value
            kb, vb = keys.raw, vals.raw
            for j in range(n):
                out.append((kb[j * self.key_size:(j + 1) * self.key_size],
                            vb[j * self.value_bytes:(j + 1) * self.value_bytes]))
            if rc and err == errno.ENOENT:
                return out
            if rc and err == errno.ENOSPC and n == 0:  # a bucket holds more than chunk entries
                chunk *= 2
                keys = ctypes.create_string_buffer(chunk * self.key_size)
                vals = ctypes.create_string_buffer(chunk * self.value_bytes)
                continue
            if rc:
                if err in (errno.EINVAL, errno.EOPNOTSUPP, 524) and first:
                    return self._iterate(delete)  # batch ops arrived in 5.6 (commit cb4d03ab499d)
                raise BpfError(_why(err, f"reading map {self.name}"))
            ctypes.memmove(token_in, token_out, len(token_in))
            first = False

    def _iterate(self, delete: bool) -> list[tuple[bytes, bytes]]:
        L = lib()
        key = ctypes.create_string_buffer(self.key_size)
        nxt = ctypes.create_string_buffer(self.key_size)
        val = ctypes.create_string_buffer(self.value_bytes)
        keys: list[bytes] = []
        prev = None
        while L.bpf_map_get_next_key(self.fd, prev, nxt) == 0:
            keys.append(nxt.raw)
            ctypes.memmove(key, nxt, self.key_size)
            prev = key
        out = []
        for k in keys:
            kb = ctypes.create_string_buffer(k, self.key_size)
            if L.bpf_map_lookup_elem(self.fd, kb, val) == 0:
                out.append((k, val.raw))
                if delete:
                    L.bpf_map_delete_elem(self.fd, kb)
        return out

    def drain(self) -> list[tuple[bytes, bytes]]:
        """Every (key, value), deleting them: the per-second hand-off of a hash map."""
        if self.is_array:
            raise BpfError(f"map {self.name} is an array: read it with items() and diff, arrays cannot be drained")
        return self._batch(delete=True)

    def items(self) -> list[tuple[bytes, bytes]]:
        return self._batch(delete=False)

    def lookup(self, key: bytes) -> bytes | None:
        val = ctypes.create_string_buffer(self.value_bytes)
        rc = lib().bpf_map_lookup_elem(self.fd, ctypes.create_string_buffer(key, self.key_size), val)
        return val.raw if rc == 0 else None

    def update(self, key: bytes, value: bytes, flags: int = 0) -> None:
        rc = lib().bpf_map_update_elem(self.fd, ctypes.create_string_buffer(key, self.key_size),
                                       ctypes.create_string_buffer(value, self.value_bytes), flags)
        if rc:
            raise BpfError(_why(_errno(rc), f"updating map {self.name}"))

    def delete(self, key: bytes) -> bool:
        return lib().bpf_map_delete_elem(self.fd, ctypes.create_string_buffer(key, self.key_size)) == 0

    def clear(self) -> None:
        if self.is_array:
            zero = bytes(self.value_bytes)
            for i in range(self.max_entries):
                self.update(i.to_bytes(4, "little"), zero)
        else:
            self.drain()

    def mmap(self) -> mmap.mmap:
        """A BPF_F_MMAPABLE array's values, shared with the programs: read and
        written in place, with no syscall per value. Value i is at i * its size
        rounded up to 8 bytes (the kernel's elem_size)."""
        if self.type != 2:  # BPF_MAP_TYPE_ARRAY: per-CPU arrays and hashes cannot be mapped
            raise BpfError(f"map {self.name} is not an array: only arrays can be mapped")
        size = -(-self.value_size // 8) * 8 * self.max_entries
        size += -size % mmap.PAGESIZE
        try:
            return mmap.mmap(self.fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:  # EINVAL: created without BPF_F_MMAPABLE
            raise BpfError(_why(e.errno or errno.EINVAL, f"mapping map {self.name}")) from e

    def per_cpu(self, value: bytes) -> list[bytes]:
        """Split a per-CPU map's value into one ``value_size`` slice per possible CPU."""
        return [value[c * self.stride:c * self.stride + self.value_size] for c in range(self.ncpus)]


class BpfObject:
    """One loaded .bpf.o: its programs, links and maps; close() undoes everything."""

    def __init__(self, path: str | os.PathLike, *, skip: tuple[str, ...] = (),
                 resize: dict[str, int] | None = None) -> None:
        """Open and load ``path``. Programs named in ``skip`` are not loaded (e.g. an
        fentry program this kernel refuses), so the rest of the object still loads.
        ``resize``: map name -> max_entries, set before the maps are created."""
        L = lib()
        self.path = Path(path)
        if not self.path.exists():
            raise BpfError(f"{self.path}: BPF object not built (run `make bpf`)")
        _messages.clear()
        ptr = L.bpf_object__open_file(str(self.path).encode(), None)
        if not ptr:
            raise BpfError(_why(_errno(), f"opening {self.path.name}"))
        self._ptr: int | None = ptr
        self._links: dict[str, list[int]] = {}
        self._tc: list[tuple[_TcHook, _TcOpts, bool]] = []
        self._tcx: list[int] = []  # tcx link fds
        self.programs: dict[str, int] = {}
        prog = L.bpf_object__next_program(ptr, None)
        while prog:
            name = L.bpf_program__name(prog).decode()
            self.programs[name] = prog
            if name in skip:
                L.bpf_program__set_autoload(prog, False)
            prog = L.bpf_object__next_program(ptr, prog)
        self.skipped = tuple(n for n in skip if n in self.programs)
        for name, n in (resize or {}).items():
            m = L.bpf_object__find_map_by_name(ptr, name.encode())
            rc = L.bpf_map__set_max_entries(m, n) if m else 0
            if not m or rc:
                L.bpf_object__close(ptr)
                self._ptr = None
                what = f"sizing map {name} of {self.path.name} to {n} entries"
                raise BpfError(_why(_errno(rc), what) if m else f"{what}: the object has no such map")
        rc = L.bpf_object__load(ptr)
        if rc:
            err = _errno(rc)
            L.bpf_object__close(ptr)
            self._ptr = None
            raise BpfError(_why(err, f"loading {self.path.name}"))

    def __enter__(self) -> "BpfObject":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _prog(self, name: str) -> int:
        if self._ptr is None:
            raise BpfError(f"{self.path.name} is closed")
        if name not in self.programs:
            raise BpfError(f"{self.path.name} has no program {name!r}; it has {', '.join(self.programs)}")
        return self.programs[name]

    def has_program(self, name: str) -> bool:
        return name in self.programs and name not in self.skipped

    def section(self, name: str) -> str:
        return lib().bpf_program__section_name(self._prog(name)).decode()

    def prog_fd(self, name: str) -> int:
        return lib().bpf_program__fd(self._prog(name))

    def test_run(self, name: str, data: bytes, repeat: int = 1) -> tuple[int, int]:
        """Run program ``name`` on ``data`` (BPF_PROG_TEST_RUN: e.g. a crafted
        Ethernet frame for a tc program) ``repeat`` times in a row, without attaching
        it anywhere; returns its return value and the kernel's timing of a run in ns
        (the mean over the repeats)."""
        buf = ctypes.create_string_buffer(data, len(data))
        out = ctypes.create_string_buffer(len(data) + 256)
        o = _TestRunOpts(sz=ctypes.sizeof(_TestRunOpts), data_in=ctypes.cast(buf, ctypes.c_void_p),
                         data_size_in=len(data), data_out=ctypes.cast(out, ctypes.c_void_p),
                         data_size_out=len(out), repeat=repeat)
        if lib().bpf_prog_test_run_opts(self.prog_fd(name), ctypes.byref(o)):
            raise BpfError(_why(_errno(), f"test-running {name}"))
        return ctypes.c_int32(o.retval).value, o.duration

    def attach(self, name: str) -> None:
        """Attach by the program's SEC() (tp_btf/, tracepoint/, raw_tp/, kprobe/, fentry/ ...)."""
        _messages.clear()
        link = lib().bpf_program__attach(self._prog(name))
        if not link:
            raise BpfError(_why(_errno(), f"attaching {name} ({self.section(name)})"))
        self._links.setdefault(name, []).append(link)

    def attach_tc(self, name: str, ifindex: int, ingress: bool = True) -> None:
        """Attach a SEC("tc") program to ``ifindex``'s ingress or egress.

        Through a tcx link where the kernel has them (6.6+, commit e420bed02507 "bpf: Add
        fd-based tcx multi-prog infra"): a link dies with its process, so a probe killed
        with -9 leaves nothing attached. Older kernels get a classic clsact filter,
        which outlives the process until detached."""
        L = lib()
        fd = L.bpf_link_create(self.prog_fd(name), ifindex, BPF_TCX_INGRESS if ingress else BPF_TCX_EGRESS, None)
        if fd >= 0:
            self._tcx.append(fd)
            return
        hook = _TcHook(sz=ctypes.sizeof(_TcHook), ifindex=ifindex,
                       attach_point=BPF_TC_INGRESS if ingress else BPF_TC_EGRESS)
        rc = L.bpf_tc_hook_create(ctypes.byref(hook))
        created = rc == 0
        if rc and abs(rc) != errno.EEXIST:
            raise BpfError(_why(rc, f"creating the clsact qdisc on ifindex {ifindex}"))
        opts = _TcOpts(sz=ctypes.sizeof(_TcOpts), prog_fd=self.prog_fd(name))
        rc = L.bpf_tc_attach(ctypes.byref(hook), ctypes.byref(opts))
        if rc:
            if created:
                L.bpf_tc_hook_destroy(ctypes.byref(hook))
            raise BpfError(_why(rc, f"attaching {name} to tc {'ingress' if ingress else 'egress'} of ifindex {ifindex}"))
        self._tc.append((hook, opts, created))

    def detach_tc(self) -> None:
        L = lib()
        for fd in self._tcx:
            os.close(fd)
        self._tcx.clear()
        for hook, opts, created in reversed(self._tc):
            detach = _TcOpts(sz=ctypes.sizeof(_TcOpts), handle=opts.handle, priority=opts.priority)
            L.bpf_tc_detach(ctypes.byref(hook), ctypes.byref(detach))
            if created:
                # only a qdisc we made: another tool's filters may live on one we found
                both = _TcHook(sz=ctypes.sizeof(_TcHook), ifindex=hook.ifindex,
                               attach_point=BPF_TC_INGRESS | BPF_TC_EGRESS)
                L.bpf_tc_hook_destroy(ctypes.byref(both))
        self._tc.clear()

    def detach(self) -> None:
        """Detach every program (the maps stay): this is what suspending a probe does."""
        L = lib()
        for links in self._links.values():
            for link in links:
                L.bpf_link__destroy(link)
        self._links.clear()
        self.detach_tc()

    @property
    def attached(self) -> list[str]:
        return list(self._links) + [f"tc@{h.ifindex}" for h, _, _ in self._tc] + [f"tcx#{fd}" for fd in self._tcx]

    def _find_map(self, name: str) -> int | None:
        return lib().bpf_object__find_map_by_name(self._ptr, name.encode()) if self._ptr is not None else None

    def has_map(self, name: str) -> bool:
        return bool(self._find_map(name))

    def map(self, name: str) -> BpfMap:
        if self._ptr is None:
            raise BpfError(f"{self.path.name} is closed")
        ptr = self._find_map(name)
        if not ptr:
            raise BpfError(f"{self.path.name} has no map {name!r}")
        return BpfMap(self, name, ptr)

    def prog_misses(self) -> dict[str, int]:
        """{program: runs the kernel skipped because it was already running on that CPU}."""
        return {n: m for n, (_, _, m) in self.prog_counters().items()}

    def prog_counters(self) -> dict[str, tuple[int, int, int]]:
        """{program: (run count, run time ns, runs skipped)}: prog_stats() and
        prog_misses() from one read of each program's info."""
        return {n: (i.run_cnt, i.run_time_ns, i.recursion_misses) for n, i in self._infos().items()}

    def _infos(self) -> dict[str, _ProgInfo]:
        L = lib()
        out = {}
        for name in self.programs:
            if name in self.skipped or self._ptr is None:
                continue
            info = _ProgInfo()
            size = ctypes.c_uint32(ctypes.sizeof(info))
            if L.bpf_obj_get_info_by_fd(self.prog_fd(name), ctypes.byref(info), ctypes.byref(size)) == 0:
                out[name] = info
        return out

    def prog_stats(self) -> dict[str, tuple[int, int]]:
        """{program: (run count, run time ns)}; counted only while enable_stats() is held."""
        return {n: (c, t) for n, (c, t, _) in self.prog_counters().items()}

    def close(self) -> None:
        if self._ptr is None:
            return
        self.detach()
        lib().bpf_object__close(self._ptr)
        self._ptr = None


# membarrier(2) by architecture (asm-generic: 283); MEMBARRIER_CMD_GLOBAL waits in
# synchronize_rcu() (kernel/sched/membarrier.c, Linux 4.3+)
_NR_MEMBARRIER = {"x86_64": 324, "i686": 375, "ppc64le": 365, "ppc64": 365, "s390x": 356}
_MEMBARRIER_CMD_GLOBAL = 1


def grace_period() -> str | None:
    """Wait until every BPF program running now has returned: they run inside
    RCU read-side sections (tc and tracing programs alike), so one RCU grace
    period covers them. None once waited; else why it could not be (a kernel
    with nohz_full CPUs refuses, or a seccomp filter)."""
    nr = _NR_MEMBARRIER.get(os.uname().machine, 283)
    if _libc.syscall(ctypes.c_long(nr), ctypes.c_int(_MEMBARRIER_CMD_GLOBAL), ctypes.c_uint(0),
                     ctypes.c_int(0)) == 0:
        return None
    return f"membarrier: {os.strerror(ctypes.get_errno())}"


class Stats:
    """Holds BPF_STATS_RUN_TIME on (kernel.bpf_stats_enabled, refcounted by fd)."""

    def __init__(self) -> None:
        self.fd = -1
        try:
            fd = lib().bpf_enable_stats(BPF_STATS_RUN_TIME)
            self.fd = fd if fd >= 0 else -1
            self.error = None if fd >= 0 else _why(_errno(fd), "enabling BPF run-time stats")
        except BpfError as e:
            self.error = str(e)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def enable_stats() -> Stats:
    return Stats()


# ---- feature detection ------------------------------------------------------

def tracefs() -> Path | None:
    for p in TRACEFS:
        if (p / "events").is_dir():
            return p
    return None


def probe_tracepoint(category: str, name: str) -> bool:
    """Is tracepoint ``category:name`` in this kernel (tracefs, else BTF's trace_event_raw_*)?"""
    tf = tracefs()
    if tf is not None:
        return (tf / "events" / category / name).is_dir()
    return btf_has(f"btf_trace_{name}")


def btf_has(name: str) -> bool:
    """Does vmlinux BTF name this type or function (e.g. ``btf_trace_block_rq_issue``)?

    Searches the raw string section, where names are NUL-terminated. Not cached: it
    is asked a few times at start, and a set of every kernel name would cost the
    agent about 15 MB of memory for good."""
    try:
        with open(BTF_VMLINUX, "rb") as f:
            head = f.read(24)
            hdr_len = int.from_bytes(head[4:8], "little")
            str_off = int.from_bytes(head[16:20], "little")
            str_len = int.from_bytes(head[20:24], "little")
            f.seek(max(24, hdr_len) + str_off)
            strings = f.read(str_len)
    except OSError:
        return False
    return (b"\0" + name.encode() + b"\0") in strings


def kprobes_available() -> bool:
    tf = tracefs()
    return tf is not None and (tf / "kprobe_events").exists()


CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF = 21, 38, 39


def capabilities(status: str | None = None) -> int | None:
    """This process's effective capability bits (/proc/self/status CapEff), or None."""
    try:
        text = status if status is not None else Path("/proc/self/status").read_text()
        return next(int(line.split()[1], 16) for line in text.splitlines() if line.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def has_bpf_caps(status: str | None = None) -> bool:
    """Does this process hold what loading tracing BPF programs takes (since 5.8:
    CAP_BPF + CAP_PERFMON; before, CAP_SYS_ADMIN)?"""
    eff = capabilities(status)
    if eff is None:
        return os.geteuid() == 0
    has = lambda cap: bool(eff >> cap & 1)  # noqa: E731
    return has(CAP_SYS_ADMIN) or (has(CAP_BPF) and has(CAP_PERFMON))


def why_not_bpf() -> str | None:
    """None when BPF probes can run here; else the reason, for the source's status."""
    try:
        lib()
    except BpfError as e:
        return str(e)
    if not has_bpf_caps():
        return "needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN); running procfs-only"
    if not BTF_VMLINUX.exists():
        return "kernel has no BTF (/sys/kernel/btf/vmlinux); CO-RE probes need CONFIG_DEBUG_INFO_BTF=y (5.4+)"
    return None
