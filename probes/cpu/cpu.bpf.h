/* Keys and values of the CPU probe's maps; probes/cpu/probe.py mirrors them. */
#ifndef CPU_BPF_H
#define CPU_BPF_H

#define CPU_MAX_KEYS 16384
#define CPU_COMM_LEN 16
/* A task running longer than this without a switch is credited at the next
 * timer interrupt, so a busy loop shows in every second, not when it stops. */
#define CPU_FLUSH_NS 50000000ULL

struct cpu_key {
	__u32 cpu;
	__u32 pid; /* process id (tgid) when configured per pid, else 0 */
	char comm[CPU_COMM_LEN]; /* the process's name (its thread group leader's comm) */
	__u8 niced; /* nice > 0: its user time is "nice", as in /proc/stat */
	__u8 pad[3];
};

struct cpu_val {
	__u64 ns; /* on-CPU time, exact (switch to switch) */
	/* utime/stime growth over the same intervals: tick-sampled on most
	 * kernels, used only as the ratio that splits ns into user and system */
	__u64 utime;
	__u64 stime;
};

struct cpu_config {
	__u32 per_pid;
	__u32 pad;
};

/* What runs on this CPU since when (per-CPU array, one entry). */
struct cpu_running {
	__u64 ts; /* 0: the idle task, or not known yet */
	__u64 utime;
	__u64 stime;
	__u32 tid;
	__u32 pad;
	struct cpu_key key;
};

#endif
