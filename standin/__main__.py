"""Command line: ``python -m hubsurvey_standin serve|generate``.

    python -m hubsurvey_standin generate --out /tmp/minihub --seed 0 --filler 100000
    python -m hubsurvey_standin serve --root /tmp/minihub --root /work/shared/datasets --port 8123 \\
        --token hf_ok --fault-rate-limit-every 50 --fault-categories list,tree

``serve`` prints the URL (``http://127.0.0.1:PORT``) on its first stdout line and runs until
interrupted; drive it further through ``/_standin/`` (stats, reset, faults, set_sha, commits).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from .faults import ERROR_STATUSES, Faults, Scope
from .server import HOST, StandinHub


def _faults(args: argparse.Namespace) -> Faults:
    if args.faults_json:
        return Faults.from_dict(json.loads(args.faults_json))
    categories = frozenset(c for c in (args.fault_categories or "").split(",") if c)
    return Faults(
        rate_limit_every=args.fault_rate_limit_every,
        rate_limit_secs=args.fault_rate_limit_secs,
        error_burst_every=args.fault_error_burst_every,
        error_burst_len=args.fault_error_burst_len,
        error_status=args.fault_error_status,
        reset_every=args.fault_reset_every,
        truncate_every=args.fault_truncate_every,
        slow_ms=args.fault_slow_ms,
        corrupt_parquet=tuple(args.fault_corrupt or ()),
        scope=Scope(categories=categories, dataset=args.fault_dataset),
    )


def _serve(args: argparse.Namespace) -> int:
    hub = StandinHub(args.root, port=args.port, faults=_faults(args), valid_tokens=set(args.token or ()),
                     page_size=args.page_size, host=args.host)
    hub.start()
    print(hub.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        hub.stop()
    return 0


def _generate(args: argparse.Namespace) -> int:
    from .minihub import generate_minihub

    print(generate_minihub(args.out, seed=args.seed, filler=args.filler, score_models=args.score_models), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hubsurvey_standin", description="Local Hub stand-in.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve hub roots over HTTP on 127.0.0.1")
    serve.add_argument("--root", type=Path, action="append", required=True, help="hub root (repeatable)")
    serve.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    serve.add_argument("--host", default=HOST, help=f"must be {HOST}; any other host is refused")
    serve.add_argument("--token", action="extend", nargs="+", help="approved bearer token(s) (repeatable)")
    serve.add_argument("--page-size", type=int, default=1000, help="items per listing/tree page")
    faults = serve.add_argument_group("faults (deterministic: every Nth matching request)")
    faults.add_argument("--fault-rate-limit-every", type=int, default=0, metavar="N")
    faults.add_argument("--fault-rate-limit-secs", type=int, default=1, metavar="S")
    faults.add_argument("--fault-error-burst-every", type=int, default=0, metavar="N")
    faults.add_argument("--fault-error-burst-len", type=int, default=1, metavar="K")
    faults.add_argument("--fault-error-status", type=int, default=503, choices=ERROR_STATUSES)
    faults.add_argument("--fault-reset-every", type=int, default=0, metavar="N")
    faults.add_argument("--fault-truncate-every", type=int, default=0, metavar="N")
    faults.add_argument("--fault-slow-ms", type=int, default=0, metavar="MS")
    faults.add_argument("--fault-corrupt", action="append", metavar="GLOB", help="dataset id glob (repeatable)")
    faults.add_argument("--fault-categories", metavar="CAT,CAT", help="limit the switches to these categories")
    faults.add_argument("--fault-dataset", default="*", metavar="GLOB", help="limit the switches to these datasets")
    faults.add_argument("--faults-json", metavar="JSON", help="a full Faults dict instead of the options above")
    serve.set_defaults(run=_serve)

    gen = sub.add_parser("generate", help="write a deterministic mini-hub (index.json, parquet, truth.json)")
    gen.add_argument("--out", type=Path, required=True)
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--filler", type=int, default=0, help="synthetic datasets the server lists on top")
    gen.add_argument("--score-models", action="store_true",
                     help="also the models that report scores and the benchmarks' eval.yaml (as the demo serves them)")
    gen.set_defaults(run=_generate)

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except ValueError as exc:
        parser.error(str(exc))  # exits with status 2


if __name__ == "__main__":
    sys.exit(main())
