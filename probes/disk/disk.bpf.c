// SPDX-License-Identifier: GPL-2.0
/* Disk I/O per disk x op: ops, bytes, and log2 histograms of latency (issue to
 * completion), size and offset, aggregated in the kernel.
 *
 * tp_btf (Linux 5.5+) gives the struct request itself, so issue and completion
 * are matched by its address, as libbpf-tools' biolatency does. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "loupe.bpf.h"
#include "disk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct start_val {
	__u64 ts;
	__u64 size; /* bytes at issue: the request's size, whatever completes it in parts */
};

/* A plain hash, as biolatency: an LRU hash may evict live entries early when
 * CPUs contend for its free lists, and each eviction loses a completion. Every
 * request completes (an error completes too), so entries do not leak. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct start_val);
} start SEC(".maps");

/* Per-CPU: a completion adds to its own CPU's copy with plain stores, no atomic
 * read-modify-write on lines other CPUs also write; user space sums the CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, DISK_MAX_KEYS);
	__type(key, struct disk_key);
	__type(value, struct disk_val);
} io SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct disk_val);
} other SEC(".maps");

LOUPE_DROPS_MAP;

static const struct disk_val zero_val;

/* rq->rq_disk was removed in 5.17 (commit f3fa33acca9f, "block: remove the
 * ->rq_disk field in struct request"); older kernels have no rq->q->disk. */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* tp_btf arguments are typed kernel pointers: plain loads (CO-RE relocated, and
 * checked by the verifier as BTF pointers) cost far less than bpf_probe_read
 * helper calls, which BPF_CORE_READ would make for each field. */
static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk;

	if (bpf_core_field_exists(rq->q->disk))
		disk = rq->q->disk;
	else
		disk = ((struct request___old *)rq)->rq_disk;
	if (!disk)
		return 0;
	return ((__u32)disk->major << 20) | disk->first_minor;
}

static __always_inline __u8 rq_op(struct request *rq)
{
	__u32 op = rq->cmd_flags & 0xff; /* REQ_OP_MASK */

	switch (op) {
	case 0: return DISK_OP_READ;	/* REQ_OP_READ */
	case 1: return DISK_OP_WRITE;	/* REQ_OP_WRITE */
	case 2: return DISK_OP_FLUSH;	/* REQ_OP_FLUSH */
	case 3:				/* REQ_OP_DISCARD */
	case 5:				/* REQ_OP_SECURE_ERASE */
	case 9: return DISK_OP_DISCARD;	/* REQ_OP_WRITE_ZEROES */
	default: return DISK_OP_OTHER;
	}
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(disk_issue, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct start_val v = { .ts = bpf_ktime_get_ns(), .size = rq->__data_len };

	if (bpf_map_update_elem(&start, &key, &v, BPF_ANY))
		loupe_count_drop(&drops); /* more than 16k requests in flight */
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(disk_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct start_val *s = bpf_map_lookup_elem(&start, &key);
	struct disk_key k = {};
	struct disk_val *v;
	__u64 lat, size, off;

	if (!s)
		return 0; /* issued before the probe attached */

	k.dev = rq_dev(rq);
	k.op = rq_op(rq);
	v = lookup_or_init(&io, &k, &zero_val, &other, &drops);
	if (!v)
		return 0;
	/* A driver may complete a request in parts (blk_update_request once per
	 * part, each firing this tracepoint); __data_len is what remains before this
	 * part. Bytes count per part, the op and its latency once, at the last. */
	v->bytes += nr_bytes;
	if (nr_bytes < rq->__data_len)
		return 0;
	lat = bpf_ktime_get_ns() - s->ts;
	size = s->size;
	off = rq->__sector << 9;
	bpf_map_delete_elem(&start, &key);

	v->count += 1;
	v->lat_sum += lat;
	v->lat[hist_bucket(lat, LAT_LO, LAT_HI)] += 1;
	if (size)
		v->size[hist_bucket(size, SIZE_LO, SIZE_HI)] += 1;
	if (k.op == DISK_OP_READ || k.op == DISK_OP_WRITE)
		v->off[hist_bucket(off, OFF_LO, OFF_HI)] += 1;
	return 0;
}
