// Which kinds of BPF attachment this kernel takes, for the NFS server probe.
// Each program does nothing; bpf_attach.py loads and attaches them one at a time.
// No headers: only the attach point (the section name) matters here.
#define SEC(name) __attribute__((section(name), used))

char LICENSE[] SEC("license") = "GPL";

// nfsd and sunrpc are modules in Debian's kernels: these need module BTF (5.11+).
SEC("kprobe/nfsd_dispatch") int kprobe_nfsd_dispatch(void *ctx) { return 0; }
SEC("kretprobe/nfsd_dispatch") int kretprobe_nfsd_dispatch(void *ctx) { return 0; }
SEC("fentry/nfsd_dispatch") int fentry_nfsd_dispatch(void *ctx) { return 0; }
SEC("fexit/nfsd_dispatch") int fexit_nfsd_dispatch(void *ctx) { return 0; }
SEC("fentry/vfs_read") int fentry_vfs_read(void *ctx) { return 0; }
SEC("tp_btf/svc_stats_latency") int tp_btf_svc_stats_latency(void *ctx) { return 0; }
SEC("raw_tp/svc_stats_latency") int raw_tp_svc_stats_latency(void *ctx) { return 0; }
SEC("tracepoint/sunrpc/svc_stats_latency") int tp_svc_stats_latency(void *ctx) { return 0; }
SEC("tp_btf/nfsd_compound_status") int tp_btf_nfsd_compound_status(void *ctx) { return 0; }
SEC("tracepoint/nfsd/nfsd_read_start") int tp_nfsd_read_start(void *ctx) { return 0; }
SEC("tracepoint/nfsd/nfsd_write_done") int tp_nfsd_write_done(void *ctx) { return 0; }
