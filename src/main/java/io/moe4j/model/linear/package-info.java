/**
 * The dense linears of a decoder (attention projections, MLA's low-rank projections, dense MLPs, {@code lm_head},
 * a tied embedding) as a checkpoint stores them. {@link io.moe4j.model.linear.Linears#factory} reads the
 * checkpoint's {@code quantization_config}; for each module name the config gives a
 * {@link io.moe4j.quant.LinearMethod} (unquantized where it excludes the module), which loads the weight as a
 * one-expert {@link io.moe4j.quant.ExpertMatrix} in checkpoint precision with the input quantization the scheme
 * implies, exactly as the routed experts of the same scheme. Two backends run them: {@code emulation}, the float64
 * reference the expert emulation also is, and {@code cpu}, the expert kernels on one matrix over blocks of output
 * rows ({@link io.moe4j.backend.cpu.CpuMatrices}).
 */
package io.moe4j.model.linear;
