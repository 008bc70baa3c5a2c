#!/usr/bin/env python3
"""mkonnx_ext.py MODEL.onnx LOCATION N: writes y = x * w (x, w, y float[N]),
w an initializer whose data is external, at LOCATION (offset 0, N floats,
which the caller writes). Protobuf spelled out by onnx.proto's field
numbers, standard library only, for the CLI tests."""
import struct
import sys


def varint(v):
    out = b""
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out += bytes([c | 0x80])
        else:
            return out + bytes([c])


def field(f, payload):  # length-delimited
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(f << 3 | 2) + varint(len(payload)) + payload


def num(f, v):
    return varint(f << 3) + varint(v)


def value(name, n):
    dim = field(1, num(1, n))
    tensor_type = num(1, 1) + field(2, dim)
    return field(1, name) + field(2, field(1, tensor_type))


path, location, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
entries = field(13, field(1, "location") + field(2, location)) + field(13, field(1, "offset") + field(2, "0"))
init = num(1, n) + num(2, 1) + field(8, "w") + entries + num(14, 1)
node = field(1, "x") + field(1, "w") + field(2, "y") + field(4, "Mul")
graph = field(1, node) + field(2, "g") + field(5, init) + field(11, value("x", n)) + field(12, value("y", n))
model = num(1, 8) + field(2, "sinter-test") + field(7, graph) + field(8, num(2, 17))
with open(path, "wb") as f:
    f.write(model)
