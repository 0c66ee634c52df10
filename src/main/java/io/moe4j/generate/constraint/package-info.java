/**
 * Constrained decoding to JSON: structured outputs ({@code response_format} json_schema and json_object) and tool
 * arguments under a forced {@code tool_choice}.
 *
 * <pre>{@code
 * TokenTrie trie = new TokenTrie(vocabulary);        // once per tokenizer, immutable, shared by all requests
 * JsonGrammar grammar = JsonGrammar.of(schema, trie); // once per request; MoeException names a bad keyword
 * JsonConstraint c = new JsonConstraint(grammar, trie, vocabulary, endIds);   // once per sequence
 * // c.minTokens() > max_tokens: the request cannot be met
 * for (int produced = 0; produced < maxTokens; produced++) {
 *     c.fillAllowed(mask, maxTokens - produced);     // the tokens that keep a valid prefix within the budget
 *     int token = sampler.sample(logits, off, vocab, mask);
 *     if (isEnd(token)) break;                         // only allowed once the document is complete
 *     c.accept(token);
 * }
 * }</pre>
 *
 * <p>How it works: {@link io.moe4j.generate.constraint.JsonSchemaCompiler} turns the schema into a few value shapes;
 * a pushdown matcher over bytes ({@code JsonState}: a persistent stack of immutable frames, one per open value)
 * tells which bytes may come next and how many bytes the shortest completion still needs. The mask walks the
 * vocabulary's byte trie alongside the matcher, dropping a whole subtree at the first byte the matcher refuses;
 * inside strings, where nearly every token is allowed, the tokens of plain string content are decided together
 * and only the others are walked.
 *
 * <p>Choices, each a narrowing of the schema's language (every document produced is valid):
 * whitespace is at most {@link io.moe4j.generate.constraint.JsonGrammar#DEFAULT_MAX_WHITESPACE} bytes a gap and
 * none after the value (a model, random or not, cannot spend its budget on blanks); objects with listed properties
 * take only those, once each; enum values are written as compact JSON; numbers have at most 20 digits a part; oneOf
 * is matched as anyOf; formats are subsets of their RFCs ({@link io.moe4j.generate.constraint.StringFormats}); the
 * token budget forces the way to the end when it runs short.
 *
 * <p>Strings with {@code pattern}, {@code format}, {@code minLength} or {@code maxLength} follow a {@code StringRule}:
 * a deterministic automaton over code points (the pattern's, the format's and a length counter's product) or, for
 * lengths alone, the counter. Their plain tokens are decided by a trie walk with the rule's state as an int (by the
 * character count alone for lengths), the other tokens as everywhere else.
 */
package io.moe4j.generate.constraint;
