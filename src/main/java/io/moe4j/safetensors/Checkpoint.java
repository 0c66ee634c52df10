package io.moe4j.safetensors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The tensors of a checkpoint: a directory with {@code model.safetensors.index.json} (its weight map decides
 * which shard holds each tensor; shard names are never guessed), a directory with one {@code .safetensors}
 * file, or a single file. Shards are opened lazily and mapped, never read onto the heap.
 */
public final class Checkpoint implements AutoCloseable {
    public static final String INDEX_FILE = "model.safetensors.index.json";

    private final Path root;
    private final Map<String, Path> shardOf;
    private final Map<Path, SafetensorsFile> open = new LinkedHashMap<>();

    private Checkpoint(Path root, Map<String, Path> shardOf) {
        this.root = root;
        this.shardOf = shardOf;
    }

    public static Checkpoint open(Path path) {
        if (Files.isRegularFile(path)) {
            return single(path);
        }
        if (!Files.isDirectory(path)) {
            throw new io.moe4j.MoeException(path + ": no such file or directory");
        }
        Path index = path.resolve(INDEX_FILE);
        if (Files.isRegularFile(index)) {
            return sharded(path, index);
        }
        List<Path> files;
        try (Stream<Path> s = Files.list(path)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
        } catch (IOException e) {
            throw new io.moe4j.MoeException(path + ": cannot list directory: " + e.getMessage());
        }
        Path model = path.resolve("model.safetensors");
        if (Files.isRegularFile(model)) {
            return single(model);
        }
        if (files.size() == 1) {
            return single(files.get(0));
        }
        if (files.isEmpty()) {
            throw new io.moe4j.MoeException(path + ": no .safetensors file in this directory");
        }
        throw new io.moe4j.MoeException(path + ": " + files.size() + " .safetensors files but no " + INDEX_FILE
                + " to say which tensor is in which");
    }

    private static Checkpoint single(Path file) {
        SafetensorsFile f = SafetensorsFile.open(file);
        Map<String, Path> shardOf = new LinkedHashMap<>();
        for (String name : f.tensors().keySet()) {
            shardOf.put(name, file);
        }
        Checkpoint c = new Checkpoint(file.getParent() == null ? Path.of(".") : file.getParent(), shardOf);
        c.open.put(file, f);
        return c;
    }

    private static Checkpoint sharded(Path dir, Path index) {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(index.toFile());
        } catch (IOException e) {
            throw new io.moe4j.MoeException(index + ": not valid JSON: " + e.getMessage());
        }
        JsonNode map = root == null ? null : root.get("weight_map");
        if (map == null || !map.isObject()) {
            throw new io.moe4j.MoeException(index + ": missing 'weight_map' object");
        }
        Map<String, Path> shardOf = new LinkedHashMap<>();
        for (var it = map.fields(); it.hasNext(); ) {
            var e = it.next();
            if (!e.getValue().isTextual()) {
                throw new io.moe4j.MoeException(index + ": weight_map entry '" + e.getKey() + "' is not a file name");
            }
            Path shard = dir.resolve(e.getValue().asText()).normalize();
            if (!shard.startsWith(dir.normalize())) {
                throw new io.moe4j.MoeException(index + ": weight_map entry '" + e.getKey() + "' points outside " + dir);
            }
            shardOf.put(e.getKey(), shard);
        }
        return new Checkpoint(dir, shardOf);
    }

    public Path root() {
        return root;
    }

    public java.util.Set<String> names() {
        return java.util.Collections.unmodifiableSet(shardOf.keySet());
    }

    public boolean contains(String name) {
        return shardOf.containsKey(name);
    }

    public Optional<Tensor> find(String name) {
        Path shard = shardOf.get(name);
        if (shard == null) {
            return Optional.empty();
        }
        Tensor t = file(shard).find(name).orElseThrow(() -> new SafetensorsException(shard, name,
                "listed in " + INDEX_FILE + " but not present in the shard"));
        return Optional.of(t);
    }

    public Tensor tensor(String name) {
        return find(name).orElseThrow(() -> new SafetensorsException(root, name, "missing from the checkpoint"));
    }

    /** Every tensor's header, shard by shard (opens all shards). */
    public List<TensorInfo> infos() {
        List<TensorInfo> out = new ArrayList<>();
        for (Path shard : new java.util.LinkedHashSet<>(shardOf.values())) {
            out.addAll(file(shard).tensors().values());
        }
        return out;
    }

    private synchronized SafetensorsFile file(Path shard) {
        return open.computeIfAbsent(shard, SafetensorsFile::open);
    }

    @Override
    public synchronized void close() {
        for (SafetensorsFile f : open.values()) {
            f.close();
        }
        open.clear();
    }
}
