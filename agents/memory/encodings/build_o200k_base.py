"""Rebuild ``o200k_base.tiktoken`` (beside this file) from the npm package js-tiktoken, and check its hash.

    python -m agents.memory.encodings.build_o200k_base [--tarball js-tiktoken-1.0.21.tgz] [--out PATH]

No Python package ships tiktoken's ``o200k_base`` ranks for offline use. js-tiktoken carries them in
``dist/ranks/o200k_base.js`` as ``export default {"pat_str", "special_tokens", "bpe_ranks"}``, where
``bpe_ranks`` holds lines ``LABEL OFFSET TOKEN TOKEN ...``: base64 tokens whose ranks count up from OFFSET.
Written back as tiktoken's format (``TOKEN RANK`` per line, by rank), they are byte for byte the official
file, whose SHA-256 tiktoken checks (``tokens.O200K_SHA256``); anything else is refused, nothing is written.
Without ``--tarball`` the pinned version is fetched with ``npm pack`` into a temporary folder (needs npm and
the npm registry); the app itself never runs this: the converted file is committed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from agents.memory.tokens import O200K_FILE, O200K_SHA256

JS_TIKTOKEN = "js-tiktoken@1.0.21"
RANKS_MEMBER = "package/dist/ranks/o200k_base.js"


def tiktoken_file_from_js_ranks(js_source: str) -> bytes:
    """tiktoken's ranks file from js-tiktoken's ranks module (see the module docstring)."""
    prefix = "export default "
    body = js_source.strip()
    if not body.startswith(prefix):
        raise ValueError(f"not a js-tiktoken ranks module: it does not start with {prefix!r}")
    data = json.loads(body.removeprefix(prefix).removesuffix(";"))
    ranks: dict[str, int] = {}
    for number, line in enumerate(data["bpe_ranks"].split("\n"), 1):
        if not line:
            continue
        _label, offset, *tokens = line.split(" ")
        for i, token in enumerate(tokens):
            if token in ranks:
                raise ValueError(f"bpe_ranks line {number}: token {token!r} appears twice")
            ranks[token] = int(offset) + i
    by_rank = sorted(ranks.items(), key=lambda item: item[1])
    return b"".join(f"{token} {rank}\n".encode("ascii") for token, rank in by_rank)


def js_ranks_from_tarball(tarball: Path) -> str:
    with tarfile.open(tarball) as archive:
        member = archive.extractfile(RANKS_MEMBER)
        if member is None:
            raise ValueError(f"{tarball}: no {RANKS_MEMBER}")
        return member.read().decode("utf-8")


def npm_pack(destination: Path) -> Path:
    subprocess.run(
        ["npm", "pack", JS_TIKTOKEN, "--pack-destination", str(destination), "--silent"],
        check=True, stdout=subprocess.DEVNULL,
    )
    (tarball,) = destination.glob("js-tiktoken-*.tgz")
    return tarball


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tarball", type=Path, help=f"A packed {JS_TIKTOKEN} (default: fetched with npm pack).")
    parser.add_argument("--out", type=Path, default=O200K_FILE, help="Where to write (default: %(default)s).")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tarball = args.tarball or npm_pack(Path(tmp))
        contents = tiktoken_file_from_js_ranks(js_ranks_from_tarball(tarball))
    digest = hashlib.sha256(contents).hexdigest()
    if digest != O200K_SHA256:
        print(f"build_o200k_base: the converted ranks hash to {digest}, not {O200K_SHA256}; nothing written",
              file=sys.stderr)
        return 1
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_bytes(contents)
    os.replace(partial, args.out)
    print(f"{args.out}: {len(contents):,} bytes, SHA-256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
