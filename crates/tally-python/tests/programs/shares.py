"""Check a per-request share model against an iteration's measured budget."""

import dataclasses
import pickle
import sys

from stormlog.infer.correlation_accounting import (
    RequestShareEstimate,
    ShareBudget,
    account_gpu_time,
    resolve_inference_events,
    validate_request_shares,
)
from stormlog.infer.correlation_events import load_inference_artifact


def main(source: str) -> int:
    graph = resolve_inference_events(load_inference_artifact(source))
    accounting = account_gpu_time(graph)
    checked = 0
    for iteration_ref, timing in accounting.iterations.items():
        members = [m for m in graph.memberships if m.iteration_ref == iteration_ref]
        for clock, gpu in timing.gpu.items():
            if not members:
                continue
            share = gpu.busy_ns // len(members)
            shares = [RequestShareEstimate(request_ref=m.request_ref, duration_ns=share, model="even",
                                           attempt_ref=m.attempt_ref) for m in members]
            remainder = gpu.busy_ns - share * len(members)
            try:
                budget = validate_request_shares(graph, accounting, iteration_ref=iteration_ref, device_clock=clock,
                                                 shares=shares, unattributed_ns=remainder)
            except ValueError as error:
                print("rejected", iteration_ref.id, error)
                continue
            match budget:
                case ShareBudget(budget_ns=total, unattributed_ns=rest):
                    print("budget", iteration_ref.id, clock.device_uuid, total, rest, len(budget.shares))
            assert pickle.loads(pickle.dumps(budget)) == budget
            print(budget.shares[0] is shares[0], dataclasses.asdict(budget.shares[0])["model"])
            try:
                validate_request_shares(graph, accounting, iteration_ref=iteration_ref, device_clock=clock,
                                        shares=shares, unattributed_ns=remainder + 1)
            except ValueError as error:
                print("off by one:", error)
            checked += 1
            if checked >= 4:
                return 0
    try:
        RequestShareEstimate(request_ref=graph.memberships[0].request_ref, duration_ns=-1, model="x")
    except (ValueError, IndexError) as error:
        print("bad share:", type(error).__name__, error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
