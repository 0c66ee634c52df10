package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The {@code void** kernelParams} of cuLaunchKernel: one slot per argument holding its value, and an array of
 * pointers to the slots, in the kernel's parameter order. Allocated in the caller's arena, so a launch site keeps
 * no state between calls (one arena per call, or per thread).
 */
public final class KernelArgs {
    private static final int MAX_ARGS = 32;

    private final MemorySegment values;
    private final MemorySegment pointers;
    private int count;

    public KernelArgs(Arena arena) {
        values = arena.allocate(8L * MAX_ARGS, 8);
        pointers = arena.allocate(ADDRESS, MAX_ARGS);
    }

    private MemorySegment next() {
        if (count == MAX_ARGS) {
            throw new IllegalStateException("more than " + MAX_ARGS + " kernel arguments");
        }
        MemorySegment slot = values.asSlice(8L * count, 8);
        pointers.setAtIndex(ADDRESS, count++, slot);
        return slot;
    }

    /** A device pointer argument. */
    /** Appends what {@code more} appends: a helper's arguments in the middle of a chain. */
    public KernelArgs with(java.util.function.UnaryOperator<KernelArgs> more) {
        return more.apply(this);
    }

    public KernelArgs pointer(DeviceBuffer buffer) {
        return pointer(buffer.pointer());
    }

    public KernelArgs pointer(long devicePointer) {
        next().set(JAVA_LONG, 0, devicePointer);
        return this;
    }

    public KernelArgs i32(int value) {
        next().set(JAVA_INT, 0, value);
        return this;
    }

    public KernelArgs i64(long value) {
        next().set(JAVA_LONG, 0, value);
        return this;
    }

    public KernelArgs f32(float value) {
        next().set(JAVA_FLOAT, 0, value);
        return this;
    }

    public KernelArgs f64(double value) {
        next().set(JAVA_DOUBLE, 0, value);
        return this;
    }

    MemorySegment pointers() {
        return pointers;
    }
}
