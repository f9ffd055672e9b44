// SPDX-License-Identifier: GPL-2.0
/* NFS on the wire: ONC RPC over TCP decoded at tc ingress (calls) and egress
 * (replies) of the server's interfaces, whatever the NFS server is (knfsd,
 * nfs-ganesha, ...). Calls are matched to replies by (client, port, XID); every
 * NFSv3 procedure and every op of an NFSv4.x COMPOUND is counted in the kernel
 * per client x proto x op x file handle with latency, size and offset
 * histograms. Only name bindings (LOOKUP/CREATE/OPEN/MOUNT results) and
 * READDIRPLUS reply heads reach user space, through small drained maps.
 *
 * TCP: a record mark (RFC 5531 s.11) starts each record; per flow and
 * direction we keep the sequence number where the next mark starts, so records
 * spanning segments and segments holding several records both work, and a
 * segment seen twice (bridge port and bridge, retransmission) is not decoded
 * twice. Only a record's head is decoded (payloads, WRITE and READ data, follow
 * it); a head cut by a segment boundary (pipelined calls fill segments back to
 * back) is kept in the flow state and decoded with the next segment.
 *
 * Parsing runs in global functions (verified once each, Linux 5.6+) over a
 * per-CPU copy of the record head, keeping all parser state in that map value:
 * the verifier then sees straight-line code instead of 16 unrolled op parsers. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "loupe.bpf.h"
#include "nfswire.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TC_ACT_UNSPEC (-1)
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define MAX_RECORD (64u << 20)	/* larger fragments mean we lost the stream */
/* Records walked per skb: a TSO/GRO super-packet of pipelined calls holds
 * hundreds (64 KB of ~130-byte GETATTRs); past this many the stream is dropped
 * and picked up again at the next segment starting with a record. */
#define MAX_REC_PER_SKB 512
#define HEAD_COPY 256	/* first copy of a record head: what most ops need */

#define RPC_NFS 100003
#define RPC_MOUNT 100005
#define AUTH_GSS 6

/* NFSv3 procedures (RFC 1813) */
enum { P3_NULL, P3_GETATTR, P3_SETATTR, P3_LOOKUP, P3_ACCESS, P3_READLINK, P3_READ, P3_WRITE,
       P3_CREATE, P3_MKDIR, P3_SYMLINK, P3_MKNOD, P3_REMOVE, P3_RMDIR, P3_RENAME, P3_LINK,
       P3_READDIR, P3_READDIRPLUS };

/* NFSv4.x operations (RFC 7530, 8881, 7862) */
enum { V4_ACCESS = 3, V4_CLOSE, V4_COMMIT, V4_CREATE, V4_DELEGPURGE, V4_DELEGRETURN, V4_GETATTR,
       V4_GETFH, V4_LINK, V4_LOCK, V4_LOCKT, V4_LOCKU, V4_LOOKUP, V4_LOOKUPP, V4_NVERIFY, V4_OPEN,
       V4_OPENATTR, V4_OPEN_CONFIRM, V4_OPEN_DOWNGRADE, V4_PUTFH, V4_PUTPUBFH, V4_PUTROOTFH,
       V4_READ, V4_READDIR, V4_READLINK, V4_REMOVE, V4_RENAME, V4_RENEW, V4_RESTOREFH, V4_SAVEFH,
       V4_SECINFO, V4_SETATTR, V4_SETCLIENTID, V4_SETCLIENTID_CONFIRM, V4_VERIFY, V4_WRITE,
       V4_RELEASE_LOCKOWNER, V4_BACKCHANNEL_CTL, V4_BIND_CONN_TO_SESSION, V4_EXCHANGE_ID,
       V4_CREATE_SESSION, V4_DESTROY_SESSION, V4_FREE_STATEID, V4_GET_DIR_DELEGATION,
       V4_GETDEVICEINFO, V4_GETDEVICELIST, V4_LAYOUTCOMMIT, V4_LAYOUTGET, V4_LAYOUTRETURN,
       V4_SECINFO_NO_NAME, V4_SEQUENCE, V4_SET_SSV, V4_TEST_STATEID, V4_WANT_DELEGATION,
       V4_DESTROY_CLIENTID, V4_RECLAIM_COMPLETE, V4_ALLOCATE, V4_COPY, V4_COPY_NOTIFY,
       V4_DEALLOCATE, V4_IO_ADVISE, V4_LAYOUTERROR, V4_LAYOUTSTATS, V4_OFFLOAD_CANCEL,
       V4_OFFLOAD_STATUS, V4_READ_PLUS, V4_SEEK };

#define F_NAME 1	/* a names entry was stored for this call */
#define F_DIRPLUS 2	/* hand the READDIRPLUS reply head to user space */
#define F_MOUNT 4	/* MOUNT MNT: bind the returned root handle, count nothing */
#define NO_RW 0xff

struct xkey {
	__u8 addr[16];
	__u32 xid;
	__u16 port;
	__u8 family;
	__u8 pad;
};

struct flowkey {
	__u8 caddr[16];
	__u8 saddr[16];
	__u16 cport;
	__u8 reply;
	__u8 family;
};

/* Bytes of a record head kept when a segment ends inside it: pipelined calls
 * fill segments back to back, and TCP cuts them wherever the MSS, the window or
 * TSO/GRO boundaries fall, also inside a record's first bytes. */
#define HEAD_STASH 256

struct flowstate {
	__u32 next;	/* TCP sequence number of the next record mark */
	__u32 cont;	/* the last fragment seen was not the record's last */
	__u32 part;	/* sequence number where a stashed head goes on */
	__u32 flen;	/* length of the record whose head is stashed */
	__u32 have;	/* bytes in head[]; 0: nothing stashed */
	__u32 pad;
	__u8 head[HEAD_STASH];
};

struct call {
	__u64 ts;
	__u64 offset;
	__u64 cur_end;	/* current fh where the call parse stopped */
	__u64 fh[NFSW_MAX_OPS];
	__u16 ops[NFSW_MAX_OPS];
	__u32 count;
	__u16 tot_ops;
	__u8 proto;
	__u8 nops;
	__u8 rw_idx;
	__u8 flags;
	__u16 proc;
};

/* A call of at most SMALL_OPS ops (every NFSv3 call, most v4 COMPOUNDs) waits
 * in `pending_small`: 80 bytes instead of 200, so the reply, decoded on another
 * CPU than the call, pulls two cache lines across instead of five. */
#define SMALL_OPS 4

struct call_small {
	__u64 ts;
	__u64 offset;
	__u64 cur_end;
	__u64 fh[SMALL_OPS];
	__u16 ops[SMALL_OPS];
	__u32 count;
	__u16 tot_ops;
	__u8 proto;
	__u8 nops;
	__u8 rw_idx;
	__u8 flags;
	__u16 proc;
};

/* Per-CPU memo of handles already in `fhs`: the map is looked up at most once
 * per handle, CPU and second (the lookup keeps a hot handle young in the LRU). */
#define FHC_N 128

struct name {
	__u64 base;
	__u64 derived;
	__u32 len;
	__u32 pad;
	__u8 name[NFSW_NAME_MAX];
};

struct scratch {
	__u8 buf[NFSW_SCRATCH];
	__u32 len;	/* valid bytes in buf */
	__u32 roff;	/* skb offset of buf[0] (the RPC message, after the mark) */
	__u32 ravail;	/* bytes of this record in this skb from roff */
	__u32 pos;
	__u64 cur, saved;
	__u64 now;	/* bpf_ktime_get_ns() of this packet; 0 until a record needs it */
	__u64 bytes;
	__u32 name_active;
	__u32 rnops;
	__u32 mount_port;	/* this record came on the MOUNT port */
	__u32 joined;	/* buf = a stashed head + this segment's start */
	__u16 rops[NFSW_MAX_OPS];
	struct xkey xk;
	struct call call;
	struct call_small small;
	__u64 fhc[FHC_N];	/* handle hash per slot */
	__u32 fhc_gen[FHC_N];	/* second it was checked in */
	struct name name;
	struct nfsw_bind bind;
	struct nfsw_fh fhv;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsw_config);
} settings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {	/* updated in place: inserted only for a new connection */
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct flowkey);
	__type(value, struct flowstate);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);	/* COMPOUNDs of more than SMALL_OPS ops */
	__uint(max_entries, 4096);
	__type(key, struct xkey);
	__type(value, struct call);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);	/* calls never answered age out */
	__uint(max_entries, 32768);
	__type(key, struct xkey);
	__type(value, struct call_small);
} pending_small SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct xkey);
	__type(value, struct name);
} names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);	/* handle bytes for the path resolver */
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct nfsw_fh);
} fhs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);	/* bindings already handed over */
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} named SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);	/* drained each second */
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct nfsw_bind);
} binds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);	/* drained each second */
	__uint(max_entries, 64);
	__type(key, struct nfsw_dirkey);
	__type(value, struct nfsw_dirchunk);
} dirs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);	/* drained each second */
	__uint(max_entries, NFSW_MAX_KEYS);
	__type(key, struct nfsw_key);
	__type(value, struct nfsw_val);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);	/* the "other" row when counts is full */
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsw_val);
} other SEC(".maps");

struct wire_stats {
	__u64 v[NFSW_STATS_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);	/* no shared cache line, no atomics */
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wire_stats);
} wire SEC(".maps");

LOUPE_DROPS_MAP;

static const struct nfsw_val zero_val;
static const struct nfsw_dirchunk zero_dir;
static const struct flowstate zero_flow;

/* hist_bucket() already clamps; this makes the bound visible to the verifier */
static __always_inline __u32 clamp_idx(__u32 b, __u32 n)
{
	return b < n ? b : n - 1;
}

/* min(v, max) in one register: with a plain compare clang may test a copy and
 * pass the original to a helper, which the verifier cannot then bound. */
#define CLAMP(v, max) asm volatile("if %[x] <= %[m] goto +1; %[x] = %[m]" : [x] "+r"(v) : [m] "i"(max))

/* Hide a value's known range from clang, so that the bounds check it emits is
 * on the very register then used as the index (which is what the verifier tracks). */
#define OPAQUE(v) asm volatile("" : "+r"(v))

static __always_inline void stat(__u32 i)
{
	__u32 zero = 0;
	struct wire_stats *s = bpf_map_lookup_elem(&wire, &zero);

	if (s && i < NFSW_STATS_N)
		s->v[i]++;
}

static __always_inline struct scratch *get_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* One clock read per packet, not per record: the records of a segment arrived
 * together, and the clock is a good part of a record's cost (kvm-clock in a VM). */
static __always_inline void packet_time(struct scratch *S)
{
	if (!S->now)
		S->now = bpf_ktime_get_ns();
}

/* ---------------------------------------------------------------- XDR reads */

static __always_inline int rd32(struct scratch *S, __u32 off, __u32 *v)
{
	__u64 o = off;
	__u8 *b;

	OPAQUE(o);
	if (o > NFSW_SCRATCH - 4 || o + 4 > S->len)
		return -1;
	b = &S->buf[o];
	*v = ((__u32)b[0] << 24) | ((__u32)b[1] << 16) | ((__u32)b[2] << 8) | b[3];
	return 0;
}

static __always_inline int rd64(struct scratch *S, __u32 off, __u64 *v)
{
	__u32 hi, lo;

	if (rd32(S, off, &hi) || rd32(S, off + 4, &lo))
		return -1;
	*v = ((__u64)hi << 32) | lo;
	return 0;
}

#define PAD4(n) (((n) + 3) & ~3u)

/* opaque<max> / string<max>: advance *p past it. */
static __always_inline int skip_opaque(struct scratch *S, __u32 *p, __u32 max)
{
	__u32 n;

	if (rd32(S, *p, &n) || n > max)
		return -1;
	*p += 4 + PAD4(n);
	return 0;
}

/* bitmap4, then (with_attrs) the attrlist4 opaque of a fattr4. */
static __always_inline int skip_bitmap(struct scratch *S, __u32 *p, int with_attrs)
{
	__u32 n;

	if (rd32(S, *p, &n) || n > 8)
		return -1;
	*p += 4 + 4 * n;
	return with_attrs ? skip_opaque(S, p, 65536) : 0;
}

/* Handle hash, mirrored by probe.fh_hash(): 64-bit words (last one zero-padded),
 * FNV-style multiply with a shift. Values below 16 are reserved for sentinels. */
static __always_inline __u64 buf_hash(struct scratch *S, __u32 off, __u32 len, __u64 seed)
{
	__u64 h = 0xcbf29ce484222325ULL ^ seed ^ len;

	for (int i = 0; i < NFSW_FH_MAX / 8; i++) {
		__u64 o = off + i * 8;
		__u32 rem = len - i * 8;
		__u64 w;

		OPAQUE(o);
		if (i * 8 >= len || o > NFSW_SCRATCH - 8)
			break;
		w = *(__u64 *)&S->buf[o];
		if (rem < 8)
			w &= (1ULL << (rem * 8)) - 1;
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h < 16 ? h + 16 : h;
}

/* A file handle (opaque<128>) at *p: its hash; its bytes are kept in `fhs`. */
static __always_inline int take_fh(struct scratch *S, __u32 *p, __u64 *hash, __u32 *boff, __u32 *blen)
{
	__u32 n, off = *p + 4;

	if (rd32(S, *p, &n) || n == 0 || n > NFSW_FH_MAX)
		return -1;
	/* the hash reads whole words: they must lie inside the copy */
	if (off + ((n + 7) & ~7u) > NFSW_SCRATCH || off + n > S->len)
		return -1;
	*hash = buf_hash(S, off, n, 0);
	*boff = off;
	*blen = n;
	*p = off + PAD4(n);
	__u64 slot = *hash & (FHC_N - 1);
	__u32 gen = S->now >> 30;

	OPAQUE(slot);
	slot &= FHC_N - 1;
	if (S->fhc[slot] == *hash && S->fhc_gen[slot] == gen)
		return 0;
	S->fhc[slot] = *hash;
	S->fhc_gen[slot] = gen;
	if (!bpf_map_lookup_elem(&fhs, hash)) {
		S->fhv.len = n;
		for (int i = 0; i < NFSW_FH_MAX / 8; i++) {
			__u64 o = off + i * 8;

			OPAQUE(o);
			if (i * 8 >= n || o > NFSW_SCRATCH - 8)
				break;
			*(__u64 *)&S->fhv.data[i * 8] = *(__u64 *)&S->buf[o];
		}
		bpf_map_update_elem(&fhs, hash, &S->fhv, BPF_NOEXIST);
	}
	return 0;
}

/* A name component at *p: appended to the pending path (from the current fh),
 * whose derived hash becomes the current fh until a real handle is seen. */
static __always_inline int name_push(struct __sk_buff *skb, struct scratch *S, __u32 *p)
{
	__u32 n, coff = *p + 4;
	__u64 nlen, nn;

	if (rd32(S, *p, &n) || n == 0 || n > 255)
		return -1;
	*p = coff + PAD4(n);
	if (coff + ((n + 7) & ~7u) > NFSW_SCRATCH || coff + n > S->len)
		return -1;
	if (!S->name_active || S->name.derived != S->cur) {
		S->name.base = S->cur;
		S->name.len = 0;
	}
	nlen = S->name.len;
	if (nlen) {
		OPAQUE(nlen);
		if (nlen > 254)
			goto toolong;
		S->name.name[nlen] = '/';
		nlen++;
	}
	OPAQUE(nlen);
	if (nlen > 255)
		goto toolong;
	nn = n;
	OPAQUE(nn);
	if (nn < 1 || nn > 255)
		return -1;
	if (S->joined)	/* the name's bytes may lie in the previous segment */
		goto toolong;
	if (bpf_skb_load_bytes(skb, S->roff + coff, &S->name.name[nlen], nn))
		return -1;
	S->name.len = nlen + n;
	S->name.derived = buf_hash(S, coff, n, S->cur);
	S->cur = S->name.derived;
	S->name_active = 1;
	return 0;
toolong:	/* a path longer than 255 bytes from its base: stop naming, keep counting */
	S->name_active = 0;
	S->cur = buf_hash(S, coff, n, S->cur);
	return 0;
}

/* ---------------------------------------------------------------- calls */

/* One NFSv4 COMPOUND op's arguments at S->pos. 0: parsed, go on; 1: stop. */
__noinline int nfsw_v4_call_op(struct __sk_buff *skb, __u32 i)
{
	struct scratch *S = get_scratch();
	__u32 p, op, n, t, boff, blen;
	__u64 h, k = i;

	OPAQUE(k);
	k &= NFSW_MAX_OPS - 1;
	if (!S || i >= NFSW_MAX_OPS)
		return 1;
	p = S->pos;
	if (rd32(S, p, &op))
		return 1;
	p += 4;
	S->call.ops[k] = op > 0xfffd ? 0xfffd : op;
	S->call.nops = i + 1;
	switch (op) {
	case V4_PUTFH:
		if (take_fh(S, &p, &h, &boff, &blen))
			goto stop;
		S->cur = h;
		break;
	case V4_PUTROOTFH:
	case V4_PUTPUBFH:
		S->cur = NFSW_FH_ROOT;
		S->name_active = 1;
		S->name.base = NFSW_FH_ROOT;
		S->name.derived = NFSW_FH_ROOT;
		S->name.len = 0;
		break;
	case V4_SAVEFH:
		S->saved = S->cur;
		break;
	case V4_RESTOREFH:
		S->cur = S->saved;
		break;
	case V4_GETFH:
	case V4_LOOKUPP:
	case V4_READLINK:
		break;
	case V4_ACCESS:
	case V4_OPENATTR:
	case V4_RECLAIM_COMPLETE:
	case V4_SECINFO_NO_NAME:
		p += 4;
		break;
	case V4_RENEW:
	case V4_DESTROY_CLIENTID:
		p += 8;
		break;
	case V4_COMMIT:
		p += 12;
		break;
	case V4_DELEGRETURN:
	case V4_FREE_STATEID:
	case V4_DESTROY_SESSION:
		p += 16;
		break;
	case V4_CLOSE:
		p += 20;
		break;
	case V4_OPEN_DOWNGRADE:
	case V4_SEEK:
		p += 28;
		break;
	case V4_SEQUENCE:
	case V4_ALLOCATE:
	case V4_DEALLOCATE:
		p += 32;
		break;
	case V4_GETATTR:
		if (skip_bitmap(S, &p, 0))
			goto stop;
		break;
	case V4_VERIFY:
	case V4_NVERIFY:
		if (skip_bitmap(S, &p, 1))
			goto stop;
		break;
	case V4_SETATTR:
		p += 16;
		if (skip_bitmap(S, &p, 1))
			goto stop;
		break;
	case V4_READDIR:
		p += 24;
		if (skip_bitmap(S, &p, 0))
			goto stop;
		break;
	case V4_LOOKUP:
		if (name_push(skb, S, &p))
			goto stop;
		break;
	case V4_REMOVE:
	case V4_LINK:
	case V4_SECINFO:
		if (skip_opaque(S, &p, 255))
			goto stop;
		break;
	case V4_RENAME:
		if (skip_opaque(S, &p, 255) || skip_opaque(S, &p, 255))
			goto stop;
		break;
	case V4_TEST_STATEID:
		if (rd32(S, p, &n) || n > 64)
			goto stop;
		p += 4 + 16 * n;
		break;
	case V4_READ:
		if (rd64(S, p + 16, &S->call.offset) || rd32(S, p + 24, &S->call.count))
			goto stop;
		S->call.rw_idx = i;
		p += 28;
		break;
	case V4_WRITE:	/* stateid, offset, stable, data<> */
		if (rd64(S, p + 16, &S->call.offset) || rd32(S, p + 28, &S->call.count))
			goto stop;
		S->call.rw_idx = i;
		p += 32 + PAD4(S->call.count);
		break;
	case V4_CREATE:	/* createtype4, component, fattr4 */
		if (rd32(S, p, &t))
			goto stop;
		p += 4;
		if (t == 5 && skip_opaque(S, &p, 4096))	/* NF4LNK: linkdata */
			goto stop;
		if (t == 3 || t == 4)			/* NF4BLK, NF4CHR: specdata4 */
			p += 8;
		if (name_push(skb, S, &p) || skip_bitmap(S, &p, 1))
			goto stop;
		break;
	case V4_OPEN:
		p += 12 + 8;	/* seqid, share_access, share_deny, owner.clientid */
		if (skip_opaque(S, &p, 1024) || rd32(S, p, &t))
			goto stop;
		p += 4;
		if (t == 1) {	/* OPEN4_CREATE: createhow4 */
			if (rd32(S, p, &n))
				goto stop;
			p += 4;
			if (n >= 2)	/* EXCLUSIVE4(_1): verifier */
				p += 8;
			if ((n <= 1 || n == 3) && skip_bitmap(S, &p, 1))
				goto stop;
		}
		if (rd32(S, p, &t))	/* open_claim4 */
			goto stop;
		p += 4;
		if (t == 2 || t == 5)	/* CLAIM_DELEGATE_CUR, CLAIM_DELEG_CUR_FH: stateid */
			p += 16;
		if (t == 1)		/* CLAIM_PREVIOUS: delegation type */
			p += 4;
		if ((t == 0 || t == 2 || t == 3) && name_push(skb, S, &p))
			goto stop;
		break;
	default:
		goto stop;
	}
	S->call.fh[k] = S->cur;
	S->pos = p;
	return 0;
stop:
	S->call.fh[k] = S->cur;
	return 1;
}

/* An NFS or MOUNT call whose head is in S->buf. */
__noinline int nfsw_call(struct __sk_buff *skb)
{
	struct scratch *S = get_scratch();
	__u32 xid, v, prog, vers, proc, flavor, n, p, boff, blen;
	__u64 h;

	if (!S)
		return 0;
	if (rd32(S, 0, &xid) || rd32(S, 4, &v) || v != 0 || rd32(S, 8, &v) || v != 2 ||
	    rd32(S, 12, &prog) || rd32(S, 16, &vers) || rd32(S, 20, &proc) || rd32(S, 24, &flavor) ||
	    rd32(S, 28, &n) || n > 400) {
		stat(ST_NOT_RPC);
		return 0;
	}
	p = 32 + PAD4(n);	/* past the credential */
	if (flavor == AUTH_GSS) {	/* rpc_gss_cred_vers_1_t: vers, proc, seq, service, handle */
		__u32 gproc, service;

		if (rd32(S, 36, &gproc) || rd32(S, 44, &service) || gproc != 0)
			return 0;	/* context creation / destruction: not an NFS op */
		if (service == 3)	/* privacy: the arguments are encrypted */
			flavor = 0xffff;
		else if (service == 2)	/* integrity: databody_integ length and seq_num first */
			p += 8;
	}
	if (rd32(S, p + 4, &n) || n > 400)	/* verifier */
		return 0;
	p += 8 + PAD4(n);

	__builtin_memset(&S->call, 0, sizeof(S->call));
	packet_time(S);
	S->call.ts = S->now;
	S->call.rw_idx = NO_RW;
	S->call.proc = proc;
	S->cur = NFSW_FH_NONE;
	S->saved = NFSW_FH_NONE;
	S->name_active = 0;
	S->xk.xid = xid;

	if (prog == RPC_MOUNT && vers == 3 && proc == 1) {	/* MNT: dirpath -> root fh */
		__u32 dl;

		if (rd32(S, p, &dl) || dl == 0 || dl > 255)
			return 0;
		S->cur = NFSW_FH_ROOT;
		S->name.base = NFSW_FH_ROOT;
		S->name.derived = NFSW_FH_ROOT;
		S->name.len = 0;
		S->name_active = 1;
		/* the leading "/" would become an empty first component */
		if (rd32(S, p + 4, &v) == 0 && (v >> 24) == '/') {
			if (dl == 1) {
				S->call.flags = F_MOUNT;
				goto store;
			}
			/* rewrite the copy so that a string dirpath[1:] starts at p + 1 */
			__u64 q = p;

			OPAQUE(q);
			if (q > NFSW_SCRATCH - 8)
				return 0;
			S->buf[q + 1] = 0;
			S->buf[q + 2] = 0;
			S->buf[q + 3] = 0;
			S->buf[q + 4] = dl - 1;
			p += 1;
		}
		if (name_push(skb, S, &p))
			return 0;
		S->call.flags = F_MOUNT;
		goto store;
	}
	if (prog != RPC_NFS)
		return 0;
	stat(ST_CALLS);
	if (vers == 3) {
		S->call.proto = NFSW_V3;
		S->call.nops = 1;
		S->call.tot_ops = 1;
		S->call.ops[0] = proc;
		if (flavor == 0xffff) {
			S->call.ops[0] = NFSW_OP_GSS_PRIV;
			stat(ST_GSS_PRIV);
			goto store;
		}
		if (proc != P3_NULL && take_fh(S, &p, &h, &boff, &blen) == 0) {
			S->cur = h;
			switch (proc) {
			case P3_READ:
			case P3_WRITE:
				rd64(S, p, &S->call.offset);
				rd32(S, p + 8, &S->call.count);
				S->call.rw_idx = 0;
				break;
			case P3_LOOKUP:
			case P3_CREATE:
			case P3_MKDIR:
			case P3_SYMLINK:
			case P3_MKNOD:
			case P3_REMOVE:
			case P3_RMDIR:
				name_push(skb, S, &p);
				break;
			case P3_READDIRPLUS:
				S->call.flags |= F_DIRPLUS;
				break;
			}
		}
		S->call.fh[0] = S->cur;
		S->call.cur_end = S->cur;
		goto store;
	}
	if (vers != 4)
		return 0;
	if (proc == 0) {	/* NULL */
		S->call.proto = NFSW_V40;
		S->call.nops = 1;
		S->call.tot_ops = 1;
		S->call.ops[0] = 0;
		goto store;
	}
	/* COMPOUND4args: tag, minorversion, argarray<> */
	if (skip_opaque(S, &p, 64) || rd32(S, p, &v) || rd32(S, p + 4, &n))
		return 0;
	S->call.proto = v >= 2 ? NFSW_V42 : NFSW_V40 + v;
	S->call.tot_ops = n > 0xffff ? 0xffff : n;
	if (flavor == 0xffff) {
		S->call.ops[0] = NFSW_OP_GSS_PRIV;
		S->call.nops = 1;
		stat(ST_GSS_PRIV);
		goto store;
	}
	S->pos = p + 8;
	for (__u32 i = 0; i < NFSW_MAX_OPS; i++) {
		if (i >= n || nfsw_v4_call_op(skb, i))
			break;
	}
	S->call.cur_end = S->cur;
store:
	if (S->name_active && S->name.len) {
		if (bpf_map_update_elem(&names, &S->xk, &S->name, BPF_ANY) == 0)
			S->call.flags |= F_NAME;
	} else if (S->name_active && (S->call.flags & F_MOUNT)) {
		S->call.flags |= F_NAME;	/* mount of "/" */
		S->name.len = 0;
		bpf_map_update_elem(&names, &S->xk, &S->name, BPF_ANY);
	} else if (S->name_active && S->name.base == NFSW_FH_ROOT) {
		S->call.flags |= F_NAME;	/* PUTROOTFH; GETFH: the root's handle */
		bpf_map_update_elem(&names, &S->xk, &S->name, BPF_ANY);
	}
	if (S->call.nops <= SMALL_OPS) {
		struct call_small *q = &S->small;

		q->ts = S->call.ts;
		q->offset = S->call.offset;
		q->cur_end = S->call.cur_end;
		q->count = S->call.count;
		q->tot_ops = S->call.tot_ops;
		q->proto = S->call.proto;
		q->nops = S->call.nops;
		q->rw_idx = S->call.rw_idx;
		q->flags = S->call.flags;
		q->proc = S->call.proc;
		for (int j = 0; j < SMALL_OPS; j++) {
			q->fh[j] = S->call.fh[j];
			q->ops[j] = S->call.ops[j];
		}
		if (bpf_map_update_elem(&pending_small, &S->xk, q, BPF_ANY))
			loupe_count_drop(&drops);
	} else if (bpf_map_update_elem(&pending, &S->xk, &S->call, BPF_ANY)) {
		loupe_count_drop(&drops);
	}
	return 0;
}

/* ---------------------------------------------------------------- replies */

/* Hand a binding to user space unless the same one was handed over already. */
static __always_inline void bind(struct scratch *S, __u64 child, __u64 parent, __u32 boff, __u32 blen)
{
	__u64 *seen = bpf_map_lookup_elem(&named, &child);
	__u64 tag = parent ^ S->name.derived ^ S->name.len;

	if (seen && *seen == tag)
		return;
	S->bind.parent = parent;
	S->bind.name_len = S->name.len;
	S->bind.fh_len = 0;
	S->bind.kind = 1;
	if (blen && blen <= NFSW_FH_MAX) {
		S->bind.fh_len = blen;
		for (int i = 0; i < NFSW_FH_MAX / 8; i++) {
			__u64 o = boff + i * 8;

			OPAQUE(o);
			if (i * 8 >= blen || o > NFSW_SCRATCH - 8)
				break;
			*(__u64 *)&S->bind.fh[i * 8] = *(__u64 *)&S->buf[o];
		}
	}
	__builtin_memcpy(S->bind.name, S->name.name, NFSW_NAME_MAX);
	if (bpf_map_update_elem(&binds, &child, &S->bind, BPF_ANY)) {
		stat(ST_BIND_LOST);
		return;
	}
	bpf_map_update_elem(&named, &child, &tag, BPF_ANY);
}

/* The real handle R of the current fh: bind the pending name to it and count
 * every op of the call that used the derived hash under R instead. */
static __always_inline void resolve(struct scratch *S, __u64 d, __u64 r, __u32 boff, __u32 blen)
{
	if (S->name_active && d == S->name.derived) {
		bind(S, r, S->name.base, boff, blen);
		S->name_active = 2;	/* bound to a real handle */
	}
	for (int j = 0; j < NFSW_MAX_OPS; j++)
		if (S->call.fh[j] == d)
			S->call.fh[j] = r;
	if (S->call.cur_end == d)
		S->call.cur_end = r;
}

/* One NFSv4 COMPOUND result at S->pos. 0: parsed, go on; 1: stop. */
__noinline int nfsw_v4_reply_op(__u32 i)
{
	struct scratch *S = get_scratch();
	__u32 p, op, status, n, t, boff, blen;
	__u64 h, k = i;

	OPAQUE(k);
	k &= NFSW_MAX_OPS - 1;
	if (!S || i >= NFSW_MAX_OPS)
		return 1;
	p = S->pos;
	if (rd32(S, p, &op) || rd32(S, p + 4, &status))
		return 1;
	p += 8;
	S->rops[k] = op > 0xfffd ? 0xfffd : op;
	S->rnops = i + 1;
	if (status)
		return 1;	/* a COMPOUND stops at the first failing op */
	switch (op) {
	case V4_PUTFH:
	case V4_PUTROOTFH:
	case V4_PUTPUBFH:
	case V4_SAVEFH:
	case V4_RESTOREFH:
	case V4_LOOKUP:
	case V4_LOOKUPP:
	case V4_RENEW:
	case V4_DELEGRETURN:
	case V4_RECLAIM_COMPLETE:
	case V4_DESTROY_SESSION:
	case V4_DESTROY_CLIENTID:
	case V4_FREE_STATEID:
	case V4_VERIFY:
	case V4_NVERIFY:
	case V4_ALLOCATE:
	case V4_DEALLOCATE:
	case V4_OPENATTR:
		break;
	case V4_ACCESS:
	case V4_COMMIT:
		p += 8;
		break;
	case V4_SEEK:
		p += 12;
		break;
	case V4_CLOSE:
	case V4_WRITE:
	case V4_OPEN_CONFIRM:
	case V4_OPEN_DOWNGRADE:
		p += 16;
		break;
	case V4_REMOVE:
	case V4_LINK:
		p += 20;
		break;
	case V4_RENAME:
		p += 40;
		break;
	case V4_SEQUENCE:
		p += 36;
		break;
	case V4_GETATTR:
		if (skip_bitmap(S, &p, 1))
			return 1;
		break;
	case V4_SETATTR:
		if (skip_bitmap(S, &p, 0))
			return 1;
		break;
	case V4_CREATE:
		p += 20;
		if (skip_bitmap(S, &p, 0))
			return 1;
		break;
	case V4_TEST_STATEID:
		if (rd32(S, p, &n) || n > 64)
			return 1;
		p += 4 + 4 * n;
		break;
	case V4_READ:	/* eof, data<> */
		if (rd32(S, p + 4, &n))
			return 1;
		S->bytes = n;
		p += 8 + PAD4(n);
		break;
	case V4_GETFH:
		if (take_fh(S, &p, &h, &boff, &blen))
			return 1;
		if (i < S->call.nops)
			resolve(S, S->call.fh[k], h, boff, blen);
		break;
	case V4_OPEN:	/* stateid, change_info4, rflags, attrset, open_delegation4 */
		p += 16 + 20 + 4;
		if (skip_bitmap(S, &p, 0) || rd32(S, p, &t))
			return 1;
		p += 4;
		if (t == 1 || t == 2) {	/* READ / WRITE delegation */
			p += 16 + 4;
			if (t == 2)
				p += 12;	/* nfs_space_limit4 */
			p += 12;		/* nfsace4 type, flag, mask */
			if (skip_opaque(S, &p, 1024))
				return 1;
		} else if (t == 3) {	/* OPEN_DELEGATE_NONE_EXT (4.1): why, maybe a bool */
			if (rd32(S, p, &n))
				return 1;
			p += 4;
			if (n == 1 || n == 2)
				p += 4;
		}
		break;
	default:
		return 1;
	}
	S->pos = p;
	return 0;
}

/* Count op i of the answered call. */
__noinline int nfsw_count(__u32 i, __u64 lat, __u32 extra)
{
	struct scratch *S = get_scratch();
	struct nfsw_key key = {};
	struct nfsw_val *v;
	__u64 k = i;

	OPAQUE(k);
	k &= NFSW_MAX_OPS - 1;
	if (!S || i >= NFSW_MAX_OPS)
		return 0;
	__builtin_memcpy(key.addr, S->xk.addr, 16);
	key.family = S->xk.family;
	key.proto = S->call.proto;
	if (extra) {
		key.op = NFSW_OP_UNPARSED;
		key.fh = S->call.cur_end;
	} else if (i < S->call.nops) {
		key.op = S->call.ops[k];
		key.fh = S->call.fh[k];
	} else {
		key.op = i < S->rnops ? S->rops[k] : NFSW_OP_UNPARSED;
		key.fh = S->call.cur_end;
	}
	v = lookup_or_init(&counts, &key, &zero_val, &other, &drops);
	if (!v)
		return 0;
	add(&v->count, extra ? extra : 1);
	add(&v->lat_sum, extra ? lat * extra : lat);
	add(&v->lat[clamp_idx(hist_bucket(lat, 10, 35), NFSW_LAT_N)], extra ? extra : 1);
	if (!extra && i == S->call.rw_idx) {
		__u64 b = S->call.ops[k] == P3_WRITE && S->call.proto == NFSW_V3 ? S->call.count :
			  S->call.ops[k] == V4_WRITE && S->call.proto != NFSW_V3 ? S->call.count : S->bytes;

		add(&v->bytes, b);
		add(&v->size[clamp_idx(hist_bucket(b, 9, 24), NFSW_SIZE_N)], 1);
		add(&v->off[clamp_idx(hist_bucket(S->call.offset, 12, 45), NFSW_OFF_N)], 1);
	}
	return 0;
}

/* A reply whose head is in S->buf. */
__noinline int nfsw_reply(struct __sk_buff *skb)
{
	struct scratch *S = get_scratch();
	struct call *c;
	struct call_small *q;
	struct name *nm;
	__u32 xid, v, stat_, n = 0, p, boff, blen, status = 0, total;
	__u64 h, lat;
	int accepted;

	if (!S)
		return 0;
	if (rd32(S, 0, &xid) || rd32(S, 4, &v) || v != 1 || rd32(S, 8, &stat_))
		return 0;
	S->xk.xid = xid;
	q = bpf_map_lookup_elem(&pending_small, &S->xk);
	if (q) {
		__builtin_memset(&S->call, 0, sizeof(S->call));
		S->call.ts = q->ts;
		S->call.offset = q->offset;
		S->call.cur_end = q->cur_end;
		S->call.count = q->count;
		S->call.tot_ops = q->tot_ops;
		S->call.proto = q->proto;
		S->call.nops = q->nops;
		S->call.rw_idx = q->rw_idx;
		S->call.flags = q->flags;
		S->call.proc = q->proc;
		for (int j = 0; j < SMALL_OPS; j++) {
			S->call.fh[j] = q->fh[j];
			S->call.ops[j] = q->ops[j];
		}
		bpf_map_delete_elem(&pending_small, &S->xk);
	} else {
		c = bpf_map_lookup_elem(&pending, &S->xk);
		if (!c) {
			if (!S->mount_port)	/* MOUNT's other procedures are not stored */
				stat(ST_UNMATCHED);
			return 0;
		}
		__builtin_memcpy(&S->call, c, sizeof(S->call));
		bpf_map_delete_elem(&pending, &S->xk);
	}
	packet_time(S);
	lat = S->now - S->call.ts;
	S->name_active = 0;
	if (S->call.flags & F_NAME) {
		nm = bpf_map_lookup_elem(&names, &S->xk);
		if (nm) {
			__builtin_memcpy(&S->name, nm, sizeof(S->name));
			S->name_active = 1;
			bpf_map_delete_elem(&names, &S->xk);
		}
	}
	S->bytes = 0;
	S->rnops = 0;
	stat(ST_REPLIES);
	/* accepted_reply: verf, accept_stat */
	accepted = stat_ == 0 && rd32(S, 16, &n) == 0 && n <= 400 && rd32(S, 20 + PAD4(n), &v) == 0 && v == 0;
	p = 24 + PAD4(n);
	if (accepted && rd32(S, p, &status) == 0) {
		p += 4;
		if (S->call.flags & F_MOUNT) {	/* mountres3: fhandle3 */
			if (status == 0 && take_fh(S, &p, &h, &boff, &blen) == 0 && S->name_active)
				bind(S, h, S->name.base, boff, blen);
			return 0;
		}
		if (S->call.proto == NFSW_V3) {
			switch (S->call.proc) {
			case P3_READ:	/* post_op_attr, count */
				if (status == 0 && rd32(S, p, &v) == 0) {
					p += 4 + (v ? 84 : 0);
					rd32(S, p, &v);
					S->bytes = v;
				}
				break;
			case P3_LOOKUP:	/* object fh */
				if (status == 0 && take_fh(S, &p, &h, &boff, &blen) == 0)
					resolve(S, S->call.fh[0], h, boff, blen);
				break;
			case P3_CREATE:
			case P3_MKDIR:
			case P3_SYMLINK:
			case P3_MKNOD:	/* post_op_fh3 */
				if (status == 0 && rd32(S, p, &v) == 0 && v) {
					p += 4;
					if (take_fh(S, &p, &h, &boff, &blen) == 0)
						resolve(S, S->call.fh[0], h, boff, blen);
				}
				break;
			case P3_READDIRPLUS:
				if (status == 0 && (S->call.flags & F_DIRPLUS) && !S->joined) {
					struct nfsw_dirkey dk = { .dir = S->call.fh[0], .xid = xid };
					struct nfsw_dirchunk *dc;
					__u64 len = S->ravail;

					/* the value is built in place: insert, then fill */
					bpf_map_update_elem(&dirs, &dk, &zero_dir, BPF_NOEXIST);
					dc = bpf_map_lookup_elem(&dirs, &dk);
					if (!dc) {
						stat(ST_DIR_LOST);
						break;
					}
					CLAMP(len, NFSW_DIRCHUNK);
					if (len < 1 || bpf_skb_load_bytes(skb, S->roff, dc->data, len)) {
						bpf_map_delete_elem(&dirs, &dk);
						break;
					}
					dc->len = len;
				}
				break;
			}
		} else if (rd32(S, p, &n) == 0 && n <= 64) {	/* COMPOUND4res: tag, resarray */
			p += 4 + PAD4(n);
			if (rd32(S, p, &n) == 0) {
				S->pos = p + 4;
				for (__u32 i = 0; i < NFSW_MAX_OPS; i++) {
					if (i >= n || nfsw_v4_reply_op(i))
						break;
				}
			}
		}
	}
	if (S->call.flags & F_MOUNT)
		return 0;
	/* a name with no handle returned (failed lookup, REMOVE, no GETFH): bind it
	 * to its derived hash, so its ops still show by name */
	if (S->name_active == 1 && S->name.len)
		bind(S, S->name.derived, S->name.base, 0, 0);
	total = S->call.nops > S->rnops ? S->call.nops : S->rnops;
	if (total > NFSW_MAX_OPS)
		total = NFSW_MAX_OPS;
	for (__u32 i = 0; i < NFSW_MAX_OPS; i++) {
		if (i >= total)
			break;
		nfsw_count(i, lat, 0);
	}
	if (S->call.tot_ops > total) {
		stat(ST_UNPARSED);
		nfsw_count(0, lat, S->call.tot_ops - total);
	}
	return 0;
}

/* One RPC message: copy its head and decode it. */
__noinline int nfsw_record(struct __sk_buff *skb, __u32 off, __u32 avail, __u32 reply)
{
	struct scratch *S = get_scratch();
	__u64 len = avail;

	if (!S)
		return 0;
	stat(ST_RECORDS);
	CLAMP(len, NFSW_SCRATCH);
	if (len < 12) {
		stat(ST_PARTIAL);
		return 0;
	}
	if (bpf_skb_load_bytes(skb, off, S->buf, len))
		return 0;
	S->len = len;
	S->roff = off;
	S->ravail = avail;
	S->joined = 0;
	return reply ? nfsw_reply(skb) : nfsw_call(skb);
}

/* A record whose first `have` bytes (already in S->buf) came in the previous
 * segment: append what this segment holds from `off`, then decode. */
__noinline int nfsw_joined(struct __sk_buff *skb, __u32 off, __u32 have, __u32 more, __u32 reply)
{
	struct scratch *S = get_scratch();
	__u64 h = have, n = more;

	if (!S)
		return 0;
	stat(ST_RECORDS);
	CLAMP(h, HEAD_STASH - 1);
	CLAMP(n, NFSW_SCRATCH - HEAD_STASH);
	if (n >= 1 && bpf_skb_load_bytes(skb, off, &S->buf[h], n))
		return 0;
	S->len = h + n;
	if (S->len < 12) {
		stat(ST_PARTIAL);
		return 0;
	}
	S->roff = off;
	S->ravail = 0;
	S->joined = 1;
	return reply ? nfsw_reply(skb) : nfsw_call(skb);
}

/* ---------------------------------------------------------------- packets */

/* Does a segment's payload start with a record mark and an RPC message? Used
 * to pick up connections that started before we did, and to resynchronise. */
static __always_inline int looks_like_record(struct __sk_buff *skb, __u32 off, __u32 plen, int reply)
{
	__u32 h[6];

	if (plen < 24 || bpf_skb_load_bytes(skb, off, h, sizeof(h)))
		return 0;
	__u32 mark = bpf_ntohl(h[0]), len = mark & 0x7fffffff;
	if (len < 20 || len > MAX_RECORD)
		return 0;
	if (reply)
		return bpf_ntohl(h[2]) == 1 && bpf_ntohl(h[3]) <= 1;
	return bpf_ntohl(h[2]) == 0 && bpf_ntohl(h[3]) == 2 &&
	       (bpf_ntohl(h[4]) == RPC_NFS || bpf_ntohl(h[4]) == RPC_MOUNT);
}

/* `len` bytes at `off`: read in place when they lie in the skb's linear part
 * (drivers and GRO put the headers there), else copied to `buf` (headers in
 * fragments). The offset bound lets the verifier check the packet pointer. */
static __always_inline void *hdr(struct __sk_buff *skb, __u32 off, void *buf, __u32 len)
{
	void *data = (void *)(long)skb->data, *data_end = (void *)(long)skb->data_end;
	__u64 o = off;

	OPAQUE(o);
	if (o <= 128 && data + o + len <= data_end)
		return data + o;
	return bpf_skb_load_bytes(skb, off, buf, len) ? NULL : buf;
}

/* The record mark at `off`, -1 if unreadable: in place when in the linear part,
 * which holds a segment's payload unless it came in page fragments (TSO/GRO
 * super-packets). A global function: verified once, not in each of the record
 * loop's iterations, which would pass the verifier's 1M-instruction bound. */
__noinline __s64 nfsw_mark(struct __sk_buff *skb, __u32 off)
{
	__u8 *data = (void *)(long)skb->data, *data_end = (void *)(long)skb->data_end, *b;
	__u64 o = off;
	__u32 m;

	OPAQUE(o);
	if (o < 0xfff0) {	/* the verifier's bound on a packet offset (MAX_PACKET_OFF) */
		b = data + o;
		if (b + 4 <= data_end)
			return ((__u32)b[0] << 24) | ((__u32)b[1] << 16) | ((__u32)b[2] << 8) | b[3];
	}
	if (bpf_skb_load_bytes(skb, off, &m, 4))
		return -1;
	return bpf_ntohl(m);
}

static __always_inline void handle(struct __sk_buff *skb, int reply)
{
	struct scratch *S = get_scratch();
	struct nfsw_config *cfg;
	struct flowkey fk = {};
	struct flowstate *st;
	__u32 zero = 0, l3 = 0, l4, end, poff, plen, seq, next, cont, i;
	__u16 proto = bpf_ntohs(skb->protocol), port = 2049, mport = 0, sport, dport;
	__u8 tcpbuf[20], *tcp;
	__u16 ebuf[3], *eth;
	int family;

	if (!S || (proto != ETH_P_IP && proto != ETH_P_IPV6))
		return;
	cfg = bpf_map_lookup_elem(&settings, &zero);
	if (cfg) {
		if (cfg->port)
			port = cfg->port;
		mport = cfg->mount_port;
	}
	/* tc sees the MAC header on Ethernet-like devices; none on L3 devices (tun) */
	eth = hdr(skb, 12, ebuf, sizeof(ebuf));
	if (eth) {
		if (bpf_ntohs(eth[0]) == proto)
			l3 = 14;
		else if (bpf_ntohs(eth[0]) == ETH_P_8021Q && bpf_ntohs(eth[2]) == proto)
			l3 = 18;
	}
	if (proto == ETH_P_IP) {
		struct iphdr ipbuf, *ip = hdr(skb, l3, &ipbuf, sizeof(ipbuf));

		if (!ip || ip->protocol != IPPROTO_TCP || (bpf_ntohs(ip->frag_off) & 0x3fff) || ip->ihl < 5)
			return;
		family = 4;
		l4 = l3 + ip->ihl * 4;
		/* BIG TCP GSO packets carry tot_len 0 (Linux 6.3, commit 09f3d1a3a52c) */
		end = ip->tot_len ? l3 + bpf_ntohs(ip->tot_len) : skb->len;
		__builtin_memcpy(reply ? fk.saddr : fk.caddr, &ip->saddr, 4);
		__builtin_memcpy(reply ? fk.caddr : fk.saddr, &ip->daddr, 4);
	} else {
		struct ipv6hdr ip6buf, *ip6 = hdr(skb, l3, &ip6buf, sizeof(ip6buf));

		if (!ip6 || ip6->nexthdr != IPPROTO_TCP)
			return;	/* extension headers are not followed */
		family = 6;
		l4 = l3 + 40;
		/* BIG TCP for IPv6 sends payload_len 0 (Linux 5.19, commit 7c96d8ec96bb) */
		end = ip6->payload_len ? l4 + bpf_ntohs(ip6->payload_len) : skb->len;
		__builtin_memcpy(reply ? fk.saddr : fk.caddr, &ip6->saddr, 16);
		__builtin_memcpy(reply ? fk.caddr : fk.saddr, &ip6->daddr, 16);
	}
	tcp = hdr(skb, l4, tcpbuf, sizeof(tcpbuf));
	if (!tcp)
		return;
	sport = ((__u16)tcp[0] << 8) | tcp[1];
	dport = ((__u16)tcp[2] << 8) | tcp[3];
	/* Only the server side: calls arrive to its port, replies leave from it.
	 * (On lo both hooks see every packet; each direction is decoded once.) */
	if (reply ? (sport != port && (!mport || sport != mport)) : (dport != port && (!mport || dport != mport)))
		return;
	seq = ((__u32)tcp[4] << 24) | ((__u32)tcp[5] << 16) | ((__u32)tcp[6] << 8) | tcp[7];
	poff = l4 + (tcp[12] >> 4) * 4;
	if (end > skb->len)
		end = skb->len;
	plen = end > poff ? end - poff : 0;
	fk.cport = reply ? dport : sport;
	fk.reply = reply;
	fk.family = family;

	if (plen == 0) {
		if (tcp[13] & 0x02) {	/* SYN: the first record starts right after it */
			bpf_map_update_elem(&flows, &fk, &zero_flow, BPF_ANY);
			st = bpf_map_lookup_elem(&flows, &fk);
			if (st)
				st->next = seq + 1;
		} else if (tcp[13] & 0x05) {	/* FIN, RST */
			bpf_map_delete_elem(&flows, &fk);
		}
		return;
	}
	st = bpf_map_lookup_elem(&flows, &fk);
	if (st) {
		next = st->next;
		cont = st->cont;
	} else {
		next = seq;
		cont = 0;
	}
	/* the record mark we wait for lies before this segment (we missed data), or
	 * far ahead (we decoded garbage): resynchronise on a plausible record start */
	if (!st || (__s32)(next - seq) < 0 || (next - seq) > MAX_RECORD + plen) {
		if (!looks_like_record(skb, poff, plen, reply))
			return;
		if (st)
			stat(ST_RESYNC);
		next = seq;
		cont = 0;
	}
	S->now = 0;
	__builtin_memcpy(S->xk.addr, fk.caddr, 16);
	S->xk.port = fk.cport;
	S->xk.family = family;
	S->xk.pad = 0;
	S->mount_port = mport && (reply ? sport : dport) == mport;
	if (st && st->have) {	/* the rest of a cut head starts this segment */
		__u32 have = st->have - 1, rest = st->flen - have;

		st->have = 0;	/* have - 1 bytes are kept; 0: none */
		if (st->part == seq && have < HEAD_STASH && rest <= MAX_RECORD) {
			__builtin_memcpy(S->buf, st->head, HEAD_STASH);
			nfsw_joined(skb, poff, have, rest < plen ? rest : plen, reply);
		} else {
			stat(ST_PARTIAL);	/* lost or reordered segment: that record is not decoded */
		}
	}
	for (i = 0; i < MAX_REC_PER_SKB; i++) {
		__u32 d = next - seq, mark, flen;

		if (d >= plen)
			break;
		if (d + 4 > plen) {	/* the mark itself straddles segments */
			stat(ST_PARTIAL);
			goto lost;
		}
		__s64 m = nfsw_mark(skb, poff + d);

		if (m < 0)
			return;
		mark = m;
		flen = mark & 0x7fffffff;
		if (flen < 4 || flen > MAX_RECORD) {
			stat(ST_DESYNC);
			goto lost;
		}
		if (!cont) {
			__u32 avail = plen - d - 4;
			__u64 a = avail;

			if (avail < flen && avail < HEAD_STASH && st) {
				/* the head goes on in the next segment: keep it */
				CLAMP(a, HEAD_STASH - 1);
				if (a && bpf_skb_load_bytes(skb, poff + d + 4, st->head, a))
					return;
				st->have = a + 1;
				st->part = seq + plen;
				st->flen = flen;
			} else {
				nfsw_record(skb, poff + d + 4, avail < flen ? avail : flen, reply);
			}
		}
		cont = !(mark >> 31);
		next += 4 + flen;
	}
	if (i == MAX_REC_PER_SKB && next - seq < plen)
		stat(ST_PARTIAL);	/* the rest of this skb is not decoded; resync later */
	/* in place: no map update (and no LRU list operation) per packet */
	if (st) {
		st->next = next;
		st->cont = cont;
	} else {
		bpf_map_update_elem(&flows, &fk, &zero_flow, BPF_ANY);
		st = bpf_map_lookup_elem(&flows, &fk);
		if (st) {
			st->next = next;
			st->cont = cont;
		}
	}
	return;
lost:
	if (st)
		bpf_map_delete_elem(&flows, &fk);
}

SEC("tc")
int nfswire_ingress(struct __sk_buff *skb)
{
	handle(skb, 0);
	return TC_ACT_UNSPEC;
}

SEC("tc")
int nfswire_egress(struct __sk_buff *skb)
{
	handle(skb, 1);
	return TC_ACT_UNSPEC;
}
