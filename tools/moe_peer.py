"""What moe4j's peer benchmarks share: the gpt-oss-20b experts problem and how it is timed.

The problem is the one io.moe4j.backend.cuda.CudaExpertsBench runs: 32 experts, top-4, H = I = 2880, MXFP4 weights
(E2M1 codes, E8M0 scales), SwiGLU-OAI on interleaved gate/up rows (alpha 1.702, limit 7). Imported by
torch_moe_bf16.py and triton_ogs_bench.py from this folder.
"""
import torch

E, K, H, I = 32, 4, 2880, 2880
ALPHA, LIMIT = 1.702, 7.0


def e2m1_table(device):
    """The 16 E2M1 values by code (sign in bit 3)."""
    v = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    return torch.tensor(v + [-x for x in v], dtype=torch.float32, device=device)


def swiglu_oai(h):
    """gpt-oss's activation on interleaved gate (even) / up (odd) columns."""
    gate, up = h[..., 0::2], h[..., 1::2]
    gate = gate.clamp(max=LIMIT)
    up = up.clamp(min=-LIMIT, max=LIMIT)
    return gate * torch.sigmoid(ALPHA * gate) * (up + 1)


def time_ms(fn, warm=5, reps=20):
    """Median of `reps` CUDA-event timings of fn() after `warm` untimed calls, in ms."""
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def copy_gbs(device):
    """Device-to-device copy bandwidth of 1 GiB, counting bytes read + written (moe4j's convention), in GB/s."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), warm=2, reps=7)
    return 2 * src.numel() / ms / 1e6
