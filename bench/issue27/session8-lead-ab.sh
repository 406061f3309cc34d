#!/bin/bash
# Session 8's head-to-head: session 7's end (0334ac5) against session 8's steps (136925c).
exec "$(dirname "$0")/lead-ab.sh" /work/ab8 0334ac5 136925c
