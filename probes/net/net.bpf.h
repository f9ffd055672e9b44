/* Keys and values of the network probe's maps; probes/net/probe.py mirrors them. */
#ifndef NET_BPF_H
#define NET_BPF_H

#define NET_MAX_KEYS 16384
#define RETRANS_MAX_KEYS 4096

enum { NET_DIR_IN, NET_DIR_OUT };

/* Remote address as 16 bytes: IPv6, or IPv4 mapped (::ffff:a.b.c.d), so a
 * dual-stack socket talking to an IPv4 peer lands on the same key as an IPv4
 * socket. All zero: the socket has no peer (unconnected UDP). */
struct net_key {
	__u8 addr[16];
	__u16 port; /* local port, host order */
	__u8 dir;
	__u8 pad;
};

struct net_val {
	__u64 calls; /* socket send/receive calls that moved data */
	__u64 bytes;
};

struct retrans_key {
	__u8 addr[16];
	__u16 port;
	__u8 pad[2];
};

struct retrans_val {
	__u64 segs; /* segments retransmitted, as the kernel's TcpRetransSegs counts them */
};

#endif
