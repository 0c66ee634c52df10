#!/usr/bin/env python3
"""Ratios of moe4j's whole-model device bench to PyTorch's on the same checkpoint (measurement tooling only).

Reads the text DeviceModelBench printed (lines "decode batch B, ... = X tokens/s", the greedy-on-the-device line of
a batch size where there is one, and "prefill N tokens: ... = Y tokens/s") and the JSON lines tools/peers/torch_gpt_oss.py printed, and prints a table with moe4j / PyTorch for each
measurement both made, and one JSON line with the same figures.

  python3 tools/peers/side_by_side_ratios.py java.txt torch.jsonl
"""
import json
import re
import sys


def java_figures(path):
    """{(what, batch): tokens/s} from DeviceModelBench's output."""
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.search(r"decode batch (\d+)\b.*?= ([\d.]+) tokens/s", line)
            if m:
                # the greedy rows (the token picked on the device, as the torch loops do) over the logits rows
                key = ("decode", int(m.group(1)))
                if "greedy on the device" in line:
                    out[key] = float(m.group(2))
                else:
                    out.setdefault(key, float(m.group(2)))
                continue
            m = re.search(r"prefill (\d+) tokens: .*?= ([\d.]+) tokens/s", line)
            if m:
                out.setdefault(("prefill", 1), float(m.group(2)))
    return out


def torch_figures(path):
    """{(what, batch): {impl: tokens/s}} and the checks and header lines, from torch_gpt_oss.py's JSON lines."""
    figures, checks, info = {}, [], {}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("what") in ("check", "check_tokens"):
                checks.append(j)
            elif j.get("what") in ("loaded", "copy_bandwidth"):
                info.update(j)
            elif "tokens_per_s" in j and "impl" in j:
                figures.setdefault((j["what"], j["batch"]), {})[j["impl"]] = j["tokens_per_s"]
    return figures, checks, info


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    java = java_figures(sys.argv[1])
    torch, checks, info = torch_figures(sys.argv[2])
    if not java:
        print(f"{sys.argv[1]}: no 'decode batch' or 'prefill' figure of DeviceModelBench found", file=sys.stderr)
    if not torch:
        print(f"{sys.argv[2]}: no measurement of torch_gpt_oss.py found", file=sys.stderr)
    print(f"device: {info.get('device', '?')}; torch {info.get('torch', '?')}, transformers "
          f"{info.get('transformers', '?')} (experts: {info.get('transformers_experts', '?')}); hand loop experts: "
          f"{info.get('hand_experts', '?')}; {info.get('layers', '?')} layers")
    for c in checks:
        if c["what"] == "check_tokens":
            print(f"check {c['a']} vs {c['b']}: {c['same']:.0%} of {c['tokens']} greedy tokens after the prompt equal"
                  f" ({c.get('same_before_first_difference', '?')} before the first difference)")
            continue
        print(f"check {c['a']} vs {c['b']}: rel L2 {c['rel_l2']:.4f} over the last position's logits of a "
              f"{c['tokens']}-token prompt, same argmax: {c['argmax_equal']}")
    print("| measurement | moe4j tokens/s | transformers tokens/s | best hand loop tokens/s (variant) "
          "| moe4j / transformers | moe4j / hand |")
    print("|---|---|---|---|---|---|")
    rows = []
    for key in sorted(set(java) | set(torch)):
        what, batch = key
        impls = torch.get(key, {})
        tf = next((v for k, v in impls.items() if k.startswith("transformers")), None)
        hand = {k: v for k, v in impls.items() if k.startswith("hand")}
        best = max(hand, key=hand.get) if hand else None
        j = java.get(key)
        r_tf = j / tf if j and tf else None
        r_hand = j / hand[best] if j and best else None
        label = f"decode batch {batch}" if what == "decode" else "prefill (one prompt)"
        print(f"| {label} | {fmt(j)} | {fmt(tf)} | {fmt(hand.get(best))} ({best or '-'}) | {fmt(r_tf, 2)} "
              f"| {fmt(r_hand, 2)} |")
        rows.append(dict(what=what, batch=batch, moe4j=j, transformers=tf, hand=hand.get(best), hand_variant=best,
                         moe4j_over_transformers=r_tf, moe4j_over_hand=r_hand))
    print(json.dumps({"side_by_side": rows}))
    return 0


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
