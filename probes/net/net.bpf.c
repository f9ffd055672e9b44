// SPDX-License-Identifier: GPL-2.0
/* Per-client network traffic: bytes and socket calls per remote address x
 * local port x direction, and TCP retransmitted segments per remote address x
 * local port, aggregated in the kernel.
 *
 * sock_send_length/sock_recv_length (Linux 6.3, commit 6e6eda44b939 "net:
 * sock: add tracepoint for send recv length") fire in sock_sendmsg/recvmsg
 * with the bytes moved, for every process and for in-kernel socket users that
 * go through them. Only connected or unconnected TCP and UDP sockets count. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "loupe.bpf.h"
#include "net.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define MSG_PEEK 2

/* Per-CPU: a busy server's sockets are hit from every CPU at once; per-CPU
 * slots avoid bouncing one cache line between them. User space sums them. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, NET_MAX_KEYS);
	__type(key, struct net_key);
	__type(value, struct net_val);
} sock SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct net_val);
} other_in SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct net_val);
} other_out SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RETRANS_MAX_KEYS);
	__type(key, struct retrans_key);
	__type(value, struct retrans_val);
} retrans SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct retrans_val);
} retrans_other SEC(".maps");

LOUPE_DROPS_MAP;

static const struct net_val zero_net;
static const struct retrans_val zero_retrans;

/* The peer address (IPv4 mapped into 16 bytes) and local port of an IPv4/IPv6
 * socket; -1 for any other family (unix, netlink, packet...). */
static __always_inline int peer_of(const struct sock *sk, __u8 addr[16], __u16 *port)
{
	__u16 family = sk->__sk_common.skc_family;

	if (family == AF_INET) {
		__u32 a = sk->__sk_common.skc_daddr;

		if (a) {
			addr[10] = 0xff;
			addr[11] = 0xff;
			__builtin_memcpy(&addr[12], &a, 4);
		}
	} else if (family == AF_INET6) {
		/* skc_v6_daddr exists only with CONFIG_IPV6; without it there are no
		 * AF_INET6 sockets to see. */
		if (!bpf_core_field_exists(sk->__sk_common.skc_v6_daddr))
			return -1;
		bpf_core_read(addr, 16, &sk->__sk_common.skc_v6_daddr);
	} else {
		return -1;
	}
	*port = sk->__sk_common.skc_num;
	return 0;
}

static __always_inline int count(struct sock *sk, int ret, __u8 dir)
{
	struct net_key k = {};
	struct net_val *v;
	__u16 proto;

	if (ret <= 0 || !sk)
		return 0;
	proto = sk->sk_protocol; /* a u16 since 5.6, long before these tracepoints */
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return 0;
	if (peer_of(sk, k.addr, &k.port))
		return 0;
	k.dir = dir;
	v = lookup_or_init(&sock, &k, &zero_net, dir == NET_DIR_IN ? (void *)&other_in : (void *)&other_out,
			   &drops);
	if (!v)
		return 0;
	add(&v->calls, 1);
	add(&v->bytes, ret);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(net_send, struct sock *sk, int ret, int flags)
{
	return count(sk, ret, NET_DIR_OUT);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(net_recv, struct sock *sk, int ret, int flags)
{
	if (flags & MSG_PEEK)
		return 0; /* peeked bytes stay queued and are counted when read */
	return count(sk, ret, NET_DIR_IN);
}

/* tcp_retransmit_skb had (sk, skb) and fired only for retransmits sent until
 * Linux 6.17 ("tcp: trace retransmit failures in tcp_retransmit_skb"), which
 * added `int err` and fires on failures too; its own trace_event_raw_tcp_retransmit_skb struct arrived with
 * it (before, the event used the tcp_event_sk_skb class). The raw context is
 * read by hand so one object loads on both: ctx[2] is touched only where the
 * third argument exists, and failed attempts are not counted, as TcpRetransSegs
 * does not count them. */
SEC("tp_btf/tcp_retransmit_skb")
int net_retransmit(__u64 *ctx)
{
	const struct sock *sk = (const struct sock *)ctx[0];
	const struct sk_buff *skb = (const struct sk_buff *)ctx[1];
	struct retrans_key k = {};
	struct retrans_val *v;
	__u16 segs = 1;

	if (bpf_core_type_exists(struct trace_event_raw_tcp_retransmit_skb)) {
		int err = (int)ctx[2];

		if (err)
			return 0;
	}
	if (!sk || peer_of(sk, k.addr, &k.port))
		return 0;
	if (skb) {
		/* tcp_skb_pcount(): a TSO skb retransmits several segments at once */
		bpf_core_read(&segs, sizeof(segs), &((struct tcp_skb_cb *)&skb->cb[0])->tcp_gso_segs);
		if (!segs)
			segs = 1;
	}
	v = lookup_or_init(&retrans, &k, &zero_retrans, &retrans_other, &drops);
	if (v)
		add(&v->segs, segs);
	return 0;
}
