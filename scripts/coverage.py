#!/usr/bin/env python3
"""coverage.py: current architectures through sinter, on the GPU machine.

Small configurations (random weights from a fixed seed, seconds to export;
the machine has no network) of torchvision classification and segmentation
models, Hugging Face encoders and decoders, and a diffusion-style UNet
block, each exported with both PyTorch exporters (torch.onnx.export with
dynamo=False at opset 17, and dynamo=True, PyTorch's default, at opset 18),
then per export:

  sinter import M.onnx -o M.sir                                  (the IR)
  sinter run M.sir  --device ref  --inputs IN -o OUT             (fp64 oracle)
  sinter run M.onnx --device cuda --precision fp32 --inputs IN -o OUT
  sinter run M.onnx --device cuda --precision bf16 --inputs IN -o OUT

Every output is compared with PyTorch's fp32 CPU output by relative L2
error: ref and cuda fp32 below --tol (1e-4), cuda bf16 below --tol-bf16
(5e-2, the bound a bf16 network of a few layers stays within).
onnxruntime runs each export too, to tell an exporter's error from
sinter's. A failure at any step is a row marked FAIL with its reason,
never a crash.

usage: scripts/coverage.py [SINTER] [--models a,b|all] [--exporters torchscript,dynamo]
           [--devices ref,cuda,bf16] [--work DIR] [--write-docs docs/ONNX.md]
           [--save-small tests/onnx/models] [--list] [--tol T] [--tol-bf16 T]
SINTER defaults to build-gpu/sinter. Prints the table last; writes
coverage.json and the failing steps' logs to $OUT when set. --write-docs
replaces the table between the coverage markers of that file;
--save-small keeps every torchscript export under 1 MB (with its inputs
and PyTorch's outputs) in that directory, where CI runs it on ref
(tests/onnx/run_models.py). Exit 0 if every row passed, else 1.
"""
import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
from run_node_tests import read_st, rel_l2, run_cmd, sanitize, write_st  # noqa: E402

SEED = 0
TOKENS = 16
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"


def last_line(text, limit=300):
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return (lines[-1] if lines else "(no message)")[:limit]


def exc_reason(ex):
    return f"{type(ex).__name__}: {last_line(str(ex))}"


# ---- the models: name -> (family, builder) ----
# A builder returns (module, example args, input names, output names); the
# module returns a tensor or a tuple of tensors (no dicts, no caches).

def _gen(k=1):
    import torch
    return torch.Generator().manual_seed(SEED + k)


def _image(n=1, c=3, h=64, w=64):
    import torch
    return torch.randn(n, c, h, w, generator=_gen())


def _tv(name, size=64, **kw):
    def make():
        import torch
        import torchvision
        torch.manual_seed(SEED)
        m = getattr(torchvision.models, name)(weights=None, **kw).eval()
        return m, (_image(h=size, w=size),), ["pixel_values"], ["logits"]
    return make


def _tv_vit():
    import torch
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(SEED)
    m = VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=2, hidden_dim=64,
                          mlp_dim=128, num_classes=10).eval()
    # torchvision starts the head at zero: every output would be 0 and any
    # comparison would pass; a random head makes the logits depend on the body
    with torch.no_grad():
        torch.nn.init.normal_(m.heads.head.weight, std=0.5)
        torch.nn.init.normal_(m.heads.head.bias, std=0.5)
    return m, (_image(),), ["pixel_values"], ["logits"]


def _tv_swin():
    import torch
    from torchvision.models.swin_transformer import SwinTransformer
    torch.manual_seed(SEED)
    m = SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                        window_size=[4, 4], num_classes=10).eval()
    return m, (_image(),), ["pixel_values"], ["logits"]


def _tv_seg(name):
    def make():
        import torch
        import torchvision

        class Out(torch.nn.Module):
            def __init__(self):
                super().__init__()
                kw = {"weights": None, "weights_backbone": None, "num_classes": 5}
                if name != "lraspp_mobilenet_v3_large":
                    kw["aux_loss"] = False
                self.m = getattr(torchvision.models.segmentation, name)(**kw).eval()

            def forward(self, x):
                return self.m(x)["out"]
        torch.manual_seed(SEED)
        return Out().eval(), (_image(),), ["pixel_values"], ["logits"]
    return make


def _ids(vocab, n=TOKENS):
    import torch
    return torch.randint(0, vocab, (1, n), generator=_gen())


def _mask(n=TOKENS, pad=3):
    """Attention mask with the last `pad` tokens padded: the exports keep
    the mask arithmetic (IsNaN, CumSum, GatherElements, Where)."""
    import torch
    m = torch.ones(1, n, dtype=torch.int64)
    m[:, n - pad:] = 0
    return m


def _hf(cls_name, cfg_name, cfg, mask=True, vocab=1000, out="last_hidden_state"):
    def make():
        import torch
        import transformers
        torch.manual_seed(SEED)
        c = getattr(transformers, cfg_name)(**cfg)
        for k, v in (("use_cache", False), ("_attn_implementation", "eager")):
            try:
                setattr(c, k, v)
            except Exception:
                pass

        class Wrap(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = getattr(transformers, cls_name)(c).eval()

            def forward(self, input_ids, attention_mask=None):
                kw = {"input_ids": input_ids, "return_dict": True}
                if attention_mask is not None:
                    kw["attention_mask"] = attention_mask
                return getattr(self.m(**kw), out)
        args = (_ids(vocab), _mask()) if mask else (_ids(vocab),)
        names = ["input_ids", "attention_mask"] if mask else ["input_ids"]
        return Wrap().eval(), args, names, [out]
    return make


def _hf_pixels(cls_name, cfg_name, cfg, shape, out="last_hidden_state", key="pixel_values"):
    def make():
        import torch
        import transformers
        torch.manual_seed(SEED)
        c = getattr(transformers, cfg_name)(**cfg)
        try:
            c._attn_implementation = "eager"
        except Exception:
            pass

        class Wrap(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = getattr(transformers, cls_name)(c).eval()

            def forward(self, x):
                return getattr(self.m(**{key: x, "return_dict": True}), out)
        x = torch.randn(*shape, generator=_gen())
        return Wrap().eval(), (x,), [key], [out]
    return make


def _whisper():
    import torch
    import transformers
    torch.manual_seed(SEED)
    c = transformers.WhisperConfig(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                                   decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128,
                                   num_mel_bins=80, max_source_positions=100, vocab_size=1000,
                                   pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    try:
        c._attn_implementation = "eager"
    except Exception:
        pass

    class Enc(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = transformers.WhisperModel(c).get_encoder().eval()

        def forward(self, input_features):
            return self.m(input_features=input_features, return_dict=True).last_hidden_state
    x = torch.randn(1, 80, 200, generator=_gen())
    return Enc().eval(), (x,), ["input_features"], ["last_hidden_state"]


def _unet_block():
    """A diffusion-style block: GroupNorm, SiLU, conv, self-attention over
    the pixels, a ConvTranspose up path and a Resize (nearest and bilinear)."""
    import torch
    import torch.nn.functional as F

    class Block(torch.nn.Module):
        def __init__(self, c=32):
            super().__init__()
            self.n1, self.c1 = torch.nn.GroupNorm(8, c), torch.nn.Conv2d(c, c, 3, padding=1)
            self.n2, self.c2 = torch.nn.GroupNorm(8, c), torch.nn.Conv2d(c, c, 3, padding=1)
            self.na, self.qkv, self.proj = torch.nn.GroupNorm(8, c), torch.nn.Linear(c, 3 * c), torch.nn.Linear(c, c)
            self.up = torch.nn.ConvTranspose2d(c, c // 2, 4, stride=2, padding=1)
            self.out = torch.nn.Conv2d(c // 2 + c, 8, 3, padding=1)

        def forward(self, x):
            h = self.c1(F.silu(self.n1(x)))
            h = x + self.c2(F.silu(self.n2(h)))
            b, c, hh, ww = h.shape
            t = self.na(h).flatten(2).transpose(1, 2)
            q, k, v = self.qkv(t).reshape(b, -1, 3, 4, c // 4).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) / (c // 4) ** 0.5, dim=-1) @ v
            h = h + self.proj(a.transpose(1, 2).reshape(b, -1, c)).transpose(1, 2).reshape(b, c, hh, ww)
            u = self.up(h)
            r = F.interpolate(h, scale_factor=2, mode="nearest") + \
                F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
            return self.out(torch.cat([u, r], dim=1))
    torch.manual_seed(SEED)
    return Block().eval(), (_image(c=32, h=16, w=16),), ["sample"], ["out"]


_TXT = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=128, max_position_embeddings=128)
_DEC = dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)

MODELS = {
    "resnet18": ("torchvision", _tv("resnet18", num_classes=10)),
    "resnext50": ("torchvision", _tv("resnext50_32x4d", num_classes=10)),
    "mobilenet_v2": ("torchvision", _tv("mobilenet_v2", num_classes=10)),
    "mobilenet_v3": ("torchvision", _tv("mobilenet_v3_small", num_classes=10)),
    "efficientnet_b0": ("torchvision", _tv("efficientnet_b0", num_classes=10)),
    "regnet_y_400mf": ("torchvision", _tv("regnet_y_400mf", num_classes=10)),
    "convnext_tiny": ("torchvision", _tv("convnext_tiny", num_classes=10)),
    "vit": ("torchvision", _tv_vit),
    "swin": ("torchvision", _tv_swin),
    "deeplabv3": ("torchvision seg", _tv_seg("deeplabv3_mobilenet_v3_large")),
    "fcn": ("torchvision seg", _tv_seg("fcn_resnet50")),
    "lraspp": ("torchvision seg", _tv_seg("lraspp_mobilenet_v3_large")),
    "bert": ("transformers", _hf("BertModel", "BertConfig", _TXT)),
    "roberta": ("transformers", _hf("RobertaModel", "RobertaConfig", dict(_TXT, max_position_embeddings=130))),
    "distilbert": ("transformers", _hf("DistilBertModel", "DistilBertConfig",
                                       dict(vocab_size=1000, dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                                            max_position_embeddings=128))),
    "gpt2": ("transformers", _hf("GPT2Model", "GPT2Config",
                                 dict(vocab_size=1000, n_embd=64, n_layer=2, n_head=2, n_positions=128))),
    "llama": ("transformers", _hf("LlamaModel", "LlamaConfig", _DEC)),
    "mistral": ("transformers", _hf("MistralModel", "MistralConfig", _DEC)),
    "qwen2": ("transformers", _hf("Qwen2Model", "Qwen2Config", _DEC)),
    "t5_encoder": ("transformers", _hf("T5EncoderModel", "T5Config",
                                       dict(vocab_size=1000, d_model=64, d_ff=128, d_kv=32, num_layers=2,
                                            num_heads=2))),
    "whisper_encoder": ("transformers", _whisper),
    "clip_vision": ("transformers", _hf_pixels("CLIPVisionModel", "CLIPVisionConfig",
                                               dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                                    num_attention_heads=2, image_size=32, patch_size=8),
                                               (1, 3, 32, 32))),
    "clip_text": ("transformers", _hf("CLIPTextModel", "CLIPTextConfig",
                                      dict(vocab_size=1000, hidden_size=64, intermediate_size=128,
                                           num_hidden_layers=2, num_attention_heads=2,
                                           max_position_embeddings=77))),
    "vit_hf": ("transformers", _hf_pixels("ViTModel", "ViTConfig",
                                          dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                               intermediate_size=128, image_size=32, patch_size=8),
                                          (1, 3, 32, 32))),
    "segformer": ("transformers", _hf_pixels("SegformerForSemanticSegmentation", "SegformerConfig",
                                             dict(num_encoder_blocks=4, depths=[1, 1, 1, 1],
                                                  hidden_sizes=[16, 32, 64, 128], num_attention_heads=[1, 1, 2, 2],
                                                  decoder_hidden_size=64, num_labels=5),
                                             (1, 3, 64, 64), out="logits")),
    "unet_block": ("diffusion", _unet_block),
}


# ---- export and checks ----

def export(model, args, path, exporter, in_names, out_names):
    import torch
    if exporter == "torchscript":
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17,
                          input_names=in_names, output_names=out_names, do_constant_folding=True)
    else:
        torch.onnx.export(model, args, path, dynamo=True, opset_version=18,
                          input_names=in_names, output_names=out_names, external_data=True)
    if not os.path.isfile(path):
        raise RuntimeError(f"the exporter wrote no {path}")


def graph_io(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    init = {t.name for t in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in init], [o.name for o in m.graph.output]


def model_bytes(path):
    """The export's size with its external data files."""
    d = os.path.dirname(path)
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
               if f.startswith(os.path.basename(path)) or f.endswith(".data"))


class Row:
    def __init__(self, model, family, exporter):
        self.model, self.family, self.exporter = model, family, exporter
        self.status, self.reason = "ok", ""
        self.err, self.secs = {}, {}
        self.onnx = self.sir = self.inputs = None
        self.refs = {}     # output name (as ONNX spells it) -> PyTorch's output

    def fail(self, step, reason):
        if self.status == "ok":
            self.status, self.reason = "FAIL", f"{step}: {reason}"
        else:
            self.reason += f"; {step}: {reason}"

    def as_json(self):
        return {"model": self.model, "family": self.family, "exporter": self.exporter,
                "status": self.status, "reason": self.reason, "rel_l2": self.err, "seconds": self.secs}


def sinter_step(row, step, cmd, opath, tol, timeout, logs):
    """Runs one sinter command and checks every output against PyTorch's:
    the worst relative L2 error is the step's."""
    t0 = time.monotonic()
    rc, text = run_cmd(cmd, timeout)
    row.secs[step] = round(time.monotonic() - t0, 2)
    if logs:
        with open(os.path.join(logs, f"{row.model}-{row.exporter}-{step}.log"), "w") as f:
            f.write(" ".join(cmd) + "\n" + text)
    if rc != 0:
        row.fail(step, f"exit {rc}: {last_line(text)}")
        return
    try:
        got = read_st(opath)
    except (OSError, ValueError) as ex:
        row.fail(step, exc_reason(ex))
        return
    worst = 0.0
    for name, ref in row.refs.items():
        g = got.get(name)  # names kept as ONNX spells them
        if g is None:
            g = got.get(sanitize(name))
        if g is None and len(got) == 1 and len(row.refs) == 1:
            g = next(iter(got.values()))
        if g is None:
            row.fail(step, f"no output {name} in {sorted(got)}")
            return
        if tuple(g.shape) != tuple(ref.shape):
            row.fail(step, f"{name}: shape {list(g.shape)}, PyTorch {list(ref.shape)}")
            return
        worst = max(worst, rel_l2(ref, g.astype(np.float32)))
    row.err[step] = worst
    if not worst < tol:
        row.fail(step, f"rel L2 {worst:.3g} > {tol:g}")


def ort_check(path, feeds, refs):
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    outs = dict(zip(names, sess.run(names, feeds)))
    return max(rel_l2(r, outs[n].astype(np.float32)) for n, r in refs.items() if n in outs) \
        if any(n in outs for n in refs) else None


# ---- the table ----

def fmt_err(r, k):
    v = r.err.get(k)
    return "–" if v is None else f"{v:.1e}"


def table_md(rows, versions, tol, tol_bf16):
    day = datetime.date.today().isoformat()
    lines = [BEGIN, "",
             f"`scripts/coverage.py` on the GPU machine ({day}; "
             + ", ".join(f"{k} {v}" for k, v in versions.items()) + "): small configurations with "
             "random weights, exported with both PyTorch exporters (TorchScript at opset 17, dynamo at "
             f"opset 18), compared with PyTorch's fp32 CPU output by relative L2 (worst output): ref and "
             f"cuda fp32 pass below {tol:g}, cuda bf16 below {tol_bf16:g}.", "",
             "| model | family | exporter | onnxruntime | sinter ref | cuda fp32 | cuda bf16 | import s | status |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        st = "ok" if r.status == "ok" else "FAIL: " + r.reason.replace("|", "\\|")
        lines.append(f"| {r.model} | {r.family} | {r.exporter} | {fmt_err(r, 'onnxruntime')} | "
                     f"{fmt_err(r, 'ref')} | {fmt_err(r, 'cuda')} | {fmt_err(r, 'bf16')} | "
                     f"{r.secs.get('import', '–')} | {st} |")
    lines += ["", END]
    return "\n".join(lines)


def write_docs(path, text):
    with open(path) as f:
        doc = f.read()
    if BEGIN in doc and END in doc:
        doc = doc[:doc.index(BEGIN)] + text + doc[doc.index(END) + len(END):]
    else:
        doc = doc.rstrip("\n") + "\n\n## Coverage of current architectures\n\n" + text + "\n"
    with open(path, "w") as f:
        f.write(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sinter", nargs="?", default=os.path.join(ROOT, "build-gpu", "sinter"))
    ap.add_argument("--models", default="all")
    ap.add_argument("--exporters", default="torchscript,dynamo")
    ap.add_argument("--devices", default="ref,cuda,bf16", help="ref, cuda (fp32), bf16 (cuda --precision bf16)")
    ap.add_argument("--work", help="directory for the exports (default: a temporary one)")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--tol-bf16", type=float, default=5e-2)
    ap.add_argument("--timeout", type=float, default=900, help="seconds per sinter command")
    ap.add_argument("--write-docs", help="replace the coverage table in this file (docs/ONNX.md)")
    ap.add_argument("--save-small", help="keep torchscript exports under 1 MB here, for CI")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    a = ap.parse_args()
    if a.list:
        for k, (fam, _) in MODELS.items():
            print(f"{k:18} {fam}")
        return 0
    names = list(MODELS) if a.models == "all" else a.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"coverage: unknown models {unknown}; --list shows them", file=sys.stderr)
        return 2
    out = os.environ.get("OUT")
    logs = os.path.join(out, "coverage-logs") if out else None
    if logs:
        os.makedirs(logs, exist_ok=True)
    sinter = os.path.abspath(a.sinter)
    if not os.access(sinter, os.X_OK):
        print(f"coverage: {sinter}: not an executable (build it first)", file=sys.stderr)
        return 2
    work = a.work or tempfile.mkdtemp(prefix="sinter-coverage-")
    os.makedirs(work, exist_ok=True)
    os.environ.setdefault("SINTER_CACHE_DIR", os.path.join(work, "kcache"))
    devices = a.devices.split(",")
    versions = {}
    for mod in ("torch", "torchvision", "transformers", "onnx", "onnxruntime"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception as ex:
            versions[mod] = f"missing ({exc_reason(ex)})"
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))

    rows = []
    for name in names:
        family, make = MODELS[name]
        try:
            import torch
            m, args, in_names, out_names = make()
            with torch.no_grad():
                ref = m(*args)
            ref = ref if isinstance(ref, (tuple, list)) else (ref,)
            refs = {n: r.detach().float().numpy().astype(np.float32) for n, r in zip(out_names, ref)}
            feeds = [x.numpy() for x in args]
        except Exception as ex:
            for exporter in a.exporters.split(","):
                r = Row(name, family, exporter)
                r.fail("pytorch", exc_reason(ex))
                rows.append(r)
            traceback.print_exc()
            continue
        for exporter in a.exporters.split(","):
            r = Row(name, family, exporter)
            rows.append(r)
            r.refs = refs
            d = os.path.join(work, f"{name}-{exporter}")
            os.makedirs(d, exist_ok=True)
            r.onnx = os.path.join(d, "model.onnx")
            t0 = time.monotonic()
            try:
                export(m, args, r.onnx, exporter, in_names, out_names)
                gin, gout = graph_io(r.onnx)
            except Exception as ex:
                r.fail("export", exc_reason(ex))
                print(f"{name} {exporter}: export failed: {exc_reason(ex)}")
                continue
            r.secs["export"] = round(time.monotonic() - t0, 2)
            # the exporter may drop an input it does not need (a mask of ones)
            byname = dict(zip(in_names, feeds))
            if not set(gin) <= set(byname):
                r.fail("export", f"graph inputs {gin}, the model takes {in_names}")
                continue
            r.inputs = os.path.join(d, "inputs.safetensors")
            write_st(r.inputs, {n: byname[n] for n in gin})  # named as the model names them
            r.refs = dict(zip(gout, refs.values())) if len(gout) == len(refs) else refs
            try:
                r.err["onnxruntime"] = ort_check(r.onnx, {n: byname[n] for n in gin},
                                                 {g: v for g, v in zip(gout, refs.values())})
            except Exception as ex:  # informative only
                print(f"{name} {exporter}: onnxruntime: {exc_reason(ex)}")
            r.sir = os.path.join(d, "model.sir")
            t0 = time.monotonic()
            rc, text = run_cmd([sinter, "import", r.onnx, "-o", r.sir], a.timeout)
            r.secs["import"] = round(time.monotonic() - t0, 2)
            if rc != 0:
                r.fail("import", f"exit {rc}: {last_line(text)}")
                r.sir = None
            print(f"{name} {exporter}: exported in {r.secs['export']} s, "
                  f"import {'ok' if r.sir else 'FAILED'} in {r.secs['import']} s", flush=True)
            if a.save_small and exporter == "torchscript" and r.sir and model_bytes(r.onnx) < 1 << 20:
                dst = os.path.join(a.save_small, name)
                os.makedirs(dst, exist_ok=True)
                shutil.copy(r.onnx, os.path.join(dst, "model.onnx"))
                shutil.copy(r.inputs, os.path.join(dst, "inputs.safetensors"))
                write_st(os.path.join(dst, "expected.safetensors"), r.refs)
            if r.sir and "ref" in devices:
                o = os.path.join(d, "out.ref.safetensors")
                sinter_step(r, "ref", [sinter, "run", r.sir, "--device", "ref", "--inputs", r.inputs, "-o", o],
                            o, a.tol, a.timeout, logs)
            for dev, prec, tol in (("cuda", "fp32", a.tol), ("bf16", "bf16", a.tol_bf16)):
                if dev in devices:
                    o = os.path.join(d, f"out.{dev}.safetensors")
                    sinter_step(r, dev, [sinter, "run", r.onnx, "--device", "cuda", "--precision", prec,
                                         "--inputs", r.inputs, "-o", o], o, tol, a.timeout, logs)
        del m

    print(f"\n{'model':18} {'exporter':12} {'ort':>8} {'ref':>8} {'cuda':>8} {'bf16':>8} {'import':>7}  status")
    for r in rows:
        print(f"{r.model:18} {r.exporter:12} {fmt_err(r, 'onnxruntime'):>8} {fmt_err(r, 'ref'):>8} "
              f"{fmt_err(r, 'cuda'):>8} {fmt_err(r, 'bf16'):>8} {str(r.secs.get('import', '-')):>7}  "
              f"{r.status}{'  ' + r.reason if r.reason else ''}")
    ok = sum(r.status == "ok" for r in rows)
    print(f"coverage: {ok} of {len(rows)} rows passed")
    if a.write_docs:
        write_docs(a.write_docs, table_md(rows, versions, a.tol, a.tol_bf16))
        print(f"coverage: table written to {a.write_docs}")
    if out:
        with open(os.path.join(out, "coverage.json"), "w") as f:
            json.dump({"versions": versions, "tol": a.tol, "tol_bf16": a.tol_bf16,
                       "rows": [r.as_json() for r in rows]}, f, indent=1)
        if a.write_docs:
            shutil.copy(a.write_docs, os.path.join(out, os.path.basename(a.write_docs)))
    return 0 if rows and ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
