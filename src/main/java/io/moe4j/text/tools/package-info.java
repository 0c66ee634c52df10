/**
 * Tool calls out of a model's text, per family: {@link io.moe4j.text.tools.ToolCallParser#forFamily} for the
 * family's own call markup (whole text, or {@link io.moe4j.text.tools.ToolCallStream} as it is generated), and
 * {@link io.moe4j.text.tools.ToolChoiceSchema} for calls forced by {@code tool_choice}, which constrained decoding
 * writes as JSON. Model output never makes these fail: what does not parse as a call stays content.
 */
package io.moe4j.text.tools;
