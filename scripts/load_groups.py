#!/usr/bin/env python3
"""Counts, per kernel, how often a thread must wait for loaded data before it issues its next load.

ptxas moves global loads down towards their first use, counting on other warps to hide the
latency. A thread whose rows are loaded in g groups, each group waited for before the next is
issued, pays g DRAM round trips instead of one; small grids (few warps) cannot hide that. This
reads the SASS (`cuobjdump -sass`) and reports, per kernel: instructions, LDGs, LDGs issued after
some instruction has read an earlier LDG's register in the same basic block, and the load groups
that makes (a group ends where a loaded register is read).

A heuristic over the text: it follows registers by name and treats every label as a block
boundary, so read it as "how many round trips at most", not as an exact count.

Usage: scripts/load_groups.py build/release/libsolops.so [kernel-name substring]
"""
import re
import subprocess
import sys

INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4})\*/\s*(@!?U?P\w+\s+)?(\S+)\s*([^;]*);")
REGISTER = re.compile(r"\bR(\d+)\b")


def destination_width(opcode):
    return 4 if ".128" in opcode else 2 if ".64" in opcode or "WIDE" in opcode else 1


def analyse(body):
    lines = [m for m in map(INSTRUCTION.match, body.split("\n")) if m]
    targets = {int(t, 16) for t in re.findall(r"BRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", body)}
    pending = set()  # registers an LDG writes that nothing has read yet
    loads = late_loads = groups = 0
    data_read = in_group = False
    for m in lines:
        address, opcode, operands = int(m.group(1), 16), m.group(3), m.group(4)
        if address in targets:
            data_read = in_group = False
        parts = [p.strip() for p in operands.split(",")] if operands else []
        sources = parts if opcode.startswith("ST") else parts[1:]
        read = {int(r) for p in sources for r in REGISTER.findall(p)}
        read |= {int(r) + 1 for p in sources for r in re.findall(r"\[R(\d+)\.64", p)}
        if read & pending:
            data_read, in_group = True, False
            pending -= read
        written = REGISTER.findall(parts[0]) if parts and not opcode.startswith(("ST", "BRA", "EXIT")) else []
        if written and not opcode.startswith("LDG"):
            first = int(written[0])
            pending -= set(range(first, first + destination_width(opcode)))
        if opcode.startswith("LDG"):
            loads += 1
            late_loads += data_read
            if not in_group:
                groups, in_group = groups + 1, True
            first = int(written[0])
            pending |= set(range(first, first + destination_width(opcode)))
        if opcode.startswith(("BRA", "EXIT")):
            data_read = in_group = False
    return len(lines), loads, late_loads, groups


def without_parameters(name):
    """The demangled name without its trailing parameter list."""
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i]
    return name


def main():
    sass = subprocess.run(["cuobjdump", "-sass", sys.argv[1]], capture_output=True, text=True, check=True).stdout
    wanted = sys.argv[2] if len(sys.argv) > 2 else ""
    for function in re.split(r"\n\s*Function : ", sass)[1:]:
        name = function.split("\n")[0].strip()
        if wanted not in name:
            continue
        readable = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
        readable = without_parameters(readable.replace("solops::detail::", ""))
        instructions, loads, late, groups = analyse(function)
        print(f"{instructions:5d} instr {loads:3d} LDG {late:3d} after a data read {groups:3d} groups  {readable}")


if __name__ == "__main__":
    main()
