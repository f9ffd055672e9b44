/* Shared helpers for Loupe's BPF probes (the role of ebpf_exporter's maps.bpf.h). */
#ifndef LOUPE_BPF_H
#define LOUPE_BPF_H

/* floor(log2(v)); 0 for v <= 1. Branch-free halving keeps the verifier happy
 * on every kernel that has BPF at all (no loops). */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/* Index 0..hi-lo of v's log2 bucket, clamped to the declared bounds
 * [2^lo, 2^hi]: values below 2^lo count in the first bucket, above in the last
 * (the catalog's Histogram does the same with stored data). */
static __always_inline __u32 hist_bucket(__u64 v, __u32 lo, __u32 hi)
{
	__u32 b = log2_u64(v);

	if (b < lo)
		b = lo;
	if (b > hi)
		b = hi;
	return b - lo;
}

#define add(ptr, v) __sync_fetch_and_add((ptr), (v))

/* Each probe keeps a 1-entry array map `drops`; user space reports it as the
 * probe's overflow count. */
struct loupe_drops {
	__u64 overflow; /* updates refused because a bounded map was full */
};

#define LOUPE_DROPS_MAP                                                        \
	struct {                                                               \
		__uint(type, BPF_MAP_TYPE_ARRAY);                              \
		__uint(max_entries, 1);                                        \
		__type(key, __u32);                                            \
		__type(value, struct loupe_drops);                             \
	} drops SEC(".maps")

static __always_inline void loupe_count_drop(void *drops_map)
{
	__u32 zero = 0;
	struct loupe_drops *d = bpf_map_lookup_elem(drops_map, &zero);

	if (d)
		add(&d->overflow, 1);
}

/* Look up `key` in a bounded hash map, inserting `init` if absent; NULL when
 * the map is full. */
static __always_inline void *lookup_or_insert(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	if (bpf_map_update_elem(map, key, init, BPF_NOEXIST) == 0)
		return bpf_map_lookup_elem(map, key);
	return bpf_map_lookup_elem(map, key); /* raced with another CPU's insert? */
}

/* lookup_or_insert(), falling back when the map is full to `other_map`, a
 * 1-entry array of the same value type that is never full, and counting the
 * drop: totals are never lost, only their detail. User space reads `other_map`
 * as cumulative counters and diffs them (an array cannot be drained atomically). */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *init,
					    void *other_map, void *drops_map)
{
	__u32 zero = 0;
	void *v = lookup_or_insert(map, key, init);

	if (v)
		return v;
	loupe_count_drop(drops_map);
	return bpf_map_lookup_elem(other_map, &zero);
}

#endif
