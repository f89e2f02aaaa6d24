/* weave_bpf.h — the hand-written half of every generated probe file.
 *
 * The generated probes.bpf.c only fills in registers, offsets and sizes; the logic lives here.
 * It carries its own minimal definitions instead of including <linux/bpf.h> or libbpf's
 * <bpf/bpf_helpers.h>: the output directory must rebuild with clang alone, on a host with no kernel
 * headers and no libbpf headers installed. The helper numbers below are the kernel's stable UAPI
 * (enum bpf_func_id in include/uapi/linux/bpf.h) and never change.
 */
#ifndef WEAVE_BPF_H
#define WEAVE_BPF_H

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;

#define SEC(name) __attribute__((section(name), used))
#define __always_inline inline __attribute__((always_inline))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name

/* Map types and flags (enum bpf_map_type, BPF_ANY, BPF_RB_*). */
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_MAP_TYPE_RINGBUF 27
#define BPF_ANY 0
#define BPF_RB_NO_WAKEUP 1

/* x86-64 struct pt_regs as the kernel lays it out (arch/x86/include/uapi/asm/ptrace.h). */
struct weave_pt_regs_x86_64 {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

/* arm64 struct user_pt_regs (arch/arm64/include/uapi/asm/ptrace.h). */
struct weave_pt_regs_arm64 {
	__u64 regs[31];
	__u64 sp, pc, pstate;
};

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static __u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static long (*bpf_probe_read_user)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)112;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)132;
static void (*bpf_ringbuf_discard)(void *data, __u64 flags) = (void *)133;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, __u64 size, __u64 flags) = (void *)130;
static __u64 (*bpf_get_attach_cookie)(void *ctx) = (void *)174;
static __u64 (*bpf_get_current_task)(void) = (void *)35;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)113;

/* Only the fields weave reads, with CO-RE: libbpf relocates each offset against the running
 * kernel's BTF at load time, so one object works on every kernel (no kernel headers needed). */
struct desc_struct {
	__u16 limit0, base0;
	__u8 base1, flags, limit1_flags, base2; /* the kernel's bitfields, byte by byte */
};
struct thread_struct {
	struct desc_struct tls_array[3]; /* a 32-bit task's set_thread_area entries */
	unsigned long fsbase;
} __attribute__((preserve_access_index));
struct task_struct {
	struct thread_struct thread;
} __attribute__((preserve_access_index));

#include "weave_event.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} weave_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct weave_config);
} weave_config SEC(".maps");

/* Events dropped because the ring buffer was full, per probe id (summed over CPUs by the tracer). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEAVE_PROBE_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} weave_lost SEC(".maps");

/* Probe runs for a traced process, per probe id (summed over CPUs by the tracer): counted after the
 * pid filter, before the reservation, so that for every probe hits == events + lost (`--stats`). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEAVE_PROBE_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} weave_hits SEC(".maps");

/* Events a probe's when: condition dropped (and returns of calls whose entry it dropped), per probe
 * id: for every probe hits == events + lost + filtered. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEAVE_PROBE_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} weave_filtered SEC(".maps");

/* Events dropped by limits: (events_per_second), per probe id. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEAVE_PROBE_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} weave_limited SEC(".maps");

/* Rate windows: calls counted in the current one-second window, per probe id, and for all probes
 * together in the last slot. */
struct weave_rate {
	__u64 window;
	__u64 count;
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WEAVE_PROBE_COUNT + 1);
	__type(key, __u32);
	__type(value, struct weave_rate);
} weave_rates SEC(".maps");

/* The attach point's cookie (bpf_get_attach_cookie) tells a program, which every event of one shape
 * shares, what it is filling in: bits 0-23 the event's probe id, bits 24-47 the probe id of the
 * entry a return pairs with (an entry's own), bits 48-63 the attach point's index among the
 * event's (generator/plan: attach_cookie). */
#define WEAVE_COOKIE_PROBE(cookie) ((__u32)((cookie) & 0xffffff))
#define WEAVE_COOKIE_PAIR(cookie) ((__u32)(((cookie) >> 24) & 0xffffff))
#define WEAVE_COOKIE_POINT(cookie) ((__u16)((cookie) >> 48))

/* weave_count: one more in a per-probe counter (weave_hits, weave_lost, weave_filtered, weave_limited).
 * Atomic even in a per-CPU slot: a uprobe program can be preempted, and another task on this CPU
 * can run it in between (a lost update would break hits == events + lost + filtered + limited). */
static __always_inline void weave_count(void *counters, __u32 probe_id)
{
	__u64 *n = bpf_map_lookup_elem(counters, &probe_id);
	if (n)
		__sync_fetch_and_add(n, 1);
}

/* weave_begin: apply the pid filter, count the hit and fill the event header; `ip` is where the
 * probe fired, `clock` whether to read the clock now (0: the caller sets ts_ns later). Returns
 * nonzero when the process is not traced. */
static __always_inline int weave_begin(struct weave_event_header *h, __u64 cookie, __u64 ip, __u32 kind,
				       int clock)
{
	__u32 probe_id = WEAVE_COOKIE_PROBE(cookie);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 zero = 0;
	struct weave_config *config = bpf_map_lookup_elem(&weave_config, &zero);
	if (config && config->target_tgid && config->target_tgid != (__u32)(pid_tgid >> 32))
		return 1;
	weave_count(&weave_hits, probe_id);
	h->ts_ns = clock ? bpf_ktime_get_ns() : 0;
	h->goid = 0;
	h->parent_goid = 0;
	h->gopc = 0;
	h->faults = 0;
	h->ip = ip;
	h->pid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->probe_id = probe_id;
	h->kind = kind;
	h->point = WEAVE_COOKIE_POINT(cookie);
	return 0;
}

/* weave_reserve: weave_begin straight into a ring buffer record of `size` bytes. Returns 0 when
 * the process is not traced or the buffer is full (then counted in weave_lost). */
static __always_inline struct weave_event_header *weave_reserve(__u64 cookie, __u64 ip, __u32 kind,
								__u64 size)
{
	struct weave_event_header header;
	if (weave_begin(&header, cookie, ip, kind, 0))
		return 0;
	struct weave_event_header *h = bpf_ringbuf_reserve(&weave_events, size, 0);
	if (!h) {
		weave_count(&weave_lost, header.probe_id);
		return 0;
	}
	*h = header;
	h->ts_ns = bpf_ktime_get_ns();
	return h;
}

/* weave_output: copy a record built on the stack into the ring buffer (lost when it is full).
 * Reserve, copy inline and submit: `size` is a constant at every call site, so the copy is a few
 * dozen moves, cheaper than bpf_ringbuf_output's own copy (bench/run.sh, step 6). */
static __always_inline void weave_output(struct weave_event_header *h, __u64 size)
{
	void *r = bpf_ringbuf_reserve(&weave_events, size, 0);
	if (!r) {
		weave_count(&weave_lost, h->probe_id);
		return;
	}
	__builtin_memcpy((__u64 *)r, (__u64 *)h, size); /* 8-byte moves: both are 8-byte aligned */
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/* ---- Records as long as their data ----------------------------------------------------------
 * A record with a string area (its strings' bytes packed from the area's start, strings_len of
 * them used) is built in a per-CPU scratch record and copied into the ring buffer with
 * bpf_ringbuf_output of its used bytes only: the fixed part, strings_len and the bytes it counts.
 * The ring then holds as many events as their data allows (Caddy's 11-value request entry: ~300
 * bytes of a 2,912-byte record), and the tracer decodes a record by its real length.
 *
 * A uprobe program can be preempted, and another run of it (or of another program) on this CPU
 * can start in between, so a scratch record is taken with a busy word: a run adds 1 and owns the
 * record when the word then reads 1 (while one run owns it, every other run's add makes it read 2
 * or more; the reads are ordered after the adds on this one CPU, where the program stays). A run
 * that finds all WEAVE_SCRATCH_SLOTS records of its CPU busy (as many runs preempted halfway on it)
 * counts its event lost in weave_scratch_busy, never writes into a record another run is building. */
#ifdef WEAVE_SCRATCH_SIZE
#define WEAVE_SCRATCH_SLOTS 4
struct weave_scratch {
	__u64 busy; /* runs that tried to take it and have not let go */
	__u64 record[WEAVE_SCRATCH_SIZE / 8];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEAVE_SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct weave_scratch);
} weave_scratch SEC(".maps");

/* Events not sent because every scratch record of the CPU was busy, per probe id. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEAVE_PROBE_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} weave_scratch_busy SEC(".maps");

/* weave_scratch_take: scratch record `slot` of this CPU if no other run holds it, else 0. */
static __always_inline struct weave_scratch *weave_scratch_take(__u32 slot)
{
	struct weave_scratch *s = bpf_map_lookup_elem(&weave_scratch, &slot);
	if (!s)
		return 0;
	__sync_fetch_and_add(&s->busy, 1);
	if (*(volatile __u64 *)&s->busy == 1)
		return s;
	__sync_fetch_and_add(&s->busy, -1);
	return 0;
}

/* weave_scratch_begin: weave_begin straight into a free scratch record of this CPU. Returns 0 when
 * the process is not traced or no record is free (then counted in weave_scratch_busy). */
static __always_inline struct weave_event_header *weave_scratch_begin(__u64 cookie, __u64 ip, __u32 kind)
{
	struct weave_event_header header;
	if (weave_begin(&header, cookie, ip, kind, 0))
		return 0;
	struct weave_scratch *s = weave_scratch_take(0); /* WEAVE_SCRATCH_SLOTS tries */
	if (!s)
		s = weave_scratch_take(1);
	if (!s)
		s = weave_scratch_take(2);
	if (!s)
		s = weave_scratch_take(3);
	if (!s) {
		weave_count(&weave_scratch_busy, header.probe_id);
		return 0;
	}
	struct weave_event_header *h = (struct weave_event_header *)s->record;
	*h = header;
	h->ts_ns = bpf_ktime_get_ns();
	return h;
}

/* weave_scratch_release: let go of the scratch record h is (its busy word is right before it). */
static __always_inline void weave_scratch_release(struct weave_event_header *h)
{
	__sync_fetch_and_add((__u64 *)h - 1, -1);
}

/* weave_scratch_emit: copy the record's first `size` bytes into the ring buffer (lost when it is
 * full) and let go of it. `size` is the fixed part plus strings_len, bounded by the caller. */
static __always_inline void weave_scratch_emit(struct weave_event_header *h, __u64 size)
{
	if (bpf_ringbuf_output(&weave_events, h, size, BPF_RB_NO_WAKEUP))
		weave_count(&weave_lost, h->probe_id);
	weave_scratch_release(h);
}

/* weave_scratch_drop, weave_scratch_drop_limited: as weave_drop for a scratch record. */
static __always_inline void weave_scratch_drop(struct weave_event_header *h)
{
	weave_count(&weave_filtered, h->probe_id);
	weave_scratch_release(h);
}

static __always_inline void weave_scratch_drop_limited(struct weave_event_header *h)
{
	weave_count(&weave_limited, h->probe_id);
	weave_scratch_release(h);
}
#endif

/* weave_drop, weave_drop_limited: discard a reserved record that its probe's when: condition or
 * its limits rule out, counted. weave_skip, weave_skip_limited: the same for one on the stack. */
static __always_inline void weave_drop(struct weave_event_header *h)
{
	weave_count(&weave_filtered, h->probe_id);
	bpf_ringbuf_discard(h, BPF_RB_NO_WAKEUP);
}

static __always_inline void weave_drop_limited(struct weave_event_header *h)
{
	weave_count(&weave_limited, h->probe_id);
	bpf_ringbuf_discard(h, BPF_RB_NO_WAKEUP);
}

static __always_inline void weave_skip(struct weave_event_header *h)
{
	weave_count(&weave_filtered, h->probe_id);
}

static __always_inline void weave_skip_limited(struct weave_event_header *h)
{
	weave_count(&weave_limited, h->probe_id);
}

/* weave_over_rate: counts a call in slot's current one-second window of CLOCK_MONOTONIC; nonzero when
 * it is past `per_second`. A new window resets the count: two CPUs starting one at the same instant
 * may each reset it, so a window can let a few more through, never fewer. The count is read after
 * the atomic add (a fetching add needs BPF v3 atomics), so concurrent calls past the limit are all
 * seen as such. */
static __always_inline int weave_over_rate(__u32 slot, __u64 now, __u64 per_second)
{
	struct weave_rate *r = bpf_map_lookup_elem(&weave_rates, &slot);
	if (!r)
		return 0;
	__u64 window = now / 1000000000ULL;
	if (r->window != window) {
		r->window = window;
		r->count = 0;
	}
	__sync_fetch_and_add(&r->count, 1);
	return r->count > per_second;
}

/* weave_load: *value = the `size`-byte little-endian integer at user address `addr`, zero-extended.
 * Returns 0 on success, a negative errno when the memory could not be read (then *value is 0:
 * bpf_probe_read_user zeroes its destination on a fault).
 *
 * Branch-free on purpose: callers OR the results into one fault word and test it once per
 * capture. A branch per load (`err ? 0 : v`, `err != 0`) gives the verifier two states to carry
 * past every read, and an event of a few dozen fields then exceeds its million-instruction budget. */
static __always_inline long weave_load(__u64 *value, __u64 addr, __u32 size)
{
	__u64 v = 0;
	long err = bpf_probe_read_user(&v, size, (const void *)addr);
	*value = v;
	return err;
}

/* weave_pick: the `size`-byte little-endian value at byte `at` of a region read into `buf` (see
 * templates/region.bpf.c.mustache), zero-extended like weave_load. `at` and `size` are constants
 * and `at` is a multiple of `size` (Go aligns fields naturally; a region starts on an 8-byte
 * boundary), so this is one aligned load from the stack, which is what the verifier accepts. */
static __always_inline __u64 weave_pick(const __u64 *buf, __u32 at, __u32 size)
{
	const char *p = (const char *)buf + at;
	switch (size) {
	case 1:
		return *(const __u8 *)p;
	case 2:
		return *(const __u16 *)p;
	case 4:
		return *(const __u32 *)p;
	default:
		return *(const __u64 *)p;
	}
}

/* weave_fault_bit: bit `bit` set when `err` (a helper's 0 or negative errno) is an error;
 * branch-free, as weave_load explains. */
static __always_inline __u64 weave_fault_bit(long err, __u32 bit)
{
	return ((__u64)err >> 63) << bit;
}

/* weave_read_string: copy min(len, max) bytes of a Go string's data into dst. Returns nonzero on a
 * fault. `max` is a compile-time constant at every call site, which bounds the copy for the verifier. */
static __always_inline long weave_read_string(char *dst, __u32 max, __u64 data, __u64 len)
{
	__u64 n = len < max ? len : max;
	if (n == 0)
		return 0;
	return bpf_probe_read_user(dst, n, (const void *)data);
}

/* weave_join: 1 when the min(len, max) bytes at data join the span [*lo, *hi) of strings read at
 * once (templates/strings.bpf.c.mustache), widening it, which stays within `span` bytes; 0 when
 * they would make it wider (or wrap), and are read on their own. An empty string, or a nil pointer
 * (a header read that faulted leaves 0), has nothing to read and joins as it is. */
static __always_inline __u64 weave_join(__u64 *lo, __u64 *hi, __u64 data, __u64 len, __u64 max, __u64 span)
{
	__u64 n = len < max ? len : max;
	if (!data || !n)
		return 1;
	__u64 end = data + n;
	if (end < data)
		return 0;
	__u64 l = data < *lo ? data : *lo, h = end > *hi ? end : *hi;
	if (h - l > span)
		return 0;
	*lo = l;
	*hi = h;
	return 1;
}

/* weave_span_at: where a string's bytes are in a span read from lo (0 when it has none). */
static __always_inline __u64 weave_span_at(__u64 data, __u64 len, __u64 lo)
{
	return data && len ? data - lo : 0;
}

/* weave_word: the 8 bytes at p as one word, for when: conditions, which compare a string with a
 * literal 8 bytes at a time (the literal's words are written little-endian by generator/codegen).
 * Compared a byte at a time, clang kept each byte of a record built on the stack in a register of
 * its own and spilled them: two 64-byte literals needed more than BPF's 512 bytes of stack. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "when: conditions on strings are generated for little-endian targets"
#endif
static __always_inline __u64 weave_word(const char *p)
{
	__u64 w;
	__builtin_memcpy(&w, p, 8);
	return w;
}

/* Calls in flight, for the duration of each call: keyed by goroutine, probe, and the call's distance
 * from the top of its goroutine's stack (g.stack.hi - SP). Goroutines move between threads, so a
 * thread id would pair the wrong calls; stacks move when they grow, but copystack keeps every
 * frame's distance from stack.hi (GO-ABI.md §8.3), and recursion gives each depth its own key. An
 * LRU map bounds the memory: calls that never return (a panic unwinding past them, Goexit) age
 * out as newer calls need the room. */
struct weave_call_key {
	__u64 goid;
	__u64 depth;
	__u32 probe;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct weave_call_key);
	__type(value, __u64);
} weave_calls SEC(".maps");

/* weave_call_key: the key of the current call, from g (g.stack is its first field in every Go
 * version, {lo, hi uintptr}: hi is at +ptr_size) and the stack pointer at the probe, which at the
 * entry probe and at every RET is the same. */
static __always_inline int weave_make_call_key(struct weave_call_key *key, __u64 g, __u32 ptr_size, __u64 sp,
					       __u64 goid, __u32 probe)
{
	__u64 hi = 0;
	if (!g || weave_load(&hi, g + ptr_size, ptr_size) || hi < sp)
		return 1;
	key->goid = goid;
	key->depth = hi - sp;
	key->probe = probe;
	key->pad = 0;
	return 0;
}

static __always_inline void weave_call_enter(__u64 g, __u32 ptr_size, __u64 sp, __u64 goid, __u32 probe,
					     __u64 ts)
{
	struct weave_call_key key;
	if (!weave_make_call_key(&key, g, ptr_size, sp, goid, probe))
		bpf_map_update_elem(&weave_calls, &key, &ts, BPF_ANY);
}

/* The duration of the call returning now, or 0 when its entry was not seen. */
static __always_inline __u64 weave_call_exit(__u64 g, __u32 ptr_size, __u64 sp, __u64 goid, __u32 probe,
					     __u64 now)
{
	struct weave_call_key key;
	if (weave_make_call_key(&key, g, ptr_size, sp, goid, probe))
		return 0;
	__u64 *start = bpf_map_lookup_elem(&weave_calls, &key);
	if (!start)
		return 0;
	__u64 duration = now - *start;
	bpf_map_delete_elem(&weave_calls, &key);
	return duration;
}

/* weave_walk_frames: up to `max` return addresses of the calling frames, innermost first,
 * 0-terminated: `pc` (where the probed function returns to), then the chain from `fp`, the caller's
 * frame pointer, in which [fp] is the next frame pointer and [fp + 8] that frame's return address.
 * Go lays frames out so on amd64 and arm64 alike. `max` is a constant at each call site, which
 * bounds the loop for the verifier. The terminator is written, never assumed: a record's memory
 * holds what an earlier record left there (a per-CPU scratch record, a ring buffer that wrapped). */
static __always_inline void weave_walk_frames(__u64 *pcs, __u32 max, __u64 pc, __u64 fp)
{
	pcs[0] = pc;
	if (!pc)
		return;
	for (__u32 i = 1; i < max; i++) {
		pc = 0;
		if (fp)
			weave_load(&pc, fp + 8, 8); /* a fault leaves 0: the terminator */
		pcs[i] = pc;
		if (!pc)
			return;
		weave_load(&fp, fp, 8); /* a fault leaves fp 0: the next slot is the terminator */
	}
}

/* amd64, at a Go function's entry (before it pushes its frame pointer): the return address is at
 * SP and RBP is still the caller's frame pointer. (arm64 needs no load: at the entry the return
 * address is in R30 and R29 is the caller's frame pointer, so it calls weave_walk_frames.) */
static __always_inline void weave_stack_x86_64(__u64 *pcs, __u32 max, __u64 sp, __u64 bp)
{
	__u64 pc = 0;
	weave_load(&pc, sp, 8); /* a fault leaves 0: no frames */
	weave_walk_frames(pcs, max, pc, bp);
}


/* weave_stack_copy (stack_mode: window): the registers an unwinder starts from and `size` bytes of
 * the stack from SP, for the tracer to walk with .gopclntab's SP-delta tables. The stack ends at
 * stack_g's g.stack.hi (g.stack {lo, hi} is g's first field in every Go, `ptr` bytes a word): when
 * SP lies in [lo, hi) the read stops there, since a read past the end of a goroutine's stack runs
 * into memory the process never touched and faults whole. stack_g 0 (g0 of a thread C started,
 * whose g.stack the runtime only estimates): no bound. A failed read is retried with half the
 * size, down to 256 bytes; w->len says how much was read. */
static __always_inline void weave_stack_copy(struct weave_stack_window *w, __u8 *bytes, __u32 size, __u64 pc,
					     __u64 sp, __u64 fp, __u64 lr, __u64 stack_g, __u32 ptr)
{
	w->pc = pc;
	w->sp = sp;
	w->fp = fp;
	w->lr = lr;
	w->len = 0;
	w->capacity = size;
	__u64 lo = 0, hi = 0;
	__u32 n = size;
	if (stack_g && !weave_load(&lo, stack_g, ptr) && !weave_load(&hi, stack_g + ptr, ptr) && lo <= sp &&
	    sp < hi && hi - sp < size)
		n = hi - sp;
#pragma unroll
	for (int i = 0; i < 9; i++) {
		if (n < 256 && (i || n == 0))
			return;
		if (!bpf_probe_read_user(bytes, n, (const void *)sp)) {
			w->len = n;
			return;
		}
		n >>= 1;
	}
}

/* weave_thread_stack_copy (stack_mode: window): a window of the stack the probe's is not on, for
 * the tracer to walk on where the first window's walk switches stacks. On a goroutine: the thread's
 * own stack (g0's) from the SP runtime.cgocallback saved in m.g0.sched.sp when C called back into
 * Go, for the C frames between the callback and the cgo call (on a goroutine C did not call, some
 * earlier SP, which the walk never reaches); w->pc is 0. On g0 (a function systemstack called):
 * the goroutine's stack from where systemstack left it, m.curg.sched.sp, and w->pc its sched.pc
 * (curg_offset 0: unknown, nothing copied). `ptr` is the word size; w->len is 0 when a pointer on
 * the way cannot be read. */
static __always_inline void weave_thread_stack_copy(struct weave_stack_window *w, __u8 *bytes, __u32 size, __u64 g,
						    long m_offset, long g0_offset, long curg_offset, long sp_offset,
						    long pc_offset, __u32 ptr)
{
	__u64 m = 0, g0 = 0, curg = 0, sp = 0, pc = 0;
	w->pc = 0;
	w->sp = 0;
	w->fp = 0;
	w->lr = 0;
	w->len = 0;
	w->capacity = size;
	if (!g || weave_load(&m, g + m_offset, ptr) || !m || weave_load(&g0, m + g0_offset, ptr) || !g0)
		return;
	if (g == g0) {
		if (!curg_offset || weave_load(&curg, m + curg_offset, ptr) || !curg || curg == g0 ||
		    weave_load(&pc, curg + pc_offset, ptr) || !pc || weave_load(&sp, curg + sp_offset, ptr) || !sp)
			return;
		/* the goroutine's stack, which ends at curg.stack.hi */
		weave_stack_copy(w, bytes, size, pc, sp, 0, 0, curg, ptr);
		return;
	}
	if (weave_load(&sp, g0 + sp_offset, ptr) || !sp)
		return;
	/* The thread's stack: g0.stack.hi is the runtime's estimate on a thread C started (needm), below
	 * the C frames that called into Go, so this read is not bounded by it. */
	weave_stack_copy(w, bytes, size, pc, sp, 0, 0, 0, ptr);
}

/* weave_tls_g_386: g of the current thread of a 386 process, from GS base + offset. Go (and glibc,
 * with cgo) set GS with set_thread_area, whose first free slot in a new process is the task's first
 * TLS entry (runtime/sys_linux_386.s, setldt); its base is in the descriptor's bytes 2-4 and 7. */
static __always_inline __u64 weave_tls_g_386(long offset)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct desc_struct desc;
	if (bpf_probe_read_kernel(&desc, sizeof(desc), &task->thread.tls_array[0]))
		return 0;
	__u32 base = desc.base0 | (__u32)desc.base1 << 16 | (__u32)desc.base2 << 24;
	__u64 g = 0;
	if (base)
		weave_load(&g, (__u32)(base + offset), 4);
	return g;
}

/* weave_tls_g: g of the current thread in amd64 ABI0 code, from FS base + offset. Go sets FS with
 * arch_prctl, so the task's saved fsbase is current while its thread runs Go code. */
static __always_inline __u64 weave_tls_g(long offset)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 fsbase = 0, g = 0;
	if (bpf_probe_read_kernel(&fsbase, sizeof(fsbase), &task->thread.fsbase) || !fsbase)
		return 0;
	weave_load(&g, fsbase + offset, 8);
	return g;
}

/* ---- Calls held until they return: min_duration and capture_at_return ----------------------------
 * Such a probe keeps each call in flight in a hash map of its own (declared with its programs in
 * probes.bpf.c), by the key weave_call_enter uses: the entry's timestamp, the pointers
 * capture_at_return reads through, and with min_duration the entry record itself, which the entry
 * builds in a ring buffer reservation of the whole value and discards once the map holds a copy.
 * The return looks the call up: with min_duration it copies the entry record and then its own into
 * the ring buffer when the call was slow enough, and counts both as filtered otherwise. */
#define BPF_MAP_TYPE_HASH 1
#define BPF_NOEXIST 1
#define BPF_F_NO_PREALLOC 1
#define WEAVE_EEXIST 17

/* Held entries that could not be kept, per probe id: the map was full, or a call at the same key
 * never returned (a panic, Goexit) and a new one took its place. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEAVE_PROBE_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} weave_evicted SEC(".maps");

/* Held entries in the maps now, per probe id: +1 when one is held, -1 (added as 2^64 - 1 on
 * whichever CPU it happens) when its return takes it; the tracer sums the CPUs. For a probe with
 * min_duration, hits == events + lost + filtered + limited + evicted + held. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEAVE_PROBE_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} weave_held SEC(".maps");

/* weave_hold: keep `value` for the call's return. `counted`: the entry record is in it
 * (min_duration), so a value that cannot be kept is an event gone, counted in weave_evicted, and
 * the ones kept in weave_held. */
static __always_inline void weave_hold(void *held_map, void *value, __u64 g, __u32 ptr_size, __u64 sp,
				       __u64 goid, __u32 probe, int counted)
{
	struct weave_call_key key;
	if (weave_make_call_key(&key, g, ptr_size, sp, goid, probe)) {
		if (counted)
			weave_count(&weave_evicted, probe);
		return;
	}
	long err = bpf_map_update_elem(held_map, &key, value, BPF_NOEXIST);
	if (!err) {
		if (counted)
			weave_count(&weave_held, probe);
		return;
	}
	if (counted)
		weave_count(&weave_evicted, probe);
	if (err == -WEAVE_EEXIST) /* the call held at this key never returned: this one replaces it */
		bpf_map_update_elem(held_map, &key, value, BPF_ANY);
}

/* weave_take: the value held for the call returning now (its key in *key), or 0. */
static __always_inline void *weave_take(void *held_map, struct weave_call_key *key, __u64 g, __u32 ptr_size,
					__u64 sp, __u64 goid, __u32 probe)
{
	if (weave_make_call_key(key, g, ptr_size, sp, goid, probe))
		return 0;
	return bpf_map_lookup_elem(held_map, key);
}

/* weave_release: forget the call taken; `counted` as in weave_hold. */
static __always_inline void weave_release(void *held_map, struct weave_call_key *key, __u32 probe, int counted)
{
	if (bpf_map_delete_elem(held_map, key) == 0 && counted) {
		__u64 *n = bpf_map_lookup_elem(&weave_held, &probe);
		if (n)
			__sync_fetch_and_add(n, (__u64)-1);
	}
}

/* weave_hold_record: weave_hold (counted) for a value built in a ring-buffer reservation, the entry
 * record of min_duration and when_return. Linux 6.1's verifier takes no ring-buffer memory as a map
 * value ("R3 type=alloc_mem expected=fp, pkt, pkt_meta, map_key, map_value"), so the slot is made
 * from `blank`, an array value of the same size that nothing writes, and the record is copied into
 * it. Only the entry of this call writes this slot: its return comes later, on the same goroutine. */
static __always_inline void weave_hold_record(void *held_map, const void *blank, const void *value, __u32 size,
					      __u64 g, __u32 ptr_size, __u64 sp, __u64 goid, __u32 probe)
{
	struct weave_call_key key;
	if (!blank || weave_make_call_key(&key, g, ptr_size, sp, goid, probe)) {
		weave_count(&weave_evicted, probe);
		return;
	}
	long err = bpf_map_update_elem(held_map, &key, blank, BPF_NOEXIST);
	if (!err) {
		weave_count(&weave_held, probe);
	} else {
		weave_count(&weave_evicted, probe);
		if (err != -WEAVE_EEXIST) /* full */
			return;
		/* the call held at this key never returned: this one replaces it */
		if (bpf_map_update_elem(held_map, &key, blank, BPF_ANY))
			return;
	}
	void *slot = bpf_map_lookup_elem(held_map, &key);
	if (!slot || bpf_probe_read_kernel(slot, size, value)) { /* not kept after all */
		weave_release(held_map, &key, probe, 1);
		weave_count(&weave_evicted, probe);
	}
}

/* ---- Map contents ---------------------------------------------------------------------------
 * A map capture shows its first pairs: a walk over the map's buckets or groups finds the slots
 * that hold one, in the order they lie in memory (Go's own iteration order is random), and stores
 * each pair's key and value addresses, `slots[2i]` and `slots[2i + 1]`, for the generated code to
 * read like any other value; `*count` says how many it found. Every offset and size is a constant
 * from the binary's DWARF (generator/plan: MapWalk), and `max` and `visits` bound the loops for
 * the verifier: a walk that reads `visits` buckets or groups stops there, having found fewer pairs
 * than it could (the capture's len still says how many the map has).
 *
 * Both return nonzero when the map cannot be read as it is: a fault, or another goroutine writing
 * to it right now (a data race in the program): the capture is then marked, never shown half
 * updated. */
#define WEAVE_MAP_SLOTS 8 /* slots per bucket (hmap) or group (swiss), in every Go version */
/* The count of pairs found lives in the record, not in a register, and is read back before each
 * store: the verifier does not track values in ring-buffer memory, so it sees a count it only
 * knows to be below `max`, and the states of one loop iteration with 0, 1, 2 ... pairs found are
 * one state. With the count in a register it verified every (bucket, slot, count) combination and
 * ran past its million-instruction budget. */

/* Go <= 1.23 (runtime/map.go): hmap {count, flags, B, ..., buckets, oldbuckets, ...}; 2^B buckets
 * of {tophash [8]uint8, keys [8]K, values [8]V, overflow *bucket}. A slot holds a pair when its
 * tophash is >= minTopHash (5): 0 and 1 are empty, 2-4 mark pairs already evacuated by a grow.
 * While the map grows (oldbuckets != 0) a pair is either still in an old bucket (its tophash is
 * still >= 5 there) or already in a new one, never both: insertions and deletions evacuate their
 * old bucket first (growWork). So the walk reads the live slots of the old buckets not yet
 * evacuated (from nevacuate on: the ones below it all are), where most pairs of a map that just
 * started growing are, then those of the new buckets, and sees every pair once. */
static __always_inline long weave_map_hmap(__u64 *count, __u64 *slots, __u32 max, __u32 visits, __u64 h,
					   __u32 ptr_size, __u32 flags_off, __u32 b_off, __u32 buckets_off,
					   __u32 oldbuckets_off, __u32 nevacuate_off, __u32 bucket_size,
					   __u32 tophash_off, __u32 keys_off, __u32 key_size, __u32 values_off,
					   __u32 value_size, __u32 overflow_off)
{
	__u64 total = 0, flags = 0, log2 = 0, buckets = 0, old = 0, nevacuate = 0;
	long err = 0;
	*count = 0;
	if (!h)
		return 0; /* a nil map has no pairs */
	/* count (an int at +0): the walk stops once it has found that many pairs, before the last
	 * bucket's overflow pointer or the next bucket. Those words are often ones the program never
	 * wrote: a fresh span's memory is zero without being touched, and where such a word lies on a
	 * page of its own the page is not there yet, and reading it faults (a 386 bucket of 108 bytes
	 * can straddle two pages in its 112-byte size class). */
	err |= weave_load(&total, h, ptr_size);
	err |= weave_load(&flags, h + flags_off, 1);
	err |= weave_load(&log2, h + b_off, 1);
	err |= weave_load(&buckets, h + buckets_off, ptr_size);
	err |= weave_load(&old, h + oldbuckets_off, ptr_size);
	if (old) /* hashGrow writes nevacuate; read it only then, for the same reason */
		err |= weave_load(&nevacuate, h + nevacuate_off, ptr_size);
	if (err || (flags & 4) || log2 > 62) /* hashWriting: another goroutine is writing the map */
		return -1;
	__u64 new_count = buckets ? 1ULL << log2 : 0;
	/* sameSizeGrow (8): as many old buckets as new ones, else half as many */
	__u64 old_count = old ? ((flags & 8) ? 1ULL << log2 : (1ULL << log2) >> 1) : 0;
	/* The old buckets below nevacuate are all evacuated: the walk starts at nevacuate there. (Once
	 * a grow is over nevacuate keeps its last value, which means nothing for the new buckets.)
	 * Buckets are walked by address, so that every value the loop carries from one visit to the
	 * next is one the verifier cannot know and it tells visits apart by their number alone (see
	 * weave_map_swiss). */
	__u64 cursor = buckets, end = buckets + new_count * bucket_size, then = 0, then_end = 0, bucket = 0;
	if (old_count) {
		cursor = old + nevacuate * bucket_size;
		end = old + old_count * bucket_size;
		then = buckets;
		then_end = buckets + new_count * bucket_size;
	}
	for (__u32 visit = 0; visit < visits; visit++) {
		if (*(volatile __u64 *)count >= total) /* every pair found */
			return 0;
		if (!bucket) { /* the next bucket of the array, after the previous one's overflow chain */
			if (cursor >= end) { /* the old buckets are done: the new ones */
				if (!then)
					break;
				cursor = then;
				end = then_end;
				then = 0;
				if (cursor >= end)
					break;
			}
			bucket = cursor;
			cursor += bucket_size;
		}
		__u64 tophash = 0;
		if (weave_load(&tophash, bucket + tophash_off, 8))
			return -1;
		for (__u32 s = 0; s < WEAVE_MAP_SLOTS; s++) {
			if (((tophash >> (8 * s)) & 0xff) < 5)
				continue;
			__u64 n = *(volatile __u64 *)count; /* from memory, on purpose: see above */
			if (n >= max)
				return 0;
			slots[2 * n] = bucket + keys_off + s * key_size;
			slots[2 * n + 1] = bucket + values_off + s * value_size;
			*(volatile __u64 *)count = n + 1;
		}
		if (*(volatile __u64 *)count >= total) /* every pair found: no overflow pointer to read */
			return 0;
		if (weave_load(&bucket, bucket + overflow_off, ptr_size))
			return -1;
	}
	return 0;
}

/* Go >= 1.24 (internal/runtime/maps): Map {used, seed, dirPtr, dirLen, globalDepth, globalShift,
 * writing, ...}. A small map (dirLen == 0) is one group at dirPtr; else dirPtr is dirLen table
 * pointers, where a table covering 2^(globalDepth - localDepth) entries is listed that many times
 * in a row (so a table equal to the previous entry's is skipped), and a table's groups are
 * groups.data[0 .. groups.lengthMask]. A group is {ctrl uint64, slots [8]{key K; elem V}}: slot i
 * holds a pair when control byte i has its top bit clear (empty is 0x80, deleted 0xfe). A grow
 * replaces a whole table during one write, which `writing` marks. */
/* The full slots of one group at `group`, after the pairs found so far. */
static __always_inline long weave_map_group(__u64 *count, __u64 *slots, __u32 max, __u64 group, __u32 ctrl_off,
					    __u32 slots_off, __u32 slot_size, __u32 key_off, __u32 elem_off)
{
	__u64 ctrl = 0;
	if (weave_load(&ctrl, group + ctrl_off, 8))
		return -1;
	for (__u32 s = 0; s < WEAVE_MAP_SLOTS; s++) {
		if ((ctrl >> (8 * s)) & 0x80)
			continue;
		__u64 n = *(volatile __u64 *)count; /* from memory, on purpose: see weave_map_hmap */
		if (n >= max)
			return 0;
		__u64 slot = group + slots_off + s * slot_size;
		slots[2 * n] = slot + key_off;
		slots[2 * n + 1] = slot + elem_off;
		*(volatile __u64 *)count = n + 1;
	}
	return 0;
}

static __always_inline long weave_map_swiss(__u64 *count, __u64 *slots, __u32 max, __u32 visits, __u64 m,
					    __u32 ptr_size, __u32 dir_ptr_off, __u32 dir_len_off, __u32 writing_off,
					    __u32 groups_data_off, __u32 groups_mask_off, __u32 group_size,
					    __u32 ctrl_off, __u32 slots_off, __u32 slot_size, __u32 key_off,
					    __u32 elem_off)
{
	__u64 dir = 0, dir_len = 0, writing = 0;
	long err = 0;
	*count = 0;
	if (!m)
		return 0; /* a nil map has no pairs */
	err |= weave_load(&dir, m + dir_ptr_off, ptr_size);
	err |= weave_load(&dir_len, m + dir_len_off, ptr_size);
	err |= weave_load(&writing, m + writing_off, 1);
	if (err || writing)
		return -1;
	if (!dir_len) /* a small map: one group, or none yet */
		return dir ? weave_map_group(count, slots, max, dir, ctrl_off, slots_off, slot_size, key_off, elem_off) : 0;
	/* Every value the loop carries from one visit to the next is one the verifier cannot know (read
	 * from the map; the groups are walked by address, not by an index from 0), so that it tells
	 * visits apart by their number alone: with a counter reset to 0 per table it kept apart every
	 * combination and ran out of its budget. */
	__u64 group = 0, end = 0, entry = 0, table = 0;
	for (__u32 visit = 0; visit < visits; visit++) {
		if (group >= end) { /* the next table of the directory */
			if (entry >= dir_len)
				break;
			__u64 next = 0, mask = 0;
			if (weave_load(&next, dir + entry * ptr_size, ptr_size))
				return -1;
			entry++;
			if (next == table)
				continue; /* the same table again: it covers several entries */
			table = next;
			err |= weave_load(&group, table + groups_data_off, ptr_size);
			err |= weave_load(&mask, table + groups_mask_off, 8);
			if (err)
				return -1;
			end = group + (mask + 1) * group_size;
		}
		if (weave_map_group(count, slots, max, group, ctrl_off, slots_off, slot_size, key_off, elem_off))
			return -1;
		group += group_size;
	}
	return 0;
}

#endif
