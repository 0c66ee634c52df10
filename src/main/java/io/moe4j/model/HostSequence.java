package io.moe4j.model;

import java.util.Arrays;

/** A sequence through the host layers of a {@link Model}: one {@link KvBuffer} per layer. */
final class HostSequence implements SequenceState {
    private final Model model;
    private final KvBuffer[] caches;

    HostSequence(Model model) {
        this.model = model;
        this.caches = new KvBuffer[model.layers().size()];
        for (int l = 0; l < caches.length; l++) {
            caches[l] = model.layers().get(l).attention().newCache();
        }
    }

    private HostSequence(Model model, KvBuffer[] caches) {
        this.model = model;
        this.caches = caches;
    }

    @Override
    public SequenceState fork(long position) {
        for (int l = 0; l < caches.length; l++) {
            if (!caches[l].canRewind(model.layers().get(l).attention().window(), position)) {
                return null;
            }
        }
        KvBuffer[] copies = new KvBuffer[caches.length];
        for (int l = 0; l < caches.length; l++) {
            copies[l] = caches[l].copyBefore(position);
        }
        return new HostSequence(model, copies);
    }

    @Override
    public float[] forward(int[] tokens, long start, boolean allLogits) {
        int n = tokens.length;
        float[] h = model.embed(tokens);
        int hidden = model.config().hidden();
        for (int l = 0; l < caches.length; l++) {
            try {
                model.layers().get(l).forward(h, n, hidden, start, caches[l]);
            } catch (RuntimeException e) {
                throw new io.moe4j.MoeException("layer " + l + ": " + e.getMessage(), e);
            }
        }
        if (allLogits) {
            return model.logits(h, n);
        }
        return model.logits(Arrays.copyOfRange(h, (n - 1) * hidden, n * hidden), 1);
    }

    KvBuffer cache(int layer) {
        return caches[layer];
    }

    @Override
    public void reset() {
        for (KvBuffer c : caches) {
            c.clear();
        }
    }

    @Override
    public boolean rewind(long position) {
        for (int l = 0; l < caches.length; l++) {
            if (!caches[l].canRewind(model.layers().get(l).attention().window(), position)) {
                return false;
            }
        }
        for (KvBuffer c : caches) {
            c.truncate(position);
        }
        return true;
    }

    @Override
    public void keepForRewind(int positions) {
        for (KvBuffer c : caches) {
            c.keepForRewind(positions);
        }
    }

    @Override
    public void close() {
        reset();
    }
}
