"""Builds the native decoder of OTLP trace bodies (``_otlp_wire.c`` beside this file) into an extension module.

    python -m agents.memory.native_build [--optional] [--force]

The C compiler and flags are the ones this Python was built with (``sysconfig``), the module lands beside its source
(``_otlp_wire`` + the interpreter's extension suffix) and is rebuilt only when the source is newer. ``--optional``
(``make run``): without a compiler it says so and exits 0, and memoryviz reads bodies with the protobuf library
alone (the same spans, slower). ``make test`` builds it without ``--optional``: the tests compare the two decoders.
"""
from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_otlp_wire.c"


def target() -> Path:
    return HERE / f"_otlp_wire{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def command(output: Path) -> list[str]:
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    include = sysconfig.get_paths()["include"]
    return [*compiler, "-O2", "-std=c99", "-Wall", "-Wextra", "-fPIC", "-shared",
            f"-I{include}", str(SOURCE), "-o", str(output)]


def build(*, force: bool = False) -> Path:
    output = target()
    if not force and output.exists() and output.stat().st_mtime >= SOURCE.stat().st_mtime:
        return output
    args = command(output)
    if shutil.which(args[0]) is None:
        raise FileNotFoundError(f"no C compiler ({args[0]}): install gcc (sudo make system-deps)")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        raise FileNotFoundError(f"no Python.h in {sysconfig.get_paths()['include']}: install python3-dev")
    partial = output.with_name(output.name + ".part")
    subprocess.run(args[:-1] + [str(partial)], check=True)
    partial.replace(output)  # atomic: a process importing it meanwhile sees the old module or the new, never half
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--optional", action="store_true", help="without a compiler, say so and exit 0")
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = parser.parse_args()
    try:
        print(f"native decoder: {build(force=args.force).relative_to(HERE.parent.parent)}")
    except (FileNotFoundError, subprocess.CalledProcessError) as exc:
        if not args.optional:
            sys.exit(f"native decoder not built: {exc}")
        print(f"native decoder not built ({exc}): OTLP bodies are read by the protobuf library alone")


if __name__ == "__main__":
    main()
