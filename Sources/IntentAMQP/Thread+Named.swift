import Foundation

extension Thread {
    /// A thread (not yet started) that runs `body` under `name`, for Foundation and for the system alike: the name
    /// `top -H`, `ps -T`, `perf` and a core dump show.
    ///
    /// On Linux, Foundation passes `Thread.name` to the system only when the running thread sets it itself, and
    /// then not at all when it is longer than the 15 bytes the system keeps; set before `start()`, as is usual, it
    /// never gets there, and the thread shows the name of the thread that made it (a dispatch queue's, often).
    /// Here the thread names itself as it starts, with the first 15 bytes of `name`.
    package static func named(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        let thread = Thread {
            setSystemName(name)
            body()
        }
        thread.name = name
        return thread
    }

    /// Names the calling thread for the system with the longest start of `name` that fits in 15 bytes, whole
    /// characters only; returns that start, the name the system was given.
    @discardableResult
    package static func setSystemName(_ name: String) -> String {
        var fitting = ""
        for character in name {
            guard fitting.utf8.count + character.utf8.count <= 15 else { break }
            fitting.append(character)
        }
        #if os(Linux)
            // What `pthread_setname_np` does on Linux (which Swift's Glibc module does not declare): the thread's own
            // `comm` file in /proc.
            let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            if descriptor >= 0 {
                _ = Array(fitting.utf8).withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                close(descriptor)
            }
        #endif
        return fitting
    }

    /// The calling thread's name as the system has it.
    package static var systemName: String {
        #if os(Linux)
            guard let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) else { return "" }
            return comm.hasSuffix("\n") ? String(comm.dropLast()) : comm
        #else
            return ""
        #endif
    }
}
