#!/usr/bin/env python3
"""mkst.py OUT NAME:DTYPE:SHAPE:VALUES ...: writes a safetensors file (the
spec: 8-byte little-endian header length, JSON header, raw data), with
python's standard library only, for the CLI tests. VALUES is a comma list
repeated cyclically to fill the shape, e.g. x:F32:2,3:0.5,-1.25"""
import json
import struct
import sys

FMT = {"F32": "f", "F64": "d", "I64": "q", "I32": "i", "U8": "B", "BOOL": "B"}


def main():
    out, specs = sys.argv[1], sys.argv[2:]
    header, blobs, off = {}, [], 0
    for spec in specs:
        name, dt, shape, values = spec.split(":")
        dims = [int(d) for d in shape.split(",")] if shape else []
        n = 1
        for d in dims:
            n *= d
        vals = [float(v) if dt in ("F32", "F64") else int(v) for v in values.split(",")]
        data = struct.pack("<%d%s" % (n, FMT[dt]), *[vals[i % len(vals)] for i in range(n)])
        header[name] = {"dtype": dt, "shape": dims, "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


if __name__ == "__main__":
    main()
