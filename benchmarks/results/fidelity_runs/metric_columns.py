"""Print the metric columns of a joined fidelity table (one per line), for table.sh and table276.sh:
every numeric column except the labels and correlate's bookkeeping columns.

    python metric_columns.py TABLE.scores.jsonl
"""

import json
import sys

from workbench.correlate.inputs import BOOKKEEPING_COLUMNS

rows = [json.loads(line) for line in open(sys.argv[1])]
skip = BOOKKEEPING_COLUMNS | {"passed", "gpt35_nsnr"}
for name in rows[0]:
    if name not in skip and any(isinstance(r.get(name), (int, float)) and not isinstance(r.get(name), bool) for r in rows):
        print(name)
