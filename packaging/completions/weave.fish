# fish completion for weave: subcommands, options, files, and the function names of a Go binary for
# `weave funcs BIN <TAB>` (asked of weave itself: `weave funcs --names BIN`).
# Installed as share/fish/vendor_completions.d/weave.fish.

set -l commands build check run trace funcs

# The arguments after `weave funcs` that are not options: the binary, then the pattern.
function __weave_funcs_positionals
    set -l tokens (commandline -opc)
    set -e tokens[1..2]
    for token in $tokens
        string match -q -- '-*' $token; or echo $token
    end
end

function __weave_funcs_wants_name
    __fish_seen_subcommand_from funcs; or return 1
    test (count (__weave_funcs_positionals)) -eq 1
end

function __weave_function_names
    set -l binary (__weave_funcs_positionals)[1]
    set -l weave (commandline -opc)[1]
    $weave funcs --names $binary 2>/dev/null
end

complete -c weave -f
complete -c weave -n "not __fish_seen_subcommand_from $commands" -a build -d 'generate probes and a tracer for a Go binary'
complete -c weave -n "not __fish_seen_subcommand_from $commands" -a check -d 'compare with a checked-in output directory (CI)'
complete -c weave -n "not __fish_seen_subcommand_from $commands" -a run -d 'build into a cache and run the tracer at once'
complete -c weave -n "not __fish_seen_subcommand_from $commands" -a trace -d 'trace functions without a spec file'
complete -c weave -n "not __fish_seen_subcommand_from $commands" -a funcs -d 'list functions, parameters and their locations'
complete -c weave -n "not __fish_seen_subcommand_from $commands" -l version -d 'print the version and exit'
complete -c weave -s h -l help -d 'print help and exit'

# build (and the short form weave SPEC BIN): spec, binary, options.
complete -c weave -n "not __fish_seen_subcommand_from check run funcs" -F
complete -c weave -n "not __fish_seen_subcommand_from check run funcs" -s o -l output -r -a '(__fish_complete_directories)' -d 'output directory'
complete -c weave -n "not __fish_seen_subcommand_from check run funcs" -l dump -x -a 'spec plan probes.bpf.c probes.h probes.json Makefile.bpf' -d 'print one stage instead of building'
complete -c weave -n "not __fish_seen_subcommand_from check funcs" -l clang -r -F -d 'clang executable'
complete -c weave -n "not __fish_seen_subcommand_from check funcs" -l runtime -r -F -d 'tracer runtime'
complete -c weave -n "not __fish_seen_subcommand_from check run funcs" -l timings -d 'time per stage, peak memory'

complete -c weave -n "__fish_seen_subcommand_from check" -F
complete -c weave -n "__fish_seen_subcommand_from run" -F
complete -c weave -n "__fish_seen_subcommand_from run trace" -l format -x -a 'text json' -d 'tracer output'
complete -c weave -n "__fish_seen_subcommand_from run trace" -l pid -x -a '(__fish_complete_pids)' -d 'trace only this process'
complete -c weave -n "__fish_seen_subcommand_from trace" -s o -l output -r -F -d 'tracer -o: events to this file'

# The tracer's options, which weave run and weave trace pass on (common/tracer_options.h).
for option in binary folded perfetto
    complete -c weave -n "__fish_seen_subcommand_from run trace" -l $option -r -F -d "tracer --$option"
end
complete -c weave -n "__fish_seen_subcommand_from run trace" -l attach -x -a 'auto multi perf' -d 'how to attach'
complete -c weave -n "__fish_seen_subcommand_from run trace" -l ring-size -x -d 'bytes of the ring buffer, e.g. 64M'
complete -c weave -n "__fish_seen_subcommand_from run trace" -l folded-weight -x -a 'calls time' -d 'what a --folded stack weighs'
for option in otlp otlp-timeout service-name metrics
    complete -c weave -n "__fish_seen_subcommand_from run trace" -l $option -x -d "tracer --$option"
end
for option in stats graph no-summary exit-after-attach
    complete -c weave -n "__fish_seen_subcommand_from run trace" -l $option -d "tracer --$option"
end
complete -c weave -n "__fish_seen_subcommand_from run trace" -s v -l verbose -d "libbpf's messages"
complete -c weave -n "__fish_seen_subcommand_from trace" -s c -l capture -x -d 'a value to capture (repeatable)'
for option in when when-return min-duration stack
    complete -c weave -n "__fish_seen_subcommand_from trace" -l $option -x -d "weave trace --$option"
end
complete -c weave -n "__fish_seen_subcommand_from trace" -l inlined -d 'also the inlined copies'
complete -c weave -n "__fish_seen_subcommand_from trace" -l contents -d 'interfaces by their dynamic values'

complete -c weave -n "__fish_seen_subcommand_from funcs" -l names -d 'print only the names'
complete -c weave -n "__fish_seen_subcommand_from funcs" -l line -x -d 'the PCs of source line FILE:LINE and where each local is'
complete -c weave -n "__fish_seen_subcommand_from funcs; and test (count (__weave_funcs_positionals)) -eq 0" -F
complete -c weave -n __weave_funcs_wants_name -x -a '(__weave_function_names)'
