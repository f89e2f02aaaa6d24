/* cost_ladder.bpf.c — what each part of a weave probe costs, one step at a time.
 *
 * bench/run.sh (step "costs") compiles this file once per rung, with -DRUNG=N, and attaches each
 * build at main.Work through the weave runtime, like floor.bpf.c. Rung N does everything rung N-1
 * does plus one more of the things a generated probe does for main.Work(n, s, p) with three
 * captures (templates/weave_bpf.h, weave_reserve and weave_load), so the difference between two
 * rungs' ns/run (--stats) is the price of that one thing on this host:
 *
 *   0  return at once (the floor)
 *   1  + bpf_get_attach_cookie             which probe and attach point (shared programs)
 *   2  + bpf_get_current_pid_tgid, the pid filter and the hits counter (array lookups)
 *   3  + bpf_ringbuf_reserve / bpf_ringbuf_submit of the 152-byte event
 *   4  + bpf_ktime_get_ns                  the event's timestamp
 *   5  + one bpf_probe_read_user           the goroutine id, at g + 152
 *   6  + one more, 16 bytes                who made the goroutine: g.parentGoid and g.gopc, adjacent
 *                                          (at g + 272 in Go 1.21-1.22 and 1.25, + 280 in the others)
 *   7  + one more                          p.Count, at p + 8
 *   8  + the string's bytes                s, up to 64
 *
 * Rung 8 is the generated program in all but the register copy and the fault bits.
 */
#define WEAVE_PROBE_COUNT 1
#include "weave_bpf.h"

#ifndef RUNG
#define RUNG 0
#endif

struct ladder_event {
	struct weave_event_header hdr;
	__s64 n;
	__u64 s_len;
	char s_data[64];
	__s64 count;
};

SEC("uprobe")
int floor_entry(struct weave_pt_regs_x86_64 *ctx)
{
	__u64 cookie = 0;
	if (RUNG >= 1)
		cookie = bpf_get_attach_cookie(ctx);
	__u32 probe_id = WEAVE_COOKIE_PROBE(cookie), zero = 0;
	__u64 pid_tgid = 0;
	if (RUNG >= 2) {
		pid_tgid = bpf_get_current_pid_tgid();
		struct weave_config *config = bpf_map_lookup_elem(&weave_config, &zero);
		if (config && config->target_tgid && config->target_tgid != (__u32)(pid_tgid >> 32))
			return 0;
		__u64 *hits = bpf_map_lookup_elem(&weave_hits, &probe_id);
		if (hits)
			__sync_fetch_and_add(hits, 1);
	}
	if (RUNG < 3)
		return 0;
	struct ladder_event *e = bpf_ringbuf_reserve(&weave_events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->hdr.ts_ns = RUNG >= 4 ? bpf_ktime_get_ns() : 0;
	e->hdr.faults = 0;
	e->hdr.ip = ctx->ip;
	e->hdr.pid = pid_tgid >> 32;
	e->hdr.tid = (__u32)pid_tgid;
	e->hdr.probe_id = probe_id;
	e->hdr.kind = WEAVE_EVENT_ENTRY;
	e->hdr.point = WEAVE_COOKIE_POINT(cookie);
	const struct weave_pt_regs_x86_64 regs = *ctx;
	e->n = regs.ax;
	e->hdr.goid = 0;
	e->hdr.parent_goid = 0;
	e->hdr.gopc = 0;
	e->count = 0;
	e->s_len = regs.cx;
	long fault = 0;
	if (RUNG >= 5)
		fault |= weave_load(&e->hdr.goid, regs.r14 + 152, 8);
	if (RUNG >= 6)
		bpf_probe_read_user(&e->hdr.parent_goid, 16, (const void *)(regs.r14 + 280));
	if (RUNG >= 7)
		fault |= weave_load((__u64 *)&e->count, regs.di + 8, 8);
	if (RUNG >= 8)
		fault |= weave_read_string(e->s_data, 64, regs.bx, regs.cx);
	if (fault)
		e->hdr.faults = 1;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
