import Foundation
import Synchronization

/// A pipe that lets other threads wake the I/O thread out of `poll(2)`.
/// Writes are coalesced: at most one byte is in flight between two waits.
public final class WakeSignal: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32
    private let pending = Atomic<Bool>(false)
    /// The last `wait` found the pipe readable: the next `drain` reads it even with `pending` clear. (A `wake()` whose
    /// flag a drain cleared before its byte was written leaves a byte with no flag; unread, it would end every
    /// later wait at once, a busy loop until the next `wake()`.)
    private let pipeReadable = Atomic<Bool>(false)

    /// A new pipe.
    public init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) != 0 {
            fatalError("IntentQueue could not create a pipe: \(String(cString: strerror(errno)))")
        }
        readEnd = ends[0]
        writeEnd = ends[1]
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Wakes the waiter (once, however many threads call it before the next wait).
    public func wake() {
        if pending.exchange(true, ordering: .acquiringAndReleasing) { return }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Clears the pipe before the waiter looks at what it was woken for.
    ///
    /// The pipe is read before the flag is cleared: cleared first, a `wake()`
    /// between the two would set the flag and write a byte that the read then
    /// swallows, leaving the flag set with the pipe empty — and every later
    /// `wake()` would be dropped until the waiter's next timeout. Read first,
    /// such a `wake()` finds the flag still set and returns; what it woke for is
    /// already queued, and the waiter looks at it after this call.
    public func drain() {
        // Nothing was written since the last drain, and the last wait found the pipe empty: no system call needed.
        let readable = pipeReadable.exchange(false, ordering: .relaxed)
        guard pending.load(ordering: .acquiring) || readable else { return }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            // A read that returns less than it asked for emptied the pipe (one more would only say EAGAIN).
            while read(readEnd, buffer.baseAddress, buffer.count) == buffer.count {}
        }
        pending.store(false, ordering: .releasing)
    }

    /// For tests: the interleaving in which a drain runs between a `wake()`'s flag and its byte.
    func wakeAroundADrain() {
        _ = pending.exchange(true, ordering: .acquiringAndReleasing)
        drain()
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// For tests: whether a byte waits in the pipe.
    var pipeHoldsData: Bool {
        var descriptor = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) > 0
    }

    /// Waits until `socket` is readable, `wake()` is called, or `timeout` passes.
    /// Returns false only when the wait ended on `wake()` alone, with nothing
    /// (not even an error) on the socket: the caller may skip reading it.
    @discardableResult
    public func wait(socket: Int32, timeoutMilliseconds: Int32) -> Bool {
        var descriptors = [
            pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
        ]
        let ready = poll(&descriptors, socket >= 0 ? 2 : 1, timeoutMilliseconds)
        if ready > 0, descriptors[0].revents != 0 { pipeReadable.store(true, ordering: .relaxed) }
        return ready <= 0 || socket < 0 || descriptors[1].revents != 0
    }

    /// `wait(socket:timeoutMilliseconds:)` for `seconds`, rounded up to whole milliseconds (`poll`'s unit), so that
    /// a wait that nothing ends lasts at least as long as asked; never negative, at most a day.
    @discardableResult
    public func wait(socket: Int32, seconds: Double) -> Bool {
        wait(socket: socket, timeoutMilliseconds: Int32((min(max(seconds, 0), 86_400) * 1000).rounded(.up)))
    }
}

/// A one-time event async code can wait for.
final class Completion: Sendable {
    private let state = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func complete() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isComplete: Bool { state.withLock { $0.done } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
