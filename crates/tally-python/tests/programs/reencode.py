"""Filter an artifact to its GPU activities and write them again in the
compact form, staging rows before committing them as a file writer does."""

import json
import sys
from pathlib import Path

from stormlog.infer.correlation_codec import (
    CorrelationRecordDecoder,
    CorrelationRecordEncoder,
    iter_inference_events,
    iter_inference_records,
    read_inference_records,
)
from stormlog.infer.correlation_events import load_inference_artifact


def main(source: str, out_dir: str) -> int:
    target = Path(out_dir) / "activities.jsonl"
    encoder = CorrelationRecordEncoder()
    kept = 0
    with target.open("w", encoding="utf-8") as handle:
        for line_number, record in iter_inference_records(source):
            if record.get("event_type") != "infer.activity_ref":
                continue
            rows = encoder.prepare(record)
            handle.write("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
            encoder.commit(rows)
            kept += 1
    print("kept", kept)
    again = load_inference_artifact(target)
    print("read back", len(again), sorted({type(item).__name__ for item in again}))
    print(read_inference_records(target) == [item.to_record() for item in again])
    # A decoder carried from one file to the next knows its definitions.
    decoder = CorrelationRecordDecoder()
    first = [line for line, _ in iter_inference_events(target, decoder)]
    print("lines", first[:5], len(first))
    context = again[0].context
    identity = decoder.registry.identity(context)
    print("identity", identity, decoder.registry.lookup(identity) == context)
    # A second encoder that starts from the decoder's registry writes no
    # definition again.
    follow = CorrelationRecordEncoder(decoder.registry)
    rows = follow.encode(again[0].to_record())
    print([row["event_type"] for row in rows], rows[-1]["context_id"] == identity)
    try:
        follow.prepare({"schema_version": 4, "event_type": "infer.context", "context_id": "x", "context": {}})
    except ValueError as error:
        print("rejected:", error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
