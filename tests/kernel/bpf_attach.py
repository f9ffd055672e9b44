"""Load and attach each program of a BPF object on its own; print JSON: name -> result.

    python3 bpf_attach.py OBJECT.bpf.o

Runs in the test guest (python3 + libbpf.so.1 only, no Loupe code) to find out
which attach kinds (kprobe, fentry, tp_btf, tracepoint...) this kernel takes.
Each program is tried alone, because one program the kernel refuses fails the
load of the whole object. libbpf's own messages go to stderr.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys


def main(path: str) -> int:
    lib = ctypes.CDLL("libbpf.so.1", use_errno=True)
    lib.bpf_object__open_file.restype = ctypes.c_void_p
    lib.bpf_object__open_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    lib.bpf_object__next_program.restype = ctypes.c_void_p
    lib.bpf_object__next_program.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.bpf_program__name.restype = ctypes.c_char_p
    lib.bpf_program__name.argtypes = [ctypes.c_void_p]
    lib.bpf_program__section_name.restype = ctypes.c_char_p
    lib.bpf_program__section_name.argtypes = [ctypes.c_void_p]
    lib.bpf_program__set_autoload.argtypes = [ctypes.c_void_p, ctypes.c_bool]
    lib.bpf_object__load.argtypes = [ctypes.c_void_p]
    lib.bpf_program__attach.restype = ctypes.c_void_p
    lib.bpf_program__attach.argtypes = [ctypes.c_void_p]
    lib.bpf_link__destroy.argtypes = [ctypes.c_void_p]
    lib.bpf_object__close.argtypes = [ctypes.c_void_p]

    def programs(obj):
        prog = lib.bpf_object__next_program(obj, None)
        while prog:
            yield prog
            prog = lib.bpf_object__next_program(obj, prog)

    def open_obj():
        obj = lib.bpf_object__open_file(path.encode(), None)
        if not obj:
            raise OSError(ctypes.get_errno(), f"bpf_object__open_file({path})")
        return obj

    obj = open_obj()
    names = [lib.bpf_program__name(p).decode() for p in programs(obj)]
    lib.bpf_object__close(obj)

    results = {}
    for name in names:
        obj = open_obj()
        section = ""
        try:
            target = None
            for prog in programs(obj):
                mine = lib.bpf_program__name(prog).decode() == name
                lib.bpf_program__set_autoload(prog, mine)
                if mine:
                    target, section = prog, lib.bpf_program__section_name(prog).decode()
            err = lib.bpf_object__load(obj)
            if err:
                results[name] = {"section": section, "loaded": False, "attached": False,
                                 "error": f"load: {os.strerror(-err)} ({err})"}
                continue
            link = lib.bpf_program__attach(target)
            if not link:
                e = ctypes.get_errno()
                results[name] = {"section": section, "loaded": True, "attached": False,
                                 "error": f"attach: {os.strerror(e)} (-{e})"}
                continue
            lib.bpf_link__destroy(link)
            results[name] = {"section": section, "loaded": True, "attached": True, "error": None}
        finally:
            lib.bpf_object__close(obj)
    json.dump(results, sys.stdout, indent=2, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
