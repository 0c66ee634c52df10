package io.moe4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import io.moe4j.text.chat.ChatRequest;
import io.moe4j.text.chat.ChatTemplate;
import io.moe4j.text.tokenizer.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code moe tokenize}: a JSON line in, a JSON line out. {@code {"text": ...}} gives its {@code ids};
 * {@code {"messages": [...], "add_generation_prompt": bool, ...}} is rendered with the model's chat template
 * (other keys are template arguments, {@code date} fixes {@code strftime_now}) and gives the {@code text} and its
 * {@code ids}. Special tokens written in the text count as tokens; none are added.
 */
@Command(name = "tokenize", mixinStandardHelpOptions = true,
        description = "Tokenize JSON lines ({\"text\"} or chat {\"messages\"}) with a model's tokenizer and chat template.")
final class TokenizeCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "model directory (tokenizer.json, tokenizer_config.json)")
    Path model;

    @Option(names = "--input", required = true, description = "JSON lines to read ('-': standard input)")
    Path input;

    @Option(names = "--output", required = true,
            description = "JSON lines to write, in place once every line is done ('-': standard output)")
    Path output;

    private static final String STANDARD = "-";

    @Override
    public Integer call() throws IOException {
        Tokenizer tokenizer = Tokenizer.load(model);
        boolean toStdout = STANDARD.equals(output.toString());
        // A file is written beside its place and moved there at the end: a line that fails leaves no partial file.
        Path partial = toStdout ? null : partialFile(output);
        int lines;
        try {
            lines = tokenize(tokenizer, partial == null ? null : partial);
            if (partial != null) {
                Files.move(partial, output, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            throw new MoeException(output + ": " + reason(e));
        } finally {
            if (partial != null) {
                Files.deleteIfExists(partial);
            }
        }
        System.err.printf("moe: %d lines → %s%n", lines, toStdout ? "standard output" : output);
        return 0;
    }

    /** A new file beside {@code output} for the lines as they are written, or an error naming the output. */
    private static Path partialFile(Path output) {
        if (Files.isDirectory(output)) {
            throw new MoeException(output + ": is a directory, not a JSON lines file");
        }
        Path dir = output.toAbsolutePath().getParent();
        try {
            return Files.createTempFile(dir, "." + output.getFileName() + ".", ".partial");
        } catch (IOException e) {
            throw new MoeException(output + ": " + reason(e) + " (" + dir + ")");
        }
    }

    /** Every line of the input tokenized into {@code to} (standard output when null); the lines written. */
    private int tokenize(Tokenizer tokenizer, Path to) {
        ChatTemplate template = null;
        ObjectMapper json = new ObjectMapper();
        int lines = 0;
        boolean fromStdin = STANDARD.equals(input.toString());
        try (BufferedReader in = fromStdin
                ? new BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8))
                : open(input, () -> Files.newBufferedReader(input, StandardCharsets.UTF_8));
             BufferedWriter out = to == null
                     ? new BufferedWriter(new java.io.OutputStreamWriter(new NonClosing(System.out), StandardCharsets.UTF_8))
                     : open(to, () -> Files.newBufferedWriter(to, StandardCharsets.UTF_8))) {
            String line;
            int number = 0;
            while ((line = in.readLine()) != null) {
                number++;
                if (line.isBlank()) {
                    continue;
                }
                JsonNode node;
                try {
                    node = json.readTree(line);
                } catch (IOException e) {
                    throw new MoeException(inputName() + " line " + number + ": not valid JSON: "
                            + io.moe4j.config.JsonErrors.describe(e));
                }
                ObjectNode result = json.createObjectNode();
                String text;
                if (node != null && node.has("messages")) {
                    if (template == null) {
                        template = ChatTemplate.load(model);
                    }
                    try {
                        // as the server renders a request: a tool may leave out its description
                        text = template.renderWithOptionalToolFields(ChatRequest.fromJson(node));
                    } catch (IllegalArgumentException | MoeException e) {
                        throw new MoeException(inputName() + " line " + number + ": " + e.getMessage());
                    }
                    result.put("text", text);
                } else if (node != null && node.path("text").isTextual()) {
                    text = node.get("text").asText();
                } else {
                    throw new MoeException(inputName() + " line " + number + ": expected an object with \"text\" (a string)"
                            + " or \"messages\"");
                }
                var ids = result.putArray("ids");
                for (int id : tokenizer.encode(text)) {
                    ids.add(id);
                }
                out.write(json.writeValueAsString(result));
                out.newLine();
                lines++;
            }
        } catch (java.io.UncheckedIOException e) {
            throw new MoeException(e.getMessage());
        } catch (IOException e) { // reading a line or writing one: the path is in front of the reason
            throw new MoeException(input + " -> " + output + ": " + reason(e));
        }
        return lines;
    }

    private String inputName() {
        return STANDARD.equals(input.toString()) ? "standard input" : input.toString();
    }

    /** Standard output for a writer whose close must flush it but leave it open. */
    private static final class NonClosing extends java.io.FilterOutputStream {
        NonClosing(java.io.OutputStream out) {
            super(out);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
        }

        @Override
        public void close() throws IOException {
            flush();
        }
    }

    private interface Opener<T> {
        T open() throws IOException;
    }

    /** The file {@code opener} opens, or an error naming {@code path} and why (no such file, a directory, ...). */
    private static <T> T open(Path path, Opener<T> opener) {
        if (Files.isDirectory(path)) {
            throw new MoeException(path + ": is a directory, not a JSON lines file");
        }
        try {
            return opener.open();
        } catch (IOException e) {
            throw new MoeException(path + ": " + reason(e));
        }
    }

    private static String reason(IOException e) {
        return switch (e) {
            case java.nio.file.NoSuchFileException n -> "no such file or directory";
            case java.nio.file.AccessDeniedException a -> "permission denied";
            case java.nio.file.FileSystemException f when f.getReason() != null -> f.getReason();
            default -> e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        };
    }
}
