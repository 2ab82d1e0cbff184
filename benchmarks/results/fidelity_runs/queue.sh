#!/bin/bash
# Every remaining fidelity cell, in order: the stratified 100 (drive.sh), then the 276 (drive276.sh).
# Start it in the background in a copy of this folder: nohup setsid nice -n 10 bash queue.sh > queue.log 2>&1 &
# WAIT_PID: a cell already running (started by an earlier queue) to let finish first.
cd "$(dirname "$0")"
while [ -n "${WAIT_PID:-}" ] && kill -0 "$WAIT_PID" 2>/dev/null; do sleep 30; done
bash drive.sh && bash drive276.sh
