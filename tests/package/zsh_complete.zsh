#!/usr/bin/env zsh
# The zsh completion in a real interactive zsh (on a pseudo-terminal, zsh/zpty): types
#   weave fu<Tab>hello 'main.(*S<Tab>
# then puts `print -r --` before the line and runs it: the completed words come out as the shell
# reads them. Expects `weave funcs hello main.(*Server).Handle`.
# usage: zsh_complete.zsh PREFIX HELLO_BINARY   (PREFIX: where `cmake --install` put weave)
prefix=$1 hello=$2
zmodload zsh/zpty 2>/dev/null || { print "SKIPPED: zsh has no zpty module"; exit 77 }
dir=$(mktemp -d)
cp $hello $dir/hello
zpty z env -i HOME=$dir TERM=dumb PATH=$prefix/bin:/usr/bin:/bin zsh -f -i
zpty -w z "PS1='> '; fpath=($prefix/share/zsh/vendor-completions \$fpath); autoload -Uz compinit; compinit -u -d $dir/.zcompdump; cd $dir"
sleep 1
zpty -w -n z $'weave fu\t'
sleep 1
zpty -w -n z $'hello \'main.(*S\t'
sleep 1
zpty -w -n z $'\C-aprint -r -- \n'
sleep 1
out=
while zpty -r -t z chunk; do out+=$chunk; done
zpty -d z
rm -rf $dir
lines=(${(f)${out//$'\r'/}})
if (( ${lines[(Ie)weave funcs hello main.(*Server).Handle]} )); then
  print "zsh completed: weave funcs hello main.(*Server).Handle"
  exit 0
fi
print -r -- "zsh did not complete the line; the terminal showed:"
print -r -- "$out" | cat -v
exit 1
