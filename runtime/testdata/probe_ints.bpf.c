/* probe_ints.bpf.c — a hand-written stand-in for a generated probe, used by the tracer's real
 * BPF test (tracer_e2e.cpp) so the runtime is tested without the generator.
 *
 * main.Ints(a int8, ...) in tests/e2e/fixture: under ABIInternal on amd64 `a` arrives in RAX.
 * Build: clang -O2 -g -target bpf -c probe_ints.bpf.c -o probe_ints.bpf.o
 *   -DWEAVE_TEST_NO_WAKEUP: submit with BPF_RB_NO_WAKEUP, for the timed-consume drain;
 *   -DWEAVE_TEST_EVENT_PAD=N: pad the event by N bytes, so that a few events fill the 4 MiB ring
 *    buffer and the lost-event count can be tested.
 */
#define WEAVE_PROBE_COUNT 1
#include "../../templates/weave_bpf.h"

#ifdef WEAVE_TEST_NO_WAKEUP
#define SUBMIT_FLAGS BPF_RB_NO_WAKEUP
#else
#define SUBMIT_FLAGS 0
#endif

struct event_0 {
	struct weave_event_header h;
	__s64 a; /* offset 64, manifest "fields": [{"kind": "int", "offset": 64}] */
#ifdef WEAVE_TEST_EVENT_PAD
	char pad[WEAVE_TEST_EVENT_PAD];
#endif
};

SEC("uprobe")
int probe_0_entry(struct weave_pt_regs_x86_64 *ctx)
{
	struct weave_event_header *h = weave_reserve(bpf_get_attach_cookie(ctx), ctx->ip, WEAVE_EVENT_ENTRY,
						     sizeof(struct event_0));
	if (!h)
		return 0;
	struct event_0 *e = (struct event_0 *)h;
	e->a = (__s8)ctx->ax; /* a int8 in AL: sign-extend, as the manifest's "int" kind promises */
	bpf_ringbuf_submit(e, SUBMIT_FLAGS);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
