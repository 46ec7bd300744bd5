#!/bin/sh
# expect.sh STATUS TEXT COMMAND [ARG...]
# Run COMMAND and succeed when it exits with STATUS and its output (stdout and stderr together)
# contains TEXT as a fixed string. Prints the output on failure.
want_status=$1
want_text=$2
shift 2
output=$("$@" 2>&1)
status=$?
if [ "$status" -ne "$want_status" ]; then
    printf 'expected exit status %s, got %s; output:\n%s\n' "$want_status" "$status" "$output"
    exit 1
fi
case $output in
    *"$want_text"*) exit 0 ;;
esac
printf 'expected output containing:\n%s\ngot:\n%s\n' "$want_text" "$output"
exit 1
