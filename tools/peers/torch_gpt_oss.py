#!/usr/bin/env python3
"""PyTorch peer of moe4j's whole-model GPU bench: a gpt-oss checkpoint directory run by PyTorch in bf16.

Measurement tooling only, not part of the engine: it reads the directory moe4j's synthetic writer produced
(`moe bench --model-preset gpt-oss-20b --write-only`, hub layout, MXFP4 experts) so that PyTorch and moe4j time the
same weights. The MXFP4 experts are dequantized here to bf16 (E2M1 codes, low nibble first, times 2^(E8M0 - 127)),
on the device, into the [experts, in, out] layout transformers' GptOssExperts keeps; everything else is copied as
stored. Two implementations share those weight tensors:

  transformers  GptOssForCausalLM (eager attention, its default experts implementation), timed through generate()
  hand          a hand-written loop: static KV cache, per-layer attention with sinks and the sliding window as
                gpt-oss computes it, top-k routing, experts through torch grouped_mm (torch.nn.functional.grouped_mm
                or torch._grouped_mm, whichever this PyTorch has; a per-expert loop when neither runs here), and on
                CUDA the decode step captured as a CUDA graph (eager, graph, and with --compile torch.compile + graph)

Before timing it checks that both compute the same model: the last position's logits of a prompt longer than the
sliding window, rel L2 between transformers and the hand loop, and against moe4j's logits (`moe logits`) when
--java-logits is given. Prints one JSON line per check and per measurement.

  python3 tools/peers/torch_gpt_oss.py --model DIR --write-ids ids.safetensors   # the check prompt, for moe logits
  python3 tools/peers/torch_gpt_oss.py --model DIR [--device cuda] [--java-logits logits.safetensors]
"""
import argparse
import contextlib
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

SEED = 20261125
FP4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def emit(**fields):
    print(json.dumps(fields), flush=True)


def fail(msg):
    print(f"torch_gpt_oss: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------------------- loading

def read_config(model_dir):
    path = os.path.join(model_dir, "config.json")
    try:
        with open(path) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: cannot read config.json: {e}")
    if cfg.get("model_type") != "gpt_oss":
        fail(f"{path}: model_type is {cfg.get('model_type')!r}, this peer runs gpt_oss only")
    return cfg


def shard_files(model_dir):
    """tensor name -> file, from model.safetensors.index.json or the single model.safetensors."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            return {k: os.path.join(model_dir, v) for k, v in json.load(f)["weight_map"].items()}
    single = os.path.join(model_dir, "model.safetensors")
    if not os.path.exists(single):
        fail(f"{model_dir}: neither model.safetensors.index.json nor model.safetensors")
    from safetensors import safe_open
    with safe_open(single, framework="pt") as f:
        return {k: single for k in f.keys()}


class Checkpoint:
    """Tensors of a checkpoint directory read straight onto the device, one shard handle open at a time."""

    def __init__(self, model_dir, device):
        self.files = shard_files(model_dir)
        self.device = device
        self._open = (None, None)

    def get(self, name):
        from safetensors import safe_open
        if name not in self.files:
            fail(f"checkpoint has no tensor {name!r}")
        path = self.files[name]
        if self._open[0] != path:
            self._open = (path, safe_open(path, framework="pt", device=str(self.device)))
        return self._open[1].get_tensor(name)


def dequant_mxfp4(blocks, scales, dtype, name):
    """[E, R, G, 16] U8 codes and [E, R, G] U8 E8M0 scales -> [E, R, G*32] (row-major as stored: out x in)."""
    if blocks.dtype != torch.uint8 or scales.dtype != torch.uint8 or blocks.shape[:-1] != scales.shape \
            or blocks.shape[-1] != 16:
        fail(f"{name}: MXFP4 blocks {tuple(blocks.shape)} {blocks.dtype} / scales {tuple(scales.shape)} "
             f"{scales.dtype} are not [E, R, G, 16] / [E, R, G] uint8")
    if bool((scales == 255).any()):
        fail(f"{name}_scales: E8M0 code 255 (NaN)")
    lut = torch.tensor(FP4, dtype=torch.float32, device=blocks.device)
    e, r, g, _ = blocks.shape
    out = torch.empty(e, r, g * 32, dtype=dtype, device=blocks.device)
    for x in range(e):  # one expert at a time keeps the float32 temporaries small
        b = blocks[x].to(torch.int64)
        v = torch.stack((lut[b & 15], lut[b >> 4]), dim=-1).reshape(r, g, 32)
        v = v * torch.exp2(scales[x].to(torch.float32) - 127).unsqueeze(-1)
        out[x] = v.reshape(r, g * 32).to(dtype)
    return out


def load_transformers(model_dir, device, dtype):
    """GptOssForCausalLM of the directory's config with the checkpoint's weights, experts dequantized."""
    import transformers
    from transformers import AutoConfig, GptOssForCausalLM
    cfg = AutoConfig.from_pretrained(model_dir)
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config  # dequantized below: the model is built as a plain bf16 one
    cfg._attn_implementation = "eager"  # gpt-oss's sinks: transformers runs them in eager (sdpa unsupported)
    with torch.device("meta"):
        model = GptOssForCausalLM(cfg)
    # cast while on meta (free), so that to_empty allocates every parameter once, at its size in dtype
    model = model.to(dtype).to_empty(device=device)
    model.eval()
    model.requires_grad_(False)
    # non-persistent buffers (the RoPE frequencies) came over from meta empty: rebuild them on the device
    rope = model.model.rotary_emb
    model.model.rotary_emb = type(rope)(config=cfg).to(device)
    unknown = [n for n, _ in model.named_buffers() if "rotary_emb" not in n]
    if unknown:
        fail(f"transformers {transformers.__version__}: buffers this loader does not fill: {unknown}")
    ckpt = Checkpoint(model_dir, device)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("mlp.experts.gate_up_proj") or name.endswith("mlp.experts.down_proj"):
                w = dequant_mxfp4(ckpt.get(name + "_blocks"), ckpt.get(name + "_scales"), dtype, name)
                # stored [E, out, in]; transformers' GptOssExperts keeps [E, in, out] (x @ W)
                w = w.transpose(1, 2)
            else:
                w = ckpt.get(name)
            if tuple(w.shape) != tuple(p.shape):
                fail(f"{name}: checkpoint gives {tuple(w.shape)}, transformers {transformers.__version__} "
                     f"wants {tuple(p.shape)}")
            p.copy_(w)
            del w
    if device.type == "cuda":
        torch.cuda.empty_cache()
    experts_impl = getattr(model.config, "_experts_implementation", None) or "this version's own (no choice)"
    return model, cfg, transformers.__version__, experts_impl


# -------------------------------------------------------------------------------------------------------- hand loop

def grouped_mm_fn(device, dtype):
    """torch's grouped GEMM if it runs here for (device, dtype), else None."""
    fn = getattr(F, "grouped_mm", None) or getattr(torch, "_grouped_mm", None)
    if fn is None:
        return None, "none in this torch"
    try:
        a = torch.randn(48, 64, device=device, dtype=dtype)
        b = torch.randn(3, 64, 32, device=device, dtype=dtype)
        offs = torch.tensor([16, 16, 48], device=device, dtype=torch.int32)
        got = fn(a, b, offs=offs).float()
        want = torch.cat([a[:16].float() @ b[0].float(), a[16:].float() @ b[2].float()])
        if (got - want).norm() > 1e-2 * want.norm():
            return None, "gives wrong results here"
    except Exception as e:  # noqa: BLE001 - any failure means: not usable here
        return None, f"fails here: {type(e).__name__}: {str(e)[:120]}"
    name = "torch.nn.functional.grouped_mm" if fn is getattr(F, "grouped_mm", None) else "torch._grouped_mm"
    return fn, name


class HandLoop:
    """gpt-oss's forward written out with a static KV cache, sharing the transformers model's weight tensors."""

    ALPHA, LIMIT = 1.702, 7.0

    def __init__(self, model, cfg, batch, max_len, grouped_mm):
        dev = model.lm_head.weight.device
        self.dtype = model.lm_head.weight.dtype
        self.h, self.kv, self.d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.window = cfg.sliding_window
        self.k = cfg.num_experts_per_tok
        self.e = cfg.num_local_experts
        self.eps = cfg.rms_norm_eps
        self.sliding = [t == "sliding_attention" for t in cfg.layer_types]
        self.grouped_mm = grouped_mm
        self.embed = model.model.embed_tokens.weight
        self.norm = model.model.norm.weight
        self.lm_head = model.lm_head.weight
        self.layers = []
        for layer in model.model.layers:
            a, m = layer.self_attn, layer.mlp
            self.layers.append(dict(
                ln1=layer.input_layernorm.weight, ln2=layer.post_attention_layernorm.weight,
                # q, k and v as one GEMM (a copy of the attention weights: 0.7 GB for gpt-oss-20b)
                wqkv=torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]),
                bqkv=torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias]),
                wo=a.o_proj.weight, bo=a.o_proj.bias, sinks=a.sinks.float(),
                wr=m.router.weight, br=m.router.bias,
                w13=m.experts.gate_up_proj, b13=m.experts.gate_up_proj_bias,  # [E, H, 2I] (x @ W), gate/up interleaved
                w2=m.experts.down_proj, b2=m.experts.down_proj_bias))  # [E, I, H]
        self.batch, self.max_len = batch, max_len
        shape = (batch, self.kv, max_len, self.d)
        self.kc = [torch.zeros(shape, device=dev, dtype=self.dtype) for _ in self.layers]
        self.vc = [torch.zeros(shape, device=dev, dtype=self.dtype) for _ in self.layers]
        # RoPE tables from transformers' own module (YaRN with its attention scaling), cast as it casts them
        pos = torch.arange(max_len, device=dev)[None]
        cos, sin = model.model.rotary_emb(self.embed[:1][None], pos)
        self.cos, self.sin = cos[0, :, : self.d // 2], sin[0, :, : self.d // 2]
        self.kpos = torch.arange(max_len, device=dev)
        self.expert_ids = torch.arange(self.e, device=dev)

    def rms(self, x, w):
        xf = x.float()
        return (w.float() * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps))).to(self.dtype)

    def rope(self, x, cos, sin):  # x [B, T, heads, D]; halves rotated, as gpt-oss does
        a, b = x.chunk(2, dim=-1)
        cos, sin = cos[None, :, None], sin[None, :, None]
        return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

    def attention(self, q, l, qpos):
        """q [B, T, H, D] against the cache [0, max_len) with the causal (and sliding) mask and the sinks."""
        bsz, t = q.shape[0], q.shape[1]
        g = self.h // self.kv
        out = torch.empty_like(q)
        chunk = max(1, (1 << 28) // (self.h * self.max_len * 4 * bsz))  # bounds the float32 scores to ~256 MB
        for s in range(0, t, chunk):
            qs = q[:, s:s + chunk]
            ts = qs.shape[1]
            qq = qs.permute(0, 2, 1, 3).reshape(bsz, self.kv, g * ts, self.d)
            # products in the model's dtype as transformers computes them, softmax in float32
            scores = (qq @ self.kc[l].transpose(2, 3)).float() * (self.d ** -0.5)  # [B, KV, G*T, L]
            p = qpos[s:s + chunk]
            allowed = self.kpos[None, :] <= p[:, None]
            if self.sliding[l]:
                allowed &= self.kpos[None, :] > p[:, None] - self.window
            scores = scores.view(bsz, self.kv, g, ts, self.max_len).masked_fill(~allowed, float("-inf"))
            sink = self.layers[l]["sinks"].view(1, self.kv, g, 1, 1).expand(bsz, -1, -1, ts, 1)
            probs = torch.softmax(torch.cat((scores, sink), dim=-1), dim=-1)[..., :-1]
            o = probs.reshape(bsz, self.kv, g * ts, self.max_len).to(self.dtype) @ self.vc[l]
            out[:, s:s + chunk] = o.view(bsz, self.kv, g, ts, self.d).permute(0, 3, 1, 2, 4) \
                .reshape(bsz, ts, self.h, self.d).to(self.dtype)
        return out

    def experts(self, x, w):
        """x [N, H]; top-k routing of the router's logits; grouped GEMMs over the (token, expert) pairs by expert."""
        logits = F.linear(x, w["wr"], w["br"])
        top, ids = torch.topk(logits, self.k, dim=-1)
        gates = torch.softmax(top.float(), dim=-1).to(self.dtype)
        n = x.shape[0]
        flat = ids.reshape(-1)
        if self.grouped_mm is None:
            return self.experts_loop(x, ids, gates, w)
        order = torch.argsort(flat, stable=True)
        sorted_ids = flat[order]
        # counts per expert without a data-dependent shape (bincount would sync the host and break graphs)
        offs = torch.cumsum((flat[:, None] == self.expert_ids[None]).sum(0), 0).to(torch.int32)
        rows = x[order // self.k]
        gu = self.grouped_mm(rows, w["w13"], offs=offs) + w["b13"][sorted_ids]
        gate, up = gu[..., 0::2].clamp(max=self.LIMIT), gu[..., 1::2].clamp(-self.LIMIT, self.LIMIT)
        act = (up + 1) * (gate * torch.sigmoid(gate * self.ALPHA))
        y = self.grouped_mm(act, w["w2"], offs=offs) + w["b2"][sorted_ids]
        y = y * gates.reshape(-1)[order, None]
        out = torch.empty_like(y)
        out[order] = y
        return out.view(n, self.k, -1).float().sum(1).to(self.dtype)

    def experts_loop(self, x, ids, gates, w):
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
        for e in torch.unique(ids).tolist():  # host sync: no CUDA graph on this path
            tok, slot = torch.where(ids == e)
            gu = x[tok] @ w["w13"][e] + w["b13"][e]
            gate, up = gu[..., 0::2].clamp(max=self.LIMIT), gu[..., 1::2].clamp(-self.LIMIT, self.LIMIT)
            y = ((up + 1) * (gate * torch.sigmoid(gate * self.ALPHA))) @ w["w2"][e] + w["b2"][e]
            out.index_add_(0, tok, (y * gates[tok, slot, None]).float())
        return out.to(self.dtype)

    def forward(self, ids, pos):
        """ids [B, T] at positions pos .. pos+T-1 (pos a 0-d device tensor); returns the last position's logits."""
        bsz, t = ids.shape
        qpos = pos + torch.arange(t, device=ids.device)
        cos, sin = self.cos[qpos], self.sin[qpos]
        x = F.embedding(ids, self.embed)
        for l, w in enumerate(self.layers):
            h = self.rms(x, w["ln1"])
            qkv = F.linear(h, w["wqkv"], w["bqkv"])
            q, k, v = qkv.split([self.h * self.d, self.kv * self.d, self.kv * self.d], dim=-1)
            q = self.rope(q.view(bsz, t, self.h, self.d), cos, sin)
            k = self.rope(k.view(bsz, t, self.kv, self.d), cos, sin)
            self.kc[l].index_copy_(2, qpos, k.transpose(1, 2))
            self.vc[l].index_copy_(2, qpos, v.view(bsz, t, self.kv, self.d).transpose(1, 2))
            a = self.attention(q, l, qpos)
            x = x + F.linear(a.reshape(bsz, t, self.h * self.d), w["wo"], w["bo"])
            h = self.rms(x, w["ln2"])
            x = x + self.experts(h.reshape(bsz * t, -1), w).view(bsz, t, -1)
        return F.linear(self.rms(x[:, -1], self.norm), self.lm_head)


# ----------------------------------------------------------------------------------------------------------- timing

def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def seconds(fn, device):
    sync(device)
    t0 = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - t0, out


def rel_l2(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return float((a - b).norm() / b.norm())


def random_ids(n, vocab, batch=1, seed=SEED):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, n), generator=g)


def bytes_per_token(cfg):
    """Weights a decoded token reads (as stored: bf16 attention, router, lm_head; MXFP4 experts), moe4j's count."""
    h, q, kv = cfg["hidden_size"], cfg["num_attention_heads"] * cfg["head_dim"], \
        cfg["num_key_value_heads"] * cfg["head_dim"]
    i, e, k = cfg["intermediate_size"], cfg["num_local_experts"], cfg["num_experts_per_tok"]
    attention = 2 * h * (q + 2 * kv) + 2 * q * h
    router = 4 * e * h
    expert = 2 * i * (h // 2 + h // 32) + h * (i // 2 + i // 32)
    return cfg["num_hidden_layers"] * (attention + router + k * expert) + 2 * cfg["vocab_size"] * h + 2 * h


def copy_gbps(device):
    src = torch.empty(1 << 30, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    for _ in range(2):
        dst.copy_(src)
    times = []
    for _ in range(7):
        times.append(seconds(lambda: dst.copy_(src), device)[0])
    del src, dst
    return 2 * (1 << 30) / sorted(times)[3] / 1e9


def hf_logits(model, ids):
    with torch.no_grad():
        try:
            out = model(input_ids=ids, logits_to_keep=1, use_cache=False)
        except TypeError:
            out = model(input_ids=ids, use_cache=False)
    return out.logits[0, -1]


class StepClock:
    """A logits processor that changes nothing and notes when each generation step's logits are ready (the device
    drained first; generate syncs with the host every step anyway to check its stopping criteria)."""

    def __init__(self, device):
        self.device, self.times = device, []

    def __call__(self, input_ids, scores):
        sync(self.device)
        self.times.append(time.perf_counter())
        return scores

    def step_seconds(self):
        """Median time between consecutive steps' logits: one decode step (the first call ends the prompt's pass)."""
        d = sorted(b - a for a, b in zip(self.times, self.times[1:]))
        return d[len(d) // 2] if d else float("nan")


def hf_generate(model, cfg, ids, new, clock=None):
    from transformers import GenerationConfig, LogitsProcessorList
    gc = GenerationConfig(max_new_tokens=new, min_new_tokens=new, do_sample=False,
                          eos_token_id=cfg.eos_token_id, pad_token_id=cfg.pad_token_id)
    extra = {} if clock is None else {"logits_processor": LogitsProcessorList([clock])}
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=gc, **extra)
    if out.shape[1] != ids.shape[1] + new:
        fail(f"generate returned {out.shape[1] - ids.shape[1]} new tokens, not {new}")
    return out


def time_hf_generate(model, cfg, vocab, device, batch, prompt, new, common):
    ids = random_ids(prompt, vocab, batch).to(device)
    hf_generate(model, cfg, ids, new)  # warm-up
    runs = []
    for _ in range(2):
        clock = StepClock(device)
        total = seconds(lambda: hf_generate(model, cfg, ids, new, clock), device)[0]
        runs.append((clock.step_seconds(), total))
    step, total = min(runs)
    emit(impl="transformers.generate", what="decode", batch=batch, prompt_tokens=prompt, new_tokens=new,
         ms_per_step=round(step * 1e3, 3), tokens_per_s=round(batch / step, 1),
         generate_tokens_per_s=round(batch * new / total, 1), **common)


def time_prefill(fn, device, n, impl, common):
    fn()  # warm-up
    times = sorted(seconds(fn, device)[0] for _ in range(3))
    emit(impl=impl, what="prefill", batch=1, prompt_tokens=n, seconds=round(times[1], 4),
         tokens_per_s=round(n / times[1], 1), **common)


def decode_hand(loop, device, prompt_ids, steps, step_fn):
    """Prefills the prompt, then `steps` greedy steps through step_fn(ids [B,1], pos) -> logits; returns the
    seconds a step and the tokens chosen."""
    pos = torch.zeros((), dtype=torch.int64, device=device)
    with torch.no_grad():
        logits = loop.forward(prompt_ids, pos)
        pos += prompt_ids.shape[1]
        tokens = []
        nxt = logits.argmax(-1, keepdim=True)
        sync(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            tokens.append(nxt)
            logits = step_fn(nxt, pos)
            pos += 1
            nxt = logits.argmax(-1, keepdim=True)
        sync(device)
    return (time.perf_counter() - t0) / steps, torch.cat(tokens, dim=1)


class GraphStep:
    """One decode step (optionally torch.compiled) captured as a CUDA graph over static id and position buffers."""

    def __init__(self, loop, device, fn):
        self.ids = torch.zeros((loop.batch, 1), dtype=torch.int64, device=device)
        self.pos = torch.zeros((), dtype=torch.int64, device=device)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(3):  # warm-up outside the graph (allocations, compilation, cuBLAS handles)
                fn(self.ids, self.pos)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.no_grad():
            self.out = fn(self.ids, self.pos)

    def __call__(self, ids, pos):
        self.ids.copy_(ids)
        self.pos.copy_(pos)
        self.graph.replay()
        return self.out


def guarded(impl, what, batch, fn):
    """Runs one measurement; a failure becomes a JSON line, so the others' figures are not lost."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        emit(impl=impl, what=what, batch=batch, error=f"{type(e).__name__}: {str(e)[:300]}")
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def decode_both(model, cfg, vocab, device, b, a, gmm, common):
    if not a.skip_transformers:
        guarded("transformers.generate", "decode", b,
                lambda: time_hf_generate(model, cfg, vocab, device, b, a.prompt_tokens, a.new_tokens, common))
    time_hand_decode(model, cfg, vocab, device, b, a, gmm, common)


def time_hand_decode(model, cfg, vocab, device, b, a, gmm, common):
    steps = a.new_tokens
    loop = HandLoop(model, cfg, b, a.prompt_tokens + steps + 8, gmm)
    prompt = random_ids(a.prompt_tokens, vocab, b).to(device)
    variants = [("hand", loop.forward)]
    if device.type == "cuda" and gmm is not None:
        variants.append(("hand+cudagraph", None))
        if a.compile:
            variants.append(("hand+compile+cudagraph", "compile"))
    eager_tokens = []

    def run(impl, fn):
        if fn is None:
            fn = GraphStep(loop, device, loop.forward)
        elif fn == "compile":
            tc = time.perf_counter()
            fn = GraphStep(loop, device, torch.compile(loop.forward, dynamic=False))
            emit(impl=impl, what="compile", batch=b, seconds=round(time.perf_counter() - tc, 1))
        decode_hand(loop, device, prompt, 4, fn)  # warm-up
        step, tokens = decode_hand(loop, device, prompt, steps, fn)
        same = float((tokens == eager_tokens[0]).float().mean()) if eager_tokens else None
        eager_tokens.append(tokens)
        emit(impl=impl, what="decode", batch=b, prompt_tokens=a.prompt_tokens, new_tokens=steps,
             ms_per_step=round(step * 1e3, 3), tokens_per_s=round(b / step, 1), tokens_as_eager=same, **common)

    for impl, fn in variants:
        guarded(impl, "decode", b, lambda: run(impl, fn))
    del loop
    if device.type == "cuda":
        torch.cuda.empty_cache()


# ------------------------------------------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="gpt-oss checkpoint directory (hub layout, MXFP4 experts)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"],
                    help="weights and activations (float32: a tight check against moe4j on small models)")
    ap.add_argument("--check-tokens", type=int, default=160, help="the check prompt (longer than the window of 128)")
    ap.add_argument("--write-ids", help="write the check prompt as safetensors input_ids (I32) and stop")
    ap.add_argument("--java-logits", help="moe logits' output for the --write-ids prompt: compared with both")
    ap.add_argument("--check-only", action="store_true", help="the logits checks, no timings")
    ap.add_argument("--prompt-tokens", type=int, default=16, help="the prompt before timed decode")
    ap.add_argument("--new-tokens", type=int, default=64, help="decoded tokens timed")
    ap.add_argument("--prefill-tokens", type=int, default=2048)
    ap.add_argument("--batches", default="1,8,64", help="decode batch sizes")
    ap.add_argument("--skip-transformers", action="store_true")
    ap.add_argument("--compile", action="store_true", help="also torch.compile the hand loop's step (minutes)")
    ap.add_argument("--max-rel-l2", type=float, default=0.05,
                    help="agreement asked of the checks (bf16 activations); exit 3 when missed")
    a = ap.parse_args()

    cfg_json = read_config(a.model)
    vocab = cfg_json["vocab_size"]
    if a.write_ids:
        from safetensors.torch import save_file
        save_file({"input_ids": random_ids(a.check_tokens, vocab)[0].to(torch.int32)}, a.write_ids)
        emit(what="ids", path=a.write_ids, tokens=a.check_tokens)
        return 0

    torch.set_grad_enabled(False)  # inference only: no autograd records around the weights
    device = torch.device(a.device)
    dtype = getattr(torch, a.dtype)
    t0 = time.perf_counter()
    model, cfg, tf_version, experts_impl = load_transformers(a.model, device, dtype)
    gmm, gmm_name = grouped_mm_fn(device, dtype)
    info = dict(device=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                torch=torch.__version__, transformers=tf_version, dtype=a.dtype,
                layers=cfg.num_hidden_layers, hidden=cfg.hidden_size, experts=cfg.num_local_experts)
    emit(what="loaded", seconds=round(time.perf_counter() - t0, 1), transformers_experts=experts_impl,
         hand_experts=gmm_name if gmm else f"per-expert loop (grouped_mm {gmm_name})", **info)
    common = dict(device=info["device"], layers=cfg.num_hidden_layers)

    # ---- the same model? last position's logits of the check prompt
    ok = True
    ids = random_ids(a.check_tokens, vocab).to(device)
    ref = hf_logits(model, ids).float()
    loop = HandLoop(model, cfg, 1, a.check_tokens, gmm)
    with torch.no_grad():
        hand = loop.forward(ids, torch.zeros((), dtype=torch.int64, device=device)).float()[0]
    d = rel_l2(hand, ref)
    ok &= d <= a.max_rel_l2
    emit(what="check", a="hand", b="transformers", tokens=a.check_tokens, rel_l2=d,
         argmax_equal=bool(hand.argmax() == ref.argmax()))
    # the decode path too: greedy continuations of the check prompt (transformers' generate, the hand loop's steps)
    n = 8
    hf_tokens = hf_generate(model, cfg, ids, n)[:, ids.shape[1]:]
    loop = HandLoop(model, cfg, 1, a.check_tokens + n + 1, gmm)
    _, hand_tokens = decode_hand(loop, device, ids, n, loop.forward)
    equal = (hand_tokens == hf_tokens)[0].tolist()
    emit(what="check_tokens", a="hand", b="transformers", tokens=n, same=sum(equal) / n,
         same_before_first_difference=equal.index(False) if False in equal else n)
    del loop
    if a.java_logits:
        from safetensors import safe_open
        with safe_open(a.java_logits, framework="pt") as f:
            java = f.get_tensor("logits")[-1].float().to(device)
        if java.shape != ref.shape:
            fail(f"{a.java_logits}: logits of {tuple(java.shape)}, the model has {tuple(ref.shape)}")
        for name, mine in (("transformers", ref), ("hand", hand)):
            d = rel_l2(mine, java)
            ok &= d <= a.max_rel_l2
            emit(what="check", a=name, b="moe4j", tokens=a.check_tokens, rel_l2=d,
                 argmax_equal=bool(mine.argmax() == java.argmax()))
    if a.check_only:
        return 0 if ok else 3

    # ---- timings
    if device.type == "cuda":
        emit(what="copy_bandwidth", gbps=round(copy_gbps(device), 1), bytes_per_token=bytes_per_token(cfg_json),
             **common)
    batches = [int(b) for b in a.batches.split(",") if b]
    # batch 1, the prefill, then the larger batches; both peers' figures of one kind before the next, so that a run
    # stopped early still has pairs to compare
    for b in batches[:1]:
        decode_both(model, cfg, vocab, device, b, a, gmm, common)
    pre = random_ids(a.prefill_tokens, vocab).to(device)
    if not a.skip_transformers:
        guarded("transformers.forward", "prefill", 1,
                lambda: time_prefill(lambda: hf_logits(model, pre), device, a.prefill_tokens, "transformers.forward",
                                     common))
    loop = HandLoop(model, cfg, 1, a.prefill_tokens, gmm)
    zero = torch.zeros((), dtype=torch.int64, device=device)
    guarded("hand", "prefill", 1,
            lambda: time_prefill(lambda: loop.forward(pre, zero), device, a.prefill_tokens, "hand", common))
    del loop, pre
    for b in batches[1:]:
        decode_both(model, cfg, vocab, device, b, a, gmm, common)
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
