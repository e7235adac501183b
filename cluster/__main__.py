"""`python -m cluster start|stop|publish|status` (what make cluster, cluster-stop and
cluster-publish run; docs/operations.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cluster.runtime import DEFAULT_DSN, REPO, Cluster, ClusterError, ready


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cluster", description=__doc__)
    parser.add_argument("--runtime", type=Path, default=REPO / ".cluster",
                        help="runtime directory (default .cluster/)")  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="build SRC, start the instances and nginx")
    start.add_argument("--src", type=Path, default=REPO / "data" / "sample")
    start.add_argument("--instances", type=int, default=3)
    start.add_argument("--port", type=int, default=8080, help="nginx port")
    start.add_argument("--tcp", action="store_true",
                       help="instances on TCP ports from --first-instance-port (any local"
                       " process reaches them), not on unix sockets only nginx opens")  # fmt: skip
    start.add_argument("--first-instance-port", type=int, default=8101)
    start.add_argument("--dsn", default=DEFAULT_DSN, help="shared PostgreSQL database")
    start.add_argument("--edge-port", type=int, default=8088,
                       help="the edge (Varnish) in front of nginx; 0: no edge")  # fmt: skip
    sub.add_parser("stop", help="stop nginx, then drain and stop every instance")
    publish = sub.add_parser("publish", help="build SRC once and roll it out one at a time")
    what = publish.add_mutually_exclusive_group(required=True)
    what.add_argument("--src", type=Path, help="source directory of *.jsonl articles")
    what.add_argument("--last-build", action="store_true",
                      help="roll out the cluster's last build again")  # fmt: skip
    sub.add_parser("status", help="what each instance serves")
    args = parser.parse_args(argv)
    runtime: Path = args.runtime
    try:
        if args.command == "start":
            if not 1 <= args.instances <= 10:
                parser.error("--instances must be 1 to 10")
            cluster = Cluster(runtime, args.instances, args.port, args.first_instance_port,
                              args.dsn, unix_sockets=not args.tcp,
                              edge_port=args.edge_port or None)  # fmt: skip
            cluster.start(args.src)
            print(f"cluster up: {cluster.base_url} -> {len(cluster.members)} instance(s) "
                  f"on {', '.join(m.bind for m in cluster.members)}")  # fmt: skip
            if cluster.edge_port:
                print(f"edge up: {cluster.edge_url} -> {cluster.base_url}")
            return 0
        if not (runtime / "state.json").exists():
            if args.command == "stop":
                print(f"no cluster runs from {runtime}")
                return 0
            raise ClusterError(f"no cluster runs from {runtime} (make cluster)")
        cluster = Cluster.load(runtime)
        if args.command == "stop":
            cluster.stop()
            print("cluster stopped")
        elif args.command == "publish":
            cluster.publish(None if args.last_build else args.src)
        else:
            status = {m.name: ready(m.address) for m in cluster.members}
            edge = ready(cluster.edge_port) if cluster.edge_port else None
            print(json.dumps({"edge": edge, "proxy": ready(cluster.port), "instances": status},
                             indent=2))  # fmt: skip
        return 0
    except ClusterError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
