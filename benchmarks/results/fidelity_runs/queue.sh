#!/bin/bash
# Every remaining fidelity cell, in order: the stratified 100 (drive.sh), then the 276 (drive276.sh).
# Start it in the background in a copy of this folder: nohup setsid nice -n 10 bash queue.sh > queue.log 2>&1 &
cd "$(dirname "$0")" && bash drive.sh && bash drive276.sh
