#!/bin/bash
# Session 7's head-to-head: session 6's end (c42ad74) against session 7's acceptance run (9edc512).
exec "$(dirname "$0")/lead-ab.sh" /work/ab7 c42ad74 9edc512
