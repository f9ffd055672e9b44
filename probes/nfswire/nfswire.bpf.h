/* Layouts shared by nfswire.bpf.c and probe.py (which mirrors them with ctypes). */
#ifndef NFSWIRE_BPF_H
#define NFSWIRE_BPF_H

#define NFSW_MAX_OPS 16		/* ops of one COMPOUND kept per call */
#define NFSW_FH_MAX 128		/* NFS4_FHSIZE; v3 handles are <= 64 */
#define NFSW_NAME_MAX 512	/* accumulated LOOKUP path (components <= 255) */
#define NFSW_SCRATCH 1024	/* bytes of a record's head copied for parsing */
#define NFSW_DIRCHUNK 4096	/* bytes of a READDIRPLUS reply handed to user space */
#define NFSW_MAX_KEYS 16384
#define NFSW_SPILL_KEYS 4096	/* client x version x op x CPU, when counts is full */
#define NFSW_LAT_N 26		/* catalog LATENCY 10..35 */
#define NFSW_SIZE_N 16		/* catalog SIZE 9..24 */
#define NFSW_OFF_N 34		/* catalog OFFSET 12..45 */

#define NFSW_FH_NONE 0
#define NFSW_FH_ROOT 1		/* PUTROOTFH / MOUNT's "/" before the real handle is known */

enum nfsw_proto { NFSW_V3 = 1, NFSW_V40 = 2, NFSW_V41 = 3, NFSW_V42 = 4 };

/* Op codes no NFS op has (the wire's above NFSW_OP_MAX show as NFSW_OP_MAX) */
#define NFSW_OP_MAX 0xfffc
#define NFSW_OP_OPEN_CREATE 0xfffd	/* NFSv4 OPEN with OPEN4_CREATE: a file create, not an open */
#define NFSW_OP_GSS_PRIV 0xfffe	/* RPCSEC_GSS privacy: the procedure is encrypted */
#define NFSW_OP_UNPARSED 0xffff	/* a COMPOUND op past what the headers showed */

struct nfsw_config {
	__u16 port;		/* NFS port, 0 = 2049 */
	__u16 mount_port;	/* MOUNT v3 port to decode for root handles, 0 = none */
	__u32 flags;
	__u32 stale_ms;		/* a call unanswered this long is stale, 0 = NFSW_STALE_MS */
	__u32 pad;
};

#define NFSW_STALE_MS 60000

/* Aggregation key: client x proto x op x file (x CPU). */
struct nfsw_key {
	__u8 addr[16];		/* IPv4 in the first 4 bytes when family == 4 */
	__u64 fh;		/* hash of the file handle (fh_hash) or a sentinel */
	__u16 op;		/* v3 procedure or v4 operation number */
	__u8 proto;		/* enum nfsw_proto */
	__u8 family;		/* 4 or 6 */
	__u32 cpu;		/* each CPU adds to its own row: user space sums them */
};

struct nfsw_val {
	__u64 count;
	__u64 bytes;
	__u64 lat_sum;
	__u64 lat[NFSW_LAT_N];
	__u64 size[NFSW_SIZE_N];
	__u64 off[NFSW_OFF_N];
};

/* Counts are kept in place in `rows`, two generations of NFSW_ROWS rows: the
 * programs add to generation `row_ctl.gen` while user space reads and zeroes the
 * other (after flipping `gen` and waiting out an RCU grace period, so that no
 * program still adds to it). A key's row is one of NFSW_ROW_WAYS in either of two
 * buckets picked by a hash of the key, claimed by compare-and-swap of its tag. */
#define NFSW_ROW_WAYS 4
#define NFSW_ROW_BUCKETS 4096
#define NFSW_ROWS (NFSW_ROW_WAYS * NFSW_ROW_BUCKETS)

/* 384 bytes: the tag, key and totals every op adds to fill the first cache line.
 * Histogram buckets are 32-bit: a row is one CPU's second. */
struct nfsw_row {
	__u64 tag;		/* hash of the key, never 0; 0: free */
	struct nfsw_key key;
	__u64 count;
	__u64 lat_sum;
	__u64 bytes;
	__u32 lat[NFSW_LAT_N];
	__u32 size[NFSW_SIZE_N];
	__u32 off[NFSW_OFF_N];
	__u8 pad[16];
};

struct nfsw_rowctl {
	__u32 gen;		/* generation the programs add to (0 or 1), written by user space */
	__u32 pad[15];		/* a line read by every op, written once a second */
	__u32 used[2];		/* rows claimed per generation: their indices in `row_used` */
	__u32 pad2[14];
};

/* Informational counters (array, cumulative); index names in probe.py STATS. */
#define NFSW_STATS_N 15
enum {
	ST_RECORDS, ST_CALLS, ST_REPLIES, ST_UNMATCHED, ST_PARTIAL, ST_DESYNC,
	ST_RESYNC, ST_BIND_LOST, ST_GSS_PRIV, ST_UNPARSED, ST_DIR_LOST, ST_NOT_RPC,
	ST_OVERWRITTEN,	/* a call's slot taken by another call before its reply came */
	ST_EXPIRED,	/* a call unanswered for stale_ms, its slot taken by another */
	ST_REFILLED,	/* a late segment decoded into the gap a resync left */
};

/* A name binding: child handle = parent handle + "/" + name. */
struct nfsw_bind {
	__u64 parent;
	__u16 name_len;
	__u8 fh_len;		/* 0: child is a derived hash with no handle seen */
	__u8 kind;
	__u32 pad;
	__u8 fh[NFSW_FH_MAX];
	__u8 name[NFSW_NAME_MAX];
};

struct nfsw_dirkey {
	__u64 dir;
	__u32 xid;
	__u32 pad;
};

/* The head of a READDIRPLUS3 reply (after the RPC header), decoded in user space. */
struct nfsw_dirchunk {
	__u32 len;
	__u32 pad;
	__u8 data[NFSW_DIRCHUNK];
};

struct nfsw_fh {
	__u8 len;
	__u8 pad[7];
	__u8 data[NFSW_FH_MAX];
};

#endif
