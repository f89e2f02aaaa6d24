# bash completion for weave: subcommands, options, files, and the function names of a Go binary
# for `weave funcs BIN <TAB>` (asked of weave itself: `weave funcs --names BIN 'PREFIX*'`).
# Installed as share/bash-completion/completions/weave, where bash-completion loads it on demand.

# The options of each command that take a value: the word after them is that value, not a positional.
_weave_takes_value() {
  case $1 in
  -o | --output | --dump | --clang | --runtime | --format | --pid) return 0 ;;
  --binary | --attach | --ring-size | --folded | --folded-weight | --perfetto | --otlp | --otlp-timeout | --service-name | --metrics) return 0 ;;
  -c | --capture | --when | --when-return | --min-duration | --stack | --debug-file | --debug-dir) return 0 ;;
  esac
  return 1
}

# A word as the shell will pass it: quotes and backslashes removed (no expansion, nothing run).
_weave_unquote() {
  local word=$1 out= i c quote=
  for ((i = 0; i < ${#word}; i++)); do
    c=${word:i:1}
    if [[ -n $quote ]]; then
      if [[ $c == "$quote" ]]; then quote=; else out+=$c; fi
    elif [[ $c == "'" || $c == '"' ]]; then
      quote=$c
    elif [[ $c == '\' ]]; then
      ((i++))
      out+=${word:i:1}
    else
      out+=$c
    fi
  done
  printf '%s' "$out"
}

_weave() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    # Go names hold '(' and ':' (main.(*Server).Handle): keep them inside the word being completed.
    _init_completion -n '(:=' || return
  else
    # Without bash-completion: the words of the line up to the cursor, split at blanks only (bash's
    # COMP_WORDS are also split at '(' and ':', which Go names hold).
    local line=${COMP_LINE:0:COMP_POINT}
    read -ra words <<<"$line"
    [[ -z $line || $line == *[[:blank:]] ]] && words+=("")
    cword=$((${#words[@]} - 1))
    cur=${words[cword]} prev=${words[cword - 1]}
  fi

  local command= i
  case ${words[1]} in
  build | check | run | trace | funcs) command=${words[1]} ;;
  esac

  # Everything after `weave run ... --` (or trace) belongs to the traced program.
  if [[ $command == run || $command == trace ]]; then
    for ((i = 2; i < cword; i++)); do
      if [[ ${words[i]} == -- ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
        return
      fi
    done
  fi

  case $prev in
  -o | --output)
    COMPREPLY=($(compgen -d -- "$cur"))
    return
    ;;
  --dump)
    COMPREPLY=($(compgen -W 'spec plan probes.bpf.c probes.h probes.json Makefile.bpf' -- "$cur"))
    return
    ;;
  --format)
    COMPREPLY=($(compgen -W 'text json' -- "$cur"))
    return
    ;;
  --pid)
    COMPREPLY=($(compgen -W "$(cd /proc 2>/dev/null && compgen -G '[0-9]*')" -- "$cur"))
    return
    ;;
  --attach)
    COMPREPLY=($(compgen -W 'auto multi perf' -- "$cur"))
    return
    ;;
  --folded-weight)
    COMPREPLY=($(compgen -W 'calls time' -- "$cur"))
    return
    ;;
  --otlp | --otlp-timeout | --service-name | --metrics | -c | --capture | --when | --when-return | --min-duration | --stack)
    COMPREPLY=() # a URL, a name, an address or an expression: nothing to offer
    return
    ;;
  --clang | --runtime | --binary | --folded | --perfetto | --debug-file)
    COMPREPLY=($(compgen -f -- "$cur"))
    return
    ;;
  --debug-dir)
    COMPREPLY=($(compgen -d -- "$cur"))
    return
    ;;
  esac

  if [[ $cur == -* ]]; then
    # The tracer's options, which weave run and weave trace pass on (common/tracer_options.h; the
    # package test checks these lists against each command's --help).
    local tracer_options='--binary --attach --ring-size --stats --folded --folded-weight --perfetto --otlp --otlp-timeout --service-name
      --metrics --graph --no-summary --exit-after-attach --verbose'
    local trace_options='--capture --when --when-return --min-duration --stack --inlined --contents'
    local options='--help'
    case $command in
    build) options+=' --output --dump --clang --runtime --timings --debug-file --debug-dir' ;;
    check) options+=' --debug-file --debug-dir' ;;
    run) options+=" --format --output --pid --clang --runtime $tracer_options" ;;
    trace) options+=" --format --output --pid --clang --runtime $tracer_options $trace_options" ;;
    funcs) options+=' --names --line --debug-file --debug-dir' ;;
    *) options+=' --version --output --dump --clang --runtime --timings --debug-file --debug-dir' ;; # weave SPEC BIN is build
    esac
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
    return
  fi

  if [[ -z $command ]]; then
    if ((cword == 1)); then
      # A subcommand, or the spec of the short form `weave SPEC BIN`.
      COMPREPLY=($(compgen -W 'build check run trace funcs' -- "$cur") $(compgen -f -- "$cur"))
    else
      COMPREPLY=($(compgen -f -- "$cur"))
    fi
    return
  fi

  # Which positional argument of the command is being completed (options and their values skipped).
  local positionals=() word
  for ((i = 2; i < cword; i++)); do
    word=${words[i]}
    if _weave_takes_value "$word"; then
      ((i++))
    elif [[ $word != -* ]]; then
      positionals+=("$word")
    fi
  done

  # weave funcs BIN PATTERN, weave trace BIN FUNC...: function names of the binary.
  if [[ ($command == funcs && ${#positionals[@]} -eq 1) || ($command == trace && ${#positionals[@]} -ge 1) ]]; then
    local binary prefix name
    binary=$(_weave_unquote "${positionals[0]}")
    binary=${binary/#\~/$HOME}
    prefix=$(_weave_unquote "$cur")
    # Readline replaces only the text after the last word break ('(' or ':' in COMP_WORDBREAKS), not
    # all of cur: the replies leave out what comes before it, as __ltrim_colon_completions does.
    local raw=${COMP_WORDS[COMP_CWORD]} skip=0
    [[ $cur == *"$raw" ]] && skip=$((${#cur} - ${#raw}))
    COMPREPLY=()
    # fnmatch reads '*' and '[' in the prefix as patterns (a superset): compare literally here.
    while IFS= read -r name; do
      [[ $name == "$prefix"* ]] && COMPREPLY+=("${name:skip}")
    done < <("$(_weave_unquote "${words[0]}")" funcs --names "$binary" "$prefix*" 2>/dev/null)
    # Names hold shell characters ('(', '*'): let readline quote them as it quotes file names.
    compopt -o filenames 2>/dev/null
    return
  fi
  if [[ $command == check && ${#positionals[@]} -eq 2 ]]; then
    COMPREPLY=($(compgen -d -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}

complete -F _weave weave
