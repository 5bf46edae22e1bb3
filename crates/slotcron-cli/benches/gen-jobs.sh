#!/bin/sh
# Writes a TOML jobs file of N jobs to standard output, for the BENCHMARKS.md figures
# of `slotcron check` and start-up on big files: a third each of interval, cron and
# one-shot (`after`) jobs, every tenth with a timeout.
#   crates/slotcron-cli/benches/gen-jobs.sh 100000 > /tmp/jobs-100k.toml
set -eu
n=${1:?usage: gen-jobs.sh COUNT}
awk -v n="$n" 'BEGIN {
    for (i = 0; i < n; i++) {
        printf "[[job]]\nname = \"job-%d\"\n", i
        if (i % 3 == 0) printf "every = \"%dm\"\n", 1 + i % 59
        else if (i % 3 == 1) printf "cron = \"%d %d * * *\"\n", i % 60, i % 24
        else printf "after = \"%dh\"\n", 1 + i % 100
        if (i % 10 == 0) printf "timeout = \"5m\"\n"
        printf "command = \"echo job %d\"\n\n", i
    }
}'
