"""Reading big JSON inputs: one huge string, and a long ordinary conversation, against a plain read of the file.

    python bench/bench_json_input.py                 # a 16, 64 and 256 MiB string; a 200 MB conversation
    python bench/bench_json_input.py --sizes 16 64   # string sizes in MiB

Each case runs in a fresh child process, so that its peak RSS (``ru_maxrss``) is its own:

- ``string``: ``[{"role": "user", "content": "<N MiB of text>"}]`` read by ``formats.read_input(path, "openai")``
  (inputs over 8 MB stream through ijson; the string goes round it through ``LiftedStrings``);
- ``conversation``: 20,000 messages of 10 kB each (200 MB), the same call;
- ``baseline``: the same file read whole and decoded as UTF-8 (``open(path, "rb").read().decode()``), the floor of
  anything that ends with the text in memory.

``--yajl-only`` reads without LiftedStrings (ijson alone, as before it existed), to measure what it changed.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_string_file(path: Path, mib: int) -> None:
    chunk = ("All work and no play makes Jack a dull boy. " * 2000)[: 1 << 16]
    with open(path, "w", encoding="utf-8") as out:
        out.write('[{"role": "user", "content": "')
        for _ in range(mib * 16):
            out.write(chunk)
        out.write('"}]\n')


def make_conversation_file(path: Path, count: int = 20_000) -> None:
    body = "x" * 10_000
    with open(path, "w", encoding="utf-8") as out:
        out.write("[\n")
        for i in range(count):
            role = "user" if i % 2 == 0 else "assistant"
            out.write(json.dumps({"role": role, "content": f"{i} {body}"}) + (",\n" if i < count - 1 else "\n"))
        out.write("]\n")


def child(kind: str, path: str, yajl_only: bool) -> None:
    """One measurement, in this process: time and peak RSS as a JSON line on stdout."""
    sys.path.insert(0, str(ROOT))
    from agents.memory import formats
    from agents.memory.formats import json_input

    if yajl_only:
        # As before LiftedStrings: ijson reads the bytes as they are.
        import io

        class UnliftedRaw(io.RawIOBase):
            def __init__(self, raw: object, **_: object) -> None:
                self.raw = raw
                self.values: dict[str, str] = {}

            def readable(self) -> bool:
                return True

            def readinto(self, buffer: bytearray) -> int:
                return self.raw.readinto(buffer)  # type: ignore[attr-defined]

        formats.LiftedStrings = UnliftedRaw  # type: ignore[attr-defined,misc]
        json_input.LiftedStrings = UnliftedRaw  # type: ignore[misc]
    start = time.perf_counter()
    if kind == "baseline":
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        size = len(text)
    else:
        [conversation] = formats.read_input(path, "openai")
        size = sum(len(m.content or "") for m in conversation.messages)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": elapsed, "peak_mb": peak_mb, "chars": size}))


def measure(kind: str, path: Path, yajl_only: bool = False, timeout: float = 3600) -> dict[str, float]:
    args = [sys.executable, __file__, "--child", kind, str(path)] + (["--yajl-only"] if yajl_only else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[16, 64, 256], help="string sizes in MiB")
    parser.add_argument("--yajl-only", action="store_true", help="also read each file without LiftedStrings")
    parser.add_argument("--no-conversation", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.yajl_only)
        return
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cases: list[tuple[str, Path]] = []
        for mib in args.sizes:
            path = Path(folder) / f"string-{mib}.json"
            make_string_file(path, mib)
            cases.append((f"one string of {mib} MiB", path))
        if not args.no_conversation:
            path = Path(folder) / "conversation.json"
            make_conversation_file(path)
            cases.append(("20,000 messages of 10 kB", path))
        for label, path in cases:
            base = measure("baseline", path)
            ours = measure("read", path)
            row = {"case": label, "file_mb": path.stat().st_size / 1e6, "baseline": base, "ours": ours}
            if args.yajl_only:
                row["yajl"] = measure("read", path, yajl_only=True)
            rows.append(row)
            path.unlink()
    print("| input | file | plain read | read_input | × plain read | peak RSS (plain → read_input) |"
          + (" ijson alone | × plain read |" if args.yajl_only else ""))
    print("|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.yajl_only else ""))
    for row in rows:
        base, ours = row["baseline"], row["ours"]
        line = (f"| {row['case']} | {row['file_mb']:.0f} MB | {base['seconds']:.2f} s | {ours['seconds']:.2f} s | "
                f"{ours['seconds'] / base['seconds']:.1f} | {base['peak_mb']:.0f} → {ours['peak_mb']:.0f} MB |")
        if args.yajl_only:
            yajl = row.get("yajl")
            line += (f" {yajl['seconds']:.2f} s ({yajl['peak_mb']:.0f} MB) | {yajl['seconds'] / base['seconds']:.1f} |"
                     if yajl else " | |")
        print(line)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
