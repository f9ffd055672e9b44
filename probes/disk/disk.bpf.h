/* Key and value of the disk probe's `io` map; probes/disk/probe.py mirrors them. */
#ifndef DISK_BPF_H
#define DISK_BPF_H

/* Histogram bounds: the catalog's LATENCY, SIZE and OFFSET (backend/loupe/catalog.py). */
#define LAT_LO 10
#define LAT_HI 35
#define SIZE_LO 9
#define SIZE_HI 24
#define OFF_LO 12
#define OFF_HI 45
#define DISK_MAX_KEYS 4096

enum { DISK_OP_READ, DISK_OP_WRITE, DISK_OP_FLUSH, DISK_OP_DISCARD, DISK_OP_OTHER };

struct disk_key {
	__u32 dev; /* major << 20 | first_minor, the kernel's dev_t */
	__u8 op;
	__u8 pad[3];
};

struct disk_val {
	__u64 count;
	__u64 bytes;
	__u64 lat_sum; /* ns */
	__u64 lat[LAT_HI - LAT_LO + 1];
	__u64 size[SIZE_HI - SIZE_LO + 1];
	__u64 off[OFF_HI - OFF_LO + 1];
};

#endif
