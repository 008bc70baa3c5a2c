#!/usr/bin/env python3
"""gen.py: writes the small models of tests/onnx/rnn/ (LSTM, GRU, RNN,
GridSample, 3-d Conv and ConvTranspose: ops sinter builds from its IR's ops at import), each
with its weights drawn at random (seed 31) as initializers. check.py runs
them against onnxruntime. Run it again only to change the models:

    build-test/venv/bin/python tests/onnx/rnn/gen.py tests/onnx/rnn
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def model(name, nodes, inputs, outputs, inits, opset):
    g = helper.make_graph(nodes, name, inputs, outputs,
                          initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="sinter-rnn")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def rnd(rng, shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def lstm_bidir(rng):
    """Bidirectional, layout 0, bias, peepholes, initial h and c, all three
    outputs."""
    T, B, I, H, D = 5, 3, 4, 6, 2
    inits = {"W": rnd(rng, (D, 4 * H, I)), "R": rnd(rng, (D, 4 * H, H)), "B": rnd(rng, (D, 8 * H), 0.2),
             "P": rnd(rng, (D, 3 * H), 0.3)}
    n = helper.make_node("LSTM", ["X", "W", "R", "B", "", "h0", "c0", "P"], ["Y", "Y_h", "Y_c"], name="lstm",
                         direction="bidirectional", hidden_size=H)
    return model("lstm_bidir", [n], [vi("X", [T, B, I]), vi("h0", [D, B, H]), vi("c0", [D, B, H])],
                 [vi("Y", [T, D, B, H]), vi("Y_h", [D, B, H]), vi("Y_c", [D, B, H])], inits, 14)


def lstm_reverse_layout1(rng):
    """Reverse, batch first (layout 1), sequence_lens of differing lengths
    (an input), clip, no initial state, Y_h only beside Y."""
    T, B, I, H = 4, 3, 3, 5
    inits = {"W": rnd(rng, (1, 4 * H, I)), "R": rnd(rng, (1, 4 * H, H)), "B": rnd(rng, (1, 8 * H), 0.2)}
    n = helper.make_node("LSTM", ["X", "W", "R", "B", "lens"], ["Y", "Y_h"], name="lstm_rev",
                         direction="reverse", hidden_size=H, layout=1, clip=2.5)
    return model("lstm_reverse_layout1", [n], [vi("X", [B, T, I]), vi("lens", [B], TensorProto.INT32)],
                 [vi("Y", [B, T, 1, H]), vi("Y_h", [B, 1, H])], inits, 14)


def lstm_coupled(rng):
    """input_forget (ft = 1 - it), peepholes (Pf then unused), a small clip
    that the cell state exceeds, activations Sigmoid/Tanh/Relu."""
    T, B, I, H = 5, 2, 3, 4
    inits = {"W": rnd(rng, (1, 4 * H, I), 1.0), "R": rnd(rng, (1, 4 * H, H), 1.0), "P": rnd(rng, (1, 3 * H))}
    n = helper.make_node("LSTM", ["X", "W", "R", "", "", "", "", "P"], ["Y", "", "Y_c"], name="lstm_cpl",
                         hidden_size=H, input_forget=1, clip=0.5, activations=["Sigmoid", "Tanh", "Relu"])
    return model("lstm_coupled", [n], [vi("X", [T, B, I])], [vi("Y", [T, 1, B, H]), vi("Y_c", [1, B, H])],
                 inits, 14)


def gru_activations(rng):
    """Bidirectional GRU with activations Sigmoid/Softplus forward and
    Relu/Tanh backward."""
    T, B, I, H = 3, 2, 3, 4
    inits = {"W": rnd(rng, (2, 3 * H, I)), "R": rnd(rng, (2, 3 * H, H)), "B": rnd(rng, (2, 6 * H), 0.2)}
    n = helper.make_node("GRU", ["X", "W", "R", "B"], ["Y"], name="gru_act", hidden_size=H,
                         direction="bidirectional", activations=["Sigmoid", "Softplus", "Relu", "Tanh"])
    return model("gru_activations", [n], [vi("X", [T, B, I])], [vi("Y", [T, 2, B, H])], inits, 14)


def rnn_bidir(rng):
    """The plain RNN op: bidirectional, bias, initial h, sequence_lens of
    differing lengths (an input), default activation Tanh, Y and Y_h."""
    T, B, I, H = 4, 3, 3, 5
    inits = {"W": rnd(rng, (2, H, I)), "R": rnd(rng, (2, H, H)), "B": rnd(rng, (2, 2 * H), 0.2)}
    n = helper.make_node("RNN", ["X", "W", "R", "B", "lens", "h0"], ["Y", "Y_h"], name="rnn",
                         hidden_size=H, direction="bidirectional")
    return model("rnn_bidir", [n], [vi("X", [T, B, I]), vi("lens", [B], TensorProto.INT32), vi("h0", [2, B, H])],
                 [vi("Y", [T, 2, B, H]), vi("Y_h", [2, B, H])], inits, 14)


def gru(rng, lbr):
    """linear_before_reset 0: bidirectional with initial h; 1: forward,
    batch first, symbolic batch, no initial h, sequence_lens of all T."""
    T, I, H = 4, 3, 5
    D = 2 if lbr == 0 else 1
    inits = {"W": rnd(rng, (D, 3 * H, I)), "R": rnd(rng, (D, 3 * H, H)), "B": rnd(rng, (D, 6 * H), 0.2)}
    if lbr == 0:
        B = 2
        n = helper.make_node("GRU", ["X", "W", "R", "B", "", "h0"], ["Y", "Y_h"], name="gru0",
                             direction="bidirectional", hidden_size=H, linear_before_reset=0)
        return model("gru_lbr0", [n], [vi("X", [T, B, I]), vi("h0", [D, B, H])],
                     [vi("Y", [T, D, B, H]), vi("Y_h", [D, B, H])], inits, 14)
    inits["lens"] = np.full((2,), T, np.int32)
    n = helper.make_node("GRU", ["X", "W", "R", "B", "lens"], ["Y", "Y_h"], name="gru1",
                         hidden_size=H, linear_before_reset=1, layout=1)
    return model("gru_lbr1", [n], [vi("X", ["N", T, I])], [vi("Y", ["N", T, 1, H]), vi("Y_h", ["N", 1, H])],
                 inits, 14)


def gru_reverse_lens(rng):
    """Reverse GRU with sequence_lens (an input) of differing lengths."""
    T, B, I, H = 5, 3, 2, 4
    inits = {"W": rnd(rng, (1, 3 * H, I)), "R": rnd(rng, (1, 3 * H, H))}
    n = helper.make_node("GRU", ["X", "W", "R", "", "lens", "h0"], ["Y", "Y_h"], name="gru_rev",
                         direction="reverse", hidden_size=H)
    return model("gru_reverse_lens", [n], [vi("X", [T, B, I]), vi("lens", [B], TensorProto.INT32),
                                           vi("h0", [1, B, H])],
                 [vi("Y", [T, 1, B, H]), vi("Y_h", [1, B, H])], {**inits}, 14)


def grid_sample(opset):
    """Opset 16: every mode (bilinear, nearest) x padding_mode (zeros,
    border, reflection) x align_corners; opset 20: the new spelling
    (linear) and nearest. One output each."""
    N, C, H, W, Ho, Wo = 2, 3, 5, 7, 4, 6
    nodes, outs = [], []
    modes = ("bilinear", "nearest") if opset < 20 else ("linear", "nearest")
    pads = ("zeros", "border", "reflection") if opset < 20 else ("zeros", "reflection")
    for mode in modes:
        for pad in pads:
            for ac in (0, 1):
                o = f"{mode}_{pad}_{ac}"
                nodes.append(helper.make_node("GridSample", ["X", "grid"], [o], name="gs_" + o, mode=mode,
                                              padding_mode=pad, align_corners=ac))
                outs.append(vi(o, [N, C, Ho, Wo]))
    return model(f"grid_sample{opset}", nodes, [vi("X", [N, C, H, W]), vi("grid", [N, Ho, Wo, 2])], outs, {},
                 opset)


def grid_sample_cubic():
    """Opset 16's bicubic x every padding_mode x align_corners."""
    N, C, H, W, Ho, Wo = 2, 3, 5, 7, 4, 6
    nodes, outs = [], []
    for pad in ("zeros", "border", "reflection"):
        for ac in (0, 1):
            o = f"bicubic_{pad}_{ac}"
            nodes.append(helper.make_node("GridSample", ["X", "grid"], [o], name="gs_" + o, mode="bicubic",
                                          padding_mode=pad, align_corners=ac))
            outs.append(vi(o, [N, C, Ho, Wo]))
    return model("grid_sample_cubic", nodes, [vi("X", [N, C, H, W]), vi("grid", [N, Ho, Wo, 2])], outs, {}, 16)


def grid_sample_f16():
    """f16 input and grid, 48 x 64 pixels (flat indices past 2^11, where
    f16 stops holding integers): bilinear zeros, nearest border."""
    N, C, H, W, Ho, Wo = 1, 2, 48, 64, 5, 6
    H16 = TensorProto.FLOAT16
    nodes = [helper.make_node("GridSample", ["X", "grid"], ["bilinear"], name="gs_bl", mode="bilinear"),
             helper.make_node("GridSample", ["X", "grid"], ["nearest"], name="gs_nn", mode="nearest",
                              padding_mode="border")]
    return model("grid_sample_f16", nodes, [vi("X", [N, C, H, W], H16), vi("grid", [N, Ho, Wo, 2], H16)],
                 [vi("bilinear", [N, C, Ho, Wo], H16), vi("nearest", [N, C, Ho, Wo], H16)], {}, 16)


def grid_sample_3d():
    """Opset 20's volumetric form (X [N, C, D, H, W], grid [..., 3]): linear
    and nearest x every padding_mode x align_corners."""
    N, C, D, H, W, Do, Ho, Wo = 2, 2, 3, 4, 5, 2, 3, 4
    nodes, outs = [], []
    for mode in ("linear", "nearest"):
        for pad in ("zeros", "border", "reflection"):
            for ac in (0, 1):
                o = f"{mode}_{pad}_{ac}"
                nodes.append(helper.make_node("GridSample", ["X", "grid"], [o], name="gs_" + o, mode=mode,
                                              padding_mode=pad, align_corners=ac))
                outs.append(vi(o, [N, C, Do, Ho, Wo]))
    return model("grid_sample3d", nodes, [vi("X", [N, C, D, H, W]), vi("grid", [N, Do, Ho, Wo, 3])], outs, {}, 20)


def conv3d(rng):
    """a: stride, asymmetric pads, dilation along depth, groups, bias;
    b: 3x3x3 SAME_UPPER, no bias; c: 1x1x1 (a pointwise conv)."""
    N, C, D, H, W = 2, 4, 6, 5, 7
    inits = {"Wa": rnd(rng, (6, 2, 3, 2, 3)), "Ba": rnd(rng, (6,)), "Wb": rnd(rng, (3, 4, 3, 3, 3), 0.3),
             "Wc": rnd(rng, (5, 4, 1, 1, 1))}
    nodes = [
        helper.make_node("Conv", ["X", "Wa", "Ba"], ["a"], name="conv_a", group=2, strides=[2, 1, 2],
                         pads=[1, 0, 1, 2, 1, 0], dilations=[2, 1, 1], kernel_shape=[3, 2, 3]),
        helper.make_node("Conv", ["X", "Wb"], ["b"], name="conv_b", auto_pad="SAME_UPPER", strides=[2, 2, 1]),
        helper.make_node("Conv", ["X", "Wc"], ["c"], name="conv_c"),
    ]
    return model("conv3d", nodes, [vi("X", [N, C, D, H, W])], [vi("a", [N, 6, 3, 5, 3]), vi("b", [N, 3, 3, 3, 7]), vi("c", [N, 5, D, H, W])],
                 inits, 17)


def conv3d_dynamic(rng):
    """A symbolic batch (no batch fold: one conv2d per output depth): Conv
    with stride, pads, dilation, groups and bias; a ConvTranspose."""
    C, D, H, W = 4, 5, 4, 6
    inits = {"Wa": rnd(rng, (6, 2, 2, 3, 3)), "Ba": rnd(rng, (6,)), "Wt": rnd(rng, (4, 3, 2, 2, 2))}
    nodes = [
        helper.make_node("Conv", ["X", "Wa", "Ba"], ["a"], name="conv_dyn", group=2, strides=[2, 1, 2],
                         pads=[1, 1, 0, 0, 1, 1], dilations=[2, 1, 1]),
        helper.make_node("ConvTranspose", ["X", "Wt"], ["t"], name="convt_dyn", strides=[2, 1, 1],
                         output_padding=[1, 0, 0]),
    ]
    return model("conv3d_dynamic", nodes, [vi("X", ["N", C, D, H, W])],
                 [vi("a", ["N", 6, 2, 4, 3]), vi("t", ["N", 3, 11, 5, 7])], inits, 17)


def conv_transpose3d(rng):
    """a: strides, asymmetric pads, output_padding, dilation, groups, bias;
    b: output_shape (pads from it)."""
    N, C, D, H, W = 2, 4, 3, 4, 3
    inits = {"Wa": rnd(rng, (4, 3, 2, 3, 2)), "Ba": rnd(rng, (6,)), "Wb": rnd(rng, (4, 2, 3, 3, 3), 0.3)}
    nodes = [
        helper.make_node("ConvTranspose", ["X", "Wa", "Ba"], ["a"], name="convt_a", group=2, strides=[2, 1, 2],
                         pads=[1, 0, 0, 0, 1, 1], output_padding=[1, 0, 1], dilations=[1, 2, 1]),
        helper.make_node("ConvTranspose", ["X", "Wb"], ["b"], name="convt_b", strides=[2, 2, 2],
                         output_shape=[6, 8, 7]),
    ]
    return model("conv_transpose3d", nodes, [vi("X", [N, C, D, H, W])],
                 [vi("a", [N, 6, 6, 7, 6]), vi("b", [N, 2, 6, 8, 7])], inits, 17)


def all_models():
    rng = np.random.default_rng(31)
    return {"lstm_bidir": lstm_bidir(rng), "lstm_reverse_layout1": lstm_reverse_layout1(rng),
            "gru_lbr0": gru(rng, 0), "gru_lbr1": gru(rng, 1), "gru_reverse_lens": gru_reverse_lens(rng),
            "grid_sample16": grid_sample(16), "grid_sample20": grid_sample(20),
            "grid_sample3d": grid_sample_3d(), "grid_sample_cubic": grid_sample_cubic(), "conv3d": conv3d(rng),
            "conv_transpose3d": conv_transpose3d(rng), "conv3d_dynamic": conv3d_dynamic(rng),
            "lstm_coupled": lstm_coupled(rng), "gru_activations": gru_activations(rng),
            "rnn_bidir": rnn_bidir(rng), "grid_sample_f16": grid_sample_f16()}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, m in all_models().items():
        onnx.save(m, os.path.join(out, name + ".onnx"))
        print(f"{name}.onnx: {len(m.SerializeToString())} bytes")


if __name__ == "__main__":
    main()
