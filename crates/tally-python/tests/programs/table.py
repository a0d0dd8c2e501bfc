"""Account an artifact and print a table of GPU time per iteration and device."""

import sys

from stormlog.infer.correlation_accounting import account_gpu_time, resolve_inference_events
from stormlog.infer.correlation_events import load_inference_artifact


def main(source: str) -> int:
    records = load_inference_artifact(source)
    graph = resolve_inference_events(records)
    accounting = account_gpu_time(graph)
    print(f"run {accounting.run_id}: {len(graph.iterations)} iterations, {len(graph.activities)} activities, "
          f"{len(graph.requests)} requests, {len(graph.unresolved)} unresolved")
    print(f"{'iteration':<24}{'device':<16}{'summed':>10}{'busy':>10}{'count':>7}{'elapsed':>10}")
    for iteration_ref, timing in accounting.iterations.items():
        for clock, gpu in timing.gpu.items():
            print(f"{iteration_ref.id:<24}{clock.device_uuid:<16}{gpu.summed_activity_ns:>10}{gpu.busy_ns:>10}"
                  f"{gpu.activity_count:>7}{timing.elapsed_ns if timing.elapsed_ns is not None else '-':>10}")
    for clock, total in sorted(accounting.device_totals.items(), key=lambda item: item[0].device_uuid):
        overlap = total.summed_activity_ns / total.busy_ns if total.busy_ns else 0.0
        print(f"total {clock.device_uuid} {clock.clock_domain} {clock.clock_kind} busy={total.busy_ns} overlap={overlap:.3f}")
    print("unattributed", [ref.id for ref in accounting.unattributed_activity_refs][:5])
    print("unmeasured", len(accounting.unmeasured_gpu_activity_refs))
    for item in graph.unresolved[:5]:
        print("unresolved", item.event_id, item.kind, item.ref.id)
    first = next(iter(accounting.iterations), None)
    if first is not None:
        print("lookup", accounting.iterations[first] == accounting.iterations[type(first)(first.producer_id, first.id)])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
