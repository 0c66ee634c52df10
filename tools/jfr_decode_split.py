#!/usr/bin/env python3
"""Where a host decode's threads spend their time, from a JFR recording of `moe bench --model-preset ...`.

Record with `-XX:FlightRecorderOptions:stackdepth=256 -XX:StartFlightRecording=filename=dec.jfr,settings=profile`,
then: `jfr print --json --events jdk.ExecutionSample dec.jfr > dec.json; python3 tools/jfr_decode_split.py dec.json`.

The window is the decoder thread's samples inside HostSequence.forward (the prompts and decode steps; packing and
loading fall outside it). The decoder thread ("main") takes part in every parallel loop, so its samples split into:
in a loop's task (JFR's walk of a task's stack ends at the loop body's lambda), waiting for a loop's last tasks
(WorkerPool$Job.awaitDone), sequential code between loops (rooted in HostSequence.forward), and walks JFR cut short
elsewhere (often inside Vector API frames; read their engine frames to tell which kind they are), the last two listed
by the engine frames nearest the top. Workers' samples split into idle (WorkerPool.idle) and the rest.
"""
import collections
import json
import sys

ENGINE = ('GroupedQueryAttention', 'LatentAttention', 'AttentionMath', 'RmsNorm', 'Rope', 'VectorRouterLogits',
          'CpuRouter', 'KvBuffer', 'CpuLinear', 'CpuMatrices', 'VectorKernels', 'Inputs', 'FusedInputs',
          'CpuExperts', 'CpuExperts$Wave', 'MoeLayer', 'MoeFeedForward', 'DecoderLayer', 'Model', 'Logits',
          'TokenDraw', 'FloatMath', 'TokenGroups')


def frames(event):
    trace = event['values'].get('stackTrace') or {}
    return [f['method']['type']['name'].split('/')[-1] + '.' + f['method']['name'] for f in trace.get('frames', [])]


def main(path):
    events = json.load(open(path))['recording']['events']
    samples = [(e['values']['startTime'], e['values']['sampledThread'].get('javaName') or '', frames(e))
               for e in events]
    inside = sorted(t for t, name, fr in samples if name == 'main' and 'HostSequence.forward' in fr)
    if not inside:
        sys.exit('no samples of the decoder thread inside HostSequence.forward (stack depth too small?)')
    lo, hi = inside[0], inside[-1]
    kinds = collections.Counter()
    sequential = collections.Counter()
    cut = collections.Counter()
    for t, name, fr in samples:
        if not lo <= t <= hi:
            continue
        joined = ' '.join(fr)
        if name.startswith('moe4j-cpu'):
            kinds['worker: idle' if 'WorkerPool.idle' in joined else 'worker: busy'] += 1
        elif name == 'main':
            if 'WorkerPool$Job.awaitDone' in joined:
                kinds["main: waiting for a loop's last tasks"] += 1
            elif 'WorkerPool$Job.participate' in joined or (fr and ('.run' in fr[-1] or 'lambda$' in fr[-1])):
                kinds["main: in a loop's task"] += 1  # a task's walk stops at the loop body's lambda
            elif 'HostSequence.forward' in fr:
                kinds['main: sequential'] += 1
                engine = [f for f in fr if f.split('.')[0] in ENGINE]
                sequential[' < '.join(engine[:3]) or fr[0]] += 1
            else:
                kinds['main: walk cut short (a task or sequential code)'] += 1
                engine = [f for f in fr if f.split('.')[0] in ENGINE]
                cut[' < '.join(engine[:3]) or fr[0]] += 1
    for kind in sorted(kinds):
        print(f'{kinds[kind]:7d}  {kind}')
    for title, counts in (('main: sequential', sequential), ('main: walk cut short', cut)):
        print(title + ', by the engine frames nearest the top:')
        for where, n in counts.most_common(15):
            print(f'{n:7d}  {where}')


if __name__ == '__main__':
    main(sys.argv[1])
