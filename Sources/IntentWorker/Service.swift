/// A long-running part of a process. `run()` returns when the service has
/// stopped; `stop()` asks it to finish what it is doing and return.
public protocol Service: Sendable {
    func run() async throws
    func stop()
}
