# Control: pipes, subshells and command substitution work.
echo CONTROL-START
out=$(printf 'a\nb\nc\n' | tr a-c x-z | sort -r | head -n 2 | tr '\n' ' ')
[ "$out" = "z y " ] && echo "CONTROL-OK pipeline gave '$out'"
