package io.moe4j.backend.cuda.nccl;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The {@code ncclUniqueId} that names a communicator being created: made once by {@link Nccl#uniqueId()} on one rank
 * and handed to every rank (another thread as is, another process as {@link #toHex()} text), which then joins with
 * {@link NcclComm#initRank}. 128 opaque bytes; it carries the address of the creating rank's bootstrap socket.
 */
public record NcclUniqueId(byte[] bytes) {
    public static final int BYTES = 128;

    public NcclUniqueId {
        if (bytes == null || bytes.length != BYTES) {
            throw new IllegalArgumentException("an NCCL unique id has " + BYTES + " bytes, got "
                    + (bytes == null ? "none" : bytes.length));
        }
        bytes = bytes.clone();
    }

    @Override
    public byte[] bytes() {
        return bytes.clone();
    }

    /** As text, to pass to another process (an environment variable, a command line). */
    public String toHex() {
        return HexFormat.of().formatHex(bytes);
    }

    public static NcclUniqueId fromHex(String hex) {
        try {
            return new NcclUniqueId(HexFormat.of().parseHex(hex));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not an NCCL unique id (" + 2 * BYTES + " hex digits): " + e.getMessage(), e);
        }
    }

    /** The struct, in native memory of {@code arena}, to pass by value. */
    MemorySegment toSegment(Arena arena) {
        MemorySegment s = arena.allocate(Nccl.UNIQUE_ID);
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, s, 0, BYTES);
        return s;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof NcclUniqueId other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        return "NcclUniqueId[" + toHex().substring(0, 16) + "…]";
    }
}
