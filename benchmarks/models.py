"""models.py: the benchmark configurations, the PyTorch models that match
samples/*.sir, safetensors I/O, and each row's work (FLOPs, bytes).

torch is imported inside the functions that need it, so that run.py --dry-run
can use the configuration table on a machine without torch.
"""
import json
import math
import struct

# ---- configurations ----------------------------------------------------------

# name -> model, batch, precision. The precision is what sinter's
# --precision gets; PyTorch runs the same setting (bf16: the model and input
# cast to bfloat16; tf32: fp32 tensors with TF32 allowed in matmuls and
# convolutions).
CONFIGS = {
    "mlp_bs64": dict(model="mlp", batch=64, precision="bf16"),
    "resnet50_bs1": dict(model="resnet50", batch=1, precision="bf16"),
    "resnet50_bs32": dict(model="resnet50", batch=32, precision="bf16"),
    "gpt2_bs1": dict(model="gpt2", batch=1, precision="bf16"),
    "gpt2_bs8": dict(model="gpt2", batch=8, precision="bf16"),
    "resnet50_bs32_tf32": dict(model="resnet50", batch=32, precision="tf32"),
}

# per model: the sample, its input and output names, what one item of the
# batch is called (for throughput), and the channels-last layout in PyTorch.
MODELS = {
    "mlp": dict(sample="samples/mlp.sir", input="x", output="y", unit="samples"),
    "resnet50": dict(sample="samples/resnet50.sir", input="x", output="logits", unit="images",
                     channels_last=True),
    "gpt2": dict(sample="samples/gpt2.sir", input="input_ids", output="last_hidden_state",
                 unit="tokens", seq=512),
}

# Relative L2 bound against the fp32 reference, per precision.
TOLERANCE = {"bf16": 2e-2, "fp16": 1e-2, "tf32": 1e-3, "fp32": 1e-5}

# Bytes per element of weights and activations in each precision.
ELT_BYTES = {"bf16": 2, "fp16": 2, "tf32": 4, "fp32": 4}


def items_per_call(cfg):
    """Throughput unit count of one call: samples, images or tokens."""
    m = MODELS[cfg["model"]]
    return cfg["batch"] * m.get("seq", 1)


# ---- safetensors (https://github.com/huggingface/safetensors#format) ----------

NP_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "I64": "int64",
             "I32": "int32", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


def _torch_st_dtypes():
    import torch
    return {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
            torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
            torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}


def save_safetensors(path, tensors):
    """tensors: {name: torch.Tensor}. An 8-byte little-endian header length,
    the JSON header padded with spaces to a multiple of 8, the raw bytes."""
    import torch
    names = _torch_st_dtypes()
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        if t.dtype not in names:
            raise ValueError("%s: dtype %s has no safetensors name" % (name, t.dtype))
        flat = t.detach().cpu().contiguous().reshape(-1)
        if flat.dtype == torch.bfloat16:  # numpy has no bfloat16: move the bits
            flat = flat.view(torch.int16)
        raw = flat.numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fp:
        fp.write(struct.pack("<Q", len(text)))
        fp.write(text)
        for raw in blobs:
            fp.write(raw)


def load_safetensors(path):
    """{name: numpy array}; BF16 widened to float32 exactly."""
    import numpy as np
    with open(path, "rb") as fp:
        data = fp.read()
    if len(data) < 8:
        raise ValueError("%s: shorter than a safetensors header" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError("%s: header runs past the end of the file" % path)
    header = json.loads(data[8:8 + n])
    out, base = {}, 8 + n
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        if base + e > len(data) or b > e:
            raise ValueError("%s: tensor %s: offsets out of range" % (path, name))
        raw = data[base + b:base + e]
        if info["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = u.view(np.float32)
        elif info["dtype"] in NP_DTYPES:
            arr = np.frombuffer(raw, dtype=NP_DTYPES[info["dtype"]])
        else:
            raise ValueError("%s: tensor %s: dtype %s not handled" % (path, name, info["dtype"]))
        out[name] = arr.reshape(info["shape"])
    return out


def rel_l2(got, ref):
    """Relative L2 error of got against ref, in float64: ||got - ref|| /
    ||ref||; inf on NaN/Inf in got or a shape mismatch. numpy arrays, or
    flat lists of numbers (the dry run has no numpy)."""
    if isinstance(got, list) and isinstance(ref, list):
        if len(got) != len(ref) or not all(math.isfinite(g) for g in got):
            return float("inf")
        num = math.sqrt(sum((g - r) ** 2 for g, r in zip(got, ref)))
        den = math.sqrt(sum(r * r for r in ref))
        return num / (den if den > 0 else 1.0)
    import numpy as np
    g = np.asarray(got, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape or not np.isfinite(g).all():
        return float("inf")
    den = np.linalg.norm(r)
    return float(np.linalg.norm(g - r) / (den if den > 0 else 1.0))


# ---- the PyTorch models ------------------------------------------------------

def randomize_batch_norms(model):
    """Fresh batch norms are identities in eval mode; give them values so a
    folding or eps mistake shows in the outputs."""
    import torch
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            c = m.num_features
            with torch.no_grad():
                m.weight.copy_(0.75 + 0.5 * torch.rand(c, generator=g))
                m.bias.copy_(0.2 * torch.rand(c, generator=g) - 0.1)
                m.running_mean.copy_(0.2 * torch.rand(c, generator=g) - 0.1)
                m.running_var.copy_(0.5 + torch.rand(c, generator=g))


def _gpt2_class():
    import torch

    class GPT2Hidden(torch.nn.Module):
        """GPT2Model returning last_hidden_state as a plain tensor; its
        state_dict keys are GPT2Model's (wte.weight, h.0.ln_1.weight, ...)."""

        def __init__(self):
            super().__init__()
            from transformers import GPT2Config, GPT2Model
            cfg = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12,
                             n_head=12, activation_function="gelu_new",
                             layer_norm_epsilon=1e-5)
            self.inner = GPT2Model(cfg)

        def forward(self, ids):
            return self.inner(input_ids=ids, use_cache=False).last_hidden_state

        def state_dict(self, *a, **k):
            return self.inner.state_dict(*a, **k)

        def load_state_dict(self, sd, strict=True, **k):
            return self.inner.load_state_dict(sd, strict=strict, **k)

    return GPT2Hidden


def build(model):
    """The PyTorch model `model` ("mlp", "resnet50", "gpt2") in eval mode on
    the CPU in fp32, with torch.manual_seed(0) and randomized batch norms."""
    import torch
    torch.manual_seed(0)
    if model == "mlp":
        layers = []
        for _ in range(4):
            layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU()]
        m = torch.nn.Sequential(*layers)
    elif model == "resnet50":
        import torchvision
        m = torchvision.models.resnet50()
        randomize_batch_norms(m)
    elif model == "gpt2":
        m = _gpt2_class()()
    else:
        raise ValueError("unknown model %s" % model)
    return m.eval()


def make_input(cfg):
    """The random input of a configuration (CPU): fp32 N(0,1) for mlp and
    images, int64 token ids for gpt2; seeded by the batch size."""
    import torch
    g = torch.Generator().manual_seed(1000 + cfg["batch"])
    b = cfg["batch"]
    if cfg["model"] == "mlp":
        return torch.randn(b, 4096, generator=g)
    if cfg["model"] == "resnet50":
        return torch.randn(b, 3, 224, 224, generator=g)
    return torch.randint(0, 50257, (b, MODELS["gpt2"]["seq"]), generator=g)


def fp32_state_dict(m):
    """The model's state_dict as contiguous fp32 (integer buffers kept)."""
    out = {}
    for k, v in m.state_dict().items():
        v = v.detach().cpu()
        out[k] = (v.float() if v.is_floating_point() else v).contiguous()
    return out


# ---- the work of one call: FLOPs and the bytes that must move ---------------

def count_flops(model, run):
    """FLOPs of the matrix products of one forward pass, counted with hooks
    on Conv2d, Linear and Hugging Face Conv1D while `run()` runs the model.
    Attention's two batched matmuls are not modules; see attention_flops."""
    import torch
    total = [0]

    def conv_hook(mod, inp, out):
        k = mod.weight.shape[1] * mod.weight.shape[2] * mod.weight.shape[3]
        total[0] += 2 * out.numel() * k

    def linear_hook(mod, inp, out):
        total[0] += 2 * out.numel() * mod.in_features

    def conv1d_hook(mod, inp, out):  # transformers Conv1D: weight [in, out]
        total[0] += 2 * out.numel() * mod.weight.shape[0]

    hooks = []
    for mod in model.modules():
        if isinstance(mod, torch.nn.Conv2d):
            hooks.append(mod.register_forward_hook(conv_hook))
        elif isinstance(mod, torch.nn.Linear):
            hooks.append(mod.register_forward_hook(linear_hook))
        elif type(mod).__name__ == "Conv1D":
            hooks.append(mod.register_forward_hook(conv1d_hook))
    try:
        run()
    finally:
        for h in hooks:
            h.remove()
    return total[0]


def attention_flops(cfg):
    """q @ k^T and probs @ v of GPT-2, full T x T (the sample masks, it does
    not skip): 2 matmuls x 2 B T T d per layer."""
    if cfg["model"] != "gpt2":
        return 0
    t = MODELS["gpt2"]["seq"]
    return 12 * 2 * 2 * cfg["batch"] * t * t * 768


def floor_bytes(cfg, state_dict_numel, out_numel):
    """Bytes one call must move at the least: every weight read once (for
    GPT-2's embedding tables only the rows gathered), the input read and the
    output written, in the row's precision. Activations are assumed to stay
    on chip, so this is a lower bound."""
    e = ELT_BYTES[cfg["precision"]]
    b = cfg["batch"]
    if cfg["model"] == "gpt2":
        t = MODELS["gpt2"]["seq"]
        tables = state_dict_numel.get("wte.weight", 0) + state_dict_numel.get("wpe.weight", 0)
        weights = (sum(state_dict_numel.values()) - tables) * e
        weights += (b * t + t) * 768 * e  # rows of wte and wpe read
        inp = b * t * 8
    else:
        weights = sum(state_dict_numel.values()) * e
        inp = (b * 4096 if cfg["model"] == "mlp" else b * 3 * 224 * 224) * e
    return weights + inp + out_numel * e
