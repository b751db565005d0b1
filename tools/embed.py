#!/usr/bin/env python3
"""Writes a C file defining `const char NAME[]` holding the bytes of INPUT (build step)."""
import sys

name, source, output = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(source, "rb").read()
with open(output, "w") as out:
    out.write("/* generated from %s by tools/embed.py: do not edit */\n" % source.split("/")[-1])
    out.write("#include <stddef.h>\nconst char %s[] = {\n" % name)
    for i in range(0, len(data), 16):
        out.write("  " + ", ".join(str(b) for b in data[i:i + 16]) + ",\n")
    out.write("  0\n};\nconst size_t %s_size = %d;\n" % (name, len(data)))
