# Helpers every bench script sources (after setting ROOT): messages, medians, ratios, and the BPF
# ns/run the tracer's --stats prints.
say() { printf '%s\n' "$*" >&2; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a == a + 0) printf "%.2f", a / b; else printf "-" }'; }
run_ns() { awk '/ BPF programs? for / { for (i = 1; i <= NF; i++) if ($i == "ns/run") print $(i-1) }' "$1" | tail -1; }
