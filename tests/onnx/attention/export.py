#!/usr/bin/env python3
"""export.py: the attention forms exporters write, as tiny ONNX files (one
attention layer each, random weights, dynamo exporter at opset 18), for
tests/unit/test_attention_forms.c. Each must become one
scaled_dot_product_attention on the default pipeline, in fp32 and bf16.

usage: export.py [OUTDIR] [--only a,b]   (needs torch, onnx, transformers)
Run from a venv with them; the files are committed, CI only reads them.
"""
import argparse
import math
import os

import torch
import torch.nn as nn

B, L, D, H, HKV = 2, 8, 32, 4, 2
HD = D // H


class Proj(nn.Module):
    def __init__(self, hkv=H):
        super().__init__()
        self.q = nn.Linear(D, H * HD)
        self.k = nn.Linear(D, hkv * HD)
        self.v = nn.Linear(D, hkv * HD)
        self.o = nn.Linear(H * HD, D)
        self.hkv = hkv

    def heads(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, H, HD).transpose(1, 2)
        k = self.k(x).view(b, n, self.hkv, HD).transpose(1, 2)
        v = self.v(x).view(b, n, self.hkv, HD).transpose(1, 2)
        return q, k, v

    def out(self, a):
        b, h, n, d = a.shape
        return self.o(a.transpose(1, 2).reshape(b, n, h * d))


class QKScaleMaskedFill(Proj):
    """torch's sdpa decomposition: q and k each times sqrt(scale); a bool
    keep mask through masked_fill(~mask, -inf)."""
    def forward(self, x, mask):
        q, k, v = self.heads(x)
        s = math.sqrt(1 / math.sqrt(HD))
        sc = (q * s) @ (k * s).transpose(-2, -1)
        sc = sc.masked_fill(~mask[:, None, None, :], float("-inf"))
        return self.out(torch.softmax(sc, -1) @ v)


class RepeatInterleaveWhere(Proj):
    """GQA by repeat_interleave; the scale a div on the scores; an additive
    mask where(mask, 0, -inf) from a bool mask."""
    def __init__(self):
        super().__init__(HKV)

    def forward(self, x, mask):
        q, k, v = self.heads(x)
        k = k.repeat_interleave(H // HKV, dim=1)
        v = v.repeat_interleave(H // HKV, dim=1)
        m = torch.where(mask[:, None, None, :], 0.0, float("-inf"))
        sc = q @ k.transpose(-2, -1) / math.sqrt(HD) + m
        return self.out(torch.softmax(sc, -1) @ v)


class TileIntMask(Proj):
    """GQA by unsqueeze, repeat (Tile) and reshape; an integer padding mask
    as HF builds it, (1 - mask) * finfo.min, plus a causal triu(full(min));
    the scale on k as a div."""
    def __init__(self):
        super().__init__(HKV)

    def forward(self, x, mask):
        q, k, v = self.heads(x)
        r = H // HKV
        k = k[:, :, None].repeat(1, 1, r, 1, 1).reshape(B, H, L, HD)
        v = v[:, :, None].repeat(1, 1, r, 1, 1).reshape(B, H, L, HD)
        mn = torch.finfo(torch.float32).min
        pad = (1.0 - mask[:, None, None, :].to(torch.float32)) * mn
        causal = torch.triu(torch.full((L, L), mn), 1)
        m = torch.clamp(pad + causal, min=mn)
        sc = q @ (k / math.sqrt(HD)).transpose(-2, -1) + m
        return self.out(torch.softmax(sc, -1) @ v)


class GatherCausalArange(Proj):
    """GQA by index_select (Gather) of kv heads; a causal mask from a
    comparison of aranges, with a padding mask combined by min, applied
    by sub of a positive penalty."""
    def __init__(self):
        super().__init__(HKV)

    def forward(self, x, mask):
        q, k, v = self.heads(x)
        idx = torch.arange(H) // (H // HKV)
        k = k.index_select(1, idx)
        v = v.index_select(1, idx)
        i = torch.arange(L)
        allowed = (i[None, :] <= i[:, None]).to(torch.float32)
        allowed = torch.minimum(allowed[None, None], mask[:, None, None, :].to(torch.float32))
        sc = (q @ k.transpose(-2, -1)) * (HD ** -0.5) - (1.0 - allowed) * 1e30
        return self.out(torch.softmax(sc, -1) @ v)


class BiasAndMask(Proj):
    """T5's form: no scale; a position bias and a mask, each added."""
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(1, H, L, L))

    def forward(self, x, mask):
        q, k, v = self.heads(x)
        m = (1.0 - mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        sc = q @ k.transpose(-2, -1) + self.bias + m
        return self.out(torch.softmax(sc, -1) @ v)


class CastSoftmax(Proj):
    """Hugging Face's eager path in bf16: softmax(dtype=float32).to(bf16)."""
    def forward(self, x, mask):
        q, k, v = self.heads(x)
        sc = q @ k.transpose(-2, -1) * HD ** -0.5
        sc = sc.masked_fill(~mask[:, None, None, :], torch.finfo(sc.dtype).min)
        p = torch.softmax(sc, -1, dtype=torch.float32).to(q.dtype)
        return self.out(p @ v)


class MHA(nn.Module):
    """torch.nn.MultiheadAttention: in_proj as one product, chunked."""
    def __init__(self):
        super().__init__()
        self.m = nn.MultiheadAttention(D, H, batch_first=True)

    def forward(self, x, mask):
        return self.m(x, x, x, key_padding_mask=~mask, need_weights=False)[0]


def hf_llama(impl, dtype=torch.float32, arch="Llama", **extra):
    import transformers
    cfg = getattr(transformers, arch + "Config")(
        vocab_size=64, hidden_size=D, intermediate_size=64, num_hidden_layers=1, num_attention_heads=H,
        num_key_value_heads=HKV, max_position_embeddings=64, attn_implementation=impl, **extra)
    m = getattr(transformers, arch + "ForCausalLM")(cfg).to(dtype).eval()

    class W(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, ids, mask):
            return self.m(input_ids=ids, attention_mask=mask, use_cache=False).logits
    return W()


def hf_vit_sdpa():
    """HF's sdpa path with no mask: the exporter writes a zero mask and
    torch's isnan guard."""
    from transformers import ViTConfig, ViTModel
    m = ViTModel(ViTConfig(hidden_size=D, num_hidden_layers=1, num_attention_heads=H, intermediate_size=64,
                           image_size=16, patch_size=4, attn_implementation="sdpa")).eval()

    class W(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, x, mask):
            return self.m(pixel_values=x).last_hidden_state
    return W()


def mask_input(kind=torch.bool):
    m = torch.ones(B, L, dtype=kind)
    m[1, L - 3:] = 0
    return m


FORMS = {
    "qk_scale_masked_fill": lambda: (QKScaleMaskedFill(), torch.float32, torch.bool),
    "repeat_interleave_where": lambda: (RepeatInterleaveWhere(), torch.float32, torch.bool),
    "tile_int_mask": lambda: (TileIntMask(), torch.float32, torch.int64),
    "gather_causal_arange": lambda: (GatherCausalArange(), torch.float32, torch.bool),
    "bias_and_mask": lambda: (BiasAndMask(), torch.float32, torch.int64),
    "cast_softmax_bf16": lambda: (CastSoftmax().to(torch.bfloat16), torch.bfloat16, torch.bool),
    "mha": lambda: (MHA(), torch.float32, torch.bool),
    "llama_eager": lambda: (hf_llama("eager"), None, torch.int64),
    "llama_sdpa": lambda: (hf_llama("sdpa"), None, torch.int64),
    "llama_eager_bf16": lambda: (hf_llama("eager", torch.bfloat16), None, torch.int64),
    "vit_sdpa": lambda: (hf_vit_sdpa(), "image", None),
    # as benchmarks/suite_models.py exports them: input_ids only, HF's
    # default (sdpa) attention, the causal mask an initializer
    "llama_causal": lambda: (hf_llama("sdpa"), None, None),
    "mistral_sliding_window": lambda: (hf_llama("sdpa", arch="Mistral", sliding_window=4), None, None),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", nargs="?", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    torch.manual_seed(0)
    for name, make in FORMS.items():
        if a.only and name not in a.only.split(","):
            continue
        model, xdt, mdt = make()
        model.eval()
        if xdt == "image":  # one input: no mask
            x = torch.randn(B, 3, 16, 16)
        else:
            x = torch.randint(0, 64, (B, L)) if xdt is None else torch.randn(B, L, D, dtype=xdt)
        args = (x, mask_input(mdt)) if mdt is not None else (x, None)
        path = os.path.join(a.outdir, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, args, path, dynamo=True, opset_version=18,
                              input_names=["x", "mask"][:len([t for t in args if t is not None])],
                              output_names=["y"], external_data=False)
        # the nodes' metadata (stack traces, class paths) is most of a
        # file this small, and names this machine's paths
        import onnx
        m = onnx.load(path)
        for n in m.graph.node:
            del n.metadata_props[:]
        onnx.save(m, path)
        print(f"{name}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
