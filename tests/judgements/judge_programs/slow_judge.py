"""An external judge that answers the first request, then never answers again (it sleeps)."""

import json
import sys
import time

for n, line in enumerate(sys.stdin):
    request = json.loads(line)
    if n > 0 or request["document"]["docid"].endswith("3"):
        time.sleep(60)
    print(json.dumps({"id": request["id"], "grade": 1}), flush=True)
