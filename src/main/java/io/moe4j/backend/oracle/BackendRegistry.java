package io.moe4j.backend.oracle;

import io.moe4j.backend.Backend;
import io.moe4j.backend.BackendTraits;
import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.cpu.CpuBackend;
import io.moe4j.backend.cuda.CudaBackend;
import io.moe4j.backend.emulation.EmulationBackend;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The backends this build knows, each with its {@link BackendTraits}. Injectable: tests hand it fakes, and adding
 * a backend to {@link #standard()} is one line.
 */
public final class BackendRegistry {

    /** A backend and its traits. */
    public record Entry(Backend backend, BackendTraits traits) {
        public String name() {
            return backend.name();
        }

        /** The entry with the traits the backend states ({@link BackendTraits.Provider}) or the canonical ones. */
        public static Entry of(Backend backend) {
            return new Entry(backend, backend instanceof BackendTraits.Provider p ? p.traits() : BackendTraits.canonical());
        }
    }

    private final Map<String, Entry> entries;

    public BackendRegistry(List<Entry> entries) {
        Map<String, Entry> m = new LinkedHashMap<>();
        for (Entry e : entries) {
            if (m.putIfAbsent(e.name(), e) != null) {
                throw new IllegalArgumentException("backend '" + e.name() + "' registered twice");
            }
        }
        this.entries = java.util.Collections.unmodifiableMap(m);
    }

    public static BackendRegistry of(Backend... backends) {
        List<Entry> l = new ArrayList<>();
        for (Backend b : backends) {
            l.add(Entry.of(b));
        }
        return new BackendRegistry(l);
    }

    /** The backends of this build, in the oracle's default order of preference. */
    public static BackendRegistry standard() {
        return new BackendRegistry(List.of(
                Entry.of(new CudaBackend()),
                Entry.of(new CpuBackend()),
                new Entry(new EmulationBackend(), EMULATION_TRAITS)));
    }

    /**
     * The reference computes on the canonical weights and quantize-dequantizes activations per the scheme it is
     * given, so it can run a weight-only layer with any dynamic activation format moe4j has.
     */
    public static final BackendTraits EMULATION_TRAITS = BackendTraits.canonical().anyDynamicActivation();

    public List<Entry> entries() {
        return List.copyOf(entries.values());
    }

    public List<String> names() {
        return List.copyOf(entries.keySet());
    }

    public Optional<Entry> find(String name) {
        return Optional.ofNullable(entries.get(name));
    }

    /** Whether the backend named {@code name} exists and its kernels compute with {@code k} ({@link Backend#computesWith}). */
    public boolean computesWith(String name, KernelActivations k) {
        return find(name).map(e -> e.backend().computesWith(k)).orElse(false);
    }

    /** The names of the backends whose kernels compute with {@code k}, for messages that say where it runs. */
    public List<String> computingWith(KernelActivations k) {
        return entries.values().stream().filter(e -> e.backend().computesWith(k)).map(Entry::name).toList();
    }
}
