#!/bin/bash
# A/B of main (base, :19300) and files12 (new, :19310): one fresh sandbox per run,
# WARM unmeasured round trips, then N measured; alternated.
# usage: ab.sh PAIRS WARM N
cd /tmp/f12
kb=$(sed -n "s/^api_key = '\(.*\)'/\1/p" home/.boxkite/local.toml)
kn=$(sed -n "s/^api_key = '\(.*\)'/\1/p" homenew/.boxkite/local.toml)
sb=$(pgrep -f "boxkite-server --listen 127.0.0.1:19300")
sn=$(pgrep -f "boxkite-server --listen 127.0.0.1:19310")
for i in $(seq $1); do
  ./rt -url http://127.0.0.1:19300 -key $kb -server $sb -pool f12/home/.boxkite/server/cow -warm $2 -n $3 -label "base w$2"
  ./rt -url http://127.0.0.1:19310 -key $kn -server $sn -pool f12/homenew/.boxkite/server/cow -warm $2 -n $3 -label "new  w$2"
done
