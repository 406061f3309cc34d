#!/bin/bash
# interleaved: the server from bin-old / bin-new, 100 creates at once then their deletes, per-process CPU
cd /tmp/burst26; export HOME=/tmp/burst26/home
rounds=${1:-4}
for i in $(seq 1 $rounds); do
  for v in old new; do
    BOXKITE_SERVER_RATE_LIFECYCLE=-1 BOXKITE_SERVER_WARM_POOL=0 BOXKITE_SERVER_ADMIN_LISTEN=127.0.0.1:26802 bin-$v/boxkite up --port 26800 --bastion-port 26801 > up-$v.log 2>&1 || { cat up-$v.log; exit 1; }
    KEY=$(grep api_key home/.boxkite/local.toml | cut -d"'" -f2)
    python3 load.py 20 20 http://127.0.0.1:26800 $KEY > /dev/null   # warm-up
    for j in 1 2 3; do
      echo "# round $i $v run $j" >> server-ab.txt
      python3 load.py 100 100 http://127.0.0.1:26800 $KEY | tail -7 >> server-ab.txt
    done
    bin-$v/boxkite down --yes > /dev/null 2>&1
  done
done
