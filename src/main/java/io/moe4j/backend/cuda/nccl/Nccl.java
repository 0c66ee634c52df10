package io.moe4j.backend.cuda.nccl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.moe4j.backend.cuda.driver.LibraryCandidate;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * NCCL ({@code libnccl.so.2}) as typed Java methods: one downcall handle per function. The raw wrappers return the
 * {@code ncclResult_t}; {@link #check} turns a failure into an {@link NcclException} naming the call and the error.
 * Communicators are {@link NcclComm}s; this class holds what needs none: the version, unique ids, groups.
 *
 * <p>NCCL works on the CUDA runtime's current device, which is the device of the driver context current on the
 * thread ({@code CudaContext.makeCurrent()}): make a device's context current before creating or using its
 * communicator. Device pointers travel as addresses; {@code cudaStream_t} is the driver's {@code CUstream}.
 */
public final class Nccl {
    /** {@code ncclUniqueId}: {@code struct { char internal[128]; }}, passed by value to ncclCommInitRank. */
    static final StructLayout UNIQUE_ID = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(NcclUniqueId.BYTES, JAVA_BYTE).withName("internal"));
    /** {@code ncclResult_t} names, by value (nccl.h). */
    private static final List<String> RESULT_NAMES = List.of("ncclSuccess", "ncclUnhandledCudaError",
            "ncclSystemError", "ncclInternalError", "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError",
            "ncclInProgress", "ncclTimeout");
    private static final Linker LINKER = Linker.nativeLinker();
    private static final FunctionDescriptor I_A = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor I_AA = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);

    private final String library;
    private final MethodHandle ncclGetVersion;
    private final MethodHandle ncclGetUniqueId;
    private final MethodHandle ncclGetErrorString;
    private final MethodHandle ncclGetLastError;
    private final MethodHandle ncclCommInitRank;
    private final MethodHandle ncclCommInitAll;
    private final MethodHandle ncclCommDestroy;
    private final MethodHandle ncclCommAbort;
    private final MethodHandle ncclCommCount;
    private final MethodHandle ncclCommCuDevice;
    private final MethodHandle ncclCommUserRank;
    private final MethodHandle ncclCommGetAsyncError;
    private final MethodHandle ncclAllReduce;
    private final MethodHandle ncclAllGather;
    private final MethodHandle ncclReduceScatter;
    private final MethodHandle ncclSend;
    private final MethodHandle ncclRecv;
    private final MethodHandle ncclGroupStart;
    private final MethodHandle ncclGroupEnd;

    private Nccl(String library, SymbolLookup lookup) {
        this.library = library;
        ncclGetVersion = function(lookup, I_A, "ncclGetVersion");
        ncclGetUniqueId = function(lookup, I_A, "ncclGetUniqueId");
        ncclGetErrorString = function(lookup, FunctionDescriptor.of(ADDRESS, JAVA_INT), "ncclGetErrorString");
        ncclGetLastError = function(lookup, FunctionDescriptor.of(ADDRESS, ADDRESS), "ncclGetLastError");
        ncclCommInitRank = function(lookup, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, UNIQUE_ID, JAVA_INT),
                "ncclCommInitRank");
        ncclCommInitAll = function(lookup, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), "ncclCommInitAll");
        ncclCommDestroy = function(lookup, I_A, "ncclCommDestroy");
        ncclCommAbort = function(lookup, I_A, "ncclCommAbort");
        ncclCommCount = function(lookup, I_AA, "ncclCommCount");
        ncclCommCuDevice = function(lookup, I_AA, "ncclCommCuDevice");
        ncclCommUserRank = function(lookup, I_AA, "ncclCommUserRank");
        ncclCommGetAsyncError = function(lookup, I_AA, "ncclCommGetAsyncError");
        ncclAllReduce = function(lookup, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT,
                ADDRESS, ADDRESS), "ncclAllReduce");
        ncclAllGather = function(lookup, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS,
                ADDRESS), "ncclAllGather");
        ncclReduceScatter = function(lookup, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT,
                JAVA_INT, ADDRESS, ADDRESS), "ncclReduceScatter");
        ncclSend = function(lookup, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS,
                ADDRESS), "ncclSend");
        ncclRecv = function(lookup, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS,
                ADDRESS), "ncclRecv");
        ncclGroupStart = function(lookup, FunctionDescriptor.of(JAVA_INT), "ncclGroupStart");
        ncclGroupEnd = function(lookup, FunctionDescriptor.of(JAVA_INT), "ncclGroupEnd");
    }

    private MethodHandle function(SymbolLookup lookup, FunctionDescriptor descriptor, String symbol) {
        MemorySegment address = lookup.find(symbol).orElseThrow(() -> new NcclException(symbol, -1,
                library + " does not export " + symbol + " (not an NCCL 2 library?)"));
        return LINKER.downcallHandle(address, descriptor);
    }

    private static volatile Nccl instance;

    /**
     * The process-wide binding, located by {@link NcclLocator#fromSystem()} on first use. Throws an
     * {@link NcclException} naming every place it looked when NCCL is absent; {@link #probe()} asks without throwing.
     */
    public static Nccl get() {
        Nccl n = instance;
        if (n == null) {
            synchronized (Nccl.class) {
                n = instance;
                if (n == null) {
                    n = load(NcclLocator.fromSystem());
                    instance = n;
                }
            }
        }
        return n;
    }

    /** Whether NCCL loads here, and if not why; never throws. */
    public static NcclProbe probe() {
        try {
            Nccl n = get();
            return new NcclProbe(true, "NCCL " + n.versionString() + " from " + n.library(), Optional.of(n));
        } catch (Throwable t) {
            // IllegalCallerException without --enable-native-access, LinkageError, ...: all are reasons.
            return new NcclProbe(false, t.getMessage() == null ? t.toString() : t.getMessage(), Optional.empty());
        }
    }

    /** Loads the first candidate that opens and exports NCCL; the exception lists every attempt otherwise. */
    public static Nccl load(NcclLocator locator) {
        List<String> attempts = new ArrayList<>();
        for (LibraryCandidate c : locator.candidates()) {
            try {
                return new Nccl(c.describe(), c.open());
            } catch (IllegalArgumentException | NcclException e) {
                attempts.add(c.describe() + ": " + e.getMessage());
            }
        }
        throw new NcclException("dlopen", -1, "NCCL (" + NcclLocator.SONAME + ") not found; tried "
                + String.join("; ", attempts) + ". Searched " + locator.searchDirectories()
                + " and the loader path. Install NCCL 2 (the libnccl2 package, or pip nvidia-nccl-cu12/-cu13) or name "
                + "the library with -Dmoe4j.cuda.nccl=/path/to/libnccl.so.2 or MOE4J_NCCL");
    }

    /** Where the library was loaded from. */
    public String library() {
        return library;
    }

    /** NCCL's version code, e.g. 23007 for 2.30.7 (major × 10000 + minor × 100 + patch). */
    public int version() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check("ncclGetVersion", ncclGetVersion(out));
            return out.get(JAVA_INT, 0);
        }
    }

    /** "2.30.7". */
    public String versionString() {
        int v = version();
        return (v / 10000) + "." + (v / 100) % 100 + "." + v % 100;
    }

    /** A new unique id for a communicator: call on one rank, hand it to all. */
    public NcclUniqueId uniqueId() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(UNIQUE_ID);
            check("ncclGetUniqueId", ncclGetUniqueId(out));
            return new NcclUniqueId(out.toArray(JAVA_BYTE));
        }
    }

    /**
     * Starts a group: the collectives and point-to-point calls of this thread until {@link NcclGroup#close()} are
     * launched together. Needed for a send and a receive that depend on each other (all-to-all), and for one thread
     * driving several communicators. Use with try-with-resources.
     */
    public NcclGroup group() {
        check("ncclGroupStart", ncclGroupStart());
        return new NcclGroup(this);
    }

    /** Throws an {@link NcclException} naming {@code call} and the error when {@code result} is not ncclSuccess. */
    public void check(String call, int result) {
        check(call, result, MemorySegment.NULL);
    }

    /** As {@link #check(String, int)}, adding the communicator's last error message (NULL: the thread's). */
    void check(String call, int result, MemorySegment comm) {
        if (result != 0) {
            throw new NcclException(call, result, call + " failed: " + describe(result, comm));
        }
    }

    /** "ncclInvalidArgument (invalid argument): last error ..." for an {@code ncclResult_t}, from NCCL itself. */
    public String describe(int result) {
        return describe(result, MemorySegment.NULL);
    }

    private String describe(int result, MemorySegment comm) {
        String name = result >= 0 && result < RESULT_NAMES.size() ? RESULT_NAMES.get(result) : "ncclResult_t " + result;
        String text = errorString(result);
        String last = lastError(comm);
        return name + " (" + text + ")" + (last.isBlank() ? "" : ": " + last.strip());
    }

    /** NCCL's text for an {@code ncclResult_t} ({@code ncclGetErrorString}). */
    public String errorString(int result) {
        try {
            return cString((MemorySegment) ncclGetErrorString.invokeExact(result));
        } catch (Throwable t) {
            return "ncclResult_t " + result;
        }
    }

    /** NCCL's last error message for {@code comm} (NULL: the calling thread's), or empty. */
    String lastError(MemorySegment comm) {
        try {
            return cString((MemorySegment) ncclGetLastError.invokeExact(comm));
        } catch (Throwable t) {
            return "";
        }
    }

    private static String cString(MemorySegment p) {
        return p.equals(MemorySegment.NULL) ? "" : p.reinterpret(4096).getString(0);
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new NcclException("native call failed: " + t, t);
    }

    // ---- raw calls: each returns the ncclResult_t ------------------------------------------------------------------

    int ncclGetVersion(MemorySegment version) {
        try { return (int) ncclGetVersion.invokeExact(version); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclGetUniqueId(MemorySegment id) {
        try { return (int) ncclGetUniqueId.invokeExact(id); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclCommInitRank(MemorySegment comm, int nranks, MemorySegment id, int rank) {
        try { return (int) ncclCommInitRank.invokeExact(comm, nranks, id, rank); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclCommInitAll(MemorySegment comms, int ndev, MemorySegment devices) {
        try { return (int) ncclCommInitAll.invokeExact(comms, ndev, devices); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclCommDestroy(MemorySegment comm) {
        try { return (int) ncclCommDestroy.invokeExact(comm); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclCommAbort(MemorySegment comm) {
        try { return (int) ncclCommAbort.invokeExact(comm); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclCommCount(MemorySegment comm, MemorySegment count) {
        try { return (int) ncclCommCount.invokeExact(comm, count); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclCommCuDevice(MemorySegment comm, MemorySegment device) {
        try { return (int) ncclCommCuDevice.invokeExact(comm, device); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclCommUserRank(MemorySegment comm, MemorySegment rank) {
        try { return (int) ncclCommUserRank.invokeExact(comm, rank); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclCommGetAsyncError(MemorySegment comm, MemorySegment error) {
        try { return (int) ncclCommGetAsyncError.invokeExact(comm, error); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclAllReduce(MemorySegment send, MemorySegment recv, long count, int type, int op, MemorySegment comm,
                      MemorySegment stream) {
        try {
            return (int) ncclAllReduce.invokeExact(send, recv, count, type, op, comm, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    int ncclAllGather(MemorySegment send, MemorySegment recv, long sendCount, int type, MemorySegment comm,
                      MemorySegment stream) {
        try {
            return (int) ncclAllGather.invokeExact(send, recv, sendCount, type, comm, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    int ncclReduceScatter(MemorySegment send, MemorySegment recv, long recvCount, int type, int op, MemorySegment comm,
                          MemorySegment stream) {
        try {
            return (int) ncclReduceScatter.invokeExact(send, recv, recvCount, type, op, comm, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    int ncclSend(MemorySegment send, long count, int type, int peer, MemorySegment comm, MemorySegment stream) {
        try { return (int) ncclSend.invokeExact(send, count, type, peer, comm, stream); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclRecv(MemorySegment recv, long count, int type, int peer, MemorySegment comm, MemorySegment stream) {
        try { return (int) ncclRecv.invokeExact(recv, count, type, peer, comm, stream); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclGroupStart() {
        try { return (int) ncclGroupStart.invokeExact(); } catch (Throwable t) { throw rethrow(t); }
    }

    int ncclGroupEnd() {
        try { return (int) ncclGroupEnd.invokeExact(); } catch (Throwable t) { throw rethrow(t); }
    }
}
