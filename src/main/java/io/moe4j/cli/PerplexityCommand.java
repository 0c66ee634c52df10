package io.moe4j.cli;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import io.moe4j.generate.MoeModel;
import io.moe4j.generate.Perplexity;
import io.moe4j.model.Model;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code moe perplexity}: how well a model predicts a text (or a token sequence), as a quantized checkpoint is
 * checked against its original: the mean negative log-likelihood a token and its exponential.
 */
@Command(name = "perplexity", mixinStandardHelpOptions = true,
        description = "Score a text (or input_ids) with the model: perplexity and mean negative log-likelihood a token, "
                + "read in windows of --window tokens every --stride tokens.")
final class PerplexityCommand implements Callable<Integer> {
    @Mixin
    ModelArgs modelArgs;

    @ArgGroup(multiplicity = "1")
    Source source;

    static final class Source {
        @Option(names = "--file", description = "a UTF-8 text file to score (tokenized as a raw prompt)")
        Path file;

        @Option(names = "--input", description = "a safetensors file holding input_ids (I32 or I64 [T]), as moe logits reads")
        Path input;
    }

    @Option(names = "--window", defaultValue = "1024",
            description = "tokens a window holds, at most the model's context (default: ${DEFAULT-VALUE})")
    int window;

    @Option(names = "--stride", description = "tokens between window starts (default: half the window); each token "
            + "after the first is scored once, with at least window - stride tokens before it as context (a stride "
            + "of the whole window leaves each window's first token unscored: nothing in its window precedes it)")
    Integer stride;

    @Option(names = "--json", description = "print the figures as one JSON object")
    boolean json;

    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        if (window < 2) {
            throw new IllegalArgumentException("--window must be at least 2, got " + window);
        }
        if (stride != null && (stride < 1 || stride > window)) {
            throw new IllegalArgumentException("--stride must be in [1, --window " + window + "], got " + stride);
        }
        if (source.file != null) {
            String text = read(source.file);
            if (text.isEmpty()) {
                // said before a model is loaded for nothing
                throw new IllegalArgumentException(source.file + " is empty: nothing to score");
            }
            try (MoeModel m = modelArgs.load()) {
                int[] ids = m.tokenizer().encodePrompt(text);
                report(m.model(), ids, text.getBytes(StandardCharsets.UTF_8).length);
            }
        } else {
            int[] ids = LogitsJob.readInputIds(source.input);
            ModelBackend on = modelArgs.chosenBackend();
            try (Model m = Model.load(modelArgs.model, modelArgs.options(on.backend()))) {
                System.err.printf("moe: loaded %s on %s%n", modelArgs.model.getFileName(), on.described());
                report(m, ids, -1);
            }
        }
        return 0;
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (java.nio.charset.MalformedInputException e) {
            throw new MoeException(file + ": not UTF-8 text");
        } catch (java.nio.file.NoSuchFileException e) {
            throw new MoeException(file + ": no such file");
        } catch (IOException e) {
            throw new MoeException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    /** Scores the ids and prints the figures; {@code bytes} the text's size (-1: ids given, no bits per byte). */
    private void report(Model model, int[] ids, long bytes) {
        PrintWriter out = spec.commandLine().getOut();
        if (ids.length < 2) {
            throw new IllegalArgumentException("the text has " + ids.length + " token(s); scoring needs at least 2");
        }
        int w = Math.min(window, Math.min(ids.length, model.contextLimit()));
        if (window > model.contextLimit()) {
            System.err.printf("moe: --window %d is more than the context of %d positions; windows of %d%n", window,
                    model.contextLimit(), w);
        }
        int s = stride != null ? Math.min(stride, w) : Math.max(1, w / 2);
        long start = System.nanoTime();
        Perplexity.Result r;
        try (ProgressBar bar = Progress.bar("scoring", Perplexity.windows(ids.length, w, s))) {
            r = Perplexity.score(model, ids, w, s, bar::stepTo);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double bitsPerByte = bytes > 0 ? r.nll() / Math.log(2) / bytes : Double.NaN;
        if (json) {
            ObjectNode o = JsonNodeFactory.instance.objectNode().put("tokens", r.tokens()).put("scored", r.scored())
                    .put("windows", r.windows()).put("window", w).put("stride", s).put("mean_nll", r.meanNll())
                    .put("perplexity", r.perplexity()).put("seconds", seconds);
            if (bytes > 0) {
                o.put("bytes", bytes).put("bits_per_byte", bitsPerByte);
            }
            out.println(o);
        } else {
            out.printf("perplexity %.6g over %d tokens (%d scored, %d window%s of %d, stride %d): mean NLL %.4f nats "
                    + "a token%s%n", r.perplexity(), r.tokens(), r.scored(), r.windows(), r.windows() == 1 ? "" : "s",
                    w, s, r.meanNll(), bytes > 0 ? String.format(", %.4f bits a byte", bitsPerByte) : "");
        }
        out.flush();
        System.err.printf("moe: scored in %.1f s (%.1f tokens/s)%n", seconds, r.scored() / seconds);
    }
}
