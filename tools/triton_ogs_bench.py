#!/usr/bin/env python3
"""Peer benchmark for moe4j's CUDA experts stage: OpenAI triton_kernels' matmul_ogs on MXFP4 weights (Hopper path).

Same problem as tools/torch_moe_bf16.py and io.moe4j.backend.cuda.CudaExpertsBench: the gpt-oss-20b experts stage,
32 experts, top-4, H = I = 2880, MXFP4 weights (random E2M1 codes, E8M0 scales 2^-9..2^-1), biases, SwiGLU-OAI on
interleaved gate/up rows (alpha 1.702, limit 7), random routing over all experts, bf16 activations, inputs and
outputs resident on the device.

The weights stay MXFP4: packed E2M1 values and E8M0 scales are converted once, outside the timing, to the layouts
triton_kernels picks for the device (on Hopper: HopperMXValueLayout / HopperMXScaleLayout, mx_axis=1, num_warps=8,
opt-flag constraint split_k=1), the way vLLM's triton_kernels MXFP4 backend does. Biases are float32, as vLLM passes them.

Timed call (CUDA events, median of repeats after warm-up), per token count T:
  topk over bf16 router logits (the routing-dependent index work: selection, bitmatrix, expert histogram and
  sorted gather/scatter indices), ragged-tensor metadata, gate-scale gather, then
  matmul_ogs #1: gathered x @ W13 + b13 with triton_kernels' fused swiglu (alpha 1.702, limit 7)
  matmul_ogs #2: h @ W2 + b2, scaled by the gate weights and scatter-reduced over the top-4 into [T, H] bf16.
Each token count is timed twice: the eager call, and the same call captured once in a CUDA graph and replayed
(impl "... (cuda graph)"; GPU time without Python launch overhead, as vLLM runs decode).
The router logits are built so that the top-4 are the experts chosen at random per token (as in the torch script)
and the softmax over them gives the routing weights, so the routing itself is the same random routing.

For T = 1 the JSON also gives effective weight bandwidth: the packed MXFP4 bytes (values + scales) of the distinct
routed experts (each expert: 5760*2880/2 + 5760*90 gate_up bytes, 2880*2880/2 + 2880*90 down bytes) divided by the
time, next to the device-to-device copy bandwidth measured like the torch script (bytes read + written).

Correctness is checked once per token count against a plain torch float32 reference on the dequantized weights
(rel L2 of the output). Errors are printed as JSON with an "error" key and the run goes on.

Needs triton_kernels importable (e.g. PYTHONPATH pointing at a checkout of triton's python/triton_kernels).
Usage: tools/triton_ogs_bench.py [tokens, comma-separated; default 1,4,16,4096]
Prints one JSON line per measurement.
"""
import json
import sys

import torch

from moe_peer import ALPHA, E, H, I, K, LIMIT, copy_gbs, e2m1_table, swiglu_oai, time_ms

IMPL = "triton_kernels matmul_ogs mxfp4"


def mxfp4_random(rows, cols, gen, device):
    """Random MXFP4 [E, rows, cols]: packed E2M1 bytes [E, rows, cols/2] (element 2j in the low nibble),
    E8M0 scale bytes [E, rows, cols/32] (biased exponents 118..126, i.e. 2^-9..2^-1), and the exact float32 values."""
    codes = torch.randint(0, 16, (E, rows, cols), generator=gen, device=device, dtype=torch.int64)
    scales = torch.randint(118, 127, (E, rows, cols // 32), generator=gen, device=device, dtype=torch.int64)
    packed = (codes[..., 0::2] | (codes[..., 1::2] << 4)).to(torch.uint8)
    vals = e2m1_table(device)[codes] * torch.exp2(scales.float() - 127).repeat_interleave(32, dim=-1)
    return packed, scales.to(torch.uint8), vals


def routing(tokens, gen, device):
    """Random top-4 expert sets and router values, like the torch script; returned as bf16 router logits whose
    top-4 are the chosen experts, plus the chosen ids and the softmax weights the logits imply."""
    ids = torch.rand(tokens, E, generator=gen, device=device).argsort(dim=-1)[:, :K].sort(dim=-1).values
    r = torch.randn(tokens, K, generator=gen, device=device).to(torch.bfloat16)
    logits = torch.full((tokens, E), -30000.0, dtype=torch.bfloat16, device=device)
    logits.scatter_(1, ids, r)
    w = torch.softmax(r.float(), dim=-1)
    return logits, ids, w


def reference(x, ids, w, w13, b13, w2, b2):
    """Plain float32 torch on the dequantized weights: per-expert gather, matmul, SwiGLU-OAI, matmul, weighted sum."""
    xf = x.float()
    out = torch.zeros(x.shape[0], H, dtype=torch.float32, device=x.device)
    for e in ids.unique().tolist():
        t, j = (ids == e).nonzero(as_tuple=True)
        h = xf[t] @ w13[e].t() + b13[e]
        y = swiglu_oai(h) @ w2[e].t() + b2[e]
        out.index_add_(0, t, y * w[t, j].unsqueeze(1))
    return out


def kernel_names(fn):
    """Names of the GPU kernels one call launches (to show which matmul_ogs path ran), or None if unavailable."""
    try:
        import warnings
        from torch.profiler import ProfilerActivity, profile
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        names = []
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA and ev.name not in names:
                names.append(ev.name)
        return [n[:120] for n in names]
    except Exception:
        return None


def main():
    tokens_list = [int(t) for t in (sys.argv[1] if len(sys.argv) > 1 else "1,4,16,4096").split(",")]
    device = "cuda"
    import triton
    import triton_kernels
    import triton_kernels.swiglu
    import triton_kernels.matmul_ogs_details.opt_flags as opt_flags
    from triton_kernels.matmul_ogs import (FlexCtx, FnSpecs, FusedActivation, GatherIndx, PrecisionConfig,
                                           RoutingData, ScatterIndx, matmul_ogs)
    from triton_kernels.tensor import FP4, convert_layout, make_ragged_tensor_metadata, wrap_torch_tensor
    from triton_kernels.tensor_details import layout
    from triton_kernels.topk import topk

    gen = torch.Generator(device=device).manual_seed(2026)
    name = torch.cuda.get_device_name()
    copy = copy_gbs(device)

    # weights: MXFP4 in the checkpoint's row-major [E, out, in] form, plus float32 dequantized copies for the reference
    w13_q, w13_s, w13_f = mxfp4_random(2 * I, H, gen, device)
    w2_q, w2_s, w2_f = mxfp4_random(H, I, gen, device)
    b13 = (torch.randn(E, 2 * I, generator=gen, device=device) * 0.05).to(torch.bfloat16).float()
    b2 = (torch.randn(E, H, generator=gen, device=device) * 0.05).to(torch.bfloat16).float()
    expert_bytes = 2 * I * H // 2 + 2 * I * H // 32 + H * I // 2 + H * I // 32

    # one-time conversion to the layouts triton_kernels wants here (as vLLM's _swizzle_mxfp4 does)
    try:
        num_warps = 8
        value_layout, value_opts = layout.make_default_matmul_mxfp4_w_layout(mx_axis=1)
        scale_layout, scale_opts = layout.make_default_matmul_mxfp4_w_scale_layout(mx_axis=1, num_warps=num_warps)
        cap = torch.cuda.get_device_capability()
        if cap[0] == 9:
            opt_flags.update_opt_flags_constraints({"split_k": 1})
        elif cap[0] >= 10:
            opt_flags.update_opt_flags_constraints({"is_persistent": True, "epilogue_subtile": 1})

        def convert(q, s):
            # [E, out, in/2] -> [E, in/2, out] view: the quantization (K) axis becomes dim 1
            v = convert_layout(wrap_torch_tensor(q.transpose(-2, -1), dtype=FP4), value_layout, **value_opts)
            sc = convert_layout(wrap_torch_tensor(s.transpose(-2, -1)), scale_layout, **scale_opts)
            return v, sc

        w13_t, w13_sc = convert(w13_q, w13_s)
        w2_t, w2_sc = convert(w2_q, w2_s)
        torch.cuda.synchronize()
        pc1 = PrecisionConfig(weight_scale=w13_sc, flex_ctx=FlexCtx())
        pc2 = PrecisionConfig(weight_scale=w2_sc, flex_ctx=FlexCtx())
        act = FusedActivation(FnSpecs("swiglu", triton_kernels.swiglu.swiglu_fn, ("alpha", "limit"), reduction_n=2),
                              (ALPHA, LIMIT))
    except Exception as e:
        print(json.dumps({"impl": IMPL, "stage": "weight conversion", "error": repr(e)}), flush=True)
        return
    del w13_q, w13_s, w2_q, w2_s
    print(json.dumps({"device": name, "torch": torch.__version__, "triton": triton.__version__,
                      "triton_kernels": triton_kernels.__file__,
                      "value_layout": type(w13_t.storage.layout).__name__,
                      "scale_layout": type(w13_sc.storage.layout).__name__,
                      "copy_gbs": round(copy)}), flush=True)

    def moe(x, logits):
        sparse = topk(logits, K, apply_softmax=True)
        dispatch = sparse.mask_metadata.row_sorted_indx
        combine = sparse.mask_metadata.col_sorted_indx
        ragged = make_ragged_tensor_metadata(sparse.mask_metadata.col_sum, dispatch.shape[0])
        gate = sparse.vals.flatten()[combine]
        rdata = RoutingData(gate, ragged.slice_sizes, E, K, ragged)
        h = matmul_ogs(x, w13_t, b13, rdata, gather_indx=GatherIndx(combine, dispatch), precision_config=pc1,
                       fused_activation=act)
        return matmul_ogs(h, w2_t, b2, rdata, scatter_indx=ScatterIndx(dispatch, combine), precision_config=pc2,
                          gammas=rdata.gate_scal)

    for tokens in tokens_list:
        rec = {"impl": IMPL, "tokens": tokens}
        try:
            x = torch.randn(tokens, H, generator=gen, device=device).to(torch.bfloat16)
            logits, ids, w = routing(tokens, gen, device)
            got = moe(x, logits).float()
            ref = reference(x, ids, w, w13_f, b13, w2_f, b2)
            rel = ((got.reshape(ref.shape) - ref).norm() / ref.norm()).item()
            ms = time_ms(lambda: moe(x, logits))
            rec["ms"] = round(ms, 4)
            rec["tflops"] = round(2.0 * tokens * K * (2 * I * H + H * I) / ms / 1e9, 2)
            if tokens == 1:
                n_exp = ids.unique().numel()
                rec["experts"] = n_exp
                rec["weight_bytes"] = n_exp * expert_bytes
                rec["gbs"] = round(n_exp * expert_bytes / ms / 1e6, 1)
                rec["copy_gbs"] = round(copy)
            rec["rel_l2"] = rel
            rec["kernels"] = kernel_names(lambda: moe(x, logits))
        except Exception as e:  # report, do not hide; go on with the next token count
            rec["error"] = repr(e)
        print(json.dumps(rec), flush=True)
        if "error" in rec:
            continue
        # the same call captured once in a CUDA graph and replayed (as vLLM runs decode): GPU time without the
        # Python launch overhead of the eager call above
        rec = {"impl": IMPL + " (cuda graph)", "tokens": tokens}
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    moe(x, logits)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = moe(x, logits)
            g.replay()
            torch.cuda.synchronize()
            rel = ((out.float().reshape(ref.shape) - ref).norm() / ref.norm()).item()
            ms = time_ms(g.replay)
            rec["ms"] = round(ms, 4)
            rec["tflops"] = round(2.0 * tokens * K * (2 * I * H + H * I) / ms / 1e9, 2)
            if tokens == 1:
                rec["gbs"] = round(n_exp * expert_bytes / ms / 1e6, 1)
                rec["copy_gbs"] = round(copy)
            rec["rel_l2"] = rel
            del g, out
        except Exception as e:
            rec["error"] = repr(e)
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
