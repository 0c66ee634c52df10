package io.moe4j.text.tokenizer;

/**
 * A token matched in the text as a whole before pre-tokenization (an entry of {@code added_tokens}).
 *
 * @param id          its id
 * @param content     the text it matches
 * @param special     whether it is a control token (chat markers, end of text)
 * @param singleWord  matched only where no word character touches it on either side
 * @param lstrip      takes the whitespace on its left with it
 * @param rstrip      takes the whitespace on its right with it
 * @param normalized  matched in the normalized text (true) or in the text as given (false)
 */
public record AddedToken(int id, String content, boolean special, boolean singleWord, boolean lstrip,
                         boolean rstrip, boolean normalized) {
}
