/// A long-running part of a process. `run()` returns when the service has
/// stopped; `stop()` asks it to finish what it is doing and return.
public protocol Service: Sendable {
    /// Does the service's work; returns once it has stopped, asked to or not, and throws when it fails.
    func run() async throws
    /// Asks the service to finish what it is doing and return from `run()`; returns at once, and may be called from any thread.
    func stop()
}
