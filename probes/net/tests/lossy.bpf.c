// SPDX-License-Identifier: GPL-2.0
/* Test helper, not part of the product: drop LOSS_PCT % of the IPv4 packets
 * leaving an interface, as `tc qdisc ... netem loss` would on kernels built
 * with sch_netem, so TCP has to retransmit. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define ETH_P_IP 0x0800
#define LOSS_PCT 30

char LICENSE[] SEC("license") = "GPL";

SEC("tc")
int lossy(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	return bpf_get_prandom_u32() % 100 < LOSS_PCT ? TC_ACT_SHOT : TC_ACT_OK;
}
