"""suite_models.py: the models of benchmarks/suite.py, at their real sizes.

Each entry of MODELS is a dict:
  name      the row's name (what --models takes)
  family    tv-cls, tv-seg, hf-enc, speech, llm or diffusion (what --family takes)
  build     a function returning the torch.nn.Module (fp32, eval, random
            weights from a fixed seed, no download); it returns ONE tensor
  inputs    [(name, shape, kind)], kind one of: image (N(0,1) floats),
            randn, audio (N(0,1) scaled to 0.1), ids:VOCAB (int64 token ids),
            mask (int64 attention mask, row r padded by 8*r tokens),
            timestep:T (int64 in [0, T))
  tol       tolerance class (TOL_CLASSES): the relative L2 bound of an fp32
            run; bf16 and fp16 runs are held to twice PyTorch's own error
  layout    "channels_last" for convolutional nets (PyTorch's best layout;
            sinter gets the NCHW export and chooses its own)
  est_s     rough seconds of one worker without torch.compile (export not
            cached), for --time-budget; est_tc_s the torch.compile modes'

Nothing here imports torch at module level: suite.py --dry-run lists the
models with plain python3. Parameter counts for the listing come from
suite_params.json (written by `suite.py --count-params` on a machine with
torch); the GPU run records the count it builds in each result.
"""

SEED = 0

# fp32 relative L2 bound per tolerance class (the fp32 reference is PyTorch
# fp32 on the GPU with TF32 off; sinter fp32 differs by summation order only)
TOL_CLASSES = {
    "cnn": 1e-4,          # convolutional classifiers and heads
    "transformer": 2e-4,  # encoders: softmax, layer norms, GELU
    "deep": 1e-3,         # LLMs and the diffusion UNet: long chains, large logits
}

FAMILIES = ["tv-cls", "tv-seg", "hf-enc", "speech", "llm", "diffusion"]


# ---- helpers (torch imported inside) -----------------------------------------

def _seed():
    import torch
    torch.manual_seed(SEED)


def redraw_zeros(module):
    """Weights (rank >= 2) that start at zero (torchvision's ViT head, a
    diffusion block's last conv) get N(0, 0.02) so that no output is all
    zeros and a comparison cannot pass on zeros; zero biases stay."""
    import torch
    g = torch.Generator().manual_seed(SEED + 7)
    with torch.no_grad():
        for _, p in module.named_parameters():
            if p.dim() >= 2 and not p.any():
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return module


def randomize_norm_stats(module):
    """Batch norms in eval mode start as identities: random weights and
    running statistics so that folding or eps mistakes show."""
    import torch
    g = torch.Generator().manual_seed(SEED + 1)
    for m in module.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.affine and m.track_running_stats:
            c = m.num_features
            with torch.no_grad():
                m.weight.copy_(0.75 + 0.5 * torch.rand(c, generator=g))
                m.bias.copy_(0.2 * torch.rand(c, generator=g) - 0.1)
                m.running_mean.copy_(0.2 * torch.rand(c, generator=g) - 0.1)
                m.running_var.copy_(0.5 + torch.rand(c, generator=g))
    return module


def _finish(m):
    return redraw_zeros(randomize_norm_stats(m.eval()))


def _hf_config(cfg_name, cfg, decoder=False):
    import transformers
    c = getattr(transformers, cfg_name)(**cfg)
    if decoder or hasattr(c, "use_cache"):
        try:
            c.use_cache = False
        except Exception:  # noqa: BLE001 - a config without the attribute
            pass
    return c


# ---- torchvision -----------------------------------------------------------------

def tv_classifier(arch, **kw):
    def build():
        import torchvision
        _seed()
        return _finish(getattr(torchvision.models, arch)(weights=None, **kw))
    return build


def tv_segmentation(arch):
    def build():
        import torch
        import torchvision

        class Seg(torch.nn.Module):  # the "out" map as one tensor
            def __init__(self):
                super().__init__()
                kw = {"weights": None, "weights_backbone": None, "num_classes": 21}
                if not arch.startswith("lraspp"):
                    kw["aux_loss"] = False
                self.m = getattr(torchvision.models.segmentation, arch)(**kw)

            def forward(self, x):
                return self.m(x)["out"]
        _seed()
        return _finish(Seg())
    return build


def tv_detection_head(head):
    """A ResNet-50 FPN backbone (BatchNorm, random statistics; P3-P7 as
    RetinaNet and FCOS use) and the detector's dense head on every level:
    class logits and box regression of every anchor, concatenated, as one
    tensor. The postprocessing (NMS, data-dependent shapes) is left out."""
    def build():
        import torch
        from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
        from torchvision.ops.feature_pyramid_network import LastLevelP6P7

        class Det(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = resnet_fpn_backbone(backbone_name="resnet50", weights=None,
                                                norm_layer=torch.nn.BatchNorm2d, trainable_layers=5,
                                                returned_layers=[2, 3, 4],
                                                extra_blocks=LastLevelP6P7(256, 256))
                if head == "retinanet":
                    from torchvision.models.detection.retinanet import RetinaNetHead
                    self.head = RetinaNetHead(256, 9, 91)
                else:
                    from torchvision.models.detection.fcos import FCOSHead
                    self.head = FCOSHead(256, 1, 91)

            def forward(self, x):
                feats = list(self.body(x).values())
                out = self.head(feats)
                return torch.cat([v for _, v in sorted(out.items())], dim=-1)
        _seed()
        return _finish(Det())
    return build


# ---- Hugging Face ------------------------------------------------------------------

def hf_text(cls_name, cfg_name, cfg, out="last_hidden_state", mask=True):
    def build():
        import torch
        import transformers
        _seed()
        c = _hf_config(cfg_name, cfg)

        class Text(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = getattr(transformers, cls_name)(c)

            def forward(self, input_ids, attention_mask=None):
                kw = {"input_ids": input_ids, "return_dict": True}
                if attention_mask is not None:
                    kw["attention_mask"] = attention_mask
                return getattr(self.m(**kw), out)
        return _finish(Text())
    return build


def hf_pixels(cls_name, cfg_name, cfg, out="last_hidden_state", key="pixel_values"):
    def build():
        import torch
        import transformers
        _seed()
        c = _hf_config(cfg_name, cfg)

        class Pixels(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = getattr(transformers, cls_name)(c)

            def forward(self, x):
                return getattr(self.m(**{key: x, "return_dict": True}), out)
        return _finish(Pixels())
    return build


def hf_whisper_encoder(cfg):
    def build():
        import torch
        import transformers
        _seed()
        c = _hf_config("WhisperConfig", cfg)

        class Enc(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = transformers.WhisperModel(c).get_encoder()

            def forward(self, input_features):
                return self.m(input_features=input_features, return_dict=True).last_hidden_state
        return _finish(Enc())
    return build


def hf_causal_lm(cls_name, cfg_name, cfg):
    """Prefill: the logits of every position, no cache."""
    def build():
        import torch
        import transformers
        _seed()
        c = _hf_config(cfg_name, cfg, decoder=True)

        class LM(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = getattr(transformers, cls_name)(c)

            def forward(self, input_ids):
                return self.m(input_ids=input_ids, use_cache=False, return_dict=True).logits
        return _finish(LM())
    return build


# ---- a diffusion UNet from its blocks (diffusers is not on the GPU machine) ----

def diffusion_unet(ch=(320, 640, 1280, 1280), attn=(True, True, True, False), layers=2, heads=8,
                   context_dim=768, in_ch=4, groups=32, cross=True):
    """Stable Diffusion 1.x's UNet layout written in plain torch: timestep
    embedding, ResNet blocks (GroupNorm, SiLU, conv, time projection),
    transformer blocks (self-attention, cross-attention on the text context,
    GEGLU feed-forward) where `attn` says, strided-conv downsampling,
    nearest-neighbour upsampling with skip connections. With the defaults
    and cross=True it has SD 1.5's 860 M parameters."""
    def build():
        import math

        import torch
        import torch.nn.functional as F
        from torch import nn

        def norm(c):
            return nn.GroupNorm(groups, c, eps=1e-5)

        class Res(nn.Module):
            def __init__(self, cin, cout, temb):
                super().__init__()
                self.n1, self.c1 = norm(cin), nn.Conv2d(cin, cout, 3, padding=1)
                self.t = nn.Linear(temb, cout)
                self.n2, self.c2 = norm(cout), nn.Conv2d(cout, cout, 3, padding=1)
                self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

            def forward(self, x, t):
                h = self.c1(F.silu(self.n1(x))) + self.t(F.silu(t))[:, :, None, None]
                return self.skip(x) + self.c2(F.silu(self.n2(h)))

        class Attn(nn.Module):
            def __init__(self, c, ctx):
                super().__init__()
                self.h = heads
                self.q = nn.Linear(c, c, bias=False)
                self.k = nn.Linear(ctx or c, c, bias=False)
                self.v = nn.Linear(ctx or c, c, bias=False)
                self.o = nn.Linear(c, c)

            def forward(self, x, ctx=None):
                b, n, c = x.shape
                src = x if ctx is None else ctx

                def split(t):
                    return t.reshape(b, -1, self.h, c // self.h).transpose(1, 2)
                a = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(src)), split(self.v(src)))
                return self.o(a.transpose(1, 2).reshape(b, n, c))

        class Transformer(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.n, self.pin = norm(c), nn.Conv2d(c, c, 1)
                self.l1, self.a1 = nn.LayerNorm(c), Attn(c, None)
                self.l2, self.a2 = nn.LayerNorm(c), Attn(c, context_dim if cross else None)
                self.l3, self.ff1, self.ff2 = nn.LayerNorm(c), nn.Linear(c, 8 * c), nn.Linear(4 * c, c)
                self.pout = nn.Conv2d(c, c, 1)

            def forward(self, x, ctx):
                b, c, hh, ww = x.shape
                h = self.pin(self.n(x)).flatten(2).transpose(1, 2)
                h = h + self.a1(self.l1(h))
                h = h + self.a2(self.l2(h), ctx if cross else None)
                u, g = self.ff1(self.l3(h)).chunk(2, dim=-1)
                h = h + self.ff2(u * F.gelu(g))
                return x + self.pout(h.transpose(1, 2).reshape(b, c, hh, ww))

        class UNet(nn.Module):
            def __init__(self):
                super().__init__()
                temb = 4 * ch[0]
                self.t1, self.t2 = nn.Linear(ch[0], temb), nn.Linear(temb, temb)
                self.cin = nn.Conv2d(in_ch, ch[0], 3, padding=1)
                self.down, skips, c = nn.ModuleList(), [ch[0]], ch[0]
                for i, co in enumerate(ch):
                    for _ in range(layers):
                        self.down.append(nn.ModuleList([Res(c, co, temb)] + ([Transformer(co)] if attn[i] else [])))
                        c = co
                        skips.append(c)
                    if i < len(ch) - 1:
                        self.down.append(nn.ModuleList([nn.Conv2d(c, c, 3, stride=2, padding=1)]))
                        skips.append(c)
                self.mid = nn.ModuleList([Res(c, c, temb), Transformer(c), Res(c, c, temb)])
                self.up = nn.ModuleList()
                for i, co in reversed(list(enumerate(ch))):
                    for _ in range(layers + 1):
                        self.up.append(nn.ModuleList([Res(c + skips.pop(), co, temb)] +
                                                     ([Transformer(co)] if attn[i] else [])))
                        c = co
                    if i > 0:
                        self.up.append(nn.ModuleList([nn.Upsample(scale_factor=2.0, mode="nearest"),
                                                      nn.Conv2d(c, c, 3, padding=1)]))
                self.nout, self.cout = norm(c), nn.Conv2d(c, in_ch, 3, padding=1)

            def _block(self, blk, h, t, ctx):
                for m in blk:
                    if isinstance(m, Res):
                        h = m(h, t)
                    elif isinstance(m, Transformer):
                        h = m(h, ctx)
                    else:
                        h = m(h)
                return h

            def forward(self, sample, timestep, context=None):
                half = ch[0] // 2
                f = torch.exp(-math.log(10000.0) * torch.arange(half, device=sample.device,
                                                                dtype=torch.float32) / half)
                a = timestep.float()[:, None] * f[None]
                t = torch.cat([a.cos(), a.sin()], dim=-1).to(sample.dtype)
                t = self.t2(F.silu(self.t1(t)))
                h = self.cin(sample)
                hs = [h]
                for blk in self.down:
                    h = self._block(blk, h, t, context)
                    hs.append(h)
                h = self._block(self.mid, h, t, context)
                for blk in self.up:
                    if isinstance(blk[0], Res):
                        h = torch.cat([h, hs.pop()], dim=1)
                    h = self._block(blk, h, t, context)
                return self.cout(F.silu(self.nout(h)))

        _seed()
        return _finish(UNet())
    return build


# ---- the list ------------------------------------------------------------------------

def _img(n, s=224):
    return [("x", [n, 3, s, s], "image")]


def _text(n, t, vocab, mask=True):
    return [("input_ids", [n, t], "ids:%d" % vocab)] + ([("attention_mask", [n, t], "mask")] if mask else [])


def _m(name, family, build, inputs, tol, est_s, est_tc_s, layout=None, note=""):
    return {"name": name, "family": family, "build": build, "inputs": inputs, "tol": tol,
            "est_s": est_s, "est_tc_s": est_tc_s, "layout": layout, "note": note}


CL = "channels_last"
_BERT = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
             intermediate_size=3072, max_position_embeddings=512)
_LLAMA = dict(vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
              num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=4096,
              rms_norm_eps=1e-5, tie_word_embeddings=False)
_MISTRAL = dict(vocab_size=32000, hidden_size=1024, intermediate_size=3584, num_hidden_layers=24,
                num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=8192,
                sliding_window=1024, rms_norm_eps=1e-5, tie_word_embeddings=False)
_QWEN2 = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
              num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
              rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)

MODELS = [
    # torchvision classifiers, batch 8 at 224x224
    _m("resnet18", "tv-cls", tv_classifier("resnet18"), _img(8), "cnn", 40, 50, CL),
    _m("resnet50", "tv-cls", tv_classifier("resnet50"), _img(8), "cnn", 50, 60, CL),
    _m("resnext50_32x4d", "tv-cls", tv_classifier("resnext50_32x4d"), _img(8), "cnn", 50, 60, CL),
    _m("wide_resnet50_2", "tv-cls", tv_classifier("wide_resnet50_2"), _img(8), "cnn", 60, 60, CL),
    _m("vgg16", "tv-cls", tv_classifier("vgg16"), _img(8), "cnn", 60, 40, CL),
    _m("densenet121", "tv-cls", tv_classifier("densenet121"), _img(8), "cnn", 70, 90, CL),
    _m("googlenet", "tv-cls", tv_classifier("googlenet", aux_logits=False, init_weights=True), _img(8),
       "cnn", 50, 60, CL),
    _m("squeezenet1_1", "tv-cls", tv_classifier("squeezenet1_1"), _img(8), "cnn", 30, 40, CL),
    _m("shufflenet_v2_x1_0", "tv-cls", tv_classifier("shufflenet_v2_x1_0"), _img(8), "cnn", 40, 60, CL),
    _m("mobilenet_v2", "tv-cls", tv_classifier("mobilenet_v2"), _img(8), "cnn", 40, 60, CL),
    _m("mobilenet_v3_large", "tv-cls", tv_classifier("mobilenet_v3_large"), _img(8), "cnn", 40, 60, CL),
    _m("mnasnet1_0", "tv-cls", tv_classifier("mnasnet1_0"), _img(8), "cnn", 40, 60, CL),
    _m("efficientnet_b0", "tv-cls", tv_classifier("efficientnet_b0"), _img(8), "cnn", 50, 70, CL),
    _m("efficientnet_v2_s", "tv-cls", tv_classifier("efficientnet_v2_s"), _img(8), "cnn", 70, 90, CL),
    _m("regnet_y_1_6gf", "tv-cls", tv_classifier("regnet_y_1_6gf"), _img(8), "cnn", 50, 70, CL),
    _m("convnext_tiny", "tv-cls", tv_classifier("convnext_tiny"), _img(8), "cnn", 50, 60, CL),
    _m("vit_b_16", "tv-cls", tv_classifier("vit_b_16"), _img(8), "transformer", 60, 60,
       note="head re-drawn (torchvision starts it at zero)"),
    _m("swin_t", "tv-cls", tv_classifier("swin_t"), _img(8), "transformer", 80, 90),
    # torchvision segmentation models and dense detection heads
    _m("fcn_resnet50", "tv-seg", tv_segmentation("fcn_resnet50"), _img(2, 512), "cnn", 60, 60, CL),
    _m("deeplabv3_resnet50", "tv-seg", tv_segmentation("deeplabv3_resnet50"), _img(2, 512), "cnn", 60, 60, CL),
    _m("deeplabv3_mobilenet_v3_large", "tv-seg", tv_segmentation("deeplabv3_mobilenet_v3_large"),
       _img(2, 512), "cnn", 50, 60, CL),
    _m("lraspp_mobilenet_v3_large", "tv-seg", tv_segmentation("lraspp_mobilenet_v3_large"), _img(2, 512),
       "cnn", 50, 60, CL),
    _m("retinanet_r50_fpn_head", "tv-seg", tv_detection_head("retinanet"), _img(2, 512), "cnn", 70, 90, CL,
       note="backbone, FPN and dense head; no NMS"),
    _m("fcos_r50_fpn_head", "tv-seg", tv_detection_head("fcos"), _img(2, 512), "cnn", 70, 90, CL,
       note="backbone, FPN and dense head (GroupNorm towers); no NMS"),
    # Hugging Face encoders, random weights from their configs
    _m("bert_base", "hf-enc", hf_text("BertModel", "BertConfig", _BERT), _text(8, 512, 30522),
       "transformer", 60, 60, note="attention mask with padded rows"),
    _m("roberta_base", "hf-enc", hf_text("RobertaModel", "RobertaConfig",
                                         dict(_BERT, vocab_size=50265, max_position_embeddings=514,
                                              type_vocab_size=1)),
       _text(8, 512, 50265), "transformer", 60, 60),
    _m("distilbert_base", "hf-enc", hf_text("DistilBertModel", "DistilBertConfig",
                                            dict(vocab_size=30522, dim=768, n_layers=6, n_heads=12,
                                                 hidden_dim=3072, max_position_embeddings=512)),
       _text(8, 512, 30522), "transformer", 50, 50),
    _m("albert_base", "hf-enc", hf_text("AlbertModel", "AlbertConfig",
                                        dict(vocab_size=30000, embedding_size=128, hidden_size=768,
                                             num_hidden_layers=12, num_attention_heads=12,
                                             intermediate_size=3072, max_position_embeddings=512)),
       _text(8, 512, 30000), "transformer", 60, 60),
    _m("deberta_v3_base", "hf-enc", hf_text("DebertaV2Model", "DebertaV2Config",
                                            dict(vocab_size=128100, hidden_size=768, num_hidden_layers=12,
                                                 num_attention_heads=12, intermediate_size=3072,
                                                 max_position_embeddings=512, relative_attention=True,
                                                 position_buckets=256, norm_rel_ebd="layer_norm",
                                                 share_att_key=True, pos_att_type=["p2c", "c2p"],
                                                 position_biased_input=False, type_vocab_size=0)),
       _text(8, 512, 128100), "transformer", 90, 90, note="disentangled relative attention"),
    _m("t5_base_encoder", "hf-enc", hf_text("T5EncoderModel", "T5Config",
                                            dict(vocab_size=32128, d_model=768, d_ff=3072, d_kv=64,
                                                 num_layers=12, num_heads=12)),
       _text(8, 512, 32128), "transformer", 60, 60),
    _m("clip_text_b32", "hf-enc", hf_text("CLIPTextModel", "CLIPTextConfig",
                                          dict(vocab_size=49408, hidden_size=512, intermediate_size=2048,
                                               num_hidden_layers=12, num_attention_heads=8,
                                               max_position_embeddings=77)),
       _text(8, 77, 49408), "transformer", 40, 50),
    _m("clip_vision_b32", "hf-enc", hf_pixels("CLIPVisionModel", "CLIPVisionConfig",
                                              dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                                   num_attention_heads=12, image_size=224, patch_size=32)),
       _img(8), "transformer", 50, 50),
    _m("vit_base_hf", "hf-enc", hf_pixels("ViTModel", "ViTConfig",
                                          dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                               intermediate_size=3072, image_size=224, patch_size=16)),
       _img(8), "transformer", 50, 60),
    _m("segformer_b0", "hf-enc", hf_pixels("SegformerForSemanticSegmentation", "SegformerConfig",
                                           dict(num_encoder_blocks=4, depths=[2, 2, 2, 2],
                                                hidden_sizes=[32, 64, 160, 256], num_attention_heads=[1, 2, 5, 8],
                                                sr_ratios=[8, 4, 2, 1], decoder_hidden_size=256,
                                                num_labels=150), out="logits"),
       _img(2, 512), "transformer", 60, 70, CL),
    _m("segformer_b2", "hf-enc", hf_pixels("SegformerForSemanticSegmentation", "SegformerConfig",
                                           dict(num_encoder_blocks=4, depths=[3, 4, 6, 3],
                                                hidden_sizes=[64, 128, 320, 512], num_attention_heads=[1, 2, 5, 8],
                                                sr_ratios=[8, 4, 2, 1], decoder_hidden_size=768,
                                                num_labels=150), out="logits"),
       _img(2, 512), "transformer", 80, 90, CL),
    # speech encoders
    _m("whisper_base_encoder", "speech", hf_whisper_encoder(
        dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
             decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048, num_mel_bins=80,
             max_source_positions=1500, vocab_size=51865)),
       [("input_features", [4, 80, 3000], "randn")], "transformer", 60, 60),
    _m("wav2vec2_base", "speech", hf_pixels("Wav2Vec2Model", "Wav2Vec2Config", {}, key="input_values"),
       [("input_values", [4, 80000], "audio")], "transformer", 70, 70, note="5 s of 16 kHz audio"),
    _m("hubert_base", "speech", hf_pixels("HubertModel", "HubertConfig", {}, key="input_values"),
       [("input_values", [4, 80000], "audio")], "transformer", 70, 70),
    # decoder LLMs: prefill, logits of every position, batch 1
    _m("gpt2_s512", "llm", hf_causal_lm("GPT2LMHeadModel", "GPT2Config", {}), _text(1, 512, 50257, False),
       "deep", 60, 60),
    _m("gpt2_s1024", "llm", hf_causal_lm("GPT2LMHeadModel", "GPT2Config", {}), _text(1, 1024, 50257, False),
       "deep", 60, 60),
    _m("opt_125m_s512", "llm", hf_causal_lm("OPTForCausalLM", "OPTConfig",
                                            dict(vocab_size=50272, hidden_size=768, num_hidden_layers=12,
                                                 ffn_dim=3072, num_attention_heads=12,
                                                 max_position_embeddings=2048, word_embed_proj_dim=768)),
       _text(1, 512, 50272, False), "deep", 60, 60),
    _m("llama_0p4b_s512", "llm", hf_causal_lm("LlamaForCausalLM", "LlamaConfig", _LLAMA),
       _text(1, 512, 32000, False), "deep", 120, 90, note="GQA 32/8, head dim 32"),
    _m("llama_0p4b_s2048", "llm", hf_causal_lm("LlamaForCausalLM", "LlamaConfig", _LLAMA),
       _text(1, 2048, 32000, False), "deep", 130, 90),
    _m("mistral_0p4b_s512", "llm", hf_causal_lm("MistralForCausalLM", "MistralConfig", _MISTRAL),
       _text(1, 512, 32000, False), "deep", 120, 90, note="GQA 16/4, sliding window 1024"),
    _m("mistral_0p4b_s2048", "llm", hf_causal_lm("MistralForCausalLM", "MistralConfig", _MISTRAL),
       _text(1, 2048, 32000, False), "deep", 130, 90),
    _m("qwen2_0p5b_s512", "llm", hf_causal_lm("Qwen2ForCausalLM", "Qwen2Config", _QWEN2),
       _text(1, 512, 151936, False), "deep", 130, 90, note="Qwen2-0.5B's config: GQA 14/2, qkv bias, tied"),
    _m("qwen2_0p5b_s2048", "llm", hf_causal_lm("Qwen2ForCausalLM", "Qwen2Config", _QWEN2),
       _text(1, 2048, 151936, False), "deep", 150, 90),
    # diffusion UNets from their blocks
    _m("sd15_unet", "diffusion", diffusion_unet(),
       [("sample", [2, 4, 64, 64], "randn"), ("timestep", [2], "timestep:1000"),
        ("context", [2, 77, 768], "randn")], "deep", 200, 150, CL,
       note="SD 1.5's UNet layout, 512x512 latents, batch 2 (guidance)"),
    _m("ddpm_unet_cifar", "diffusion", diffusion_unet(ch=(128, 256, 256, 256), attn=(False, True, False, False),
                                                       layers=2, heads=1, in_ch=3, cross=False),
       [("sample", [16, 3, 32, 32], "randn"), ("timestep", [16], "timestep:1000")], "deep", 80, 90, CL,
       note="DDPM-style (CIFAR-10 size), no cross-attention"),
]

BY_NAME = {m["name"]: m for m in MODELS}
