// SPDX-License-Identifier: GPL-2.0
/* The kernel NFS server (knfsd): every NFS operation per client x protocol x op
 * x file, with latency, size and offset histograms, aggregated in the kernel.
 *
 * Tracepoints only (tp_btf, Linux 5.5+ and module BTF, 5.11+), read with CO-RE:
 *   nfsd:nfsd_fh_verify        a request's first file handle (NFSv3 ops' file)
 *   nfsd:nfsd_read_io_done,    bytes and offset actually read / written, for
 *   nfsd:nfsd_write_io_done    v3 and v4 alike (both reach nfsd_readv/splice/vfs_write)
 *   nfsd:nfsd_compound         NFSv4 COMPOUND start: remembers the request per thread
 *   nfsd:nfsd_compound_status  after each v4 op: its number (an OPEN that creates as
 *                              NFSD_OP_OPEN_CREATE), and the current file
 *   sunrpc:svc_stats_latency   request done: client, program, version, procedure and
 *                              its execution time (now - rq_stime); every op of the
 *                              request is counted here, with that latency
 * An nfsd thread serves one request at a time, so per-request state is keyed by
 * thread id (`reqs`) and checked against the request's (rqstp, xid).
 *
 * File and share names come from the dentries: on first sight of an inode its
 * path is walked up (bounded, across mounts) into `names` (id -> parent, name),
 * which user space drains and rebuilds paths from. Optional: fexit/d_move keeps
 * names right across renames (fentry needs BPF trampolines; some kernels refuse). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "loupe.bpf.h"
#include "nfsd.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define NFS_PROGRAM 100003
#define AF_INET 2
#define AF_INET6 10

/* sunrpc and nfsd are modules on most kernels, so the build machine's vmlinux.h
 * lacks their types: only the fields read are declared, and CO-RE finds them in
 * the loading kernel's module BTF. */
struct svc_rqst {
	struct __kernel_sockaddr_storage rq_addr;
	__be32 rq_xid;
	u32 rq_prog;
	u32 rq_vers;
	u32 rq_proc;
	void *rq_argp;
	void *rq_resp;
	ktime_t rq_stime;
} __attribute__((preserve_access_index));

struct svc_export {
	struct path ex_path;
} __attribute__((preserve_access_index));

struct svc_fh {
	struct dentry *fh_dentry;
	struct svc_export *fh_export;
} __attribute__((preserve_access_index));

struct nfsd4_open {
	u32 op_create;	/* OPEN4_CREATE (1) or OPEN4_NOCREATE (0), as the client asked */
} __attribute__((preserve_access_index));

union nfsd4_op_u {
	struct nfsd4_open open;
} __attribute__((preserve_access_index));

struct nfsd4_op {
	u32 opnum;
	union nfsd4_op_u u;
} __attribute__((preserve_access_index));

#define OP_OPEN 18

struct nfsd4_compoundargs {
	u32 minorversion;
	struct nfsd4_op *ops;
} __attribute__((preserve_access_index));

struct nfsd4_compound_state {
	struct svc_fh current_fh;
} __attribute__((preserve_access_index));

struct nfsd4_compoundres {
	struct nfsd4_compound_state cstate;
} __attribute__((preserve_access_index));

struct nfsd_oprec {
	__u64 file;
	__u64 share;
	__u64 bytes;
	__u64 off;
	__u16 op;
	__u8 io;
	__u8 pad[5];
};

/* One nfsd thread's request in flight. */
struct nfsd_req {
	__u64 rqstp;
	__u32 xid;
	__u8 v4;	/* a COMPOUND: ops[] holds its ops */
	__u8 minor;
	__u8 nops;
	__u8 has_file;
	__u64 file, share;	/* v3: the first handle the request verified */
	__u64 io_file, io_share, io_bytes, io_off;
	__u8 has_io;
	__u8 pad[7];
	struct nfsd_oprec ops[NFSD_MAX_OPS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NFSD_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct nfsd_req);
} reqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NFSD_MAX_KEYS);
	__type(key, struct nfsd_key);
	__type(value, struct nfsd_val);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsd_val);
} other SEC(".maps");

/* When counts is full, a client's op goes here without its file (its share
 * kept): a flood of new files (creates) fills counts, and each client's totals
 * must survive it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);	/* drained each second */
	__uint(max_entries, NFSD_SPILL_KEYS);
	__type(key, struct nfsd_key);
	__type(value, struct nfsd_val);
} spill SEC(".maps");

/* Names not yet handed to user space (drained each second). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct nfsd_name);
} names SEC(".maps");

/* Ids already named: a walk stops at the first one. User space clears it when it
 * forgets names, so they are sent again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsd_name);
} scratch SEC(".maps");

struct nfsd_stats {
	__u64 n[NFSD_STATS_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsd_stats);
} stats SEC(".maps");

LOUPE_DROPS_MAP;

static const struct nfsd_val zero_val;
static const struct nfsd_req zero_req;
static const __u8 one = 1;

static __always_inline void stat(int i)
{
	__u32 zero = 0;
	struct nfsd_stats *s = bpf_map_lookup_elem(&stats, &zero);

	if (s && i >= 0 && i < NFSD_STATS_N)
		add(&s->n[i], 1);
}

/* A file's id: a hash of its device and inode number (stable while the file
 * lives, unlike the dentry's address). */
static __always_inline __u64 id_of(struct dentry *d)
{
	struct inode *inode;
	__u64 ino, dev, id;

	if (!d)
		return NFSD_ID_NONE;
	inode = BPF_CORE_READ(d, d_inode);
	if (!inode)
		return NFSD_ID_NONE;
	ino = BPF_CORE_READ(inode, i_ino);
	dev = BPF_CORE_READ(inode, i_sb, s_dev);
	id = (ino * 0x9E3779B97F4A7C15ULL) ^ (dev * 0xC2B2AE3D27D4EB4FULL) ^ (dev << 1);
	return id < 2 ? id + 2 : id;
}

/* Name `d` and its ancestors up to "/" (or the first already named), crossing
 * mounts through the export's vfsmount; returns d's id. A global function: the
 * verifier checks it once, not once per caller (pointers come as scalars, read
 * with bpf_probe_read_kernel only). */
__noinline __u64 walk(__u64 dentry, __u64 vfsmount)
{
	struct dentry *d = (struct dentry *)dentry;
	struct mount *mnt = (struct mount *)(vfsmount - bpf_core_field_offset(struct mount, mnt));
	__u64 first = id_of(d), id = first;
	struct nfsd_name *n;
	__u32 zero = 0;
	int i, len;

	if (first == NFSD_ID_NONE || !vfsmount)
		return first;
	n = bpf_map_lookup_elem(&scratch, &zero);
	if (!n)
		return first;
	for (i = 0; i < NFSD_MAX_DEPTH; i++) {
		if (bpf_map_lookup_elem(&seen, &id))
			return first;
		if (d == BPF_CORE_READ(mnt, mnt.mnt_root)) {
			struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

			n->len = 0;
			if (!up || up == mnt) {
				n->parent = NFSD_ID_ROOT; /* "/" */
			} else {
				/* a mount's root has the path of its mount point */
				d = BPF_CORE_READ(mnt, mnt_mountpoint);
				mnt = up;
				n->parent = id_of(d);
			}
		} else {
			struct dentry *p = BPF_CORE_READ(d, d_parent);

			if (!p || p == d)
				return first; /* disconnected (no path yet): left unnamed */
			n->parent = id_of(p);
			len = bpf_probe_read_kernel_str(n->name, sizeof(n->name), BPF_CORE_READ(d, d_name.name));
			n->len = len > 0 ? len - 1 : 0;
			d = p;
		}
		if (bpf_map_update_elem(&names, &id, n, BPF_ANY)) {
			stat(ST_NAME_LOST); /* user space is behind: named again on next sight */
			return first;
		}
		bpf_map_update_elem(&seen, &id, &one, BPF_ANY);
		if (n->parent == NFSD_ID_ROOT || n->parent == NFSD_ID_NONE)
			return first;
		id = n->parent;
	}
	stat(ST_DEEP);
	return first;
}

static __always_inline __u64 fh_file(struct svc_fh *fhp)
{
	struct dentry *d = BPF_CORE_READ(fhp, fh_dentry);

	if (!d)
		return NFSD_ID_NONE;
	return walk((__u64)d, (__u64)BPF_CORE_READ(fhp, fh_export, ex_path.mnt));
}

static __always_inline __u64 fh_share(struct svc_fh *fhp)
{
	struct svc_export *exp = BPF_CORE_READ(fhp, fh_export);

	if (!exp || !BPF_CORE_READ(fhp, fh_dentry))
		return NFSD_ID_NONE;
	return walk((__u64)BPF_CORE_READ(exp, ex_path.dentry), (__u64)BPF_CORE_READ(exp, ex_path.mnt));
}

/* This thread's request state for `rqstp`, reset when it is a new request. */
static __always_inline struct nfsd_req *req_of(struct svc_rqst *rqstp)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 xid = BPF_CORE_READ(rqstp, rq_xid);
	struct nfsd_req *r = bpf_map_lookup_elem(&reqs, &tid);

	if (!r) {
		if (bpf_map_update_elem(&reqs, &tid, &zero_req, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&reqs, &tid)) {
			loupe_count_drop(&drops);
			return NULL;
		}
		r = bpf_map_lookup_elem(&reqs, &tid);
		if (!r)
			return NULL;
	}
	if (r->rqstp != (__u64)rqstp || r->xid != xid) {
		r->rqstp = (__u64)rqstp;
		r->xid = xid;
		r->v4 = r->minor = r->nops = r->has_file = r->has_io = 0;
		r->io_bytes = 0;
	}
	return r;
}

/* hist[idx] += 1, with a bounds check the compiler cannot drop: after inlining
 * it knows hist_bucket's clamp, and the verifier loses that bound on the way. */
static __always_inline void bump(__u64 *hist, __u32 bucket, __u64 n)
{
	__u64 idx = bucket; /* 64-bit: no 32-bit copy for the check and another for the use */

	asm volatile("" : "+r"(idx));
	if (idx < n)
		add(&hist[idx], 1);
}

/* The key being counted: built in place by the caller, so that count() can be a
 * global function (verified once; at most 5 scalar arguments). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsd_key);
} keybuf SEC(".maps");

static __always_inline struct nfsd_key *new_key(void)
{
	__u32 zero = 0;
	struct nfsd_key *k = bpf_map_lookup_elem(&keybuf, &zero);

	if (k)
		__builtin_memset(k, 0, sizeof(*k));
	return k;
}

/* One op of the key in `keybuf`: latency, and for a read or write its bytes and offset. */
__noinline int count(__u64 lat, __u64 io, __u64 bytes, __u64 off)
{
	__u32 zero = 0;
	struct nfsd_key *k = bpf_map_lookup_elem(&keybuf, &zero);
	struct nfsd_val *v;

	if (!k)
		return 0;
	v = lookup_or_insert(&counts, k, &zero_val);
	if (!v) {	/* full: this client's op without its file */
		loupe_count_drop(&drops);
		k->file = NFSD_ID_NONE;
		v = lookup_or_insert(&spill, k, &zero_val);
	}
	if (!v)		/* full too: the client-less `other` row */
		v = bpf_map_lookup_elem(&other, &zero);
	if (!v)
		return 0;
	add(&v->count, 1);
	add(&v->lat_sum, lat);
	bump(v->lat, hist_bucket(lat, NFSD_LAT_LO, NFSD_LAT_HI), NFSD_LAT_N);
	if (io) {
		add(&v->bytes, bytes);
		bump(v->size, hist_bucket(bytes, NFSD_SIZE_LO, NFSD_SIZE_HI), NFSD_SIZE_N);
		bump(v->off, hist_bucket(off, NFSD_OFF_LO, NFSD_OFF_HI), NFSD_OFF_N);
	}
	return 0;
}

static __always_inline void client_of(struct svc_rqst *rqstp, struct nfsd_key *k)
{
	__u16 family = BPF_CORE_READ(rqstp, rq_addr.ss_family);
	void *sa = (void *)((unsigned long)rqstp + bpf_core_field_offset(struct svc_rqst, rq_addr));

	if (family == AF_INET) {
		k->family = 4;
		bpf_probe_read_kernel(k->addr, 4, sa + 4); /* sockaddr_in.sin_addr */
	} else if (family == AF_INET6) {
		k->family = 6;
		bpf_probe_read_kernel(k->addr, 16, sa + 8); /* sockaddr_in6.sin6_addr */
	}
}

static __always_inline __u64 elapsed(struct svc_rqst *rqstp)
{
	__u64 start = BPF_CORE_READ(rqstp, rq_stime), now = bpf_ktime_get_ns();

	/* rq_stime is ktime_get() at receive: CLOCK_MONOTONIC, as bpf_ktime_get_ns() */
	return start && now > start ? now - start : 0;
}

SEC("tp_btf/nfsd_fh_verify")
int BPF_PROG(nfsd_fh_verify, struct svc_rqst *rqstp, struct svc_fh *fhp)
{
	struct nfsd_req *r = req_of(rqstp);

	if (r && !r->has_file) {
		r->file = fh_file(fhp);
		r->share = fh_share(fhp);
		r->has_file = 1;
	}
	return 0;
}

static __always_inline void io_done(struct svc_rqst *rqstp, struct svc_fh *fhp, __u64 offset, __u32 len)
{
	struct nfsd_req *r = req_of(rqstp);

	if (!r)
		return;
	if (!r->has_io) {
		r->io_file = fh_file(fhp);
		r->io_share = fh_share(fhp);
		r->io_off = offset;
		r->io_bytes = 0;
		r->has_io = 1;
	}
	r->io_bytes += len; /* an op may read or write in several parts */
}

SEC("tp_btf/nfsd_read_io_done")
int BPF_PROG(nfsd_read_io_done, struct svc_rqst *rqstp, struct svc_fh *fhp, __u64 offset, __u32 len)
{
	io_done(rqstp, fhp, offset, len);
	return 0;
}

SEC("tp_btf/nfsd_write_io_done")
int BPF_PROG(nfsd_write_io_done, struct svc_rqst *rqstp, struct svc_fh *fhp, __u64 offset, __u32 len)
{
	io_done(rqstp, fhp, offset, len);
	return 0;
}

/* Only the first argument is read: the others changed over kernel versions. */
SEC("tp_btf/nfsd_compound")
int BPF_PROG(nfsd_compound, struct svc_rqst *rqstp)
{
	struct nfsd_req *r = req_of(rqstp);
	struct nfsd4_compoundargs *args = BPF_CORE_READ(rqstp, rq_argp);

	if (!r)
		return 0;
	r->v4 = 1;
	r->minor = BPF_CORE_READ(args, minorversion);
	r->nops = 0;
	r->has_io = 0;
	stat(ST_COMPOUNDS);
	return 0;
}

SEC("tp_btf/nfsd_compound_status")
int BPF_PROG(nfsd_compound_status, __u32 args_opcnt, __u32 resp_opcnt)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct nfsd_req *r = bpf_map_lookup_elem(&reqs, &tid);
	struct svc_rqst *rqstp;
	struct nfsd4_compoundargs *args;
	struct nfsd4_compoundres *res;
	struct nfsd4_op *op;
	struct svc_fh *fh;
	__u64 file, share;
	__u16 opnum;
	__u8 io;

	if (!r || !r->v4 || !r->rqstp || !resp_opcnt)
		return 0;
	rqstp = (struct svc_rqst *)r->rqstp;
	args = BPF_CORE_READ(rqstp, rq_argp);
	res = BPF_CORE_READ(rqstp, rq_resp);
	/* the op just done is args->ops[resp_opcnt - 1] */
	op = (void *)((unsigned long)BPF_CORE_READ(args, ops) +
		      (unsigned long)(resp_opcnt - 1) * bpf_core_type_size(struct nfsd4_op));
	opnum = BPF_CORE_READ(op, opnum);
	/* an OPEN that asks to create is how a v4 client creates a file: named
	 * apart, as the wire decoder names it, so that creates can be checked */
	if (opnum == OP_OPEN && bpf_core_field_exists(op->u.open.op_create) && BPF_CORE_READ(op, u.open.op_create))
		opnum = NFSD_OP_OPEN_CREATE;
	io = r->has_io;
	if (io) { /* READ, WRITE, ...: the file they did I/O on */
		file = r->io_file;
		share = r->io_share;
	} else { /* any other op: the current file handle after it */
		fh = __builtin_preserve_access_index(&res->cstate.current_fh);
		file = fh_file(fh);
		share = file ? fh_share(fh) : NFSD_ID_NONE;
	}
	if (r->nops < NFSD_MAX_OPS) {
		struct nfsd_oprec *o = &r->ops[r->nops & (NFSD_MAX_OPS - 1)];

		o->op = opnum;
		o->file = file;
		o->share = share;
		o->io = io;
		o->bytes = r->io_bytes;
		o->off = r->io_off;
		r->nops++;
	} else {
		/* a long COMPOUND: count the rest now, with the latency so far */
		struct nfsd_key *k = new_key();

		if (k) {
			k->file = file;
			k->share = share;
			k->op = opnum;
			k->proto = NFSD_V40 + (r->minor > 2 ? 2 : r->minor);
			client_of(rqstp, k);
			count(elapsed(rqstp), io, r->io_bytes, r->io_off);
		}
		stat(ST_OPS_LATE);
	}
	r->has_io = 0;
	r->io_bytes = 0;
	return 0;
}

SEC("tp_btf/svc_stats_latency")
int BPF_PROG(svc_stats_latency, struct svc_rqst *rqstp)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct nfsd_req *r = bpf_map_lookup_elem(&reqs, &tid);
	struct nfsd_key *k;
	__u32 vers, proc;
	__u64 lat;
	int i, mine;

	if (BPF_CORE_READ(rqstp, rq_prog) != NFS_PROGRAM)
		goto out; /* lockd, NFSACL, ... */
	k = new_key();
	if (!k)
		goto out;
	vers = BPF_CORE_READ(rqstp, rq_vers);
	proc = BPF_CORE_READ(rqstp, rq_proc);
	lat = elapsed(rqstp);
	mine = r && r->rqstp == (__u64)rqstp && r->xid == BPF_CORE_READ(rqstp, rq_xid);
	client_of(rqstp, k);
	stat(ST_REQUESTS);

	if (vers == 4 && r && mine && r->v4 && proc == 1) {
		k->proto = NFSD_V40 + (r->minor > 2 ? 2 : r->minor);
		for (i = 0; i < NFSD_MAX_OPS; i++) {
			struct nfsd_oprec *o;

			if (i >= r->nops)
				break;
			o = &r->ops[i];
			k->op = o->op;
			k->file = o->file;
			k->share = o->share;
			count(lat, o->io, o->bytes, o->off);
		}
	} else if (vers == 4 && proc == 0) {
		k->proto = NFSD_V40; /* NULL carries no minor version */
		count(lat, 0, 0, 0);
	} else if (vers == 3) {
		k->proto = NFSD_V3;
		k->op = proc;
		if (r && mine && r->has_io) {
			k->file = r->io_file;
			k->share = r->io_share;
			count(lat, 1, r->io_bytes, r->io_off);
		} else {
			if (r && mine && r->has_file) {
				k->file = r->file;
				k->share = r->share;
			}
			count(lat, 0, 0, 0);
		}
	}
out:
	if (r)
		r->rqstp = 0;
	return 0;
}

/* Optional: a renamed file or directory gets its new name (and parent) at once,
 * not only when evicted. fexit, so the dentry already has them. */
SEC("fexit/d_move")
int BPF_PROG(nfsd_rename, struct dentry *dentry, struct dentry *target)
{
	__u64 id = id_of(dentry), parent;
	struct dentry *p;
	struct nfsd_name *n;
	__u32 zero = 0;
	int len;

	if (id == NFSD_ID_NONE || !bpf_map_lookup_elem(&seen, &id))
		return 0;
	n = bpf_map_lookup_elem(&scratch, &zero);
	p = BPF_CORE_READ(dentry, d_parent);
	if (!n || !p || p == dentry)
		return 0;
	parent = id_of(p);
	n->parent = parent;
	len = bpf_probe_read_kernel_str(n->name, sizeof(n->name), BPF_CORE_READ(dentry, d_name.name));
	n->len = len > 0 ? len - 1 : 0;
	if (bpf_map_update_elem(&names, &id, n, BPF_ANY))
		stat(ST_NAME_LOST);
	/* a new parent not named yet: walk from this entry again on next sight */
	if (!bpf_map_lookup_elem(&seen, &parent))
		bpf_map_delete_elem(&seen, &id);
	stat(ST_RENAMED);
	return 0;
}
