"""A rule-based external judge: grade 2 if every query word is in the document, 1 if some, else 0."""

import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    words = set(request["topic"]["query"].lower().split())
    text = set((request["document"]["title"] + " " + request["document"]["text"]).lower().split())
    found = len(words & text)
    grade = 2 if words and found == len(words) else (1 if found else 0)
    print(json.dumps({"id": request["id"], "grade": grade}), flush=True)
