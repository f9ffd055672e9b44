/* Layouts shared by nfsd.bpf.c and probe.py (which mirrors them with ctypes). */
#ifndef NFSD_BPF_H
#define NFSD_BPF_H

#define NFSD_MAX_OPS 16		/* ops of one COMPOUND held until its latency is known */
#define NFSD_NAME_MAX 256	/* one path component (NAME_MAX 255 + NUL) */
#define NFSD_MAX_DEPTH 32	/* path components walked up from a file */
#define NFSD_MAX_KEYS 16384	/* the default; LOUPE_NFSD_KEYS sets it at load */
#define NFSD_SPILL_KEYS 4096	/* client x proto x op x share, when counts is full */
#define NFSD_MAX_THREADS 4096	/* nfsd threads with a request in flight */
#define NFSD_LAT_N 26		/* catalog LATENCY 10..35 */
#define NFSD_SIZE_N 16		/* catalog SIZE 9..24 */
#define NFSD_OFF_N 34		/* catalog OFFSET 12..45 */
#define NFSD_LAT_LO 10
#define NFSD_LAT_HI 35
#define NFSD_SIZE_LO 9
#define NFSD_SIZE_HI 24
#define NFSD_OFF_LO 12
#define NFSD_OFF_HI 45

/* File ids: a hash of (device, inode number); these two never name a file. */
#define NFSD_ID_NONE 0		/* no file (NULL, SEQUENCE, ...) */
#define NFSD_ID_ROOT 1		/* parent of "/" */

/* Same numbering as the wire probe (loupe_probes.nfswire.wire.PROTOS). */
enum nfsd_proto { NFSD_V3 = 1, NFSD_V40 = 2, NFSD_V41 = 3, NFSD_V42 = 4 };

/* An NFSv4 OPEN with OPEN4_CREATE: the wire probe's NFSW_OP_OPEN_CREATE (no NFS op has it). */
#define NFSD_OP_OPEN_CREATE 0xfffd

/* Aggregation key: client x proto x op x file (x its export). */
struct nfsd_key {
	__u8 addr[16];		/* IPv4 in the first 4 bytes when family == 4 */
	__u64 file;		/* file id, or NFSD_ID_NONE */
	__u64 share;		/* file id of the export's root, or NFSD_ID_NONE */
	__u16 op;		/* v3 procedure or v4 operation number */
	__u8 proto;		/* enum nfsd_proto */
	__u8 family;		/* 4 or 6 */
	__u32 pad;
};

struct nfsd_val {
	__u64 count;
	__u64 bytes;
	__u64 lat_sum;		/* ns */
	__u64 lat[NFSD_LAT_N];
	__u64 size[NFSD_SIZE_N];
	__u64 off[NFSD_OFF_N];
};

/* A name: file id -> (parent id, name). An empty name is the root of a mounted
 * file system: its path is its parent's (the mount point). */
struct nfsd_name {
	__u64 parent;
	__u16 len;
	__u8 pad[6];
	__u8 name[NFSD_NAME_MAX];
};

/* Informational counters (array, cumulative); index names in probe.py STATS. */
#define NFSD_STATS_N 6
enum { ST_REQUESTS, ST_COMPOUNDS, ST_OPS_LATE, ST_NAME_LOST, ST_DEEP, ST_RENAMED };

#endif
