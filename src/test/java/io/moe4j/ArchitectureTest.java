package io.moe4j;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shape of the engine's packages, read by {@code jdeps} from the compiled main classes: data flows one way
 * (no cycles between io.moe4j packages), only the command line and the bench package see the bench package, and
 * no main method lives in the engine (benchmark mains belong to the test tree, run with {@code bin/bench}).
 */
class ArchitectureTest {
    /** Packages that may depend on io.moe4j.bench: the bench package itself and the command line that runs it. */
    private static final Set<String> BENCH_USERS = Set.of("io.moe4j.bench", "io.moe4j.cli");

    /** The only main method of the engine: the {@code moe} command. */
    private static final Set<String> MAINS = Set.of("io.moe4j.cli.MoeCommand");

    private static Path classes;
    private static Map<String, Set<String>> dependencies;

    @BeforeAll
    static void readDependencies() throws URISyntaxException {
        classes = Path.of(MoeException.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        dependencies = packageDependencies(classes);
    }

    @Test
    void jdepsSeesTheEnginePackages() {
        // Guards the other tests against an empty or misparsed jdeps answer.
        assertThat(dependencies).containsKeys("io.moe4j.backend.cuda", "io.moe4j.layer", "io.moe4j.cli");
        assertThat(dependencies.get("io.moe4j.layer")).contains("io.moe4j.backend", "io.moe4j.quant");
    }

    @Test
    void noCyclesBetweenPackages() {
        List<Set<String>> cycles = new ArrayList<>();
        for (Set<String> component : stronglyConnected(dependencies)) {
            if (component.size() > 1) {
                cycles.add(component);
            }
        }
        assertThat(cycles).as("package cycles in %s (each set depends on itself through the others)", classes)
                .isEmpty();
    }

    @Test
    void theEngineDoesNotDependOnTheBenchOrTheCommandLine() {
        List<String> offending = new ArrayList<>();
        dependencies.forEach((from, targets) -> {
            for (String to : targets) {
                boolean bench = to.equals("io.moe4j.bench") && !BENCH_USERS.contains(from);
                boolean cli = to.equals("io.moe4j.cli") && !from.equals("io.moe4j.cli");
                if (bench || cli) {
                    offending.add(from + " -> " + to);
                }
            }
        });
        assertThat(offending).isEmpty();
    }

    @Test
    void noMainMethodsInTheEngine() throws IOException, ClassNotFoundException {
        List<String> mains = new ArrayList<>();
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path p : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                String name = classes.relativize(p).toString().replace('/', '.').replaceAll("\\.class$", "");
                if (name.endsWith("package-info")) {
                    continue;
                }
                Class<?> c = Class.forName(name, false, ArchitectureTest.class.getClassLoader());
                for (Method m : c.getDeclaredMethods()) {
                    if (m.getName().equals("main") && Modifier.isStatic(m.getModifiers())
                            && !MAINS.contains(c.getName())) {
                        mains.add(c.getName());
                    }
                }
            }
        }
        assertThat(mains).as("main methods outside the moe command (benchmarks go to the test tree)").isEmpty();
    }

    @Test
    void findsACycleWhereThereIsOne() {
        Map<String, Set<String>> g = new TreeMap<>();
        g.put("a", new TreeSet<>(Set.of("b")));
        g.put("b", new TreeSet<>(Set.of("c")));
        g.put("c", new TreeSet<>(Set.of("a", "d")));
        g.put("d", new TreeSet<>());
        assertThat(stronglyConnected(g)).contains(Set.of("a", "b", "c"), Set.of("d"));
    }

    /** io.moe4j package → the io.moe4j packages its classes use (other than itself), as jdeps reports them. */
    static Map<String, Set<String>> packageDependencies(Path classes) {
        ToolProvider jdeps = ToolProvider.findFirst("jdeps")
                .orElseThrow(() -> new IllegalStateException("jdeps is not in this JDK"));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int rc = jdeps.run(new PrintWriter(out), new PrintWriter(err), "--add-modules", "jdk.incubator.vector",
                "-verbose:package", "-e", "io\\.moe4j(\\..*)?", classes.toString());
        if (rc != 0) {
            throw new IllegalStateException("jdeps failed (" + rc + "): " + err + out);
        }
        Map<String, Set<String>> deps = new TreeMap<>();
        for (String line : out.toString().split("\\R")) {
            String[] parts = line.trim().split("\\s+");
            // "   io.moe4j.layer   -> io.moe4j.backend   classes"
            if (parts.length >= 3 && parts[1].equals("->") && parts[0].startsWith("io.moe4j")
                    && parts[2].startsWith("io.moe4j")) {
                deps.computeIfAbsent(parts[0], k -> new TreeSet<>()).add(parts[2]);
                deps.computeIfAbsent(parts[2], k -> new TreeSet<>());
            }
        }
        deps.forEach((from, to) -> to.remove(from));
        return deps;
    }

    /** Tarjan's strongly connected components; a component of more than one package is a cycle. */
    static List<Set<String>> stronglyConnected(Map<String, Set<String>> graph) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<Set<String>> out = new ArrayList<>();
        int[] next = {0};
        for (String v : graph.keySet()) {
            if (!index.containsKey(v)) {
                visit(v, graph, index, low, stack, onStack, out, next);
            }
        }
        return out;
    }

    private static void visit(String v, Map<String, Set<String>> graph, Map<String, Integer> index,
            Map<String, Integer> low, Deque<String> stack, Set<String> onStack, List<Set<String>> out, int[] next) {
        index.put(v, next[0]);
        low.put(v, next[0]);
        next[0]++;
        stack.push(v);
        onStack.add(v);
        for (String w : graph.getOrDefault(v, Set.of())) {
            if (!index.containsKey(w)) {
                visit(w, graph, index, low, stack, onStack, out, next);
                low.put(v, Math.min(low.get(v), low.get(w)));
            } else if (onStack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            Set<String> component = new TreeSet<>();
            String w;
            do {
                w = stack.pop();
                onStack.remove(w);
                component.add(w);
            } while (!w.equals(v));
            out.add(component);
        }
    }
}
