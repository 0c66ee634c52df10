package io.moe4j.quant.config;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * The ways quantization configs name modules: exact names, {@code re:} regular expressions (Python's
 * {@code re.match}: anchored at the start only) and shell globs (Python's {@code fnmatch}: the whole name).
 */
final class ModuleNames {
    private static final Map<String, Pattern> CACHE = new ConcurrentHashMap<>();

    private ModuleNames() {
    }

    /** {@code re:} regex or exact name (compressed-tensors targets and ignore lists). */
    static boolean exactOrRegex(String name, String pattern) {
        if (pattern.startsWith("re:")) {
            return regex(pattern.substring(3)).matcher(name).lookingAt();
        }
        return pattern.equals(name);
    }

    /** {@code re:} regex, shell glob (when it has * ? or [) or exact name (Quark exclude and layer_quant_config). */
    static boolean exactGlobOrRegex(String name, String pattern) {
        if (pattern.startsWith("re:")) {
            return regex(pattern.substring(3)).matcher(name).lookingAt();
        }
        if (isGlob(pattern)) {
            return glob(pattern).matcher(name).matches();
        }
        return pattern.equals(name);
    }

    static boolean anyExactGlobOrRegex(String name, List<String> patterns) {
        return patterns.stream().anyMatch(p -> exactGlobOrRegex(name, p));
    }

    static boolean anyExactOrRegex(String name, List<String> patterns) {
        return patterns.stream().anyMatch(p -> exactOrRegex(name, p));
    }

    static boolean isGlob(String pattern) {
        return pattern.indexOf('*') >= 0 || pattern.indexOf('?') >= 0 || pattern.indexOf('[') >= 0;
    }

    private static Pattern regex(String re) {
        return CACHE.computeIfAbsent("re:" + re, k -> Pattern.compile(re));
    }

    /** fnmatch.translate: * any run, ? one character, [seq] and [!seq] classes, everything else literal. */
    static Pattern glob(String glob) {
        return CACHE.computeIfAbsent("glob:" + glob, k -> {
            StringBuilder re = new StringBuilder();
            int i = 0;
            int n = glob.length();
            while (i < n) {
                char c = glob.charAt(i++);
                switch (c) {
                    case '*' -> re.append(".*");
                    case '?' -> re.append('.');
                    case '[' -> {
                        int j = i;
                        if (j < n && glob.charAt(j) == '!') {
                            j++;
                        }
                        if (j < n && glob.charAt(j) == ']') {
                            j++;
                        }
                        while (j < n && glob.charAt(j) != ']') {
                            j++;
                        }
                        if (j >= n) {
                            re.append("\\[");
                        } else {
                            String body = glob.substring(i, j).replace("\\", "\\\\");
                            i = j + 1;
                            if (body.startsWith("!")) {
                                body = "^" + body.substring(1);
                            } else if (body.startsWith("^")) {
                                body = "\\" + body;
                            }
                            re.append('[').append(body).append(']');
                        }
                    }
                    default -> re.append(Pattern.quote(String.valueOf(c)));
                }
            }
            return Pattern.compile(re.toString(), Pattern.DOTALL);
        });
    }
}
