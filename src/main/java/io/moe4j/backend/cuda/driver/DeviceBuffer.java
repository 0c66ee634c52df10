package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Device memory from {@code cuMemAlloc}, freed on {@link #close()}. Copies take host {@link MemorySegment}s
 * (off-heap for the async forms, which the driver reads after the call returns); offsets and sizes are longs
 * because expert stacks pass 2 GiB.
 */
public final class DeviceBuffer implements AutoCloseable {
    private final CudaDriver cu;
    private final long pointer;
    private final long bytes;
    private boolean closed;

    private DeviceBuffer(CudaDriver cu, long pointer, long bytes) {
        this.cu = cu;
        this.pointer = pointer;
        this.bytes = bytes;
    }

    static DeviceBuffer allocate(CudaDriver cu, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("device allocation of " + bytes + " bytes");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int r = cu.cuMemAlloc(out, bytes);
            if (r != 0) {
                throw new CudaException("cuMemAlloc_v2", r, "cuMemAlloc_v2 of " + bytes + " bytes failed: " + cu.describe(r));
            }
            return new DeviceBuffer(cu, out.get(JAVA_LONG, 0), bytes);
        }
    }

    /** The CUdeviceptr, for kernel arguments. */
    public long pointer() {
        checkOpen();
        return pointer;
    }

    public long byteSize() {
        return bytes;
    }

    public void copyFrom(MemorySegment host) {
        copyFrom(host, 0);
    }

    /** Synchronous host-to-device copy of all of {@code host} to {@code offset}. */
    public void copyFrom(MemorySegment host, long offset) {
        checkRange(offset, host.byteSize());
        cu.check("cuMemcpyHtoD_v2", cu.cuMemcpyHtoD(pointer + offset, host, host.byteSize()));
    }

    /** Asynchronous host-to-device copy; {@code host} must be native memory that lives until the stream passes it. */
    public void copyFromAsync(MemorySegment host, long offset, CudaStream stream) {
        requireNative(host);
        checkRange(offset, host.byteSize());
        cu.check("cuMemcpyHtoDAsync_v2", cu.cuMemcpyHtoDAsync(pointer + offset, host, host.byteSize(), stream.handle()));
    }

    public void copyTo(MemorySegment host) {
        copyTo(host, 0);
    }

    /** Synchronous device-to-host copy of {@code host.byteSize()} bytes from {@code offset}. */
    public void copyTo(MemorySegment host, long offset) {
        checkRange(offset, host.byteSize());
        cu.check("cuMemcpyDtoH_v2", cu.cuMemcpyDtoH(host, pointer + offset, host.byteSize()));
    }

    public void copyToAsync(MemorySegment host, long offset, CudaStream stream) {
        requireNative(host);
        checkRange(offset, host.byteSize());
        cu.check("cuMemcpyDtoHAsync_v2", cu.cuMemcpyDtoHAsync(host, pointer + offset, host.byteSize(), stream.handle()));
    }

    /** Device-to-device copy of {@code count} bytes from {@code src} into this buffer. */
    public void copyFromDevice(DeviceBuffer src, long srcOffset, long dstOffset, long count) {
        src.checkRange(srcOffset, count);
        checkRange(dstOffset, count);
        cu.check("cuMemcpyDtoD_v2", cu.cuMemcpyDtoD(pointer + dstOffset, src.pointer + srcOffset, count));
    }

    public void copyFromDeviceAsync(DeviceBuffer src, long srcOffset, long dstOffset, long count, CudaStream stream) {
        src.checkRange(srcOffset, count);
        checkRange(dstOffset, count);
        cu.check("cuMemcpyDtoDAsync_v2",
                cu.cuMemcpyDtoDAsync(pointer + dstOffset, src.pointer + srcOffset, count, stream.handle()));
    }

    /**
     * Copies {@code rows} rows of {@code rowBytes} from host memory with {@code hostPitch} bytes between rows into
     * this buffer with {@code devicePitch} between rows (cuMemcpy2D): uploads packed rows into a padded layout
     * without a staging copy.
     */
    public void copyFromPitched(MemorySegment host, long hostPitch, long devicePitch, long rowBytes, long rows) {
        requireNative(host);
        Objects.checkFromIndexSize(0, rows == 0 ? 0 : (rows - 1) * hostPitch + rowBytes, host.byteSize());
        checkRange(0, rows == 0 ? 0 : (rows - 1) * devicePitch + rowBytes);
        try (Arena arena = Arena.ofConfined()) {
            // CUDA_MEMCPY2D: 16 eight-byte slots; the two CUmemorytype enums are 4-byte ints padded to 8.
            MemorySegment d = arena.allocate(128, 8);
            d.set(JAVA_INT, 16, 1);                 // srcMemoryType = CU_MEMORYTYPE_HOST
            d.set(ADDRESS, 24, host);               // srcHost
            d.set(JAVA_LONG, 48, hostPitch);        // srcPitch
            d.set(JAVA_INT, 72, 2);                 // dstMemoryType = CU_MEMORYTYPE_DEVICE
            d.set(JAVA_LONG, 88, pointer);          // dstDevice
            d.set(JAVA_LONG, 104, devicePitch);     // dstPitch
            d.set(JAVA_LONG, 112, rowBytes);        // WidthInBytes
            d.set(JAVA_LONG, 120, rows);            // Height
            cu.check("cuMemcpy2D_v2", cu.cuMemcpy2D(d));
        }
    }

    /** Sets every byte to {@code value}. */
    public void fill(byte value) {
        cu.check("cuMemsetD8_v2", cu.cuMemsetD8(pointer, value, bytes));
    }

    /** Sets every byte to {@code value}, in order on {@code stream}. */
    public void fillAsync(byte value, CudaStream stream) {
        checkOpen();
        cu.check("cuMemsetD8Async", cu.cuMemsetD8Async(pointer, value, bytes, stream.handle()));
    }

    /** Sets {@code count} 32-bit words from {@code offset} to {@code bits} (e.g. a NaN pattern to poison outputs). */
    public void fillWords(int bits, long offset, long count) {
        checkRange(offset, count * 4);
        cu.check("cuMemsetD32_v2", cu.cuMemsetD32(pointer + offset, bits, count));
    }

    private void checkRange(long offset, long count) {
        checkOpen();
        Objects.checkFromIndexSize(offset, count, bytes);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("device buffer already freed");
        }
    }

    private static void requireNative(MemorySegment host) {
        if (!host.isNative()) {
            throw new IllegalArgumentException("this copy needs native (off-heap) host memory");
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            cu.check("cuMemFree_v2", cu.cuMemFree(pointer));
        }
    }
}
