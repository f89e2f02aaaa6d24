/* weave_event.h — the layout every weave event starts with, shared by the generated BPF programs
 * and the tracer runtime. The includer defines __u32/__u64 first (weave_bpf.h on the BPF side,
 * <linux/types.h> in the runtime). Changing this layout is a breaking change of the manifest:
 * bump WEAVE_EVENT_ABI.
 */
#ifndef WEAVE_EVENT_H
#define WEAVE_EVENT_H

#define WEAVE_EVENT_ABI 4

enum weave_event_kind {
	WEAVE_EVENT_ENTRY = 0,
	WEAVE_EVENT_RETURN = 1,
};

struct weave_event_header {
	__u64 ts_ns;    /* bpf_ktime_get_ns() at the probe */
	__u64 goid;     /* goroutine id; 0 when g could not be read */
	__u64 faults;   /* bit i set: capture i (manifest order) could not be read */
	__u64 ip;       /* where the probe fired in the process: its attach point's vaddr plus the
			 * load bias of a position-independent binary, which the tracer needs to name
			 * stack frames and dynamic types */
	__u32 pid;      /* thread group id */
	__u32 tid;      /* thread id */
	__u32 probe_id; /* index into the manifest's "probes" */
	__u16 kind;     /* enum weave_event_kind */
	__u16 point;    /* which of the probe's "attach" points fired (its index there) */
	/* Who made the goroutine (the manifest's "ancestry" says which of these the target has):
	 * g.parentGoid, the goroutine that ran the go statement (Go 1.21+; 0 when unknown), and
	 * g.gopc, the return address of that statement's call to newproc (0 when unknown). */
	__u64 parent_goid;
	__u64 gopc;
};

_Static_assert(sizeof(struct weave_event_header) == 64, "weave_event_header layout changed");

/* stack_mode: window. A probe's record holds this at the manifest's stack offset, followed by
 * `capacity` bytes of the user stack copied from `sp` (the first `len` of them read). The tracer
 * unwinds the copy with .gopclntab's SP-delta tables: `pc` is where the probe fired; `fp` and `lr`
 * (arm64's link register, 0 elsewhere) are for the frames the tables do not cover. */
struct weave_stack_window {
	__u64 pc;
	__u64 sp;
	__u64 fp;
	__u64 lr;
	__u32 len;      /* bytes of the window read; 0 when no read succeeded */
	__u32 capacity; /* bytes the record has room for */
};

_Static_assert(sizeof(struct weave_stack_window) == 40, "weave_stack_window layout changed");

/* The tracer writes this into the `weave_config` array map (key 0) before it releases the target. */
struct weave_config {
	__u32 target_tgid; /* 0: every process running the binary */
	__u32 reserved;
};

#endif
