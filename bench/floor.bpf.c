/* floor.bpf.c — the cheapest probe there is: a program that returns at once. bench/run.sh attaches
 * it at main.Work through the weave runtime (tracer --object/--manifest, uprobe_multi), so the
 * per-call cost it measures is the uprobe trap itself: the floor every tracer pays.
 * It includes weave_bpf.h only for the maps the runtime expects to find.
 */
#define WEAVE_PROBE_COUNT 1
#include "weave_bpf.h"

SEC("uprobe")
int floor_entry(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
