package io.moe4j.backend.oracle;

import io.moe4j.backend.Backend;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Support;
import io.moe4j.backend.emulation.EmulationBackend;
import io.moe4j.quant.ExpertWeights;

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

    /**
     * The backends of this build. cuda and cpu are other packages' work; until they are merged they are looked
     * up by class name and stand in as "not in this build". Once merged, replace each {@code optional(...)} line with
     * {@code Entry.of(new CpuBackend())} (one line per backend).
     */
    public static BackendRegistry standard() {
        return new BackendRegistry(List.of(
                optional("cuda", "io.moe4j.backend.cuda.CudaBackend",
                        "NVIDIA GPU through the CUDA driver (FFM), kernels compiled by NVRTC"),
                optional("cpu", "io.moe4j.backend.cpu.CpuBackend",
                        "Java Vector API kernels on packed weights, multi-threaded"),
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

    /**
     * A backend whose class may not be on this branch yet: loaded by name with its no-argument constructor, or, when
     * absent, a stand-in that answers "not in this build" for every problem.
     */
    static Entry optional(String name, String className, String description) {
        try {
            Class<?> c = Class.forName(className);
            Backend b = (Backend) c.getDeclaredConstructor().newInstance();
            return Entry.of(b);
        } catch (ReflectiveOperationException | LinkageError | ClassCastException e) {
            return Entry.of(new Absent(name, description, className));
        }
    }

    /** A backend that is not part of this build. */
    record Absent(String name, String description, String className) implements Backend {
        @Override
        public Support support(MoeProblem problem, Platform platform) {
            return Support.no("not in this build (" + className + " is absent)");
        }

        @Override
        public Experts prepare(ExpertWeights weights, ExecutionOptions options) {
            throw new IllegalStateException("backend " + name + " is not in this build");
        }
    }
}
