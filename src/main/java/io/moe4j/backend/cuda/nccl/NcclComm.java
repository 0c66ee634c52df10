package io.moe4j.backend.cuda.nccl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of an NCCL communicator ({@code ncclComm_t}), destroyed on {@link #close()}. Each rank is one GPU; the
 * operations are enqueued on a CUDA stream of that GPU and run asynchronously (synchronize the stream to read the
 * result). Use a communicator from one thread at a time, with its device's context current on that thread.
 *
 * <p>Buffers are {@link DeviceBuffer}s with a byte offset and an element count, checked against the buffer's size
 * before NCCL sees them, so a wrong count is an {@link IllegalArgumentException} naming the buffer and the sizes
 * instead of a write past the end on the device.
 */
public final class NcclComm implements AutoCloseable {
    private final Nccl nccl;
    private final MemorySegment handle;
    private final int rank;
    private final int size;
    private final int device;
    private boolean closed;

    private NcclComm(Nccl nccl, MemorySegment handle) {
        this.nccl = nccl;
        this.handle = handle;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            nccl.check("ncclCommUserRank", nccl.ncclCommUserRank(handle, out), handle);
            rank = out.get(JAVA_INT, 0);
            nccl.check("ncclCommCount", nccl.ncclCommCount(handle, out), handle);
            size = out.get(JAVA_INT, 0);
            nccl.check("ncclCommCuDevice", nccl.ncclCommCuDevice(handle, out), handle);
            device = out.get(JAVA_INT, 0);
        }
    }

    /**
     * Joins rank {@code rank} of {@code ranks} to the communicator named by {@code id}, on the device whose context is
     * current on this thread. Blocks until every rank has joined: with several ranks in one process, call it from one
     * thread per device (or between {@link Nccl#group()} and its close on one thread).
     */
    public static NcclComm initRank(Nccl nccl, int ranks, NcclUniqueId id, int rank) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            nccl.check("ncclCommInitRank", nccl.ncclCommInitRank(out, ranks, id.toSegment(arena), rank));
            return wrap(nccl, out.get(ADDRESS, 0));
        }
    }

    /**
     * A communicator over {@code devices} in this process, one rank per device in the given order (rank i on
     * {@code devices[i]}), made in one call from one thread. Each rank may then be driven from its own thread.
     */
    public static List<NcclComm> initAll(Nccl nccl, int... devices) {
        if (devices.length == 0) {
            throw new IllegalArgumentException("an NCCL communicator needs at least one device");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment comms = arena.allocate(ADDRESS, devices.length);
            MemorySegment list = arena.allocateFrom(JAVA_INT, devices);
            nccl.check("ncclCommInitAll", nccl.ncclCommInitAll(comms, devices.length, list));
            List<NcclComm> out = new ArrayList<>(devices.length);
            try {
                for (int i = 0; i < devices.length; i++) {
                    out.add(wrap(nccl, comms.getAtIndex(ADDRESS, i)));
                }
            } catch (RuntimeException e) {
                out.forEach(NcclComm::close);
                for (int i = out.size(); i < devices.length; i++) {
                    nccl.ncclCommDestroy(comms.getAtIndex(ADDRESS, i));
                }
                throw e;
            }
            return List.copyOf(out);
        }
    }

    private static NcclComm wrap(Nccl nccl, MemorySegment handle) {
        try {
            return new NcclComm(nccl, handle);
        } catch (RuntimeException e) {
            nccl.ncclCommDestroy(handle);
            throw e;
        }
    }

    /** This rank, 0 .. size − 1. */
    public int rank() {
        return rank;
    }

    /** The number of ranks. */
    public int size() {
        return size;
    }

    /** The CUDA device ordinal of this rank. */
    public int device() {
        return device;
    }

    /**
     * Reduces {@code count} elements across all ranks into every rank's {@code recv} ({@code send} and {@code recv}
     * may be the same buffer: in place).
     */
    public void allReduce(DeviceBuffer send, DeviceBuffer recv, long count, NcclDataType type, NcclReduction op,
                          CudaStream stream) {
        MemorySegment s = at(send, 0, count, type, "all-reduce send");
        MemorySegment r = at(recv, 0, count, type, "all-reduce receive");
        nccl.check("ncclAllReduce", nccl.ncclAllReduce(s, r, count, type.code(), op.code(), handle(), stream.nativeHandle()),
                handle);
    }

    /** Gathers {@code sendCount} elements from each rank into every rank's {@code recv}, rank r's at r × sendCount. */
    public void allGather(DeviceBuffer send, DeviceBuffer recv, long sendCount, NcclDataType type, CudaStream stream) {
        MemorySegment s = at(send, 0, sendCount, type, "all-gather send");
        MemorySegment r = at(recv, 0, Math.multiplyExact(sendCount, size), type, "all-gather receive");
        nccl.check("ncclAllGather", nccl.ncclAllGather(s, r, sendCount, type.code(), handle(), stream.nativeHandle()),
                handle);
    }

    /**
     * Reduces {@code recvCount} × size elements of {@code send} across all ranks and leaves block r of the result
     * ({@code recvCount} elements from r × recvCount) in rank r's {@code recv}.
     */
    public void reduceScatter(DeviceBuffer send, DeviceBuffer recv, long recvCount, NcclDataType type,
                              NcclReduction op, CudaStream stream) {
        MemorySegment s = at(send, 0, Math.multiplyExact(recvCount, size), type, "reduce-scatter send");
        MemorySegment r = at(recv, 0, recvCount, type, "reduce-scatter receive");
        nccl.check("ncclReduceScatter", nccl.ncclReduceScatter(s, r, recvCount, type.code(), op.code(), handle(),
                stream.nativeHandle()), handle);
    }

    /**
     * Sends {@code count} elements from {@code buffer} at {@code byteOffset} to rank {@code peer}, which must post the
     * matching {@link #recv}. A send and a receive that wait on each other (all-to-all, or a rank to itself) go in one
     * {@link Nccl#group()}.
     */
    public void send(DeviceBuffer buffer, long byteOffset, long count, NcclDataType type, int peer, CudaStream stream) {
        MemorySegment s = at(buffer, byteOffset, count, type, "send");
        nccl.check("ncclSend", nccl.ncclSend(s, count, type.code(), checkPeer(peer), handle(), stream.nativeHandle()),
                handle);
    }

    /** Receives {@code count} elements from rank {@code peer} into {@code buffer} at {@code byteOffset}. */
    public void recv(DeviceBuffer buffer, long byteOffset, long count, NcclDataType type, int peer, CudaStream stream) {
        MemorySegment r = at(buffer, byteOffset, count, type, "receive");
        nccl.check("ncclRecv", nccl.ncclRecv(r, count, type.code(), checkPeer(peer), handle(), stream.nativeHandle()),
                handle);
    }

    /** An error raised asynchronously by work of this communicator (e.g. a peer that failed), or 0. */
    public int asyncError() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            nccl.check("ncclCommGetAsyncError", nccl.ncclCommGetAsyncError(handle(), out), handle);
            return out.get(JAVA_INT, 0);
        }
    }

    /** Frees the communicator at once, without waiting for pending work (after an error, or a peer lost). */
    public void abort() {
        if (!closed) {
            closed = true;
            nccl.check("ncclCommAbort", nccl.ncclCommAbort(handle));
        }
    }

    /** Waits for this rank's pending operations and frees the communicator. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            nccl.check("ncclCommDestroy", nccl.ncclCommDestroy(handle));
        }
    }

    @Override
    public String toString() {
        return "NCCL rank " + rank + " of " + size + " on device " + device;
    }

    private MemorySegment handle() {
        if (closed) {
            throw new IllegalStateException("NCCL communicator already destroyed");
        }
        return handle;
    }

    private int checkPeer(int peer) {
        if (peer < 0 || peer >= size) {
            throw new IllegalArgumentException("peer rank " + peer + " is outside this communicator's ranks [0, " + size + ")");
        }
        return peer;
    }

    /** The device address of {@code count} elements at {@code byteOffset} of {@code buffer}, checked to fit. */
    private static MemorySegment at(DeviceBuffer buffer, long byteOffset, long count, NcclDataType type, String what) {
        if (count < 0 || byteOffset < 0) {
            throw new IllegalArgumentException(what + ": negative count " + count + " or offset " + byteOffset);
        }
        long bytes = Math.multiplyExact(count, (long) type.bytes());
        if (byteOffset > buffer.byteSize() - bytes) {
            throw new IllegalArgumentException(what + ": " + count + " × " + type + " at byte " + byteOffset + " needs "
                    + (byteOffset + bytes) + " bytes; the buffer has " + buffer.byteSize());
        }
        return MemorySegment.ofAddress(buffer.pointer() + byteOffset);
    }
}
