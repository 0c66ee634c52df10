#!/usr/bin/env python3
"""PyTorch peer for moe4j's CUDA experts benchmark: the gpt-oss-20b experts stage in bf16 on dequantized weights.

Same problem as io.moe4j.backend.cuda.CudaExpertsBench: 32 experts, top-4, H = I = 2880, MXFP4 weights (random
E2M1 codes, E8M0 scales 2^-9..2^-1) dequantized to bf16 once, biases, SwiGLU-OAI on interleaved gate/up rows
(alpha 1.702, limit 7), random routing over all experts, inputs and outputs resident on the device.

Two implementations, each timed with CUDA events (median of repeats after warm-up), routing-dependent index work
included in the time:
  loop         per-expert gather, torch.matmul, activation, torch.matmul, weighted index_add_ (the usual eager MoE)
  grouped_mm   tokens sorted by expert once, torch._grouped_mm for both GEMMs (when this PyTorch has it)
Prints one JSON line per measurement.
"""
import json
import sys

import torch

from moe_peer import E, H, I, K, copy_gbs, e2m1_table, swiglu_oai, time_ms


def mxfp4_bf16(rows, cols, gen, device):
    """Random MXFP4 [E, rows, cols] dequantized to bf16 (exact: e2m1 * 2^s has at most 2 significant bits)."""
    codes = torch.randint(0, 16, (E, rows, cols), generator=gen, device=device)
    scales = torch.randint(118, 127, (E, rows, cols // 32), generator=gen, device=device).float() - 127
    vals = e2m1_table(device)[codes] * torch.exp2(scales).repeat_interleave(32, dim=-1)
    return vals.to(torch.bfloat16)


def routing(tokens, gen, device):
    ids = torch.rand(tokens, E, generator=gen, device=device).argsort(dim=-1)[:, :K].sort(dim=-1).values
    w = torch.softmax(torch.randn(tokens, K, generator=gen, device=device), dim=-1)
    return ids, w


def moe_loop(x, ids, w, w13, b13, w2, b2):
    out = torch.zeros_like(x)
    flat = ids.reshape(-1)
    order = flat.argsort()
    counts = torch.bincount(flat, minlength=E).tolist()  # one host sync, as eager MoE code does
    tok = order // K
    start = 0
    for e in range(E):
        n = counts[e]
        if n == 0:
            continue
        sel = order[start:start + n]
        t = tok[start:start + n]
        start += n
        h = torch.matmul(x[t], w13[e].t()) + b13[e]
        y = torch.matmul(swiglu_oai(h), w2[e].t()) + b2[e]
        out.index_add_(0, t, y * w.reshape(-1)[sel].unsqueeze(1).to(y.dtype))
    return out


def moe_grouped(x, ids, w, w13t, b13, w2t, b2):
    flat = ids.reshape(-1)
    order = flat.argsort()
    tok = order // K
    offs = torch.cumsum(torch.bincount(flat, minlength=E), 0).to(torch.int32)
    xs = x[tok]
    eid = flat[order]
    h = torch._grouped_mm(xs, w13t, offs=offs) + b13[eid]
    y = torch._grouped_mm(swiglu_oai(h), w2t, offs=offs) + b2[eid]
    out = torch.zeros_like(x)
    out.index_add_(0, tok, y * w.reshape(-1)[order].unsqueeze(1).to(y.dtype))
    return out


def main():
    tokens_list = [int(t) for t in (sys.argv[1] if len(sys.argv) > 1 else "4096").split(",")]
    device = "cuda"
    gen = torch.Generator(device=device).manual_seed(2026)
    name = torch.cuda.get_device_name()
    print(json.dumps({"device": name, "torch": torch.__version__,
                      "copy_gbs": round(copy_gbs(device))}), flush=True)
    w13 = mxfp4_bf16(2 * I, H, gen, device)
    w2 = mxfp4_bf16(H, I, gen, device)
    b13 = (torch.randn(E, 2 * I, generator=gen, device=device) * 0.05).to(torch.bfloat16)
    b2 = (torch.randn(E, H, generator=gen, device=device) * 0.05).to(torch.bfloat16)
    w13t = w13.transpose(1, 2)  # [E, H, 2I] views, column-major per expert as _grouped_mm takes them
    w2t = w2.transpose(1, 2)
    for tokens in tokens_list:
        x = torch.randn(tokens, H, generator=gen, device=device).to(torch.bfloat16)
        ids, w = routing(tokens, gen, device)
        flops = 2.0 * tokens * K * (2 * I * H + H * I)
        ms = time_ms(lambda: moe_loop(x, ids, w, w13, b13, w2, b2))
        print(json.dumps({"impl": "torch bf16 per-expert matmul loop", "tokens": tokens, "ms": round(ms, 4),
                          "tflops": round(flops / ms / 1e9, 1)}), flush=True)
        if hasattr(torch, "_grouped_mm"):
            try:
                ref = moe_loop(x, ids, w, w13, b13, w2, b2).float()
                got = moe_grouped(x, ids, w, w13t, b13, w2t, b2).float()
                rel = ((got - ref).norm() / ref.norm()).item()
                ms = time_ms(lambda: moe_grouped(x, ids, w, w13t, b13, w2t, b2))
                print(json.dumps({"impl": "torch bf16 _grouped_mm", "tokens": tokens, "ms": round(ms, 4),
                                  "tflops": round(flops / ms / 1e9, 1), "rel_l2_vs_loop": rel}), flush=True)
            except Exception as e:  # report, do not hide: the loop result above stands on its own
                print(json.dumps({"impl": "torch bf16 _grouped_mm", "tokens": tokens, "error": repr(e)}), flush=True)


if __name__ == "__main__":
    main()
