"""A/B of the application's CPU per request: this tree against another, each on its own bundle.

bench/ab_mix.py serves one bundle to both trees; a change of the bundle format (a new field
in every article) needs each tree to read the bundle its own builder made. This runs
bench/profile_app.py (the WSGI app in-process, no server, no client) of each tree on its
bundle, alternating the trees round by round (A B B A ...) so both see the same machine, and
reports the median CPU µs per request of each endpoint and the ratio after / before.

    flock /tmp/bench.lock .venv/bin/python bench/ab_profile.py --before TREE \\
        --before-bundle DIR --bundle DIR --urls CORPUS/urls [--rounds 4] [--seconds 4]

The other tree runs with this tree's virtualenv.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness


def main() -> int:
    parser = harness.cli.parser(__doc__)
    parser.add_argument("--before", type=Path, required=True, help="the other source tree")
    parser.add_argument("--before-bundle", type=Path, required=True)
    parser.add_argument("--bundle", type=Path, required=True, help="this tree's bundle")
    parser.add_argument("--urls", type=Path, required=True, help="a bench corpus's urls/")
    parser.add_argument("--endpoints", default="mix,list,latest,get,search,categories")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4.0, help="per endpoint and round")
    args = parser.parse_args()
    trees = {
        "before": (args.before.resolve(), args.before_bundle),
        "after": (harness.ROOT, args.bundle),
    }
    rounds: dict[str, list[dict]] = {name: [] for name in trees}
    for r in range(args.rounds):
        for name in ["before", "after"] if r % 2 == 0 else ["after", "before"]:
            tree, bundle = trees[name]
            result = harness.app_cpu(bundle, args.urls, args.endpoints, args.seconds, tree)
            rounds[name].append(result)
            print(f"round {r + 1} {name:6s} {json.dumps(result)}", file=sys.stderr)
    summary: dict[str, dict] = {}
    for endpoint in args.endpoints.split(","):
        medians = {
            name: statistics.median(row[endpoint]["cpu_us_per_req"] for row in rows)
            for name, rows in rounds.items()
        }
        summary[endpoint] = {
            "before_us": medians["before"],
            "after_us": medians["after"],
            "after_over_before": round(medians["after"] / medians["before"], 3),
            "kb_before": rounds["before"][0][endpoint]["kb_per_resp"],
            "kb_after": rounds["after"][0][endpoint]["kb_per_resp"],
        }
    print(json.dumps({"summary": summary, "rounds": rounds}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
