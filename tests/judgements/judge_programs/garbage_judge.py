"""An external judge that answers garbage: prose, the wrong id, a grade off the rubric, true, a list."""

import json
import sys

answers = [
    lambda r: "I think this document is quite relevant!",
    lambda r: json.dumps({"id": "not-" + r["id"], "grade": 1}),
    lambda r: json.dumps({"id": r["id"], "grade": 7}),
    lambda r: json.dumps({"id": r["id"], "grade": True}),
    lambda r: json.dumps([r["id"], 1]),
    lambda r: json.dumps({"id": r["id"], "grade": "2"}),
]
for n, line in enumerate(sys.stdin):
    print(answers[n % len(answers)](json.loads(line)), flush=True)
