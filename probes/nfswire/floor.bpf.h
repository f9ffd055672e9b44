/* The floor under the wire decoder's cost (build/bpf/nfswire-floor.bpf.o, for
 * bench.nfswire): per packet only what any decoder on these hooks has to do,
 * with the decoder's own helpers: the Ethernet/IP/TCP headers and the port,
 * then per record its mark and head copied out of the skb, and for a call the
 * clock and a pending slot, for a reply its slot taken back and one op counted
 * in a row. No RPC or NFS parsing, no handles, names or flow state: records are
 * assumed to start each segment, so one that starts inside a record is misread
 * (the bench counts per op served, not per op it matched). What the decoder
 * costs above this is its decoding. */

/* One record at `off`: the offset of the next, or 0 to stop. */
__noinline int nfsw_floor_rec(struct __sk_buff *skb, __u32 off, __u32 end, __u32 reply)
{
	struct scratch *S = get_scratch();
	__u64 n = end - off;
	__u32 flen;

	if (!S || off + 16 > end)
		return 0;
	CLAMP(n, HEAD_COPY + 4);
	if (LOAD_N(skb, off, S->mark, n, HEAD_COPY + 4))
		return 0;
	flen = bpf_ntohl(*(__u32 *)S->mark) & 0x7fffffff;
	if (flen < 12 || flen > MAX_RECORD)
		return 0;
	S->xk.xid = bpf_ntohl(*(__u32 *)S->buf);
	if (!reply) {
		if (!S->now)
			S->now = bpf_ktime_get_ns();
		S->call.ts = S->now;
		S->call.proto = NFSW_V3;
		S->call.nops = 1;
		S->call.tot_ops = 1;
		S->call.ops[0] = 1;	/* GETATTR */
		S->call.fh[0] = 16;
		S->call.cur_end = 16;
		S->call.rw_idx = NO_RW;
		S->call.flags = 0;
		pend_put(S);
	} else if (pend_take(S) == 0) {
		if (S->now < S->call.ts)
			S->now = bpf_ktime_get_ns();
		S->rnops = 0;
		nfsw_count(0, S->now - S->call.ts, 0);
	}
	return off + 4 + flen;
}

static __always_inline int nfsw_floor(struct __sk_buff *skb, __u32 reply)
{
	struct scratch *S = get_scratch();
	struct nfsw_config *cfg;
	__u16 proto = bpf_ntohs(skb->protocol), port = 2049, sport, dport;
	__u32 zero = 0, l3 = 14, l4, end, off;
	struct iphdr *ip;
	__u16 *eth;
	__u8 *tcp;
	__u64 c0;

	if (!S || proto != ETH_P_IP)
		return 0;
	cfg = bpf_map_lookup_elem(&settings, &zero);
	if (cfg && cfg->port)
		port = cfg->port;
	eth = hdr(skb, 12, S->hb.eth, sizeof(S->hb.eth));
	if (!eth || bpf_ntohs(eth[0]) != proto)
		return 0;
	ip = hdr(skb, l3, &S->hb.ip, sizeof(S->hb.ip));
	if (!ip || ip->protocol != IPPROTO_TCP || ip->ihl < 5)
		return 0;
	l4 = l3 + ip->ihl * 4;
	end = l3 + bpf_ntohs(ip->tot_len);
	tcp = hdr(skb, l4, S->hb.tcp, sizeof(S->hb.tcp));
	if (!tcp)
		return 0;
	sport = ((__u16)tcp[0] << 8) | tcp[1];
	dport = ((__u16)tcp[2] << 8) | tcp[3];
	if (reply ? sport != port : dport != port)
		return 0;
	off = l4 + (tcp[12] >> 4) * 4;
	if (end > skb->len)
		end = skb->len;
	if (end <= off)
		return 0;	/* a pure ACK */
	c0 = reply ? ip->daddr : ip->saddr;
	client_hash(S, c0, 0, reply ? dport : sport, 4);
	__builtin_memcpy(S->xk.addr, &c0, 8);
	__builtin_memset(S->xk.addr + 8, 0, 8);
	S->xk.port = reply ? dport : sport;
	S->xk.family = 4;
	S->xk.pad = 0;
	S->stale_ns = NFSW_STALE_MS * 1000000ULL;
	S->now = reply ? departure_time(skb) : 0;
	for (__u32 i = 0; i < 32; i++) {
		off = nfsw_floor_rec(skb, off, end, reply);
		if (!off)
			break;
	}
	return 0;
}
