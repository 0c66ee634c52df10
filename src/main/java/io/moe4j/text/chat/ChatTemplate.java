package io.moe4j.text.chat;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import io.moe4j.text.chat.jinja.JinjaTemplate;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A model's chat template, rendered as transformers' {@code apply_chat_template} renders it.
 *
 * <p>{@link #load} reads a model directory the way transformers does: {@code chat_template.jinja} takes precedence
 * over {@code tokenizer_config.json}'s {@code chat_template}, which is a string or a list of
 * {@code {name, template}} (then "tool_use" is taken when tools are given and the model has one, else "default").
 * The special tokens of {@code tokenizer_config.json} ({@code bos_token}, {@code eos_token} ..., strings or
 * {@code {content: ...}} objects, and {@code additional_special_tokens}) are template variables, as are
 * {@code messages}, {@code tools} and {@code documents} (None when absent), {@code add_generation_prompt} and the
 * request's further arguments.
 */
public final class ChatTemplate {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> SPECIAL_TOKEN_KEYS = List.of(
            "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token");

    private final Map<String, JinjaTemplate> templates;
    private final Map<String, Object> specialTokens;

    private ChatTemplate(Map<String, JinjaTemplate> templates, Map<String, Object> specialTokens) {
        this.templates = templates;
        this.specialTokens = specialTokens;
    }

    /** A template from its source; {@code specialTokens} maps names such as {@code bos_token} to their text. */
    public static ChatTemplate of(String source, String name, Map<String, ?> specialTokens) {
        Map<String, JinjaTemplate> t = new LinkedHashMap<>();
        t.put("default", JinjaTemplate.parse(source, name));
        return new ChatTemplate(t, new LinkedHashMap<>(specialTokens));
    }

    public static ChatTemplate load(Path modelDir) {
        return find(modelDir).orElseThrow(() -> new MoeException(modelDir + ": no chat template (neither"
                + " chat_template.jinja nor a chat_template in tokenizer_config.json)"));
    }

    /** The model directory's chat template as {@link #load} reads it, or empty when it ships none. */
    public static java.util.Optional<ChatTemplate> find(Path modelDir) {
        Path configFile = modelDir.resolve("tokenizer_config.json");
        JsonNode config = null;
        if (Files.isRegularFile(configFile)) {
            try {
                config = JSON.readTree(Files.readString(configFile, StandardCharsets.UTF_8));
            } catch (JsonProcessingException e) {
                throw new MoeException(configFile + ": not valid JSON: " + io.moe4j.config.JsonErrors.describe(e));
            } catch (IOException e) {
                throw new MoeException(configFile + ": cannot read: " + e.getMessage(), e);
            }
            if (!config.isObject()) {
                throw new MoeException(configFile + ": expected a JSON object");
            }
        }
        Map<String, JinjaTemplate> templates = new LinkedHashMap<>();
        Path jinjaFile = modelDir.resolve("chat_template.jinja");
        if (Files.isRegularFile(jinjaFile)) {
            try {
                templates.put("default", JinjaTemplate.parse(Files.readString(jinjaFile, StandardCharsets.UTF_8),
                        jinjaFile.toString()));
            } catch (IOException e) {
                throw new MoeException(jinjaFile + ": cannot read: " + e.getMessage(), e);
            }
        } else if (config != null && config.has("chat_template") && !config.get("chat_template").isNull()) {
            readConfigTemplates(config.get("chat_template"), configFile, templates);
        } else {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(new ChatTemplate(templates,
                config == null ? Map.of() : specialTokens(config, configFile)));
    }

    private static void readConfigTemplates(JsonNode node, Path file, Map<String, JinjaTemplate> out) {
        if (node.isTextual()) {
            out.put("default", JinjaTemplate.parse(node.textValue(), file + " (chat_template)"));
            return;
        }
        if (!node.isArray()) {
            throw new MoeException(file + ": chat_template must be a string or a list of {name, template}, not "
                    + node.getNodeType());
        }
        for (JsonNode entry : node) {
            JsonNode name = entry.get("name");
            JsonNode template = entry.get("template");
            if (name == null || !name.isTextual() || template == null || !template.isTextual()) {
                throw new MoeException(file + ": chat_template entries need a string 'name' and 'template': " + entry);
            }
            out.put(name.textValue(), JinjaTemplate.parse(template.textValue(),
                    file + " (chat_template '" + name.textValue() + "')"));
        }
    }

    private static Map<String, Object> specialTokens(JsonNode config, Path file) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String key : SPECIAL_TOKEN_KEYS) {
            String text = tokenText(config.get(key), file, key);
            if (text != null) {
                out.put(key, text);
            }
        }
        JsonNode extra = config.get("additional_special_tokens");
        if (extra != null && extra.isArray() && !extra.isEmpty()) {
            List<Object> tokens = new ArrayList<>();
            for (JsonNode t : extra) {
                tokens.add(tokenText(t, file, "additional_special_tokens"));
            }
            out.put("additional_special_tokens", tokens);
        }
        return out;
    }

    private static String tokenText(JsonNode node, Path file, String key) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (node.isTextual()) {
            return node.textValue();
        }
        if (node.isObject() && node.has("content") && node.get("content").isTextual()) {
            return node.get("content").textValue();
        }
        throw new MoeException(file + ": " + key + " must be a string or an object with a string 'content', not " + node);
    }

    /** The special tokens the template sees, e.g. {@code bos_token}. */
    public Map<String, Object> specialTokens() {
        return Map.copyOf(specialTokens);
    }

    public String render(ChatRequest request) {
        if (!request.continueFinalMessage()) {
            return render(request, JsonValues.toTemplateValue(request.messages()));
        }
        return FinalMessageContinuation.render(this, request);
    }

    /**
     * {@link #render}, except that a tool without a description is served: OpenAI's API makes a tool's description
     * optional, but some templates write it unconditionally (gpt-oss's {@code "// " + tool.description}, an error
     * under Jinja's rules for undefined values, as transformers reports it). Where the request as sent fails and a
     * tool lacks one, it renders again with empty descriptions (the template then writes an empty comment; gpt-oss's
     * own harmony encoder writes no comment line). Templates that render a tool as sent (Qwen3's {@code tojson})
     * never get there, so their prompts show the request's tools. The server and {@code moe tokenize} render so.
     */
    public String renderWithOptionalToolFields(ChatRequest request) {
        try {
            return render(request);
        } catch (MoeException e) {
            ArrayNode described = request.tools() == null ? null : withEmptyDescriptions(request.tools());
            if (described != null) {
                try {
                    return render(request.withTools(described));
                } catch (MoeException again) {
                    // the missing description was not (only) what failed: report the request as sent
                }
            }
            throw e;
        }
    }

    /** The tools with an empty description where a function has none, or null when every function has one. */
    private static ArrayNode withEmptyDescriptions(ArrayNode tools) {
        ArrayNode copy = tools.deepCopy();
        boolean added = false;
        for (JsonNode tool : copy) {
            if (tool.path("function") instanceof ObjectNode f && !f.path("description").isTextual()) {
                f.put("description", "");
                added = true;
            }
        }
        return added ? copy : null;
    }

    /** Renders with {@code messages} already converted (the continuation marks the final message first). */
    String render(ChatRequest request, Object messages) {
        JinjaTemplate template = pick(request);
        Map<String, Object> vars = new LinkedHashMap<>(specialTokens);
        request.templateArguments().forEach((k, v) -> vars.put(k, JsonValues.toTemplateValue(v)));
        vars.put("messages", messages);
        vars.put("tools", request.tools() == null ? null : JsonValues.toTemplateValue(request.tools()));
        vars.putIfAbsent("documents", null);
        vars.put("add_generation_prompt", request.addGenerationPrompt());
        return template.render(vars, request.clock());
    }

    String source(ChatRequest request) {
        return pick(request).source();
    }

    private JinjaTemplate pick(ChatRequest request) {
        if (request.tools() != null && templates.containsKey("tool_use")) {
            return templates.get("tool_use");
        }
        JinjaTemplate t = templates.get("default");
        if (t == null) {
            throw new MoeException("the model's chat templates " + templates.keySet() + " include no 'default'");
        }
        return t;
    }
}
