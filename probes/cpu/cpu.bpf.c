// SPDX-License-Identifier: GPL-2.0
/* CPU time per CPU x application, measured at context switches and
 * aggregated in the kernel.
 *
 * sched_switch gives the task leaving and the one arriving; each CPU keeps
 * when its current task arrived, and the task is credited on leaving. The idle
 * task (pid 0) is not an application and is not credited: procfs has idle.
 * Only (preempt, prev, next) are used: prev_state, appended in Linux 5.18
 * (commit fa2c3254d7cf, "sched/tracing: Don't re-read p->state when emitting
 * sched_switch event"), is not, so one object serves kernels on both sides. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "loupe.bpf.h"
#include "cpu.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define DEFAULT_PRIO 120 /* static_prio of nice 0 (include/linux/sched/prio.h) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH); /* keys carry the CPU: no two CPUs share one */
	__uint(max_entries, CPU_MAX_KEYS);
	__type(key, struct cpu_key);
	__type(value, struct cpu_val);
} oncpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_val);
} other SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_running);
} running SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_config);
} cpu_config SEC(".maps");

LOUPE_DROPS_MAP;

static const struct cpu_val zero_val;

static __always_inline struct cpu_running *this_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&running, &zero);
}

/* Credit the task running since r->ts with [r->ts, now). Plain adds: a key
 * names its CPU, and both programs run on that CPU with interrupts off (the
 * scheduler holds the runqueue lock; timers run in hard interrupt context),
 * so no one else updates the value meanwhile. */
static __always_inline void credit(struct cpu_running *r, struct task_struct *t, __u64 now)
{
	struct cpu_val *v;
	__u64 ut = t->utime, st = t->stime;

	if (now <= r->ts)
		return;
	v = lookup_or_init(&oncpu, &r->key, &zero_val, &other, &drops);
	if (!v)
		return;
	v->ns += now - r->ts;
	if (ut > r->utime)
		v->utime += ut - r->utime;
	if (st > r->stime)
		v->stime += st - r->stime;
}

/* Start crediting t on this CPU from now; the key is read once per stint. */
static __always_inline void arrive(struct cpu_running *r, struct task_struct *t, __u64 now)
{
	struct cpu_config *cfg;
	__u32 zero = 0;

	r->ts = now;
	r->tid = t->pid;
	r->utime = t->utime;
	r->stime = t->stime;
	r->key.pid = 0;
	r->key.pad[0] = r->key.pad[1] = r->key.pad[2] = 0;
	r->key.cpu = bpf_get_smp_processor_id();
	cfg = bpf_map_lookup_elem(&cpu_config, &zero);
	if (cfg && cfg->per_pid)
		r->key.pid = t->tgid;
	r->key.niced = t->static_prio > DEFAULT_PRIO;
	/* Threads are named per thread; the application is the process. comm is
	 * NUL-padded (strscpy_pad in __set_task_comm), so all 16 bytes can be
	 * copied with two loads instead of a string helper call. */
	__builtin_memcpy(r->key.comm, t->group_leader->comm, sizeof(r->key.comm));
}

SEC("tp_btf/sched_switch")
int BPF_PROG(cpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cpu_running *r = this_cpu();
	__u64 now = bpf_ktime_get_ns();

	if (!r)
		return 0;
	/* tid check: a stint begun before the probe attached (or before a suspend)
	 * belongs to someone else. */
	if (r->ts && prev->pid && prev->pid == r->tid)
		credit(r, prev, now);
	if (!next->pid) {
		r->ts = 0; /* idle */
		return 0;
	}
	arrive(r, next, now);
	return 0;
}

/* Every timer interrupt on a busy CPU: credit a stint older than CPU_FLUSH_NS
 * and start a new one, re-reading the name (a task renamed mid-stint shows
 * under its new name from here). bpf_get_current_task_btf needs Linux 5.11
 * (commit 3ca1032ab7ab); without this program, long stints are credited when
 * they end. */
SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(cpu_tick)
{
	struct cpu_running *r = this_cpu();
	struct task_struct *t;
	__u64 now;

	if (!r || !r->ts)
		return 0;
	now = bpf_ktime_get_ns();
	if (now - r->ts < CPU_FLUSH_NS)
		return 0;
	t = bpf_get_current_task_btf();
	if (t->pid != r->tid)
		return 0;
	credit(r, t, now);
	arrive(r, t, now);
	return 0;
}
