#!/bin/sh
# In the test guest: record what a BPF probe author needs to know about this kernel.
#
#   kernel-facts.sh OUT_DIR [BPF_OBJECT]
#
# Writes to OUT_DIR: kernel-release.txt; events-nfsd.txt and events-sunrpc.txt
# (every tracepoint format of those systems, "ID:" lines dropped since IDs change
# from boot to boot); btf.txt (/sys/kernel/btf entries); tracing.txt (kprobe_events
# and friends present or not); bpftool-feature.txt (bpftool feature probe kernel);
# with BPF_OBJECT, bpf-attach.json: for each program in it, whether it loaded and
# attached here (tests/kernel/bpf_attach.py).
set -u
out=$1
obj=${2:-}
mkdir -p "$out"
uname -r > "$out/kernel-release.txt"
modprobe nfsd  # its tracepoints and BTF exist only once the module is loaded

tr=/sys/kernel/tracing
for sys in nfsd sunrpc; do
    # One awk for all files: a process per file costs ~0.2 s under TCG.
    awk 'FNR == 1 && NR > 1 { print "" } !/^ID:/' "$tr/events/$sys"/*/format > "$out/events-$sys.txt"
done

ls /sys/kernel/btf > "$out/btf.txt"
{
    for f in kprobe_events uprobe_events dynamic_events available_filter_functions; do
        if [ -e "$tr/$f" ]; then echo "$f: present"; else echo "$f: absent"; fi
    done
    echo "nfsd functions traceable by ftrace: $(grep -c '\[nfsd\]' "$tr/available_filter_functions" 2>/dev/null)"
} > "$out/tracing.txt"

bpftool feature probe kernel > "$out/bpftool-feature.txt" 2>&1 \
    || echo "bpftool feature probe failed: exit $?" >> "$out/bpftool-feature.txt"

rc=0
if [ -n "$obj" ]; then
    python3 /repo/tests/kernel/bpf_attach.py "$obj" > "$out/bpf-attach.json" || rc=$?
fi
exit "$rc"
