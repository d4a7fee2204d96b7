#!/bin/sh
# run.sh PLAIN COMPAT - the compat test: the same program built plainly and
# with -include uepoll/compat.h must print the same thing, and only the
# second may contain uepoll.
set -eu
plain=$1 compat=$2
a=$("$plain") || { echo "plain run failed"; exit 1; }
b=$("$compat") || { echo "compat run failed"; exit 1; }
if [ "$a" != "$b" ]; then
  echo "outputs differ:"; printf '%s\n' "--- plain" "$a" "--- compat" "$b"; exit 1
fi
nm "$compat" | grep -q ' T uep_epoll_create1$' || { echo "compat build does not contain uepoll"; exit 1; }
if nm "$plain" | grep -q uep_; then echo "plain build contains uepoll"; exit 1; fi
printf '%s\n' "$a"
echo "compat: outputs equal ($(printf '%s\n' "$a" | wc -l) lines)"
