// SPDX-License-Identifier: GPL-2.0
/* NFS on the wire: ONC RPC over TCP decoded at tc ingress (calls) and egress
 * (replies) of the server's interfaces, whatever the NFS server is (knfsd,
 * nfs-ganesha, ...). Calls are matched to replies by (client, port, XID); every
 * NFSv3 procedure and every op of an NFSv4.x COMPOUND is counted in the kernel
 * (an OPEN asking to create as an op of its own, NFSW_OP_OPEN_CREATE)
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
 * back) is kept beside the flow's state and decoded with the next segment.
 *
 * Parsing runs in global functions (verified once each, Linux 5.6+) over a
 * per-CPU copy of the record head, keeping all parser state in that map value:
 * the verifier then sees straight-line code instead of 16 unrolled op parsers. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
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
#define HEAD_COPY 256	/* first copy of a record head: what most ops need (head_need()) */

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
#define F_OTHER 8	/* not an NFS op (NFSACL, RPCSEC_GSS context, other MOUNT
			 * procedures): kept so that its reply is matched, not counted */
#define NO_RW 0xff

struct xkey {
	__u8 addr[16];
	__u32 xid;
	__u16 port;
	__u8 family;
	__u8 pad;
};

/* Bytes of a record head kept when a segment ends inside it: pipelined calls
 * fill segments back to back, and TCP cuts them wherever the MSS, the window or
 * TSO/GRO boundaries fall, also inside a record's first bytes. */
#define HEAD_STASH 256
#define MARK_CUT 0	/* flow_head.flen of a stashed record mark (a record is >= 4 bytes) */

/* Where the next record mark of each connection and direction lies, in a table
 * written in place (as `pend`): a flow's entry is one of FLOW_WAYS in either of
 * two buckets picked by a 64-bit hash of client, server, port and direction, so
 * a packet reads one cache line where an LRU hash hashed a 36-byte key, walked
 * a bucket and marked the entry used. A new flow takes a free entry, else the
 * one least recently seen (a connection closed without a FIN we saw). */
#define FLOW_WAYS 4
#define FLOW_BUCKETS 2048	/* 8192 flows */
#define FLOW_N (FLOW_WAYS * FLOW_BUCKETS)
#define FL_CONT 1	/* the last fragment seen was not its record's last */
#define FL_STASH 2	/* a cut record head waits in flow_heads */
#define FL_GAP 4	/* records missed before a resync may still come: flow_gaps */
#define FIDX_LATE -2	/* S->fidx of a late segment: its cut heads are not kept */
#define FL_SEEN_SHIFT 3	/* above: jiffies / 64 of the flow's last packet */
#define MAX_GAP (4u << 20)	/* a longer hole is not waited for */
#define GAP_STALE (64u << 20)	/* nor one this far behind the stream */

struct flow {	/* 16 bytes: four to a cache line */
	__u64 tag;	/* the flow's hash; 0: free */
	__u32 next;	/* TCP sequence number of the next record mark */
	__u32 bits;
};

/* Bytes a flow skipped when it resynchronised on a later segment: `start` is a
 * record mark the skipped data held, `end` where decoding went on. A segment
 * that arrives late (reordered, or retransmitted after a loss) and holds
 * `start` is decoded up to `end`, leaving the flow's position alone. */
struct flow_gap {
	__u32 start;
	__u32 end;
	__u32 cont;	/* the record at `start` continues a message (FL_CONT) */
	__u32 pad;
};

struct flow_head {	/* a record head, or its mark, cut by the end of a segment */
	__u32 part;	/* sequence number where it goes on */
	__u32 flen;	/* length of its record; MARK_CUT: head[] holds the mark's first bytes */
	__u32 have;	/* bytes in head[] */
	__u32 pad;
	__u8 head[HEAD_STASH];
};

struct call {	/* an NFSv3 call's fields in its first 80 bytes */
	__u64 ts;
	__u64 offset;
	__u64 cur_end;	/* current fh where the call parse stopped */
	__u32 count;
	__u16 tot_ops;
	__u16 proc;
	__u8 proto;
	__u8 nops;
	__u8 rw_idx;
	__u8 flags;
	__u16 ops[NFSW_MAX_OPS];
	__u64 fh[NFSW_MAX_OPS];
};

/* Calls wait for their replies in `pend`, a table written in place: no map
 * insert or delete per call (an LRU hash's were half the decoder's time). A
 * call's slot is one of PEND_WAYS in the bucket picked by its client, port and
 * XID; a connection's consecutive XIDs take consecutive buckets (pend_way()),
 * so its calls in flight do not collide with one another and, the table being
 * laid out way by way, take consecutive cache lines. A slot is one cache line
 * holding all of an NFSv3 call: the reply, decoded on another CPU than the
 * call, pulls that one line across. A COMPOUND's other ops go in `pend_more`
 * (up to SLOT_OPS) and `pend_ext`, at the same index. */
#define PEND_WAYS 4
#define PEND_BUCKETS 8192	/* 32768 calls in flight */
#define PEND_SLOTS (PEND_WAYS * PEND_BUCKETS)
#define SLOT_OPS 8
#define PEND_FREE 0
#define PEND_BUSY (~0ULL)	/* being written or read */

/* A slot's tag (a 64-bit hash of client, port and XID) says whose call it is.
 * A call claims a slot by compare-and-swap of its tag (free, or the oldest call
 * there) to PEND_BUSY, writes itself, then swaps in its own tag; a reply claims
 * the slot of its tag the same way, copies the call, then swaps in PEND_FREE.
 * Compare-and-swap first: it takes the line for writing in one step, where a
 * read first would fetch it shared, then again to write. */
struct pend_slot {	/* from ts to ops[3], struct call's first 44 bytes */
	__u64 tag;
	__u64 ts;
	__u64 offset;
	__u64 cur_end;
	__u32 count;
	__u16 tot_ops;
	__u16 proc;
	__u8 proto;
	__u8 nops;
	__u8 rw_idx;
	__u8 flags;
	__u16 ops[4];
	__u32 pad;
	__u64 fh0;
};
_Static_assert(__builtin_offsetof(struct pend_slot, ops) - 8 == __builtin_offsetof(struct call, ops) &&
	       __builtin_offsetof(struct pend_slot, ts) == 8 && __builtin_offsetof(struct call, ts) == 0,
	       "slot_copy() moves a call's head as words");

struct pend_more {	/* ops 1..SLOT_OPS-1 of a COMPOUND: one more line */
	__u64 fh[SLOT_OPS - 1];
	__u16 ops[SLOT_OPS - 4];	/* from op 4 */
};

struct pend_ext {	/* and the rest */
	__u64 fh[NFSW_MAX_OPS - SLOT_OPS];
	__u16 ops[NFSW_MAX_OPS - SLOT_OPS];
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

/* What a packet reads and writes first, in as few lines as it can: the record's
 * state, then the call, then the copy of its head. */
struct scratch {
	__u32 len;	/* valid bytes in buf */
	__u32 want;	/* bytes of the record's head this skb holds, up to NFSW_SCRATCH */
	__u32 pre_off;	/* skb offset of buf[0] when mark_at() copied the head */
	__u32 pre_len;	/* bytes of buf it copied; 0: none */
	__u32 roff;	/* skb offset of buf[0] (the RPC message, after the mark) */
	__u32 ravail;	/* bytes of this record in this skb from roff */
	__u32 pos;
	__u64 cur, saved;
	__u64 now;	/* bpf_ktime_get_ns() of this packet; 0 until a record needs it */
	__u64 bytes;
	__u32 name_active;
	__u32 rnops;
	__u32 joined;	/* buf = a stashed head + this segment's start */
	__u32 next, cont, seq, poff, plen;	/* the record loop's (nfsw_step) */
	__u32 mcut;	/* bytes of the first mark in the previous segment (in mcut_b); 0: none */
	__u8 mcut_b[4];
	__s32 fidx;	/* this packet's flow entry; -1: none; FIDX_LATE: a late segment's */
	__u64 ch;	/* hash of this packet's client address and port */
	__u64 stale_ns;	/* a pending call older than this is stale */
	struct xkey xk;
	struct call call;
	__u16 rops[NFSW_MAX_OPS];
	__u32 pad0 __attribute__((aligned(8)));
	__u8 mark[4];	/* a record mark copied together with the head after it */
	__u8 buf[NFSW_SCRATCH];	/* 8-aligned: XDR words are read with one load */
	struct {	/* a handle's hash and the second it was checked in: one line */
		__u64 h;
		__u64 gen;
	} fhc[FHC_N];
	struct name name;
	struct nfsw_bind bind;
	struct nfsw_fh fhv;
	struct {	/* headers copied out of fragments (in scratch: the stack is short;
			 * last: on a NIC's packets they stay untouched) */
		__u16 eth[3];
		union {
			struct iphdr ip;
			struct ipv6hdr ip6;
		};
		__u8 tcp[20];
	} hb;
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

struct {	/* mmapable: the values start on a page, so a bucket fills one cache line */
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FLOW_N);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct flow);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);	/* same index as `flows` */
	__uint(max_entries, FLOW_N);
	__type(key, __u32);
	__type(value, struct flow_head);
} flow_heads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);	/* same index as `flows` */
	__uint(max_entries, FLOW_N);
	__type(key, __u32);
	__type(value, struct flow_gap);
} flow_gaps SEC(".maps");

/* Indexed way * PEND_BUCKETS + bucket. Mmapable: the values start on a page,
 * so the 64-byte slots on cache lines. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PEND_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct pend_slot);
} pend SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PEND_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct pend_more);
} pend_more SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PEND_SLOTS);
	__type(key, __u32);
	__type(value, struct pend_ext);
} pend_ext SEC(".maps");

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

/* The counts, in place (nfswire.bpf.h): a hash map's lookup (hashing a 32-byte
 * key, a bucket array and a list to walk) was a fifth of the decoder's time. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);	/* generation g's rows from g * NFSW_ROWS */
	__uint(max_entries, 2 * NFSW_ROWS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct nfsw_row);
} rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);	/* indices of the rows claimed, per generation */
	__uint(max_entries, 2 * NFSW_ROWS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);	/* a u32 would take 8 bytes too (elem_size) */
} row_used SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct nfsw_rowctl);
} row_ctl SEC(".maps");

/* When `rows` is full, a client's op goes here without its file: a flood of new
 * files (creates) fills it, and the client's totals must survive it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);	/* drained each second */
	__uint(max_entries, NFSW_SPILL_KEYS);
	__type(key, struct nfsw_key);
	__type(value, struct nfsw_val);
} spill SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);	/* the "other" row when spill is full too */
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

/* hist_bucket() already clamps; this makes the bound visible to the verifier */
static __always_inline __u32 clamp_idx(__u32 b, __u32 n)
{
	return b < n ? b : n - 1;
}

/* min(v, max) in one register: with a plain compare clang may test a copy and
 * pass the original to a helper, which the verifier cannot then bound. */
#define CLAMP(v, max) asm volatile("if %[x] <= %[m] goto +1; %[x] = %[m]" : [x] "+r"(v) : [m] "i"(max))

/* bpf_skb_load_bytes() of n bytes, 1 <= n <= max (the caller checked n >= 1), as
 * 1 + min(n - 1, max - 1): the helper refuses a length that may be 0, and the
 * verifier of Linux 6.1 (Debian 12's) learns no lower bound from n != 0 (newer
 * ones do), so a length guarded only by that fails to load there. */
#define LOAD_N(skb, off, to, n, max) ({ __u64 __m = (n) - 1; CLAMP(__m, (max) - 1); \
					bpf_skb_load_bytes(skb, off, to, __m + 1); })

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

/* A reply's time without reading the clock (55-70 ns a read under load on the
 * benchmark VM, a fifth of a reply's cost there): the
 * departure time TCP stamps on every segment it sends, CLOCK_MONOTONIC as
 * bpf_ktime_get_ns() (Linux 4.20, commit d3edd06ea8ea), its type told to tc
 * programs at egress since 5.18 (commit 8d21ec0e46ed); 0 when not there. TCP reads
 * the clock once per burst it sends, so the stamp is the burst's start; under fq
 * pacing it is when the segment may leave, the time the client waits for too. */
static __always_inline __u64 departure_time(struct __sk_buff *skb)
{
	if (bpf_core_field_exists(skb->tstamp_type) && skb->tstamp_type == BPF_SKB_CLOCK_MONOTONIC)
		return skb->tstamp;
	return 0;
}

/* ---------------------------------------------------------------- XDR reads */

static __always_inline int rd32(struct scratch *S, __u32 off, __u32 *v)
{
	__u64 o = off;

	OPAQUE(o);
	if (o > NFSW_SCRATCH - 4 || o + 4 > S->len)
		return -1;
	/* one load and a byte swap, not four loads and their shifts (XDR is 4-aligned
	 * from buf[0]; an unaligned load is fine where BPF runs efficiently) */
	*v = bpf_ntohl(*(__u32 *)&S->buf[o]);
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

/* The record's head in S->buf up to byte n, as far as this skb holds it: a
 * record is copied HEAD_COPY bytes at first (its mark with them), which is all
 * most calls and replies need; a decoder that reads further asks for more here.
 * (A multi-record segment copied whole per record cost more than the rest.) */
static __always_inline void head_need(struct __sk_buff *skb, struct scratch *S, __u32 n)
{
	__u64 have = S->len, upto = n < S->want ? n : S->want;

	if (upto <= have)
		return;
	CLAMP(have, NFSW_SCRATCH);
	if (LOAD_N(skb, S->roff + have, &S->buf[have], upto - have, NFSW_SCRATCH) == 0)
		S->len = upto;
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
	if (S->fhc[slot].h == *hash && S->fhc[slot].gen == gen)
		return 0;
	S->fhc[slot].h = *hash;
	S->fhc[slot].gen = gen;
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
	if (LOAD_N(skb, S->roff + coff, &S->name.name[nlen], nn, 255))
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

/* ---------------------------------------------------------------- pending calls */

static __always_inline __u64 mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

/* The client of this packet (address as two words, port, family), hashed once
 * per packet. */
static __always_inline void client_hash(struct scratch *S, __u64 a0, __u64 a1, __u16 port, __u8 family)
{
	S->ch = mix64(a0 ^ (a1 ^ ((__u64)port << 8 | family)) * 0xc2b2ae3d27d4eb4fULL);
}

/* Which call a slot holds: never PEND_FREE or PEND_BUSY. Two calls in flight
 * share a tag with a chance of about 2^-64 per pair. */
static __always_inline __u64 pend_tag(struct scratch *S, __u32 xid)
{
	__u64 t = S->ch ^ ((__u64)xid * 0x9e3779b97f4a7c15ULL);

	return t == PEND_FREE || t == PEND_BUSY ? 1 : t;
}


/* Way w of the bucket of the call of XID S->xk.xid: the slot, its index in *k.
 * Clients count XIDs up in the wire's byte order (libnfs) or in their own (Linux:
 * on x86 the first byte on the wire changes); with the XID and its bytes swapped
 * added, either way consecutive XIDs take consecutive buckets. */
static __always_inline struct pend_slot *pend_way(struct scratch *S, __u32 w, __u32 *k)
{
	__u32 x = S->xk.xid;

	*k = w * PEND_BUCKETS + (((__u32)(S->ch >> 40) + x + __builtin_bswap32(x)) & (PEND_BUCKETS - 1));
	return bpf_map_lookup_elem(&pend, k);
}

/* x into y when storing a call, y into x when taking it back. */
#define XFER(x, y, store) do { if (store) (x) = (y); else (y) = (x); } while (0)

/* A call's fields to (store) or from slot q at index k, and the ops past its
 * first to or from the lines of `pend_more` and `pend_ext` at k. */
static __always_inline void slot_copy(struct scratch *S, struct pend_slot *q, __u32 k, int store)
{
	struct pend_more *m;
	struct pend_ext *e;

	__u64 *sw = &q->ts, *cw = (__u64 *)&S->call;

	for (int j = 0; j < 5; j++)	/* ts to ops[1], as words */
		XFER(sw[j], cw[j], store);
	XFER(*(__u32 *)&q->ops[2], *(__u32 *)&S->call.ops[2], store);
	XFER(q->fh0, S->call.fh[0], store);
	if (S->call.nops <= 1)
		return;
	m = bpf_map_lookup_elem(&pend_more, &k);
	if (!m)
		return;
	for (int j = 1; j < SLOT_OPS; j++)
		XFER(m->fh[j - 1], S->call.fh[j], store);
	for (int j = 4; j < SLOT_OPS; j++)
		XFER(m->ops[j - 4], S->call.ops[j], store);
	if (S->call.nops <= SLOT_OPS)
		return;
	e = bpf_map_lookup_elem(&pend_ext, &k);
	if (!e)
		return;
	for (int j = 0; j < NFSW_MAX_OPS - SLOT_OPS; j++) {
		XFER(e->fh[j], S->call.fh[SLOT_OPS + j], store);
		XFER(e->ops[j], S->call.ops[SLOT_OPS + j], store);
	}
}

/* Keep S->call until its reply comes. */
static __always_inline void pend_put(struct scratch *S)
{
	struct pend_slot *q, *old = NULL;
	__u64 tag = pend_tag(S, S->xk.xid), seen, oldest_tag = 0, oldest_ts = ~0ULL;
	__u32 w, k, oldest = PEND_SLOTS;

	/* the first free slot, or this call's own (a retransmission) */
	for (w = 0; w < PEND_WAYS; w++) {
		q = pend_way(S, w, &k);
		if (!q)
			return;
		seen = __sync_val_compare_and_swap(&q->tag, PEND_FREE, PEND_BUSY);
		if (seen == PEND_FREE)
			goto claimed;
		if (seen == tag && __sync_val_compare_and_swap(&q->tag, tag, PEND_BUSY) == tag)
			goto claimed;
		if (seen != PEND_BUSY && q->ts < oldest_ts) {
			old = q;
			oldest = k;
			oldest_ts = q->ts;
			oldest_tag = seen;
		}
	}
	/* all taken by calls not yet answered: the oldest one's slot */
	if (!old || __sync_val_compare_and_swap(&old->tag, oldest_tag, PEND_BUSY) != oldest_tag) {
		loupe_count_drop(&drops);	/* another CPU took it meanwhile */
		return;
	}
	stat(S->call.ts - old->ts > S->stale_ns ? ST_EXPIRED : ST_OVERWRITTEN);
	q = old;
	k = oldest;
claimed:
	slot_copy(S, q, k, 1);
	__sync_lock_test_and_set(&q->tag, tag);	/* a full barrier: written before it shows */
}

/* The call answered by the reply of XID S->xk.xid into S->call, its slot freed.
 * 0: found; -1: no such call pending. */
static __always_inline int pend_take(struct scratch *S)
{
	__u64 tag = pend_tag(S, S->xk.xid);
	struct pend_slot *q;
	__u32 w, k;

	for (w = 0; w < PEND_WAYS; w++) {
		q = pend_way(S, w, &k);
		if (!q)
			return -1;
		if (__sync_val_compare_and_swap(&q->tag, tag, PEND_BUSY) == tag)
			goto found;
	}
	return -1;
found:
	slot_copy(S, q, k, 0);
	__sync_lock_test_and_set(&q->tag, PEND_FREE);	/* a full barrier: read before it is free */
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
	S->call.ops[k] = op > NFSW_OP_MAX ? NFSW_OP_MAX : op;
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
			/* counted apart, so that creates can be checked against a
			 * client's count; the reply is matched by XID, its op unchanged */
			S->call.ops[k] = NFSW_OP_OPEN_CREATE;
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
	__u32 xid, v, prog, vers, proc, flavor, n, p, boff, blen, other = 0;
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

		if (rd32(S, 36, &gproc) || rd32(S, 44, &service))
			return 0;
		if (gproc != 0)	/* context creation / destruction: not an NFS op */
			other = 1;
		else if (service == 3)	/* privacy: the arguments are encrypted */
			flavor = 0xffff;
		else if (service == 2)	/* integrity: databody_integ length and seq_num first */
			p += 8;
	}
	head_need(skb, S, p + 8);
	if (rd32(S, p + 4, &n) || n > 400)	/* verifier */
		return 0;
	p += 8 + PAD4(n);
	/* an NFSv3 call's arguments (a handle and 16 bytes, or a name) are in the
	 * first copy unless its credentials are long (a Linux client's AUTH_SYS holds
	 * its host name and up to 16 groups); a COMPOUND's may be anywhere */
	if (prog == RPC_NFS && vers == 3 && proc != P3_LOOKUP && (proc < P3_CREATE || proc > P3_RMDIR)) {
		__u32 fl;

		if (rd32(S, p, &fl) || fl > NFSW_FH_MAX)
			fl = NFSW_FH_MAX;	/* its length is past the copy: as much as may be */
		head_need(skb, S, p + 4 + PAD4(fl) + 16);
	} else {
		head_need(skb, S, NFSW_SCRATCH);
	}

	/* what every path sets or reads (not all 16 ops' handles: 4 lines more) */
	packet_time(S);
	S->call.ts = S->now;
	S->call.offset = 0;
	S->call.cur_end = NFSW_FH_NONE;
	S->call.fh[0] = NFSW_FH_NONE;
	S->call.count = 0;
	S->call.tot_ops = 0;
	S->call.proto = 0;
	S->call.nops = 0;
	S->call.rw_idx = NO_RW;
	S->call.flags = 0;
	S->call.proc = proc;
	S->cur = NFSW_FH_NONE;
	S->saved = NFSW_FH_NONE;
	S->name_active = 0;
	S->xk.xid = xid;
	if (other)
		goto other;
	if (prog == RPC_MOUNT && vers == 3 && proc == 1) {	/* MNT: dirpath -> root fh */
		__u32 dl;

		if (rd32(S, p, &dl) || dl == 0 || dl > 255)
			goto other;
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
				goto other;
			S->buf[q + 1] = 0;
			S->buf[q + 2] = 0;
			S->buf[q + 3] = 0;
			S->buf[q + 4] = dl - 1;
			p += 1;
		}
		if (name_push(skb, S, &p))
			goto other;
		S->call.flags = F_MOUNT;
		goto store;
	}
	if (prog != RPC_NFS || (vers != 3 && vers != 4))
		goto other;
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
	pend_put(S);
	return 0;
other:
	S->call.flags = F_OTHER;
	pend_put(S);
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
	S->rops[k] = op > NFSW_OP_MAX ? NFSW_OP_MAX : op;
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

/* An add to a row of this CPU's, or an atomic one to a shared row. */
#define BUMP(p, n, shared) do { if (shared) add(p, n); else *(p) += (n); } while (0)

/* For a `rows` row (32-bit buckets) or an nfsw_val (`spill`, `other`): a macro. */
#define COUNT_OP(S, v, k, lat, extra, shared) do {							\
	__u64 __n = (extra) ? (extra) : 1;								\
	BUMP(&(v)->count, __n, shared);									\
	BUMP(&(v)->lat_sum, (lat) * __n, shared);							\
	BUMP(&(v)->lat[clamp_idx(hist_bucket(lat, 10, 35), NFSW_LAT_N)], __n, shared);			\
	if (!(extra) && (k) == (S)->call.rw_idx) {							\
		__u64 __b = rw_bytes(S, k);								\
		BUMP(&(v)->bytes, __b, shared);								\
		BUMP(&(v)->size[clamp_idx(hist_bucket(__b, 9, 24), NFSW_SIZE_N)], 1, shared);		\
		BUMP(&(v)->off[clamp_idx(hist_bucket((S)->call.offset, 12, 45), NFSW_OFF_N)], 1, shared);	\
	}												\
} while (0)

/* The bytes op k moved: a write's from its call, a read's from its reply. */
static __always_inline __u64 rw_bytes(struct scratch *S, __u64 k)
{
	return S->call.ops[k] == P3_WRITE && S->call.proto == NFSW_V3 ? S->call.count :
	       S->call.ops[k] == V4_WRITE && S->call.proto != NFSW_V3 ? S->call.count : S->bytes;
}

/* This CPU's row of `key` in the generation being written, found or claimed;
 * NULL when both of its buckets are full. Rows are only claimed, never freed,
 * while their generation is written, so a key lies in the first bucket unless
 * that was full when it came: one row per key. */
static __always_inline struct nfsw_row *row_of(const struct nfsw_key *key)
{
	const __u64 *kw = (const __u64 *)key;
	struct nfsw_rowctl *c;
	__u32 zero = 0, gen, i, n;
	__u64 h, tag;
	__u64 *u;

	c = bpf_map_lookup_elem(&row_ctl, &zero);
	if (!c)
		return NULL;
	gen = *(volatile __u32 *)&c->gen & 1;
	h = mix64(kw[0] ^ (kw[1] * 0x9e3779b97f4a7c15ULL) ^ (kw[2] * 0xc2b2ae3d27d4eb4fULL) ^ kw[3]);
	tag = h | 1;
	for (__u32 b = 0; b < 2; b++) {
		__u32 base = gen * NFSW_ROWS + ((b ? h >> 40 : h >> 8) & (NFSW_ROW_BUCKETS - 1)) * NFSW_ROW_WAYS;

		for (__u32 w = 0; w < NFSW_ROW_WAYS; w++) {
			struct nfsw_row *r;
			__u64 t;

			i = base + w;
			r = bpf_map_lookup_elem(&rows, &i);
			if (!r)
				return NULL;
			t = r->tag;
			if (t == tag) {
				const __u64 *rk = (const __u64 *)&r->key;

				if (rk[0] == kw[0] && rk[1] == kw[1] && rk[2] == kw[2] && rk[3] == kw[3])
					return r;
				continue;	/* another key with the same tag: 2^-64 */
			}
			/* a key's rows are claimed by its own CPU only (key.cpu): no other
			 * program claims a row for it meanwhile */
			if (t == 0 && __sync_val_compare_and_swap(&r->tag, 0, tag) == 0) {
				__builtin_memcpy(&r->key, key, sizeof(r->key));
				n = __sync_fetch_and_add(&c->used[gen], 1);
				if (n < NFSW_ROWS) {
					n += gen * NFSW_ROWS;
					u = bpf_map_lookup_elem(&row_used, &n);
					if (u)
						*u = i;
				}
				return r;
			}
		}
	}
	return NULL;
}

/* Count op i of the answered call. */
__noinline int nfsw_count(__u32 i, __u64 lat, __u32 extra)
{
	struct scratch *S = get_scratch();
	struct nfsw_key key = {};
	struct nfsw_val *v;
	struct nfsw_row *r;
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
	/* a row of this CPU's: no other program adds to it meanwhile (tc programs run
	 * with bottom halves off), so plain adds do, and its lines stay in this CPU's
	 * cache instead of bouncing to the CPU that sent the last reply */
	key.cpu = bpf_get_smp_processor_id();
	r = row_of(&key);
	if (r) {
		COUNT_OP(S, r, k, lat, extra, 0);
		return 0;
	}
	loupe_count_drop(&drops);	/* full: this client's op without its file */
	key.fh = 0;
	v = lookup_or_insert(&spill, &key, &zero_val);
	if (v) {
		COUNT_OP(S, v, k, lat, extra, 0);
		return 0;
	}
	__u32 zero = 0;	/* full too: the shared `other` row, with atomic adds */

	v = bpf_map_lookup_elem(&other, &zero);
	if (v)
		COUNT_OP(S, v, k, lat, extra, 1);
	return 0;
}

/* A reply whose head is in S->buf. */
__noinline int nfsw_reply(struct __sk_buff *skb)
{
	struct scratch *S = get_scratch();
	struct name *nm;
	__u32 xid, v, stat_, n = 0, p, boff, blen, status = 0, total;
	__u64 h, lat;
	int accepted;

	if (!S)
		return 0;
	if (rd32(S, 0, &xid) || rd32(S, 4, &v) || v != 1 || rd32(S, 8, &stat_))
		return 0;
	S->xk.xid = xid;
	if (pend_take(S)) {
		stat(ST_UNMATCHED);
		return 0;
	}
	if (S->call.flags & F_OTHER)
		return 0;
	if (S->now < S->call.ts)	/* no departure time (or an older one): the clock */
		S->now = bpf_ktime_get_ns();
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
	/* an NFSv3 (or MOUNT) result is a status, attributes, maybe a handle: in the
	 * first copy unless the verifier is long; a COMPOUND's may be anywhere */
	if (stat_ == 0 && rd32(S, 16, &n) == 0 && n <= 400)
		head_need(skb, S, S->call.proto == NFSW_V3 || (S->call.flags & F_MOUNT) ?
				  24 + PAD4(n) + 4 + 4 + NFSW_FH_MAX + 8 : NFSW_SCRATCH);
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
					if (len < 1 || LOAD_N(skb, S->roff, dc->data, len, NFSW_DIRCHUNK)) {
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
static __always_inline int record(struct __sk_buff *skb, __u32 off, __u32 avail, __u32 reply)
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
	S->want = len;
	if (len > HEAD_COPY)
		len = HEAD_COPY;
	/* mark_at() copied the head already (a payload in page fragments) */
	if ((S->pre_len < len || S->pre_off != off) && bpf_skb_load_bytes(skb, off, S->buf, len))
		return 0;
	S->pre_len = 0;
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
	if (n >= 1 && LOAD_N(skb, off, &S->buf[h], n, NFSW_SCRATCH - HEAD_STASH))
		return 0;
	S->len = h + n;
	if (S->len < 12) {
		stat(ST_PARTIAL);
		return 0;
	}
	S->want = S->len;	/* buf is the stash and this segment's start: no more to copy */
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
 * super-packets, and what a server's sendmsg() builds). From fragments, with
 * `more` > 0, the record's head (up to `more` bytes) comes in the same copy: a
 * copy out of fragments costs mostly its fixed part. */
static __always_inline __s64 mark_at(struct __sk_buff *skb, __u32 off, __u32 more)
{
	__u8 *data = (void *)(long)skb->data, *data_end = (void *)(long)skb->data_end, *b;
	struct scratch *S;
	__u64 o = off, n = more;
	__u32 m;

	OPAQUE(o);
	if (o < 0xfff0) {	/* the verifier's bound on a packet offset (MAX_PACKET_OFF) */
		b = data + o;
		if (b + 4 <= data_end)
			return ((__u32)b[0] << 24) | ((__u32)b[1] << 16) | ((__u32)b[2] << 8) | b[3];
	}
	S = get_scratch();
	if (n && S) {
		CLAMP(n, HEAD_COPY);
		if (bpf_skb_load_bytes(skb, off, S->mark, n + 4))
			return -1;
		S->pre_off = off + 4;
		S->pre_len = n;
		return ((__u32)S->mark[0] << 24) | ((__u32)S->mark[1] << 16) | ((__u32)S->mark[2] << 8) | S->mark[3];
	}
	if (bpf_skb_load_bytes(skb, off, &m, 4))
		return -1;
	return bpf_ntohl(m);
}

enum { STEP_NEXT, STEP_END, STEP_LOST, STEP_ABORT };

/* The record mark at S->next in this segment, and the record after it. A
 * global function: the verifier checks it once, not in each iteration of the
 * record loop (which took most of its 1M-instruction budget before). */
__noinline int nfsw_step(struct __sk_buff *skb, __u32 reply)
{
	struct scratch *S = get_scratch();
	struct flow_head *h;
	struct flow *f;
	__u32 d, mark, flen, avail, hoff, mk;
	__s64 m;

	if (!S)
		return STEP_ABORT;
	d = S->next - S->seq;
	mk = S->mcut;
	if (mk) {	/* the mark began in the previous segment: its rest starts this one */
		S->mcut = 0;
		if (mk > 3 || S->plen < 4 - mk)
			goto cut;
		for (__u32 i = 0; i < 3; i++)	/* a constant bound: the verifier of Linux 6.1 */
			if (mk + i < 4 && bpf_skb_load_bytes(skb, S->poff + i, &S->mcut_b[(mk + i) & 3], 1))
				return STEP_ABORT;
		mark = ((__u32)S->mcut_b[0] << 24) | ((__u32)S->mcut_b[1] << 16) | ((__u32)S->mcut_b[2] << 8) |
		       S->mcut_b[3];
		hoff = S->poff + 4 - mk;
		avail = S->plen - (4 - mk);
	} else {
		if (d >= S->plen)
			return STEP_END;
		if (d + 4 > S->plen) {	/* the mark straddles segments: keep its first bytes */
			mk = S->plen - d;
			if (S->fidx < 0)
				goto cut;
			h = bpf_map_lookup_elem(&flow_heads, &(__u32){S->fidx});
			f = bpf_map_lookup_elem(&flows, &(__u32){S->fidx});
			if (!h || !f)
				return STEP_ABORT;
			for (__u32 i = 0; i < 3; i++)
				if (i < mk && bpf_skb_load_bytes(skb, S->poff + d + i, &h->head[i], 1))
					return STEP_ABORT;
			h->have = mk;
			h->flen = MARK_CUT;
			h->part = S->seq + S->plen;
			f->bits |= FL_STASH;
			return STEP_END;
		}
		m = mark_at(skb, S->poff + d, S->cont ? 0 : S->plen - d - 4);
		if (m < 0)
			return STEP_ABORT;
		mark = m;
		hoff = S->poff + d + 4;
		avail = S->plen - d - 4;
	}
	flen = mark & 0x7fffffff;
	if (flen < 4 || flen > MAX_RECORD) {
		stat(ST_DESYNC);
		return STEP_LOST;
	}
	if (!S->cont) {
		if (avail < flen && avail < HEAD_STASH && S->fidx >= 0) {
			/* the head goes on in the next segment: keep it */
			__u32 k = S->fidx;
			__u64 a = avail;

			f = bpf_map_lookup_elem(&flows, &k);
			h = bpf_map_lookup_elem(&flow_heads, &k);
			if (!f || !h)
				return STEP_ABORT;
			CLAMP(a, HEAD_STASH - 1);
			if (a && LOAD_N(skb, hoff, h->head, a, HEAD_STASH - 1))
				return STEP_ABORT;
			h->have = a;
			h->part = S->seq + S->plen;
			h->flen = flen;
			f->bits |= FL_STASH;
		} else if (avail < flen && avail < HEAD_STASH && S->fidx == FIDX_LATE) {
			stat(ST_PARTIAL);	/* its rest was in a segment decoded before */
		} else {
			record(skb, hoff, avail < flen ? avail : flen, reply);
		}
	}
	S->cont = !(mark >> 31);
	S->next += 4 + flen;
	return STEP_NEXT;
cut:
	stat(ST_PARTIAL);
	return STEP_LOST;
}

/* The entry of flow `ft` in `flows`, or -1. */
static __always_inline int flow_find(__u64 ft)
{
	for (__u32 c = 0; c < 2; c++) {
		__u32 b = (c ? ft >> 32 : ft) & (FLOW_BUCKETS - 1);

		for (__u32 w = 0; w < FLOW_WAYS; w++) {
			__u32 k = b * FLOW_WAYS + w;
			struct flow *f = bpf_map_lookup_elem(&flows, &k);

			if (f && f->tag == ft)
				return k;
		}
	}
	return -1;
}

/* A new entry for flow `ft`, starting at `next`: a free one of its two buckets,
 * else the least recently seen; -1 if another CPU took that meanwhile. */
__noinline int nfsw_flow_new(__u64 ft, __u32 next, __u32 bits)
{
	__u32 oldest = FLOW_N, oldest_seen = ~0U;
	__u64 oldest_tag = 0;
	struct flow *f;
	__u32 k;

	for (__u32 c = 0; c < 2; c++) {
		__u32 b = (c ? ft >> 32 : ft) & (FLOW_BUCKETS - 1);

		for (__u32 w = 0; w < FLOW_WAYS; w++) {
			__u64 t;

			k = b * FLOW_WAYS + w;
			f = bpf_map_lookup_elem(&flows, &k);
			if (!f)
				return -1;
			t = f->tag;
			if (t == 0 && __sync_val_compare_and_swap(&f->tag, 0, ft) == 0)
				goto fill;
			if ((f->bits >> FL_SEEN_SHIFT) < oldest_seen) {
				oldest = k;
				oldest_seen = f->bits >> FL_SEEN_SHIFT;
				oldest_tag = t;
			}
		}
	}
	k = oldest;
	f = bpf_map_lookup_elem(&flows, &k);
	if (!f || __sync_val_compare_and_swap(&f->tag, oldest_tag, ft) != oldest_tag)
		return -1;
fill:
	f->next = next;
	f->bits = bits;
	return k;
}

static __always_inline __u32 flow_seen(void)
{
	return (__u32)(bpf_jiffies64() >> 6) << FL_SEEN_SHIFT;
}

/* One packet. Inlined in each program: as a function of its own, its frame and
 * the program's would take the call chain under it (nfsw_step, nfsw_call,
 * nfsw_v4_call_op) past the 512-byte stack the verifier of Linux 6.1 allows
 * (it counts at least 32 bytes for a frame). */
static __always_inline int nfsw_packet(struct __sk_buff *skb, __u32 reply)
{
	struct scratch *S = get_scratch();
	struct nfsw_config *cfg;
	struct flow *f = NULL;
	struct flow_gap *g = NULL;
	struct flow_head *h;
	__u32 zero = 0, l3 = 0, l4, end, poff, plen, seq, next, cont, i, k, mcut = 0;
	__u16 proto = bpf_ntohs(skb->protocol), port = 2049, mport = 0, sport, dport, cport;
	__u32 stale_ms = NFSW_STALE_MS;
	__u64 ft, c0 = 0, c1 = 0, s0 = 0, s1 = 0;
	struct ipv6hdr *ip6 = NULL;
	struct iphdr *ip = NULL;
	__u8 *tcp, family;
	__u16 *eth;
	int r, fi;

	if (!S || (proto != ETH_P_IP && proto != ETH_P_IPV6))
		return 0;
	cfg = bpf_map_lookup_elem(&settings, &zero);
	if (cfg) {
		if (cfg->port)
			port = cfg->port;
		mport = cfg->mount_port;
		if (cfg->stale_ms)
			stale_ms = cfg->stale_ms;
	}
	/* tc sees the MAC header on Ethernet-like devices; none on L3 devices (tun) */
	eth = hdr(skb, 12, S->hb.eth, sizeof(S->hb.eth));
	if (eth) {
		if (bpf_ntohs(eth[0]) == proto)
			l3 = 14;
		else if (bpf_ntohs(eth[0]) == ETH_P_8021Q && bpf_ntohs(eth[2]) == proto)
			l3 = 18;
	}
	if (proto == ETH_P_IP) {
		ip = hdr(skb, l3, &S->hb.ip, sizeof(S->hb.ip));
		if (!ip || ip->protocol != IPPROTO_TCP || (bpf_ntohs(ip->frag_off) & 0x3fff) || ip->ihl < 5)
			return 0;
		family = 4;
		l4 = l3 + ip->ihl * 4;
		/* BIG TCP GSO packets carry tot_len 0 (Linux 6.3, commit 09f3d1a3a52c) */
		end = ip->tot_len ? l3 + bpf_ntohs(ip->tot_len) : skb->len;
	} else {
		ip6 = hdr(skb, l3, &S->hb.ip6, sizeof(S->hb.ip6));
		if (!ip6 || ip6->nexthdr != IPPROTO_TCP)
			return 0;	/* extension headers are not followed */
		family = 6;
		l4 = l3 + 40;
		/* BIG TCP for IPv6 sends payload_len 0 (Linux 5.19, commit 7c96d8ec96bb) */
		end = ip6->payload_len ? l4 + bpf_ntohs(ip6->payload_len) : skb->len;
	}
	tcp = hdr(skb, l4, S->hb.tcp, sizeof(S->hb.tcp));
	if (!tcp)
		return 0;
	sport = ((__u16)tcp[0] << 8) | tcp[1];
	dport = ((__u16)tcp[2] << 8) | tcp[3];
	/* Only the server side: calls arrive to its port, replies leave from it.
	 * (On lo both hooks see every packet; each direction is decoded once.) */
	if (reply ? (sport != port && (!mport || sport != mport)) : (dport != port && (!mport || dport != mport)))
		return 0;
	seq = ((__u32)tcp[4] << 24) | ((__u32)tcp[5] << 16) | ((__u32)tcp[6] << 8) | tcp[7];
	poff = l4 + (tcp[12] >> 4) * 4;
	if (end > skb->len)
		end = skb->len;
	plen = end > poff ? end - poff : 0;
	cport = reply ? dport : sport;
	if (plen == 0 && !(tcp[13] & 0x07))
		return 0;	/* a pure ACK */
	/* client and server addresses as two 64-bit words each (IPv4 in the first) */
	if (ip) {
		c0 = reply ? ip->daddr : ip->saddr;
		s0 = reply ? ip->saddr : ip->daddr;
	} else if (ip6) {
		__builtin_memcpy(&c0, reply ? &ip6->daddr : &ip6->saddr, 8);
		__builtin_memcpy(&c1, (__u8 *)(reply ? &ip6->daddr : &ip6->saddr) + 8, 8);
		__builtin_memcpy(&s0, reply ? &ip6->saddr : &ip6->daddr, 8);
		__builtin_memcpy(&s1, (__u8 *)(reply ? &ip6->saddr : &ip6->daddr) + 8, 8);
	}
	client_hash(S, c0, c1, cport, family);
	ft = mix64(S->ch ^ s0 * 0x9e3779b97f4a7c15ULL ^ s1 * 0xc2b2ae3d27d4eb4fULL ^ reply);
	ft = ft ? ft : 1;
	fi = flow_find(ft);
	if (fi >= 0) {
		k = fi;
		f = bpf_map_lookup_elem(&flows, &k);
	}
	if (plen == 0) {
		if (tcp[13] & 0x02) {	/* SYN: the first record starts right after it */
			if (f) {
				f->next = seq + 1;
				f->bits &= ~FL_GAP;	/* a new connection: no hole of the last */
			} else {
				nfsw_flow_new(ft, seq + 1, flow_seen());
			}
		} else if (f) {	/* FIN, RST */
			__sync_val_compare_and_swap(&f->tag, ft, 0);
		}
		return 0;
	}
	S->now = reply ? departure_time(skb) : 0;
	S->pre_len = 0;
	__builtin_memcpy(S->xk.addr, &c0, 8);
	__builtin_memcpy(S->xk.addr + 8, &c1, 8);
	S->xk.port = cport;
	S->xk.family = family;
	S->xk.pad = 0;
	S->stale_ns = stale_ms * 1000000ULL;
	if (f && (f->bits & FL_GAP)) {
		g = bpf_map_lookup_elem(&flow_gaps, &k);
		/* a segment missed before a resync has come: it holds the gap's first mark */
		if (g && g->start - seq < plen && (__s32)(g->end - g->start) > 0) {
			next = g->start;
			cont = g->cont;
			if (g->end - seq < plen)
				plen = g->end - seq;	/* from `end` on it was decoded */
			goto decode;
		}
		if (g && (__s32)(seq - g->end) > (__s32)GAP_STALE)
			f->bits &= ~FL_GAP;	/* the stream went on far past it: not coming */
	}
	g = NULL;
	if (f) {
		next = f->next;
		cont = f->bits & FL_CONT;
	} else {
		next = seq;
		cont = 0;
	}
	h = f && (f->bits & FL_STASH) ? bpf_map_lookup_elem(&flow_heads, &k) : NULL;
	/* the previous segment ended inside a record mark, whose rest starts this one */
	if (h && h->flen == MARK_CUT && h->part == seq && h->have - 1 < 3 && next + h->have == seq)
		mcut = h->have;
	/* the record mark we wait for lies before this segment (we missed data), or
	 * far ahead (we decoded garbage): resynchronise on a plausible record start */
	if (!f || (!mcut && ((__s32)(next - seq) < 0 || (next - seq) > MAX_RECORD + plen))) {
		if (!looks_like_record(skb, poff, plen, reply))
			return 0;
		if (f) {
			struct flow_gap *gap = bpf_map_lookup_elem(&flow_gaps, &k);

			stat(ST_RESYNC);
			/* data was missed (a later segment came first): keep where it
			 * began, to decode it if it still comes */
			f->bits &= ~FL_GAP;
			if (gap && (__s32)(next - seq) < 0 && seq - next <= MAX_GAP) {
				gap->start = next;
				gap->end = seq;
				gap->cont = cont;
				f->bits |= FL_GAP;
			}
		}
		next = seq;
		cont = 0;
	}
	/* the rest of a cut head (or mark) starts this segment; a segment before it
	 * seen again (on a bridge after its port) leaves the head waiting for it */
	if (h && (__s32)(seq - h->part) >= 0) {
		f->bits &= ~FL_STASH;
		if (mcut) {
			__builtin_memcpy(S->mcut_b, h->head, 4);
		} else if (h->flen != MARK_CUT && h->part == seq && h->have < HEAD_STASH &&
			   h->flen - h->have <= MAX_RECORD) {
			__u32 rest = h->flen - h->have;

			__builtin_memcpy(S->buf, h->head, HEAD_STASH);
			nfsw_joined(skb, poff, h->have, rest < plen ? rest : plen, reply);
		} else {
			stat(ST_PARTIAL);	/* lost or reordered segment: that record is not decoded */
		}
	}
decode:
	S->next = next;
	S->cont = cont;
	S->mcut = mcut;
	S->seq = seq;
	S->poff = poff;
	S->plen = plen;
	S->fidx = g ? FIDX_LATE : f ? fi : -1;
	for (i = 0; i < MAX_REC_PER_SKB; i++) {
		r = nfsw_step(skb, reply);
		if (r == STEP_END)
			break;
		if (r == STEP_LOST)
			goto lost;
		if (r != STEP_NEXT)
			return 0;
	}
	next = S->next;
	cont = S->cont;
	if (g) {	/* the flow goes on where it was; the gap shrinks or is filled */
		stat(ST_REFILLED);
		if ((__s32)(g->end - next) > 0 && i < MAX_REC_PER_SKB) {
			g->start = next;
			g->cont = cont;
		} else {
			f->bits &= ~FL_GAP;
		}
		return 0;
	}
	if (i == MAX_REC_PER_SKB && next - seq < plen)
		stat(ST_PARTIAL);	/* the rest of this skb is not decoded; resync later */
	if (f) {	/* in place: one cache line, no map update */
		f->next = next;
		f->bits = flow_seen() | (f->bits & (FL_STASH | FL_GAP)) | cont;
	} else {
		nfsw_flow_new(ft, next, flow_seen() | cont);
	}
	return 0;
lost:
	if (g)	/* the late segment made no sense: the flow itself is still in step */
		f->bits &= ~FL_GAP;
	else if (f)
		__sync_val_compare_and_swap(&f->tag, ft, 0);
	return 0;
}

#ifdef NFSW_FLOOR
#include "floor.bpf.h"
#endif

/* Built with NFSW_HOOK_ONLY (build/bpf/nfswire-hook.bpf.o), the programs do
 * nothing: bench.nfswire's measure of what the hook and bpf_stats cost alone.
 * With NFSW_FLOOR (build/bpf/nfswire-floor.bpf.o) they do only what any decoder
 * on these hooks must (floor.bpf.h): bench.nfswire's floor. */
#if defined(NFSW_HOOK_ONLY)
#define NFSW_RUN(skb, reply)
#elif defined(NFSW_FLOOR)
#define NFSW_RUN(skb, reply) nfsw_floor(skb, reply)
#else
#define NFSW_RUN(skb, reply) nfsw_packet(skb, reply)
#endif

SEC("tc")
int nfswire_ingress(struct __sk_buff *skb)
{
	NFSW_RUN(skb, 0);
	return TC_ACT_UNSPEC;
}

SEC("tc")
int nfswire_egress(struct __sk_buff *skb)
{
	NFSW_RUN(skb, 1);
	return TC_ACT_UNSPEC;
}
