#!/usr/bin/env python3
"""Writes the safetensors fixtures of tests/st/ from the published format,
independently of sinter's writer. Run from this folder; the outputs are
committed, so this only needs running to change them."""
import json
import struct


def assemble(header, data, pad=True):
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


# valid: three tensors of different dtypes plus metadata
weight = struct.pack("<6f", 1.5, -2.25, 3.0, 0.125, -0.5, 100.0)
bias = struct.pack("<3H", 0x3C00, 0xC000, 0x3800)  # f16 1.0, -2.0, 0.5
ids = struct.pack("<2q", 7, -9)
valid = assemble({
    "__metadata__": {"format": "pt"},
    "weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
    "bias": {"dtype": "F16", "shape": [3], "data_offsets": [24, 30]},
    "ids": {"dtype": "I64", "shape": [2], "data_offsets": [30, 46]},
}, weight + bias + ids)
open("valid.safetensors", "wb").write(valid)

# truncated: the valid file cut 10 bytes into its data (a partial download)
hlen = struct.unpack("<Q", valid[:8])[0]
open("truncated.safetensors", "wb").write(valid[:8 + hlen + 10])

# overlap: "b" starts inside "a"
overlap = assemble({
    "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
    "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
}, struct.pack("<3f", 1.0, 2.0, 3.0))
open("overlap.safetensors", "wb").write(overlap)

# the fuzzer's seed corpus (tests/fuzz/corpus_safetensors/)
corpus = {
    "valid": valid,
    "truncated": valid[:8 + hlen + 10],
    "overlap": overlap,
    "empty": assemble({}, b""),
    "metadata": assemble({"__metadata__": {"k\u00e9": "v\n\"q\"", "x": ""},
                          "s": {"dtype": "BF16", "shape": [], "data_offsets": [0, 2]}},
                         struct.pack("<H", 0x3DCD), pad=False),
    "dtypes": assemble({
        "f64": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]},
        "e4m3": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [8, 10]},
        "e5m2": {"dtype": "F8_E5M2", "shape": [1, 1], "data_offsets": [10, 11]},
        "i8": {"dtype": "I8", "shape": [1], "data_offsets": [11, 12]},
        "u8": {"dtype": "U8", "shape": [1], "data_offsets": [12, 13]},
        "bool": {"dtype": "BOOL", "shape": [1], "data_offsets": [13, 14]},
        "i32": {"dtype": "I32", "shape": [1], "data_offsets": [16, 20]},
        "zero": {"dtype": "F16", "shape": [0, 4], "data_offsets": [20, 20]},
    }, struct.pack("<d", -0.1) + bytes([0x38, 0x7E, 0x3C, 0xF0, 0x80, 0x01, 0, 0]) +
       struct.pack("<i", -5)),
    "extra_keys": assemble({"t": {"x": [1, {"y": [None, True, False, -1.5e3]}],
                                  "dtype": "I64", "shape": [1, 1, 1, 1, 1, 1, 1, 1],
                                  "data_offsets": [0, 8]}},
                           struct.pack("<q", -(1 << 62))),
    "escapes": (lambda h: struct.pack("<Q", len(h)) + h + b"\x01\x02")(
        b'{"\\u00e9\\ud83d\\ude00\\n\\/":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}'),
}
import os
os.makedirs("../fuzz/corpus_safetensors", exist_ok=True)
for name, blob in corpus.items():
    open("../fuzz/corpus_safetensors/" + name + ".safetensors", "wb").write(blob)
